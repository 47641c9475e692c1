/**
 * A `qwen serve`-compatible HTTP surface at the root, so qwen's own client (`DaemonClient` /
 * `DaemonSessionClient` from `@qwen-code/sdk`) works against the hub unmodified. Everything maps
 * onto the hub's sessions and the interactions feature (same registry, same first-reply-wins):
 *
 * - `GET  /health`, `GET /capabilities`
 * - `POST /session` (create, or attach to `sessionId`), `DELETE /session/{id}`
 * - `POST /session/{id}/prompt` → 202 `{promptId, lastEventId, eventEpoch}`; the prompt is a
 *   turn on the session's default chat (turn id = promptId). While a turn runs, prompts queue
 *   (at most 5 pending, the running one included; then 503 `prompt_queue_full`) and start one
 *   by one as turns end.
 * - `GET  /session/{id}/events` qwen SSE frames (`X-Qwen-Event-Epoch`, numeric `Last-Event-ID`)
 * - `POST /session/{id}/cancel` cancels the running turn and drops the queued prompts
 *   (`prompt_cancelled` then `turn_complete` `cancelled` for each)
 * - `GET /session/{id}/status`, `POST /session/{id}/heartbeat`, `GET /session/{id}/pending-prompts`
 * - `POST /permission/{requestId}` (the session-less reply; `/session/{id}/permission/{requestId}`
 *   is the interactions feature's)
 *
 * Errors are JSON `{error, code, message}` (`error` is what qwen's client shows). Auth is the
 * hub's: `Authorization: Bearer <token>`, same tenancy; `/health` is public.
 */
import { ProtocolError } from '../../shared/protocol/errors.js';
import { asSessionUri, sessionIdOf, sessionUri } from '../../shared/protocol/uris.js';
import { turnDuration } from '../../shared/state/selectors.js';
import type { Principal } from '../auth/auth.js';
import { protocolErrorOf, type FeatureOperation } from '../hub/entry.js';
import { SERVER_INFO } from '../ahp/ahp-methods.js';
import { type Feature, type FeatureContext, refuseStreamWhileStorageFails } from '../feature-contract.js';
import { readJsonBody, sendAccepted, sendJson, sendJsonAs, sendNoContent } from '../transport/http-router.js';
import { openSse } from '../interactions/event-stream.js';
import { INTERACTIONS_SERVICE, parsePrompt, type InteractionsService } from '../interactions/feature.js';
import { checkPermissionRequestId, isParamError, parseQwen, qwenError, replyHttpError } from '../interactions/replies.js';
import { QwenSessionLog, qwenSseMessage, type QwenFrame } from './event-log.js';

export interface QwenServeOptions {
  /** Prompts that may be pending per session, the running one included (qwen serve's default is 5). */
  readonly maxPendingPrompts?: number;
  /** Frames kept per session for `Last-Event-ID` replay. */
  readonly bufferedFrames?: number;
  /** Sessions with an event log; the least recently used idle one is dropped beyond this. */
  readonly maxTrackedSessions?: number;
  /** qwen SSE listeners per session. */
  readonly maxListenersPerSession?: number;
}

/** Paths that belong to the API: anything under them that no route matches is a JSON 404, never the app. */
const API_PREFIXES = [
  '/health',
  '/capabilities',
  '/session',
  '/sessions',
  '/permission',
  '/workspace',
  '/workspaces',
  '/standalone',
  '/daemon',
  '/brand',
  '/language',
  '/usage',
  '/auth',
  '/acp',
  '/file',
  '/list',
  '/glob',
  '/stat',
  '/v2',
  '/ahp',
];

/**
 * Feature tags (`GET /capabilities`), named as qwen serve names them, for what this surface
 * really supports; qwen's client gates on them (e.g. `session_id_override` before attaching).
 */
const FEATURES = ['health', 'capabilities', 'session_create', 'session_id_override', 'session_close', 'session_prompt', 'session_events', 'session_cancel', 'permission_vote', 'session_permission_vote'];

const MAX_SESSION_ID = 200;

export function createQwenServeFeature(options: QwenServeOptions = {}): Feature {
  const maxPending = options.maxPendingPrompts ?? 5;
  const bufferedFrames = options.bufferedFrames ?? 512;
  const maxTracked = options.maxTrackedSessions ?? 1_024;
  const maxListeners = options.maxListenersPerSession ?? 64;
  return {
    name: 'qwen-serve',
    install(ctx: FeatureContext) {
      const interactions = ctx.services.get(INTERACTIONS_SERVICE) as InteractionsService | undefined;
      if (!interactions) throw new Error('the qwen-serve feature needs the interactions feature installed before it');
      const { registry, streams } = interactions;
      /** Session URI → its qwen event log; insertion order = least recently used first. */
      const logs = new Map<string, QwenSessionLog>();

      const visible = (principal: Principal, rawId: string): string | undefined => {
        const uri = asSessionUri(rawId);
        return ctx.hub.visibleSession(principal, uri) ? uri : undefined;
      };
      const requireSession = (principal: Principal, rawId: string): string => {
        const uri = visible(principal, rawId);
        if (!uri) throw qwenError('session_not_found', `no session ${rawId}`);
        return uri;
      };
      /** The door checks the principal's grants for the operation (nothing is sequenced). */
      const requireWriter = (principal: Principal, op: FeatureOperation): void => {
        const refused = ctx.hub.enter({ op, principal });
        if (refused.outcome === 'rejected') throw qwenError(refused.kind, refused.message);
      };

      /** The session's event log, created (and attached to the interaction streams) on first use. */
      const logOf = (session: string): QwenSessionLog => {
        const existing = logs.get(session);
        if (existing && !existing.closed) {
          logs.delete(session);
          logs.set(session, existing);
          return existing;
        }
        const log = new QwenSessionLog(sessionIdOf(session), { bufferedFrames, now: ctx.now });
        if (!streams.attach(session, log.streamListener)) {
          throw qwenError('too_many_listeners', 'too many event streams on this session');
        }
        log.onTurnEnd = () => setImmediate(() => startNextQueued(session, log));
        log.onClosed = () => {
          if (logs.get(session) === log) logs.delete(session);
        };
        logs.set(session, log);
        for (const [uri, candidate] of logs) {
          if (logs.size <= maxTracked) break;
          if (candidate !== log && candidate.listenerCount === 0 && candidate.queue.length === 0) {
            logs.delete(uri);
            streams.detach(uri, candidate.streamListener);
          }
        }
        return log;
      };

      const defaultChatOf = (session: string): string => {
        const chat = ctx.hub.defaultChatOf(session);
        if (!chat) throw qwenError('no_default_chat', 'the session has no default chat to prompt');
        return chat;
      };
      const turnRunning = (session: string): boolean => {
        const chat = ctx.hub.defaultChatOf(session);
        return chat !== undefined && ctx.hub.chatEntry(chat)?.state.activeTurn !== undefined;
      };

      /** Starts a prompt as a turn; a refused start ends it at once with `turn_error` so its waiter returns. */
      const startPrompt = async (principal: Principal, session: string, log: QwenSessionLog, promptId: string, text: string, queuedAt: number): Promise<void> => {
        const chat = ctx.hub.defaultChatOf(session);
        let failure: string | undefined;
        if (!chat) failure = 'the session has no default chat';
        else {
          log.notePrompt(promptId);
          const started = await ctx.hub.enter({
            op: 'dispatch',
            by: { from: 'principal', principal },
            channel: chat,
            action: { type: 'chat/turnStarted', turnId: promptId, startedAt: new Date(ctx.now()).toISOString(), message: { text, origin: { kind: 'user' } } },
            as: 'prompt',
          });
          if (started.outcome === 'accepted') log.running = { promptId, text, queuedAt };
          else failure = started.outcome === 'rejected' && started.at === 'decision' ? started.message : 'the hub cannot start turns right now';
        }
        if (failure !== undefined) {
          log.publish('turn_error', { sessionId: log.sessionId, promptId, code: 'prompt_rejected', message: failure }, promptId);
          // No turn started, so no turn end will come to start the next queued prompt: do it here.
          setImmediate(() => startNextQueued(session, log));
        }
      };

      const startNextQueued = (session: string, log: QwenSessionLog): void => {
        if (log.closed || turnRunning(session)) return;
        const next = log.queue.shift();
        if (next) void next.start();
      };

      for (const prefix of API_PREFIXES) ctx.http.reserveApiPrefix(prefix);

      // ─── Daemon metadata ──────────────────────────────────────────────────────
      ctx.http.add('GET', '/health', (_req, res) => sendJson(res, { status: 'ok' }), { public: true });

      ctx.http.add('GET', '/capabilities', (_req, res) => {
        sendJson(res, {
          v: 1,
          mode: 'native',
          serverInfo: SERVER_INFO,
          features: FEATURES,
          policy: { permission: 'first-responder' },
          limits: { maxPendingPromptsPerSession: maxPending },
          modelServices: [],
          transports: ['rest-sse'],
          // The hub grants agents no file system; sessions are not bound to a directory.
          workspaceCwd: '/',
        });
      });

      // ─── Sessions ─────────────────────────────────────────────────────────────
      ctx.http.add('POST', '/session', async (req, res, hc) => {
        const body = await readJsonBody(req);
        if (typeof body !== 'object' || body === null || Array.isArray(body)) throw qwenError('invalid_request', 'the body must be a JSON object');
        const b = body as Record<string, unknown>;
        const requested = b['sessionId'];
        if (requested !== undefined && requested !== null && (typeof requested !== 'string' || requested === '' || requested.length > MAX_SESSION_ID || /[\s/?#%]/.test(requested))) {
          throw qwenError('invalid_session_id', `sessionId must be a non-empty string of at most ${MAX_SESSION_ID} characters without spaces, "/", "?", "#" or "%"`);
        }
        let uri: string | undefined;
        let attached = false;
        if (typeof requested === 'string') {
          uri = visible(hc.principal, requested) ?? visible(hc.principal, requested.toLowerCase());
          attached = uri !== undefined;
        }
        if (!uri) {
          const refused = ctx.hub.enter({ op: 'createQwenSession', principal: hc.principal });
          if (refused.outcome === 'rejected') throw qwenError(refused.kind, refused.message);
          const id = typeof requested === 'string' ? requested.toLowerCase() : ctx.newId();
          uri = sessionUri(id);
          const created = await ctx.hub.enter({ op: 'createSession', principal: hc.principal, uri, title: typeof b['title'] === 'string' ? b['title'].slice(0, 200) : 'qwen session', as: 'createQwenSession' });
          if (created.outcome === 'rejected') {
            if (created.kind === 'session_exists') throw qwenError('session_exists', `session id ${id} is taken`);
            if (created.kind === 'limit_exceeded') throw qwenError('session_limit', created.message);
            if (created.kind === 'quota_exceeded') throw qwenError('state_quota', created.message);
            if (created.kind === 'permission_denied') throw qwenError('permission_denied', created.message);
            throw protocolErrorOf(created);
          }
        }
        const log = logOf(uri);
        const entry = ctx.hub.sessionEntry(uri)!;
        sendJson(res, {
          sessionId: sessionIdOf(uri),
          // What really runs: the agent's own directory, or "/" (no process, no directory); a
          // requested cwd is not honoured (agents get a directory per session, docs/limits.md#agents).
          workspaceCwd: ctx.runner.workspaceOf?.(uri) ?? '/',
          attached,
          createdAt: entry.createdAt,
          hasActivePrompt: turnRunning(uri),
          eventEpoch: log.epoch,
        });
      });

      ctx.http.add('DELETE', '/session/{sessionId}', async (_req, res, hc) => {
        const session = requireSession(hc.principal, hc.params['sessionId']!);
        // Closing a session deletes it: the owner or an admin only, as on every surface (checked at the door).
        const closed = await ctx.hub.enter({ op: 'disposeSession', principal: hc.principal, uri: session, as: 'closeQwenSession' });
        if (closed.outcome === 'rejected') {
          if (closed.kind === 'permission_denied') throw qwenError(closed.kind, closed.message);
          if (closed.kind === 'session_not_found') throw qwenError('session_not_found', `no session ${hc.params['sessionId']}`);
          throw protocolErrorOf(closed);
        }
        sendNoContent(res);
      });

      // ─── Prompts ──────────────────────────────────────────────────────────────
      ctx.http.add('POST', '/session/{sessionId}/prompt', async (req, res, hc) => {
        const body = await readJsonBody(req);
        const session = requireSession(hc.principal, hc.params['sessionId']!);
        requireWriter(hc.principal, 'prompt');
        let text: string;
        try {
          text = parsePrompt(body, ctx.newId).text;
        } catch (err) {
          if (err instanceof ProtocolError) throw qwenError(err.kind, err.message);
          throw err;
        }
        defaultChatOf(session);
        const log = logOf(session);
        const promptId = ctx.newId();
        const accepted = { promptId, lastEventId: log.headId, eventEpoch: log.epoch };
        const running = turnRunning(session);
        if (running || log.queue.length > 0) {
          // As in qwen serve, the bound counts every prompt not yet finished: the running turn too.
          const pendingCount = log.queue.length + (running ? 1 : 0);
          if (pendingCount >= maxPending) {
            res.setHeader('Retry-After', '5');
            // Written out rather than a ProtocolError: the queue figures follow `message` on the wire.
            sendJsonAs(res, 'prompt_queue_full', {
              error: `prompt queue full: ${pendingCount} prompts of this session are not finished yet`,
              code: 'prompt_queue_full',
              message: `at most ${maxPending} prompts may be pending per session (the running one included)`,
              sessionId: log.sessionId,
              limit: maxPending,
              pendingCount,
            });
            return;
          }
          const principal = hc.principal;
          log.notePrompt(promptId);
          const queuedAt = ctx.now();
          log.queue.push({ promptId, text, queuedAt, start: () => startPrompt(principal, session, log, promptId, text, queuedAt) });
          sendAccepted(res, { ...accepted, queued: true });
          return;
        }
        await startPrompt(hc.principal, session, log, promptId, text, ctx.now());
        sendAccepted(res, accepted);
      });

      ctx.http.add('POST', '/session/{sessionId}/cancel', async (_req, res, hc) => {
        const session = requireSession(hc.principal, hc.params['sessionId']!);
        requireWriter(hc.principal, 'cancel');
        logs.get(session)?.cancelQueued();
        const chat = ctx.hub.defaultChatOf(session);
        const turn = chat ? ctx.hub.chatEntry(chat)?.state.activeTurn : undefined;
        if (chat && turn) {
          // A turn that ended meanwhile is not an error: there is nothing left to cancel.
          const cancelled = await ctx.hub.enter({
            op: 'dispatch',
            by: { from: 'principal', principal: hc.principal },
            channel: chat,
            action: { type: 'chat/turnCancelled', turnId: turn.id, duration: turnDuration(turn.startedAt, ctx.now()) },
            as: 'cancel',
          });
          if (cancelled.outcome === 'rejected' && cancelled.at !== 'decision') throw protocolErrorOf(cancelled);
        }
        sendNoContent(res);
      });

      // ─── Status, heartbeat, pending prompts (qwen serve 0.24's shapes) ──────────
      ctx.http.add('GET', '/session/{sessionId}/status', (_req, res, hc) => {
        const session = requireSession(hc.principal, hc.params['sessionId']!);
        sendJson(res, sessionStatus(session));
      });

      ctx.http.add('POST', '/session/{sessionId}/heartbeat', (req, res, hc) => {
        const session = requireSession(hc.principal, hc.params['sessionId']!);
        // Presence is not tracked per qwen client here; the heartbeat is acknowledged as qwen does.
        const clientId = headerOf(req.headers['x-qwen-client-id']);
        sendJson(res, { sessionId: sessionIdOf(session), ...(clientId ? { clientId: clientId.slice(0, 200) } : {}), lastSeenAt: ctx.now() });
      });

      ctx.http.add('GET', '/session/{sessionId}/pending-prompts', (_req, res, hc) => {
        const session = requireSession(hc.principal, hc.params['sessionId']!);
        sendJson(res, { pendingPrompts: logs.get(session)?.pendingPrompts() ?? [] });
      });

      /** qwen serve's `DaemonSessionSummary` for a session of this hub. */
      const sessionStatus = (session: string): Record<string, unknown> => {
        const entry = ctx.hub.sessionEntry(session)!;
        const chat = ctx.hub.defaultChatOf(session);
        const state = chat ? ctx.hub.chatEntry(chat)?.state : undefined;
        const pending = registry.pending(session);
        const lastTurn = state?.turns.at(-1);
        const turnError = !state?.activeTurn && lastTurn?.state === 'error' ? lastTurn.error : undefined;
        return {
          sessionId: sessionIdOf(session),
          // The same directory POST /session reports: the agent's own, or "/" when none runs.
          workspaceCwd: ctx.runner.workspaceOf?.(session) ?? '/',
          createdAt: entry.createdAt,
          ...(state?.modifiedAt ? { updatedAt: state.modifiedAt } : {}),
          displayName: entry.state.title,
          clientCount: logs.get(session)?.listenerCount ?? 0,
          hasActivePrompt: turnRunning(session),
          activeWorkState: turnRunning(session) ? 'active' : 'idle',
          hasRunningBackgroundTasks: false,
          isWaitingForPermission: pending.some((it) => it.kind === 'permission'),
          isWaitingForUserQuestion: pending.some((it) => it.kind === 'question'),
          pendingInteractionCount: pending.length,
          hasTurnError: turnError !== undefined,
          ...(turnError ? { turnError: { message: turnError.message, code: turnError.errorType } } : {}),
          pendingInteractions: pending.map((it) => (registry.requestFrame(it) as { params: { data: Record<string, unknown> } }).params.data),
        };
      };

      // ─── Events ───────────────────────────────────────────────────────────────
      ctx.http.add('GET', '/session/{sessionId}/events', (req, res, hc) => {
        const session = requireSession(hc.principal, hc.params['sessionId']!);
        refuseStreamWhileStorageFails(ctx.hub);
        const log = logOf(session);
        if (log.listenerCount >= maxListeners) throw qwenError('too_many_listeners', `at most ${maxListeners} event streams per session`);
        const lastEventId = parseLastEventId(headerOf(req.headers['last-event-id']) ?? hc.url.searchParams.get('lastEventId') ?? undefined);
        const epoch = headerOf(req.headers['x-qwen-event-epoch']);
        res.setHeader('X-Qwen-Event-Epoch', log.epoch);
        let stop: (() => void) | undefined;
        const sse = openSse(req, res, streams.limits, () => stop?.(), hc.claimStream());
        // Replay and attach in one synchronous step: nothing can be published in between.
        const replay = lastEventId === undefined ? undefined : log.framesAfter(lastEventId, epoch);
        if (replay) {
          for (const frame of replay) sse.write(frame.text);
        } else {
          if (lastEventId !== undefined) {
            sse.write(
              qwenSseMessage(undefined, 'state_resync_required', {
                // As qwen serve: another epoch's token, or an id past this log's head (a cursor from
                // another history: a restarted hub, a data dir restored from a backup), is an
                // epoch reset; an id older than the buffer is a gap in this epoch.
                ...resyncReason(lastEventId, epoch, log),
                lastDeliveredId: lastEventId,
                earliestAvailableId: log.earliestAvailableId,
              }),
            );
          }
          // What is still pending, so a late listener can answer it.
          for (const it of registry.announced(session)) {
            const frame = (registry.requestFrame(it) as { params: { data: Record<string, unknown> } }).params.data;
            sse.write(qwenSseMessage(undefined, 'permission_request', frame));
          }
        }
        if (sse.closed) return;
        stop = log.listen((frame: QwenFrame) => {
          sse.write(frame.text);
          if (frame.type === 'session_closed') sse.close();
        });
        if (log.closed) sse.close();
      });

      // ─── Session-less permission reply ────────────────────────────────────────
      ctx.http.add('POST', '/permission/{requestId}', async (req, res, hc) => {
        const body = await readJsonBody(req);
        if (!interactions.repliesEnabled) throw qwenError('daemon_permission_unavailable', 'permission replies are not enabled on this hub');
        const badId = checkPermissionRequestId(hc.params['requestId'], 'requestId');
        if (badId) throw replyHttpError(badId);
        const reply = parseQwen(body);
        if (isParamError(reply)) throw replyHttpError(reply);
        const requestId = hc.params['requestId']!;
        // Who may answer at all comes first: a viewer gets 403, never a 409 naming sessions (issue 33.5c).
        requireWriter(hc.principal, 'answerPermission');
        // Only sessions the caller may see are candidates (and only those are named back).
        const candidates = registry.sessionsWithPending(requestId).filter((uri) => ctx.hub.visibleSession(hc.principal, uri));
        if (candidates.length > 1) {
          throw new ProtocolError('ambiguous_request_id', `${candidates.length} sessions have a pending request with this id; answer it on /session/{sessionId}/permission/{requestId}`, {
            sessions: candidates.slice(0, 20).map((uri) => sessionIdOf(uri)),
          });
        }
        const session = candidates[0];
        if (session) {
          const result = await registry.reply(hc.principal, session, requestId, reply);
          if (result.kind === 'accepted') return sendJson(res, { accepted: true });
          if (result.kind === 'error') throw replyHttpError({ kind: result.code, message: result.message });
        }
        throw qwenError('permission_request_not_found', 'no pending permission request with that id (unknown, already resolved or expired)');
      });

      return {
        close() {
          for (const [uri, log] of logs) streams.detach(uri, log.streamListener);
          logs.clear();
        },
      };
    },
  };
}

export const qwenServeFeature: Feature = createQwenServeFeature();

function headerOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function resyncReason(lastEventId: number, epoch: string | undefined, log: QwenSessionLog): { reason: string; detail?: string } {
  if (epoch !== undefined && epoch !== log.epoch) return { reason: 'epoch_reset', detail: 'epoch_mismatch' };
  return lastEventId > log.headId ? { reason: 'epoch_reset' } : { reason: 'replay_window_exceeded' };
}

/** A numeric `Last-Event-ID`; anything else is treated as absent (a fresh listener). */
function parseLastEventId(raw: string | undefined): number | undefined {
  if (raw === undefined || !/^\d{1,15}$/.test(raw.trim())) return undefined;
  return Number(raw.trim());
}
