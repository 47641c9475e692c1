/**
 * Per-session Server-Sent-Event streams: a bounded buffer of recent events (for `Last-Event-ID`
 * resumption) and the listeners currently attached (SSE responses, prompt streams).
 *
 * Event ids are `<epoch>-<n>`: `n` counts up per session stream, `epoch` is random per stream, so
 * an id from before a restart, from a dropped buffer or from another session is recognised as a
 * gap (the listener then gets what is pending), never misread.
 *
 * Sessions nobody has listened to are not buffered at all: a first listener needs only what is
 * pending (the registry has it), and resumption needs an id some listener received.
 *
 * Everything a client can make us hold is bounded: listeners per session, buffered events per
 * session, sessions with a buffer (least recently used buffers without listeners are dropped),
 * and bytes queued on a listener's socket (a listener that stops reading is disconnected).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { StreamSlot } from '../transport/stream-slots.js';
import { startOk } from '../transport/http-reply.js';

export interface StreamLimits {
  /** SSE/prompt listeners per session. */
  readonly maxListenersPerSession: number;
  /** Events kept per session for `Last-Event-ID` resumption. */
  readonly bufferedEventsPerSession: number;
  /** Sessions whose buffers are kept; the least recently used idle one is dropped beyond this. */
  readonly maxBufferedSessions: number;
  /** Bytes a listener may have queued and unsent before it is disconnected as too slow. */
  readonly maxQueuedBytesPerListener: number;
  /** A listener whose socket has had unsent bytes this long without draining (paused, not reading) is disconnected (ms). */
  readonly maxStalledMs: number;
  /** Comment line sent this often so proxies keep the connection open. */
  readonly heartbeatMs: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  maxListenersPerSession: 64,
  bufferedEventsPerSession: 256,
  maxBufferedSessions: 1_024,
  maxQueuedBytesPerListener: 1024 * 1024,
  maxStalledMs: 30_000,
  heartbeatMs: 15_000,
};

/** One event of a session stream. `chat`/`turnId` let prompt streams pick their turn's events. */
export interface StreamEvent {
  readonly id: string;
  readonly seq: number;
  readonly chat?: string | undefined;
  readonly turnId?: string | undefined;
  /** Internal marker: the turn named by `turnId` ended with this stop reason (prompt streams stop here). */
  readonly turnEnd?: TurnEnd | undefined;
  readonly text: string;
}

export interface TurnEnd {
  readonly stopReason: 'end_turn' | 'cancelled' | 'refusal' | 'error';
  readonly error?: { readonly errorType: string; readonly message: string } | undefined;
}

export interface StreamListener {
  /** The hub's own listener (qwen-serve's per-session log), not a client's stream: not counted in gauges. */
  readonly internal?: boolean;
  deliver(event: StreamEvent): void;
  /** The session went away: finish the response. */
  end(): void;
}

interface SessionStream {
  readonly session: string;
  readonly epoch: string;
  nextSeq: number;
  readonly buffer: StreamEvent[];
  readonly listeners: Set<StreamListener>;
}

export class SessionStreams {
  readonly limits: StreamLimits;
  /** Insertion order = least recently used first (entries are re-inserted on use). */
  readonly #streams = new Map<string, SessionStream>();

  constructor(limits: Partial<StreamLimits> = {}) {
    this.limits = { ...DEFAULT_STREAM_LIMITS, ...limits };
  }

  #stream(session: string): SessionStream {
    let s = this.#streams.get(session);
    if (s) {
      this.#streams.delete(session);
      this.#streams.set(session, s);
      return s;
    }
    s = { session, epoch: randomBytes(4).toString('hex'), nextSeq: 1, buffer: [], listeners: new Set() };
    this.#streams.set(session, s);
    if (this.#streams.size > this.limits.maxBufferedSessions) {
      for (const [uri, candidate] of this.#streams) {
        if (this.#streams.size <= this.limits.maxBufferedSessions) break;
        if (candidate.listeners.size === 0 && candidate !== s) this.#streams.delete(uri);
      }
    }
    return s;
  }

  /** Appends an event to the session's buffer and delivers it to every listener (no-op for sessions never listened to). */
  publish(session: string, event: { chat?: string | undefined; turnId?: string | undefined; turnEnd?: TurnEnd; payload: unknown }): void {
    if (!this.#streams.has(session)) return;
    const s = this.#stream(session);
    const seq = s.nextSeq++;
    const stored: StreamEvent = { chat: event.chat, turnId: event.turnId, turnEnd: event.turnEnd, seq, id: `${s.epoch}-${seq}`, text: JSON.stringify(event.payload) };
    s.buffer.push(stored);
    if (s.buffer.length > this.limits.bufferedEventsPerSession) s.buffer.splice(0, s.buffer.length - this.limits.bufferedEventsPerSession);
    for (const l of [...s.listeners]) l.deliver(stored);
  }

  /** True when the session has a stream (someone listens or listened recently): worth building events for. */
  isStreamed(session: string): boolean {
    return this.#streams.has(session);
  }

  /** Id of the newest event of the session, if any. */
  headId(session: string): string | undefined {
    const s = this.#streams.get(session);
    return s && s.nextSeq > 1 ? `${s.epoch}-${s.nextSeq - 1}` : undefined;
  }

  /**
   * The buffered events after `lastEventId`, or undefined when the id cannot be resumed from
   * (another process epoch, malformed, newer than the head, or older than the buffer).
   */
  eventsAfter(session: string, lastEventId: string): StreamEvent[] | undefined {
    const m = /^([0-9a-f]+)-(\d{1,15})$/.exec(lastEventId.trim());
    const s = this.#streams.get(session);
    if (!m || !s || m[1] !== s.epoch) return undefined;
    const seq = Number(m[2]);
    const head = s.nextSeq - 1;
    if (seq > head) return undefined;
    if (seq === head) return [];
    const oldest = s.buffer[0]?.seq ?? s.nextSeq;
    if (seq < oldest - 1) return undefined;
    return s.buffer.filter((e) => e.seq > seq);
  }

  listenerCount(session: string): number {
    return this.#streams.get(session)?.listeners.size ?? 0;
  }

  /** Client listeners on every session together (metrics; the hub's own listeners are not counted). */
  totalListeners(): number {
    let n = 0;
    for (const s of this.#streams.values()) for (const l of s.listeners) if (!l.internal) n++;
    return n;
  }

  /** Attaches a listener; false when the session already has the maximum number of listeners. */
  attach(session: string, listener: StreamListener): boolean {
    const s = this.#stream(session);
    if (s.listeners.size >= this.limits.maxListenersPerSession) return false;
    s.listeners.add(listener);
    return true;
  }

  detach(session: string, listener: StreamListener): void {
    this.#streams.get(session)?.listeners.delete(listener);
  }

  /** The session was disposed: end every listener and forget its buffer. */
  closeSession(session: string): void {
    const s = this.#streams.get(session);
    if (!s) return;
    this.#streams.delete(session);
    for (const l of [...s.listeners]) l.end();
    s.listeners.clear();
  }

  closeAll(): void {
    for (const session of [...this.#streams.keys()]) this.closeSession(session);
  }
}

/** Formats one SSE message; `id` omitted → the client's last event id is unchanged. */
export function sseMessage(text: string, id?: string): string {
  return id === undefined ? `data: ${text}\n\n` : `id: ${id}\ndata: ${text}\n\n`;
}

/**
 * Starts an SSE response: headers, a heartbeat, and slow-consumer protection. `write` returns
 * false (and closes the response) when the client has fallen too far behind: more than
 * `maxQueuedBytesPerListener` unsent, or unsent bytes that have not drained for `maxStalledMs`.
 * `slot` (the caller's stream slot, `HttpContext.claimStream`) is released when the stream ends.
 */
export function openSse(req: IncomingMessage, res: ServerResponse, limits: StreamLimits, onClose: () => void, slot: StreamSlot): { write(text: string): boolean; close(): void; readonly closed: boolean } {
  startOk(res, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(': connected\n\n');
  let closed = false;
  let stalled: NodeJS.Timeout | undefined;
  const heartbeat = setInterval(() => void write(': ping\n\n'), limits.heartbeatMs);
  heartbeat.unref();
  const finish = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    if (stalled) clearTimeout(stalled);
    slot.release();
    onClose();
  };
  const drop = (): false => {
    finish();
    res.destroy();
    return false;
  };
  res.on('drain', () => {
    if (stalled) clearTimeout(stalled);
    stalled = undefined;
  });
  const write = (text: string): boolean => {
    if (closed) return false;
    if (res.writableLength > limits.maxQueuedBytesPerListener) return drop();
    if (!res.write(text) && !stalled) {
      // Unsent bytes wait for the client to read; one that never does is let go.
      stalled = setTimeout(drop, limits.maxStalledMs);
      stalled.unref();
    }
    return true;
  };
  req.on('close', finish);
  res.on('close', finish);
  return {
    get closed() {
      return closed;
    },
    write,
    close(): void {
      if (closed) return;
      finish();
      res.end();
    },
  };
}
