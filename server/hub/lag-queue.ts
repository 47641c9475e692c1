/**
 * What the hub holds for a receiver that has fallen behind, instead of writing more into a socket
 * it is not reading.
 *
 * Once more than `lagBytes` sit unsent in a connection's socket, later frames for it wait here, in
 * order, and go out as the socket drains. While they wait, a streaming envelope (`chat/delta`,
 * `chat/reasoning`) that continues the one queued just before it is merged into it
 * (`mergeStreamingEnvelopes`: applying the merged envelope gives the same state, it carries the
 * later serverSeq). A tab that renders a long answer slower than the agent writes it then receives
 * the text it missed in a few large envelopes rather than tens of thousands of small ones, and the
 * bytes waiting for it grow with the text, not with the number of deltas.
 *
 * The slow-consumer bound is unchanged: unsent bytes in the socket plus the characters queued here
 * may not exceed `maxBufferedBytes`, or the connection is closed with 4008 as before.
 */
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { CloseCode, type Connection } from './connection.js';

export interface LagLimits {
  readonly maxBufferedBytes: number;
  /** Unsent socket bytes beyond which frames wait (and streaming envelopes merge) in the hub. */
  readonly lagBytes?: number;
}

/** Merges `next` into `prev` when applying the result equals applying both; undefined otherwise. */
export type EnvelopeMerge = (prev: ActionEnvelope, next: ActionEnvelope) => ActionEnvelope | undefined;

interface QueuedFrame {
  text: string | undefined;
  /** Set for an envelope this receiver may get merged with its neighbours (it is not its origin). */
  envelope: ActionEnvelope | undefined;
  chars: number;
  /** Of a frame merged before: the characters its streamed text takes inside `chars` (see `push`). */
  textChars?: number;
}

/** The streamed text of a mergeable envelope (`chat/delta`, `chat/reasoning`), else undefined. */
function streamedText(envelope: ActionEnvelope): string | undefined {
  const content = (envelope.action as { content?: unknown }).content;
  return typeof content === 'string' ? content : undefined;
}

/** Characters a string takes inside a JSON string literal, quotes excluded. */
function escapedLength(text: string): number {
  return JSON.stringify(text).length - 2;
}

/** How often a lagging connection's socket is looked at again (also when it reports draining, as a fallback). */
const DRAIN_POLL_MS = 5;

export function lagBytesOf(limits: LagLimits): number {
  return limits.lagBytes ?? Math.min(256 * 1024, Math.floor(limits.maxBufferedBytes / 4));
}

class LagQueue {
  readonly #frames: QueuedFrame[] = [];
  #chars = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** A drain listener is registered on the connection (one at a time). */
  #listening = false;

  constructor(
    private readonly conn: Connection,
    private readonly limits: LagLimits,
    private readonly encode: (envelope: ActionEnvelope) => string,
    private readonly merge: EnvelopeMerge,
    private readonly forget: () => void,
  ) {}

  /** Characters waiting here. */
  get chars(): number {
    return this.#chars;
  }

  push(text: string, envelope: ActionEnvelope | undefined): void {
    const last = this.#frames[this.#frames.length - 1];
    const merged = envelope && last?.envelope ? this.merge(last.envelope, envelope) : undefined;
    if (merged && last) {
      const { chars, textChars } = this.#mergedSize(last, envelope!, merged);
      this.#chars += chars - last.chars;
      last.envelope = merged;
      last.text = undefined;
      last.chars = chars;
      last.textChars = textChars;
    } else {
      this.#frames.push({ text, envelope, chars: text.length });
      this.#chars += text.length;
    }
    if (this.conn.bufferedAmount + this.#chars > this.limits.maxBufferedBytes) {
      this.#drop();
      this.conn.close(CloseCode.SlowConsumer, 'slow consumer: reconnect and resume');
      return;
    }
    if (!this.#timer) this.#schedule();
  }

  /**
   * The encoded size of `merged` without encoding its whole text again: a lagging tab's merged
   * delta grows with every delta it misses, and encoding it per merge made catching up quadratic.
   * JSON escapes each character on its own, so the merged text's encoded length is the sum of
   * the two parts' (a surrogate pair split across them is counted a few characters high, never
   * low); the rest of the envelope is encoded with an empty text. Any other merge shape is encoded whole.
   */
  #mergedSize(last: QueuedFrame, next: ActionEnvelope, merged: ActionEnvelope): { chars: number; textChars?: number } {
    const before = streamedText(last.envelope!);
    const added = streamedText(next);
    const whole = streamedText(merged);
    if (before === undefined || added === undefined || whole === undefined || whole.length !== before.length + added.length) {
      return { chars: this.encode(merged).length };
    }
    const textChars = (last.textChars ?? escapedLength(before)) + escapedLength(added);
    const withoutText = this.encode({ ...merged, action: { ...merged.action, content: '' } }).length;
    return { chars: withoutText + textChars, textChars };
  }

  /** Drains when the socket says it has written what it held, or after `DRAIN_POLL_MS` at the latest. */
  #schedule(): void {
    this.#timer = setTimeout(() => this.#drain(), DRAIN_POLL_MS).unref();
    if (this.#listening || !this.conn.whenDrained) return;
    this.#listening = true;
    this.conn.whenDrained(() => {
      this.#listening = false;
      if (this.#frames.length > 0) this.#drain();
    });
  }

  #drain(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.conn.isOpen === false) {
      this.#drop();
      return;
    }
    const lagBytes = lagBytesOf(this.limits);
    let sent = 0;
    while (sent < this.#frames.length && this.conn.bufferedAmount <= lagBytes) {
      const frame = this.#frames[sent++]!;
      this.#chars -= frame.chars;
      this.conn.send(frame.text ?? this.encode(frame.envelope!));
    }
    this.#frames.splice(0, sent);
    if (this.#frames.length === 0) this.#drop();
    else this.#schedule();
  }

  #drop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#frames.length = 0;
    this.#chars = 0;
    this.forget();
  }
}

const lagging = new WeakMap<Connection, LagQueue>();

/**
 * Sends `text` now, or queues it behind what this lagging connection has not been sent yet
 * (merging `envelope` when given), or closes the connection as a slow consumer.
 */
export function sendOrQueue(conn: Connection, text: string, limits: LagLimits, encode: (envelope: ActionEnvelope) => string, merge: EnvelopeMerge, envelope?: ActionEnvelope): void {
  let queue = lagging.get(conn);
  if (!queue) {
    const unsent = conn.bufferedAmount;
    if (unsent > limits.maxBufferedBytes) {
      conn.close(CloseCode.SlowConsumer, 'slow consumer: reconnect and resume');
      return;
    }
    if (unsent <= lagBytesOf(limits)) {
      conn.send(text);
      conn.unsentBudget?.note(conn, unsent + text.length);
      return;
    }
    queue = startLagging(conn, limits, encode, merge);
  }
  queue.push(text, envelope);
  conn.unsentBudget?.note(conn, unsentOf(conn));
}

/**
 * The lag queue of a connection that has just fallen behind. Its own function: a closure over
 * `conn` inside `sendOrQueue` would make every call allocate a context for it (40 bytes per
 * receiver per envelope, issue 32), lagging or not.
 */
function startLagging(conn: Connection, limits: LagLimits, encode: (envelope: ActionEnvelope) => string, merge: EnvelopeMerge): LagQueue {
  const queue = new LagQueue(conn, limits, encode, merge, () => lagging.delete(conn));
  lagging.set(conn, queue);
  return queue;
}

/** What `conn` holds unsent now: bytes in its socket plus characters waiting in its lag queue. */
export function unsentOf(conn: Connection): number {
  return conn.bufferedAmount + (lagging.get(conn)?.chars ?? 0) + (heldElsewhere.get(conn)?.() ?? 0);
}

/** What the hub holds for a connection outside its lag queue (AHP 1.1 windows waiting for credit). */
const heldElsewhere = new WeakMap<Connection, () => number>();

/** Counts what `held` reports as unsent data of `conn`, in its unsent budgets too. */
export function countHeldUnsent(conn: Connection, held: () => number): void {
  heldElsewhere.set(conn, held);
}
