/**
 * The epochs of a log's history (docs/continuity.md#epoch). Every time a hub opens a log it
 * starts an epoch: a random id stored in the log with the serverSeq it starts at. A client
 * remembers the epoch it was last told (`initialize` and `reconnect` answer
 * `_meta["hub/epoch"]`) and sends it back with its cursor. A cursor (epoch, seq) belongs to this
 * history only when that epoch is one of the log's and seq lies within its span: a data
 * directory restored from an older backup holds neither the epochs started after the backup nor
 * their records, so a cursor from those epochs is refused (the client gets snapshots), even once
 * new records have taken the serverSeqs it names.
 */
import { randomBytes } from 'node:crypto';

export interface EpochSpan {
  readonly epoch: string;
  /** The first serverSeq appended in this epoch (head + 1 when it started). */
  readonly fromSeq: number;
}

/** Epochs kept per log: older ones are forgotten, and a cursor from one gets snapshots (never a wrong replay). */
export const EPOCHS_KEPT = 64;

/** Parses the stored spans; anything malformed counts as none (a cursor with an epoch then gets snapshots). */
export function parseEpochSpans(text: string | undefined): EpochSpan[] {
  if (text === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter((s): s is EpochSpan => typeof s === 'object' && s !== null && typeof s.epoch === 'string' && Number.isSafeInteger(s.fromSeq) && s.fromSeq >= 1);
  } catch {
    return [];
  }
}

/** The spans with a new epoch starting after `head` appended (the oldest dropped past EPOCHS_KEPT). */
export function withNewEpoch(spans: readonly EpochSpan[], head: number): EpochSpan[] {
  return [...spans, { epoch: randomBytes(12).toString('base64url'), fromSeq: head + 1 }].slice(-EPOCHS_KEPT);
}

export class HistoryEpochs {
  constructor(readonly spans: readonly EpochSpan[]) {
    if (spans.length === 0) throw new Error('HistoryEpochs: at least the current epoch');
  }

  /** The epoch this process appends in. */
  get current(): string {
    return this.spans[this.spans.length - 1]!.epoch;
  }

  /**
   * True when a cursor at `seq` the client saw in `epoch` belongs to this history (head: the
   * log's current head). Without an epoch (a standard client) only seq > head is refused.
   */
  admits(epoch: string | undefined, seq: number, head: number): boolean {
    if (seq > head) return false;
    if (epoch === undefined) return true;
    const i = this.spans.findIndex((s) => s.epoch === epoch);
    if (i < 0) return false;
    const end = i + 1 < this.spans.length ? this.spans[i + 1]!.fromSeq - 1 : head;
    return seq >= this.spans[i]!.fromSeq - 1 && seq <= end;
  }
}
