/**
 * qwen serve's view of a session's events: every frame the interactions feature publishes for the
 * session (ACP `session/update`, permission frames, turn ends) re-framed the way `qwen serve`
 * sends them — `{id, v: 1, type, data, promptId?}` with `id` a per-session integer — and kept in a
 * bounded buffer so a client can resume with a numeric `Last-Event-ID` inside the same epoch.
 *
 * The epoch is a random token per log: a hub restart, or a log dropped because nobody used it,
 * starts a new epoch, so an old `Last-Event-ID` is recognised as unresumable, never misread.
 */
import { randomBytes } from 'node:crypto';
import type { StreamEvent, StreamListener, TurnEnd } from '../interactions/event-stream.js';

export interface QwenFrame {
  readonly id: number | undefined;
  readonly type: string;
  /** The SSE message text (`id:` line included when the frame has an id). */
  readonly text: string;
}

export interface QwenLogLimits {
  /** Frames kept per session for `Last-Event-ID` replay. */
  readonly bufferedFrames: number;
  /** The clock for `_meta.serverTimestamp` (ms). */
  readonly now?: () => number;
}

/** A prompt as `GET /session/{id}/pending-prompts` lists it (qwen serve's `DaemonPendingPromptSummary`). */
export interface PendingPromptSummary {
  readonly promptId: string;
  readonly text: string;
  readonly queuedAt: number;
  readonly state: 'queued' | 'running';
}

/** A running or queued prompt submitted through `POST /session/{id}/prompt`. */
export interface QueuedPrompt {
  readonly promptId: string;
  readonly text: string;
  /** When it was submitted (ms). */
  readonly queuedAt: number;
  readonly start: () => Promise<void>;
}

export class QwenSessionLog {
  readonly epoch = randomBytes(8).toString('hex');
  #nextId = 1;
  readonly #buffer: QwenFrame[] = [];
  readonly #listeners = new Set<(frame: QwenFrame) => void>();
  /** Turn ids that are prompts started through the qwen surface (their frames carry `promptId`). */
  readonly #prompts = new Set<string>();
  /** Prompts waiting for the running turn to end, oldest first. */
  readonly queue: QueuedPrompt[] = [];
  /** The prompt whose turn is running, if it came through the qwen surface. */
  running: Omit<QueuedPrompt, 'start'> | undefined;
  /** Called after a turn of this session ended (the feature starts the next queued prompt). */
  onTurnEnd: (() => void) | undefined;
  /** Called once when the session went away. */
  onClosed: (() => void) | undefined;
  closed = false;

  /** What the interactions streams deliver to this log. */
  readonly streamListener: StreamListener = {
    internal: true,
    deliver: (event) => this.#fromStream(event),
    end: () => this.close('session_disposed'),
  };

  constructor(
    readonly sessionId: string,
    private readonly limits: QwenLogLimits,
  ) {}

  /** Id of the newest frame, 0 before the first one. */
  get headId(): number {
    return this.#nextId - 1;
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }

  notePrompt(promptId: string): void {
    this.#prompts.add(promptId);
    // Prompt ids are only needed while their turn can still produce frames; keep the set bounded.
    if (this.#prompts.size > 1_024) this.#prompts.delete(this.#prompts.values().next().value!);
  }

  /**
   * Frames after `lastEventId`, or undefined when they cannot be replayed: another epoch, an id
   * newer than the head, or older than what the buffer still holds.
   */
  framesAfter(lastEventId: number, epoch: string | undefined): QwenFrame[] | undefined {
    if (epoch !== undefined && epoch !== this.epoch) return undefined;
    if (lastEventId > this.headId) return undefined;
    if (lastEventId < this.earliestAvailableId - 1) return undefined;
    return this.#buffer.filter((f) => f.id !== undefined && f.id > lastEventId);
  }

  /** The id of the oldest frame still buffered (what a resync can resume from). */
  get earliestAvailableId(): number {
    return this.#buffer[0]?.id ?? this.#nextId;
  }

  listen(listener: (frame: QwenFrame) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Appends a frame with the next id and delivers it. */
  publish(type: string, data: Record<string, unknown>, promptId?: string): void {
    if (this.closed) return;
    const id = this.#nextId++;
    const frame: QwenFrame = { id, type, text: qwenSseMessage(id, type, data, promptId, this.limits.now?.() ?? Date.now()) };
    this.#buffer.push(frame);
    if (this.#buffer.length > this.limits.bufferedFrames) this.#buffer.splice(0, this.#buffer.length - this.limits.bufferedFrames);
    for (const l of [...this.#listeners]) l(frame);
  }

  /** The running prompt, then the queued ones, oldest first. */
  pendingPrompts(): PendingPromptSummary[] {
    const out: PendingPromptSummary[] = [];
    if (this.running) out.push({ promptId: this.running.promptId, text: this.running.text, queuedAt: this.running.queuedAt, state: 'running' });
    for (const q of this.queue) out.push({ promptId: q.promptId, text: q.text, queuedAt: q.queuedAt, state: 'queued' });
    return out;
  }

  /** Queued prompts that will not run now end, each with a cancelled `turn_complete`. */
  cancelQueued(): void {
    for (const queued of this.queue.splice(0)) {
      this.publish('prompt_cancelled', { sessionId: this.sessionId }, queued.promptId);
      this.publish('turn_complete', { sessionId: this.sessionId, promptId: queued.promptId, stopReason: 'cancelled' }, queued.promptId);
    }
  }

  /** The session is gone: queued prompts end as cancelled, `session_closed` goes out, listeners end. */
  close(reason: string): void {
    if (this.closed) return;
    this.cancelQueued();
    this.publish('session_closed', { sessionId: this.sessionId, reason });
    this.closed = true;
    this.onClosed?.();
  }

  #fromStream(event: StreamEvent): void {
    let message: { method?: unknown; params?: Record<string, unknown> };
    try {
      message = JSON.parse(event.text) as typeof message;
    } catch {
      return;
    }
    const promptId = event.turnId !== undefined && this.#prompts.has(event.turnId) ? event.turnId : undefined;
    const params = message.params ?? {};
    if (event.turnEnd && event.turnId !== undefined) {
      this.#turnEnded(event.turnId, event.turnEnd, promptId);
      return;
    }
    if (message.method === 'session/update') {
      this.publish('session_update', params, promptId);
    } else if (message.method === '_qwen/notify' && typeof params['kind'] === 'string') {
      const data = params['data'];
      this.publish(params['kind'], typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {}, promptId);
    }
  }

  /** `turn_complete` (end_turn / cancelled / refusal) or `turn_error`, naming the turn as `promptId`. */
  #turnEnded(turnId: string, end: TurnEnd, promptId: string | undefined): void {
    if (end.stopReason === 'error') {
      this.publish(
        'turn_error',
        {
          sessionId: this.sessionId,
          promptId: turnId,
          code: end.error?.errorType ?? 'error',
          message: end.error?.message ?? 'The turn failed.',
        },
        promptId,
      );
    } else {
      // As qwen serve: a cancelled prompt is announced (`prompt_cancelled`) before its turn_complete.
      if (end.stopReason === 'cancelled') this.publish('prompt_cancelled', { sessionId: this.sessionId }, promptId);
      this.publish('turn_complete', { sessionId: this.sessionId, promptId: turnId, stopReason: end.stopReason }, promptId);
    }
    this.#prompts.delete(turnId);
    if (this.running?.promptId === turnId) this.running = undefined;
    this.onTurnEnd?.();
  }
}

/**
 * One qwen SSE message: `id: n` plus `data: {id, v: 1, type, data, promptId?, _meta?}`; no id
 * line when `id` is undefined. `serverTimestamp` (ms) goes into `_meta` as qwen serve sends it.
 */
export function qwenSseMessage(id: number | undefined, type: string, data: Record<string, unknown>, promptId?: string, serverTimestamp?: number): string {
  const frame: Record<string, unknown> = id === undefined ? { v: 1, type, data } : { id, v: 1, type, data };
  if (promptId !== undefined) frame['promptId'] = promptId;
  if (serverTimestamp !== undefined) frame['_meta'] = { serverTimestamp };
  const json = JSON.stringify(frame);
  return id === undefined ? `data: ${json}\n\n` : `id: ${id}\ndata: ${json}\n\n`;
}
