/**
 * Headless mode: one `-p` query on a hub session, NDJSON records on stdout, optional NDJSON
 * control frames on stdin (steer / input_status / cancel).
 *
 * stdout records (stream-json), distinguished by `type`:
 *   {"type":"system","subtype":"init",...}          once, after connecting
 *   {"type":"event","channel","serverSeq","action"}  every hub action on the chat
 *   {"type":"input.ready","capabilities":{...,"target":{historyEpoch,turnId}}}   (ndjson input only)
 *   {"type":"input.response","id":<frame id|null>,"result":{...}}
 *   {"type":"result",...}                            exactly once, last
 *
 * Control rules (seed 003): stdin is read only after input.ready; frames never start a query;
 * stdin EOF ends control input without cancelling; when the query ends first, reading stops at
 * once and nothing arriving later is answered; reading pauses while stdout is back-pressured.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { AhpAuthError, AhpClient, AhpConnectionError, AhpRequestError, type ChannelView, type ChatState } from '../shared/client/ahp-client.js';
import { inputRefusal, SessionInputs, type InputTarget } from '../shared/client/session-inputs.js';
import { findEndedTurn } from '../shared/state/selectors.js';
import type { RunOptions } from './args.js';
import { parseFrame, type ControlFrame, type FrameId } from './frames.js';
import { LineFramer, MAX_LINE_UNITS } from './line-framer.js';

/**
 * Exit codes. A cancelled query exits 130 however it was cancelled (control frame, SIGINT, another
 * client); 3 means the hub refused the token (missing or invalid), so retrying will not help.
 */
export const EXIT = { success: 0, error: 1, usage: 2, unauthorized: 3, cancelled: 130 } as const;

export interface HeadlessIo {
  readonly stdin: NodeJS.ReadableStream & { destroy?(): void; pause(): unknown; resume(): unknown };
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  /** Registers a SIGINT handler; returns an unregister function. */
  onInterrupt(handler: () => void): () => void;
}

type TurnOutcome = { state: 'complete' | 'cancelled' | 'error' | 'lost'; turn?: ChatState['turns'][number]; message?: string };

export async function runHeadless(options: RunOptions, io: HeadlessIo): Promise<number> {
  const stream = options.outputFormat === 'stream-json';
  let finished = false;
  const write = (record: Record<string, unknown>): boolean => {
    if (finished || !stream) return true;
    return io.stdout.write(JSON.stringify(record) + '\n');
  };
  const startedAt = Date.now();
  const client = new AhpClient({
    url: options.url,
    createSocket: (u) => new WebSocket(u),
    ...(options.token !== undefined && { token: options.token }),
    reconnect: false,
    clientInfo: { name: 'ahp-hub-cli' },
  });
  const finish = (code: number, result: Record<string, unknown>, text?: string): number => {
    const record = { type: 'result', ...result, duration_ms: Date.now() - startedAt, exit_code: code };
    if (stream) write(record);
    else if (options.outputFormat === 'json') io.stdout.write(JSON.stringify(record) + '\n');
    else if (text !== undefined) io.stdout.write(text.endsWith('\n') || text === '' ? text : text + '\n');
    else io.stderr.write(`${String(result['message'] ?? result['subtype'])}\n`);
    finished = true;
    return code;
  };

  let session = options.session;
  let view: ChannelView<ChatState>;
  let turnId: string;
  let stopInput = (): Promise<void> => Promise.resolve();
  try {
    await client.connect();
    let defaultChat: string | undefined;
    try {
      const s = await client.subscribe(session as `ahp-session:/${string}`);
      defaultChat = s.state.defaultChat;
    } catch (err) {
      if (!(err instanceof AhpRequestError && err.kind === 'session_not_found')) throw err;
      const created = await client.createSession({ session, title: options.prompt.slice(0, 80) });
      session = created.session;
      defaultChat = created.defaultChat;
    }
    if (!defaultChat) return finish(EXIT.error, { subtype: 'error', is_error: true, code: 'no_default_chat', message: `session ${session} has no default chat` });
    view = await client.subscribe(defaultChat as `ahp-chat:/${string}`);
    write({ type: 'system', subtype: 'init', session, chat: defaultChat, url: options.url, inputFormat: options.inputFormat });
    view.onChange((_v, change) => {
      if (change.type === 'envelope') {
        const e = change.envelope;
        write({ type: 'event', channel: e.channel, serverSeq: e.serverSeq, action: e.action, ...(e.origin ? { origin: e.origin } : {}), ...(e.rejectionReason ? { rejectionReason: e.rejectionReason } : {}) });
      }
    });
    if (view.confirmed.activeTurn) {
      return finish(EXIT.error, {
        subtype: 'error_busy',
        is_error: true,
        session,
        code: 'turn_in_progress',
        message: `a turn (${view.confirmed.activeTurn.id}) is already running in this session; add to it with a steer frame from the client that started it, or wait`,
      });
    }
    turnId = `turn-${randomUUID()}`;
    const ended = waitForTurnEnd(view, turnId);
    const started = await view.dispatch({ type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: { text: options.prompt, origin: { kind: 'user' } } });
    if (!started.accepted) return finish(EXIT.error, { subtype: 'error_turn_rejected', is_error: true, session, code: 'turn_rejected', message: started.reason });

    const cancel = async (): Promise<{ outcome: string; code?: string; message?: string }> => {
      if (!view.confirmed.activeTurn || view.confirmed.activeTurn.id !== turnId) return { outcome: 'rejected', code: 'turn_closed', message: 'the query already ended' };
      const duration = Math.max(0, Date.now() - startedAt);
      const r = await view.dispatch({ type: 'chat/turnCancelled', turnId, duration });
      return r.accepted ? { outcome: 'cancel_requested' } : { outcome: 'rejected', code: 'turn_closed', message: r.reason };
    };
    let interrupts = 0;
    const offInterrupt = io.onInterrupt(() => {
      // First SIGINT cancels the query (and the run ends with the usual cancelled result); a second one gives up waiting.
      if (++interrupts > 1) process.exit(EXIT.cancelled);
      void cancel().catch(() => undefined);
    });

    if (options.inputFormat === 'ndjson') {
      const inputs = new SessionInputs(client, session);
      const caps = await inputs.inputCapabilities();
      const target: InputTarget | null = caps.target && caps.target.turnId === turnId ? caps.target : null;
      write({ type: 'input.ready', capabilities: { ...caps, target }, maxLineLength: MAX_LINE_UNITS });
      stopInput = startControl(
        io,
        write,
        async (frame) => {
          switch (frame.method) {
            case 'steer': {
              const p = frame.params;
              const result = await inputs.submitInput({ inputId: p['inputId'] as string, target: p['target'] as InputTarget, content: p['content'] as { text: string }, ...(p['ack'] !== undefined && { ack: p['ack'] as 'memory' }) });
              return result;
            }
            case 'input_status': {
              try {
                const receipt = await inputs.getInputStatus(frame.params['inputId'] as string, frame.params['target'] as InputTarget);
                return receipt ? { receipt } : { receipt: null, outcome: 'rejected', code: 'input_not_found', message: 'no receipt for this input and target in the retention window' };
              } catch (err) {
                const refusal = inputRefusal(err);
                if (refusal) return refusal;
                throw err;
              }
            }
            case 'cancel':
              return cancel();
          }
        },
        () => finished,
      );
    }

    const outcome = await ended;
    // Stop reading; a frame already being handled (e.g. the cancel that ended the query) is still answered before the result.
    await stopInput();
    offInterrupt();
    const text = outcome.turn ? finalText(outcome.turn) : '';
    const base = { session, turnId, state: outcome.state, result: text, ...(outcome.turn?.usage ? { usage: outcome.turn.usage } : {}) };
    switch (outcome.state) {
      case 'complete':
        return finish(EXIT.success, { subtype: 'success', is_error: false, ...base }, text);
      case 'cancelled':
        return finish(EXIT.cancelled, { subtype: 'cancelled', is_error: true, ...base, message: 'the query was cancelled' }, text);
      case 'error':
        return finish(EXIT.error, { subtype: 'error', is_error: true, ...base, message: outcome.message ?? 'the query failed' }, text);
      default:
        return finish(EXIT.error, { subtype: 'error', is_error: true, ...base, message: outcome.message ?? 'the query was lost' }, text);
    }
  } catch (err) {
    await stopInput();
    if (err instanceof AhpAuthError) {
      // An OpenID access token refused by name (expired, wrong audience…): say which, in the hub's words.
      if (err.code?.startsWith('token_') && err.reason) return finish(EXIT.unauthorized, { subtype: 'error', is_error: true, session, code: err.code, message: `${err.reason} (${err.code})` });
      return finish(EXIT.unauthorized, { subtype: 'error', is_error: true, session, code: 'unauthorized', message: `token missing or invalid: pass --token or set AHP_TOKEN to a token from the hub's token file` });
    }
    if (err instanceof AhpConnectionError && !client.initializeResult) {
      return finish(EXIT.error, { subtype: 'error', is_error: true, session, code: 'connection_failed', message: `cannot connect to the hub at ${options.url.split('?')[0]}: check that it is running and that --url is right` });
    }
    const code = err instanceof AhpRequestError ? ((err.data as { code?: string } | undefined)?.code ?? `rpc_${err.code}`) : 'connection_failed';
    return finish(EXIT.error, { subtype: 'error', is_error: true, session, code, message: err instanceof Error ? err.message : String(err) });
  } finally {
    client.close();
  }
}

function waitForTurnEnd(view: ChannelView<ChatState>, turnId: string): Promise<TurnOutcome> {
  return new Promise((resolve) => {
    let seen = false;
    const check = (): boolean => {
      const state = view.confirmed;
      if (state.activeTurn?.id === turnId) seen = true;
      const turn = findEndedTurn(state, turnId);
      if (turn) {
        const errorPart = turn.responseParts.find((p) => p.kind === 'error') as { error?: { message?: string } } | undefined;
        const message = turn.error?.message ?? errorPart?.error?.message;
        resolve({ state: turn.state, turn, ...(message !== undefined && { message }) });
        return true;
      }
      if (seen && !state.activeTurn) {
        resolve({ state: 'lost', message: 'the turn disappeared from the chat (history was replaced)' });
        return true;
      }
      return false;
    };
    const off = view.onChange((_v, change) => {
      if (change.type === 'ended') {
        off();
        resolve({ state: 'lost', message: `the chat subscription ended: ${change.reason}` });
        return;
      }
      if (check()) off();
    });
  });
}

function finalText(turn: ChatState['turns'][number]): string {
  return turn.responseParts
    .filter((p): p is typeof p & { kind: 'markdown'; content: string } => p.kind === 'markdown' && typeof (p as { content?: unknown }).content === 'string')
    .map((p) => p.content)
    .join('\n\n');
}

/**
 * Reads control frames from stdin and answers them in order, one at a time. Returns a function
 * that stops reading for good (called when the query ends): frames not yet started are dropped
 * unanswered; it resolves once the frame being handled (if any) has been answered.
 */
export function startControl(io: HeadlessIo, write: (record: Record<string, unknown>) => boolean, handle: (frame: ControlFrame) => Promise<unknown>, isFinished: () => boolean): () => Promise<void> {
  const framer = new LineFramer(MAX_LINE_UNITS);
  const queue: Array<{ frame?: ControlFrame; reject?: { id: FrameId | null; code: string; message: string; limit?: number } }> = [];
  let pumping: Promise<void> | undefined;
  let stopped = false;
  let waitingDrain = false;
  const respond = (id: FrameId | null, result: unknown): void => {
    if (isFinished()) return;
    if (!write({ type: 'input.response', id, result }) && !waitingDrain) {
      // Back-pressure: stop reading stdin until stdout drains.
      waitingDrain = true;
      io.stdin.pause();
      io.stdout.once('drain', () => {
        waitingDrain = false;
        if (!stopped) io.stdin.resume();
      });
    }
  };
  const pump = (): void => {
    pumping ??= drain().finally(() => (pumping = undefined));
  };
  const drain = async (): Promise<void> => {
    while (queue.length > 0 && !stopped) {
      const item = queue.shift()!;
      if (item.reject) {
        const { id, ...rest } = item.reject;
        respond(id, { outcome: 'rejected', ...rest });
        continue;
      }
      const frame = item.frame!;
      try {
        respond(frame.id, await handle(frame));
      } catch (err) {
        const data = err instanceof AhpRequestError ? (err.data as { code?: string } | undefined) : undefined;
        respond(frame.id, { outcome: 'error', code: data?.code ?? 'request_failed', message: err instanceof Error ? err.message : String(err) });
      }
    }
  };
  const enqueue = (events: ReturnType<LineFramer['push']>): void => {
    for (const e of events) {
      if (e.kind === 'oversized') {
        queue.push({ reject: { id: null, code: 'frame_too_large', message: `the line has ${e.length} UTF-16 code units; the limit is ${MAX_LINE_UNITS}`, limit: MAX_LINE_UNITS } });
        continue;
      }
      const parsed = parseFrame(e.line);
      if (parsed.ok) queue.push({ frame: parsed.frame });
      else queue.push({ reject: parsed.rejection });
    }
    pump();
  };
  const onData = (chunk: Buffer | string): void => {
    if (!stopped) enqueue(framer.push(chunk));
  };
  const onEnd = (): void => {
    // EOF ends control input only; the query keeps running.
    if (!stopped) enqueue(framer.end());
  };
  io.stdin.on('data', onData);
  io.stdin.on('end', onEnd);
  io.stdin.on('error', () => undefined);
  io.stdin.resume();
  return async () => {
    if (!stopped) {
      stopped = true;
      queue.length = 0;
      io.stdin.off('data', onData);
      io.stdin.off('end', onEnd);
      io.stdin.pause();
      io.stdin.destroy?.();
    }
    await pumping;
  };
}
