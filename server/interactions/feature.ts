/**
 * Answering agent questions and tool permissions from anywhere (issue #4): the DataWorks / Qwen
 * surface over HTTP and SSE, on top of the AHP hub.
 *
 * - `GET  /v2/sessions/{sessionId}/events`   SSE: ACP `session/update`, `_qwen/notify`
 *   (`permission_request` / `permission_resolved` / `permission_already_resolved`), `_hub/notify`
 *   (`turn_end`). Late listeners first get what is pending; `Last-Event-ID` resumes.
 * - `POST /v2/sessions/{sessionId}/prompt`   starts a turn on the session's default chat and
 *   streams that turn's events, ending with one JSON-RPC response `{stopReason}` (or an error).
 * - `POST /v2/agent-sessions/reply`          DataWorks `ReplyAgentSession` envelope.
 * - `POST /session/{sessionId}/permission/{requestId}`   Qwen `qwen serve` shape.
 *
 * `{sessionId}` is the path part of `ahp-session:/<id>` (the full URI is accepted too).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ProtocolError } from '../../shared/protocol/errors.js';
import { dataWorksCode } from '../../shared/protocol/error-kinds.js';
import { asSessionUri } from '../../shared/protocol/uris.js';
import { StateLimits } from '../../shared/protocol/state.js';
import type { Principal } from '../auth/auth.js';
import { type Feature, type FeatureContext, refuseStreamWhileStorageFails } from '../feature-contract.js';
import { readJsonBody, sendJson, sendJsonAs, type HttpContext } from '../transport/http-router.js';
import { JSONRPC } from '../../shared/protocol/messages.js';
import { openSse, SessionStreams, sseMessage, type StreamEvent, type StreamLimits, type StreamListener } from './event-stream.js';
import type { ReplyResult } from './interaction-model.js';
import { InteractionRegistry } from './registry.js';
import { checkPermissionRequestId, dataWorksError, isParamError, parseDataWorks, parseQwen, replyHttpError, type ParamError } from './replies.js';

export interface InteractionsOptions {
  /** False answers every reply with DAEMON_PERMISSION_UNAVAILABLE (-32601) / HTTP 501. Default true. */
  readonly replies?: boolean;
  readonly streams?: Partial<StreamLimits>;
}

/** What the interactions feature offers later features (`ctx.services.get(INTERACTIONS_SERVICE)`). */
export interface InteractionsService {
  readonly registry: InteractionRegistry;
  readonly streams: SessionStreams;
  readonly repliesEnabled: boolean;
}
export const INTERACTIONS_SERVICE = 'interactions';

/** Events a prompt stream queues while its turn start is being made durable. */
const MAX_QUEUED_PROMPT_EVENTS = 10_000;

export function createInteractionsFeature(options: InteractionsOptions = {}): Feature {
  return {
    name: 'interactions',
    install(ctx: FeatureContext) {
      const streams = new SessionStreams(options.streams);
      ctx.metrics.gauge('ahp_hub_sse_listeners', 'Open SSE event and prompt streams.', () => streams.totalListeners());
      const registry = new InteractionRegistry(ctx.hub, streams, ctx.logger, ctx.newId);
      registry.start();
      const repliesEnabled = options.replies ?? true;
      ctx.services.set(INTERACTIONS_SERVICE, { registry, streams, repliesEnabled } satisfies InteractionsService);

      /** The session URI for a `{sessionId}` the principal may see, else undefined. */
      const visibleSession = (principal: Principal, raw: string): string | undefined => {
        const uri = asSessionUri(raw);
        return ctx.hub.visibleSession(principal, uri) ? uri : undefined;
      };

      // ─── SSE: session events ────────────────────────────────────────────────
      ctx.http.add('GET', '/v2/sessions/{sessionId}/events', (req, res, hc) => {
        const session = visibleSession(hc.principal, hc.params['sessionId']!);
        if (!session) throw new ProtocolError('session_not_found', `no session ${hc.params['sessionId']}`);
        refuseStreamWhileStorageFails(ctx.hub);
        if (streams.listenerCount(session) >= streams.limits.maxListenersPerSession) {
          throw new ProtocolError('too_many_listeners', `at most ${streams.limits.maxListenersPerSession} event streams per session`);
        }
        const header = req.headers['last-event-id'];
        const lastEventId = (Array.isArray(header) ? header[0] : header) ?? hc.url.searchParams.get('lastEventId') ?? undefined;
        const listener: StreamListener = {
          deliver: (ev) => sse.write(sseMessage(ev.text, ev.id)),
          end: () => sse.close(),
        };
        const sse = openSse(req, res, streams.limits, () => streams.detach(session, listener), hc.claimStream());
        // Replay and attach in one synchronous step: nothing can be published in between.
        const replay = lastEventId ? streams.eventsAfter(session, lastEventId) : undefined;
        if (replay) {
          for (const ev of replay) sse.write(sseMessage(ev.text, ev.id));
        } else {
          // Fresh listener (or a gap we cannot replay): what is still pending, tagged with the
          // head id so a reconnect resumes right after it.
          const head = streams.headId(session);
          for (const it of registry.announced(session)) sse.write(sseMessage(JSON.stringify(registry.requestFrame(it)), head));
        }
        if (!sse.closed) streams.attach(session, listener);
      });

      // ─── Prompt: start a turn and stream it ─────────────────────────────────
      ctx.http.add('POST', '/v2/sessions/{sessionId}/prompt', async (req, res, hc) => {
        const body = await readJsonBody(req);
        const session = visibleSession(hc.principal, hc.params['sessionId']!);
        if (!session) throw new ProtocolError('session_not_found', `no session ${hc.params['sessionId']}`);
        const { text, rpcId } = parsePrompt(body, ctx.newId);
        const refused = ctx.hub.enter({ op: 'prompt', principal: hc.principal });
        if (refused.outcome === 'rejected') throw new ProtocolError(refused.kind, refused.message);
        const chat = ctx.hub.defaultChatOf(session);
        if (!chat) throw new ProtocolError('no_default_chat', 'the session has no default chat to prompt');
        if (streams.listenerCount(session) >= streams.limits.maxListenersPerSession) {
          throw new ProtocolError('too_many_listeners', `at most ${streams.limits.maxListenersPerSession} event streams per session`);
        }
        // The stream's slot is taken before the turn starts: a refused stream must not leave a turn behind.
        const slot = hc.claimStream();
        const turnId = ctx.newId();
        const queue: StreamEvent[] = [];
        let sse: ReturnType<typeof openSse> | undefined;
        let done = false;
        const finish = (final: unknown): void => {
          if (done) return;
          done = true;
          streams.detach(session, listener);
          if (sse) {
            sse.write(sseMessage(JSON.stringify(final)));
            sse.close();
          }
        };
        const forward = (ev: StreamEvent): void => {
          sse!.write(sseMessage(ev.text, ev.id));
          if (ev.turnEnd) finish(finalResponse(rpcId, ev.turnEnd));
        };
        const listener: StreamListener = {
          deliver: (ev) => {
            if (done || ev.chat !== chat || ev.turnId !== turnId) return;
            if (sse) return forward(ev);
            if (queue.length < MAX_QUEUED_PROMPT_EVENTS) queue.push(ev);
          },
          end: () => {
            if (!sse) queue.push({ id: '', seq: 0, chat, turnId, turnEnd: { stopReason: 'cancelled' }, text: '' });
            else finish(finalResponse(rpcId, { stopReason: 'cancelled' }));
          },
        };
        // Listen before starting: the start commits synchronously and its events must not be missed.
        if (!streams.attach(session, listener)) {
          slot.release();
          throw new ProtocolError('too_many_listeners', 'too many event streams on this session');
        }
        const started = await ctx.hub.enter({
          op: 'dispatch',
          by: { from: 'principal', principal: hc.principal },
          channel: chat,
          action: { type: 'chat/turnStarted', turnId, startedAt: new Date(ctx.now()).toISOString(), message: { text, origin: { kind: 'user' } } },
          as: 'prompt',
        });
        if (started.outcome !== 'accepted') {
          streams.detach(session, listener);
          slot.release();
          if (started.outcome !== 'rejected') throw new ProtocolError('internal_error', 'the hub cannot start turns right now');
          // The hub refused before deciding (storage away, over the disk quota, shutting down).
          if (started.at !== 'decision') throw new ProtocolError(started.cause instanceof ProtocolError ? started.kind : 'internal_error', started.cause instanceof ProtocolError ? started.message : 'the hub cannot start turns right now');
          if (started.kind === 'not_found') throw new ProtocolError('session_not_found', `no session ${hc.params['sessionId']}`);
          if (started.kind === 'turn_in_progress') {
            throw new ProtocolError('turn_in_progress', `a turn is already running in this session; wait for it to end or cancel it (${started.message}). The prompt was not queued.`);
          }
          throw new ProtocolError('prompt_rejected', started.message);
        }
        sse = openSse(
          req,
          res,
          streams.limits,
          () => {
            done = true;
            streams.detach(session, listener);
          },
          slot,
        );
        for (const ev of queue.splice(0)) {
          if (done) break;
          if (ev.text === '' && ev.turnEnd) finish(finalResponse(rpcId, ev.turnEnd));
          else forward(ev);
        }
      });

      // ─── DataWorks reply ────────────────────────────────────────────────────
      ctx.http.add('POST', '/v2/agent-sessions/reply', async (req, res, hc) => {
        const serverRequestId = ctx.newId();
        const envelope = (id: string | number | null, outcome: { Result: { Accepted: boolean } } | { Error: Record<string, unknown> }) => ({
          JsonRpcResponse: { Id: id, Jsonrpc: JSONRPC, ...outcome, Timestamp: ctx.now() },
          RequestId: serverRequestId,
        });
        // A refusal is answered with its kind's status, the envelope naming the kind it shows as there.
        const fail = (id: string | number | null, e: ParamError): void => sendJsonAs(res, e.kind, envelope(id, { Error: dataWorksError(e) }));
        let body: unknown;
        try {
          body = await readJsonBody(req);
        } catch (err) {
          if (!(err instanceof ProtocolError)) throw err;
          // An oversized or non-JSON body keeps its HTTP meaning (413, 415) inside the DataWorks
          // envelope, where it shows as INVALID_REQUEST (the table's `dataWorksAs`).
          return fail(null, { kind: err.kind, message: err.message });
        }
        const { id, parsed } = parseDataWorks(body);
        if (!repliesEnabled) return fail(id, { kind: 'daemon_permission_unavailable', message: 'permission replies are not enabled on this hub' });
        if (isParamError(parsed)) return fail(id, parsed);
        const result = await registry.reply(hc.principal, asSessionUri(parsed.sessionId), parsed.permissionRequestId, parsed.reply, 'HTTP reply');
        if (result.kind === 'error') return fail(id, { kind: result.code, message: result.message });
        sendJson(res, envelope(id, { Result: { Accepted: result.kind === 'accepted' } }));
      });

      // ─── Qwen reply ─────────────────────────────────────────────────────────
      ctx.http.add('POST', '/session/{sessionId}/permission/{requestId}', async (req: IncomingMessage, res: ServerResponse, hc: HttpContext) => {
        const body = await readJsonBody(req);
        if (!repliesEnabled) throw new ProtocolError('daemon_permission_unavailable', 'permission replies are not enabled on this hub');
        const badId = checkPermissionRequestId(hc.params['requestId'], 'requestId');
        if (badId) throw qwenError(badId);
        const reply = parseQwen(body);
        if (isParamError(reply)) throw qwenError(reply);
        const result: ReplyResult = await registry.reply(hc.principal, asSessionUri(hc.params['sessionId']!), hc.params['requestId']!, reply, 'Qwen route');
        if (result.kind === 'accepted') return sendJson(res, { accepted: true });
        if (result.kind === 'notAccepted') {
          throw new ProtocolError('permission_request_not_found', 'no pending permission request with that id in that session (unknown, already resolved, expired, or no such session)');
        }
        throw qwenError({ kind: result.code, message: result.message });
      });

      // A requestId of "." or ".." is a dot-segment: URL parsing (ours and every client's)
      // normalises it away, leaving these paths. Say why instead of a bare "no route".
      for (const pattern of ['/session/{sessionId}/permission', '/session/{sessionId}/permission/', '/session/{sessionId}/']) {
        ctx.http.add('POST', pattern, () => {
          throw qwenError({ kind: 'invalid_permission_request_id', message: 'the permission request id is missing from the path (ids may not be empty, "." or "..": those are removed as dot-segments)' });
        });
      }

      return {
        close() {
          registry.stop();
          streams.closeAll();
        },
      };
    },
  };
}

export const interactionsFeature: Feature = createInteractionsFeature();

/** Qwen-style HTTP error; this route also names the upper-case `errorCode` (DataWorks' spelling). */
function qwenError(e: ParamError): ProtocolError {
  return replyHttpError(e, { errorCode: dataWorksCode(e.kind) });
}

/** `{"prompt": [{"type": "text", "text": "..."}], "id"?}` → the message text (text blocks joined by blank lines). */
export function parsePrompt(body: unknown, newId: () => string): { text: string; rpcId: string | number } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ProtocolError('invalid_prompt', 'the body must be {"prompt": [{"type": "text", "text": "..."}]}');
  const b = body as Record<string, unknown>;
  const prompt = b['prompt'];
  if (!Array.isArray(prompt) || prompt.length === 0) throw new ProtocolError('invalid_prompt', 'prompt must be a non-empty array of content blocks');
  const texts: string[] = [];
  for (const [i, block] of prompt.entries()) {
    const blk = block as { type?: unknown; text?: unknown } | null;
    if (!blk || typeof blk !== 'object' || blk.type !== 'text' || typeof blk.text !== 'string') {
      throw new ProtocolError('prompt_unsupported_content', `prompt[${i}] must be a text block {"type": "text", "text": "..."}; other content types are not supported`);
    }
    texts.push(blk.text);
  }
  const text = texts.join('\n\n');
  if (text.trim() === '') throw new ProtocolError('invalid_prompt', 'the prompt text is empty');
  if (text.length > StateLimits.text) throw new ProtocolError('prompt_too_large', `the prompt is longer than ${StateLimits.text} characters`);
  const id = b['id'];
  return { text, rpcId: typeof id === 'string' || typeof id === 'number' ? id : newId() };
}

/**
 * The last frame of a prompt stream: `{"jsonrpc","id","result":{"stopReason"}}` with
 * `end_turn` / `cancelled` / `refusal`; a turn that failed ends with a JSON-RPC error instead
 * (`-32603`, `data.errorType`), as ACP answers a failed `session/prompt`.
 */
function finalResponse(id: string | number, end: { stopReason: string; error?: { errorType: string; message: string } | undefined }): unknown {
  if (end.stopReason === 'error') {
    return { jsonrpc: JSONRPC, id, error: { code: -32603, message: end.error?.message ?? 'The turn failed.', data: { errorType: end.error?.errorType ?? 'error' } } };
  }
  return { jsonrpc: JSONRPC, id, result: { stopReason: end.stopReason } };
}
