/**
 * The envelopes most recently delivered, kept in memory so a client that reconnects with a
 * recent `lastSeenServerSeq` gets the actions it missed instead of a snapshot, and a client that
 * re-sends an applied action gets its original echo. Bounded twice: by count and by the encoded
 * size of the envelopes, whichever is hit first.
 */
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { encodeEnvelope } from './fanout.js';

interface ReplayEntry {
  readonly envelope: ActionEnvelope;
  /** Length of the encoded envelope, for the size bound. */
  readonly chars: number;
}

export class ReplayWindow {
  readonly #entries: ReplayEntry[] = [];
  #chars = 0;

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

  find(serverSeq: number): ActionEnvelope | undefined {
    return this.#entries.find((e) => e.envelope.serverSeq === serverSeq)?.envelope;
  }

  keep(envelope: ActionEnvelope, text?: string): void {
    const chars = (text ?? encodeEnvelope(envelope)).length;
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
      this.#entries.splice(0, excess);
      this.#chars = kept;
    }
  }
}
