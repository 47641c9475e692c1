/**
 * AHP 1.1 windowed delivery, for subscriptions that opt in with `subscribe.flowControl`.
 *
 * Such a subscription is held in the channel's fan-out by a `WindowedReceiver`: a `Connection` of
 * its own that the fan-out sends the channel's JSON-RPC messages to, exactly as it would to the
 * socket (so durability, order, merging and echoes are unchanged). The receiver cuts each
 * message into `channel/frame` fragments of at most `maximumFrameBytes` and sends them on the
 * real connection while the client's credit lasts: at most `windowBytes` sent and not yet
 * consumed (`channel/credit` carries the cumulative consumed bytes). Sizes are UTF-16 bytes of
 * the message text, 2 per code unit; a fragment never ends inside a surrogate pair. One
 * `WindowedLink` per connection sends one fragment per ready subscription in turn, so windowed
 * subscriptions interleave. Ordinary subscriptions never meet any of this.
 *
 * Bounded: at most `MAX_WINDOWED_PER_CONNECTION` windowed subscriptions per connection; all of
 * a connection's windows together hold at most its unsent bound (`maxBufferedBytes`) of messages
 * waiting for credit, and a message over the client's `maximumMessageBytes` cannot be sent:
 * either way the subscription ends with `channel/reset` (the client may subscribe again). What
 * waits counts as the connection's unsent data in the per-principal and per-tenant budgets
 * (`unsentOf`), and frames go out through `sendOrCloseSlow` like everything else.
 */
import { ProtocolError } from '../../shared/protocol/errors.js';
import { ChannelMethod, type ReceiveLimits } from '../../shared/protocol/messages-1-1.js';
import type { Connection } from './connection.js';
import { sendOrCloseSlow, type FanoutLimits } from './fanout.js';
import { encodeNotification } from './envelope-text.js';
import { countHeldUnsent, unsentOf } from './lag-queue.js';

export const MAX_WINDOWED_PER_CONNECTION = 64;
/** Smallest window and fragment the hub accepts (8 UTF-16 code units). */
export const MIN_WINDOW_BYTES = 16;
/** What the hub grants at most, whatever the client asks. */
const MAX_GRANTED: ReceiveLimits = { windowBytes: 16 * 1024 * 1024, maximumFrameBytes: 256 * 1024, maximumMessageBytes: 64 * 1024 * 1024 };
/**
 * The host's own receive limits, advertised as upstream's result shape asks. The hub takes no
 * framed client messages (clients send ordinary `dispatchAction`), so these bound nothing yet.
 */
export const HOST_RECEIVE: ReceiveLimits = { windowBytes: 1024 * 1024, maximumFrameBytes: 64 * 1024, maximumMessageBytes: 1024 * 1024 };

/** The client's receive limits as the hub will honour them: never larger than asked. */
export function grantLimits(asked: ReceiveLimits): ReceiveLimits {
  const windowBytes = Math.min(asked.windowBytes, MAX_GRANTED.windowBytes);
  const maximumFrameBytes = Math.min(asked.maximumFrameBytes, windowBytes, MAX_GRANTED.maximumFrameBytes);
  if (windowBytes < MIN_WINDOW_BYTES || maximumFrameBytes < MIN_WINDOW_BYTES) {
    throw new ProtocolError('invalid_params', `flowControl.receive: windowBytes and maximumFrameBytes must be at least ${MIN_WINDOW_BYTES} (UTF-16 bytes, 2 per code unit)`);
  }
  return { windowBytes, maximumFrameBytes, maximumMessageBytes: Math.min(asked.maximumMessageBytes, MAX_GRANTED.maximumMessageBytes) };
}

interface Outgoing {
  readonly text: string;
  /** Framed and charged against the window (messages), or sent as is (ready, reset). */
  readonly framed: boolean;
}

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

export class WindowedReceiver implements Connection {
  readonly id: string;
  readonly #queue: Outgoing[] = [];
  #offset = 0;
  #queuedChars = 0;
  #sentBytes = 0;
  #consumedBytes = 0;
  #started = false;
  #ended = false;

  constructor(
    readonly link: WindowedLink,
    readonly channel: string,
    readonly limits: ReceiveLimits,
  ) {
    this.id = `${link.conn.id}#${channel}`;
    this.#queue.push({ text: encodeNotification(ChannelMethod.Ready, { channel }), framed: false });
  }

  /** The fan-out never queues for a receiver: it holds its own bounded queue. */
  get bufferedAmount(): number {
    return 0;
  }

  get isOpen(): boolean {
    return !this.#ended && this.link.conn.isOpen !== false;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Cumulative UTF-16 bytes of frame data sent so far. */
  get sentBytes(): number {
    return this.#sentBytes;
  }

  /** One whole JSON-RPC message for this channel, from the fan-out (or a recovery). */
  send(text: string): void {
    if (this.#ended) return;
    if (text.length * 2 > this.limits.maximumMessageBytes) return this.link.reset(this, 'messageTooLarge');
    // One bound for all of a connection's windows together, and its unsent budgets count them.
    if (this.link.queuedChars + text.length > this.link.fanoutLimits.maxBufferedBytes) return this.link.reset(this, 'overflow');
    this.#queue.push({ text, framed: true });
    this.#queued(text.length);
    this.link.conn.unsentBudget?.note(this.link.conn, unsentOf(this.link.conn));
    if (this.#started) this.link.schedule();
  }

  /** The fan-out closes a receiver only as a slow consumer: that ends the subscription. */
  close(): void {
    this.link.reset(this, 'overflow');
  }

  /** Bootstrap is over (the subscribe answer is out): `channel/ready`, then whatever waited. */
  start(): void {
    if (this.#started || this.#ended) return;
    this.#started = true;
    this.link.schedule();
  }

  /** `channel/credit`: cumulative; older or equal positions change nothing. */
  credit(consumedBytes: number): void {
    if (consumedBytes > this.#sentBytes) {
      throw new ProtocolError('invalid_params', `channel/credit: consumedBytes ${consumedBytes} is past the ${this.#sentBytes} bytes sent on ${this.channel}`);
    }
    if (consumedBytes <= this.#consumedBytes) return;
    this.#consumedBytes = consumedBytes;
    this.link.schedule();
  }

  /** Drops what waits; the caller sends `channel/reset`. */
  end(): void {
    this.#ended = true;
    this.#queue.length = 0;
    this.#queued(-this.#queuedChars);
  }

  #queued(chars: number): void {
    this.#queuedChars += chars;
    this.link.queuedChars += chars;
  }

  /** Sends one fragment (or one control message) when there is one and credit allows it. */
  sendOne(): boolean {
    if (!this.#started || this.#ended) return false;
    const head = this.#queue[0];
    if (!head) return false;
    if (!head.framed) {
      this.#queue.shift();
      sendOrCloseSlow(this.link.conn, head.text, this.link.fanoutLimits);
      return true;
    }
    const remaining = head.text.length - this.#offset;
    const free = Math.floor((this.limits.windowBytes - (this.#sentBytes - this.#consumedBytes)) / 2);
    let units = Math.min(remaining, Math.floor(this.limits.maximumFrameBytes / 2), free);
    if (units < remaining && units > 0 && isHighSurrogate(head.text.charCodeAt(this.#offset + units - 1))) units--;
    if (units <= 0) return false;
    const data = head.text.slice(this.#offset, this.#offset + units);
    this.#offset += units;
    this.#sentBytes += units * 2;
    const final = this.#offset === head.text.length;
    if (final) {
      this.#queue.shift();
      this.#queued(-head.text.length);
      this.#offset = 0;
    }
    sendOrCloseSlow(this.link.conn, encodeNotification(ChannelMethod.Frame, { channel: this.channel, data, final }), this.link.fanoutLimits);
    return true;
  }
}

/** A connection's windowed subscriptions, sent in turn. */
export class WindowedLink {
  readonly receivers = new Map<string, WindowedReceiver>();
  /** Message characters all of this connection's windows hold, waiting for credit. */
  queuedChars = 0;
  #pumping = false;
  #scheduled = false;

  constructor(
    readonly conn: Connection,
    readonly fanoutLimits: FanoutLimits,
    /** Called once a receiver ended (reset): the owner unsubscribes it from the hub. */
    private readonly ended: (receiver: WindowedReceiver, reason: string) => void,
  ) {
    countHeldUnsent(conn, () => this.queuedChars);
  }

  open(channel: string, limits: ReceiveLimits): WindowedReceiver {
    if (!this.receivers.has(channel) && this.receivers.size >= MAX_WINDOWED_PER_CONNECTION) {
      throw new ProtocolError('limit_exceeded', `at most ${MAX_WINDOWED_PER_CONNECTION} windowed subscriptions per connection`);
    }
    const receiver = new WindowedReceiver(this, channel, limits);
    this.receivers.set(channel, receiver);
    return receiver;
  }

  remove(receiver: WindowedReceiver): void {
    if (this.receivers.get(receiver.channel) === receiver) this.receivers.delete(receiver.channel);
    receiver.end();
  }

  /** Ends a windowed subscription: nothing more is framed for it; the client is told why. */
  reset(receiver: WindowedReceiver, reason: string): void {
    if (receiver.ended) return;
    this.remove(receiver);
    sendOrCloseSlow(this.conn, encodeNotification(ChannelMethod.Reset, { channel: receiver.channel, reason }), this.fanoutLimits);
    // Out of the fan-out's loop that may be calling us.
    queueMicrotask(() => this.ended(receiver, reason));
  }

  /**
   * Pumps once the current event-loop turn is over, so everything delivered or credited in it is
   * queued first and the subscriptions' fragments interleave (one pump per turn, whatever woke it).
   */
  schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.pump();
    });
  }

  /** One fragment per ready subscription in turn, until none can send. */
  pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      for (let progress = true; progress; ) {
        progress = false;
        for (const receiver of this.receivers.values()) if (receiver.sendOne()) progress = true;
      }
    } finally {
      this.#pumping = false;
    }
  }
}
