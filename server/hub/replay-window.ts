/**
 * The envelopes most recently delivered, kept in memory so a client that reconnects with a
 * recent `lastSeenServerSeq` gets the actions it missed instead of a snapshot, and a client that
 * re-sends an applied action gets its original echo. Bounded twice: by count and by the encoded
 * size of the envelopes, whichever is hit first.
 */
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { encodeEnvelope } from './envelope-text.js';

interface ReplayEntry {
  readonly envelope: ActionEnvelope;
  /** Length of the encoded envelope, for the size bound. */
  readonly chars: number;
}

export class ReplayWindow {
  readonly #entries: ReplayEntry[] = [];
  #chars = 0;
  /**
   * Per channel, the newest serverSeq trimmed from the window (insertion order = trim order), so
   * a per-channel cursor at or past it is covered exactly. Bounded: past the cap the oldest entry
   * is dropped and `#floor` rises to it (those channels fall back to the window-wide bound).
   */
  readonly #trimmed = new Map<string, number>();
  /** No cursor below this is covered: the seq before the first envelope kept, raised by drops. */
  #floor: number | undefined;

  constructor(
    private readonly maxEntries: number,
    private readonly maxChars: number,
  ) {}

  /** serverSeq of the oldest envelope kept, or undefined when empty. */
  get oldestSeq(): number | undefined {
    return this.#entries[0]?.envelope.serverSeq;
  }

  /** Kept envelopes newer than `afterSeq` on one of `channels`, oldest first. */
  since(afterSeq: number, channels: ReadonlySet<string>): ActionEnvelope[] {
    return this.#entries.filter((e) => e.envelope.serverSeq > afterSeq && channels.has(e.envelope.channel)).map((e) => e.envelope);
  }

  /**
   * Per channel, the kept envelopes newer than that channel's own cursor, oldest first; one pass
   * over the window whatever the number of channels (per-channel reconnect, AHP 1.1).
   */
  sinceEach(cursors: ReadonlyMap<string, number>): Map<string, ActionEnvelope[]> {
    const out = new Map<string, ActionEnvelope[]>();
    for (const channel of cursors.keys()) out.set(channel, []);
    for (const { envelope } of this.#entries) {
      const after = cursors.get(envelope.channel);
      if (after !== undefined && envelope.serverSeq > after) out.get(envelope.channel)!.push(envelope);
    }
    return out;
  }

  /**
   * True when every delivered envelope of `channel` after `afterSeq` is still kept. `deliveredSeq`
   * answers for an empty window (nothing delivered since the process started).
   */
  coversChannel(channel: string, afterSeq: number, deliveredSeq: number): boolean {
    if (this.#floor === undefined) return afterSeq >= deliveredSeq;
    return afterSeq >= this.#floor && afterSeq >= (this.#trimmed.get(channel) ?? -1);
  }

  find(serverSeq: number): ActionEnvelope | undefined {
    return this.#entries.find((e) => e.envelope.serverSeq === serverSeq)?.envelope;
  }

  keep(envelope: ActionEnvelope, text?: string): void {
    const chars = (text ?? encodeEnvelope(envelope)).length;
    this.#floor ??= envelope.serverSeq - 1;
    this.#entries.push({ envelope, chars });
    this.#chars += chars;
    let excess = this.#entries.length - this.maxEntries;
    // Trim in chunks so the array is not shifted on every envelope; the size bound is exact.
    if (excess > Math.max(64, this.maxEntries / 8) || this.#chars > this.maxChars) {
      let kept = this.#chars;
      excess = Math.max(0, excess);
      for (let i = 0; i < excess; i++) kept -= this.#entries[i]!.chars;
      // Past the size bound, trim to 7/8 of it so a full window is not spliced on every envelope.
      if (kept > this.maxChars) {
        while (excess < this.#entries.length && kept > this.maxChars * 0.875) kept -= this.#entries[excess++]!.chars;
      }
      for (let i = 0; i < excess; i++) this.#noteTrimmed(this.#entries[i]!.envelope);
      this.#entries.splice(0, excess);
      this.#chars = kept;
    }
  }

  #noteTrimmed(envelope: ActionEnvelope): void {
    this.#trimmed.delete(envelope.channel);
    this.#trimmed.set(envelope.channel, envelope.serverSeq);
    if (this.#trimmed.size <= Math.max(1_024, this.maxEntries * 4)) return;
    const [oldest, seq] = this.#trimmed.entries().next().value as [string, number];
    this.#trimmed.delete(oldest);
    this.#floor = Math.max(this.#floor ?? seq, seq);
  }
}
