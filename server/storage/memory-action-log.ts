/**
 * In-memory ActionLog for tests and development. "Honest" means it behaves exactly like
 * SqliteActionLog, not like a convenient Map: it stores what SQLite stores (JSON text, through the
 * shared record codec), so values JSON cannot carry come back the same way they would from disk,
 * callers cannot mutate stored records through a reference they kept, and the same programming
 * errors throw the same errors.
 */
import type { ActionLog, AppendResult, LogRecord, LogSnapshot } from './action-log.js';
import { type EpochSpan, withNewEpoch } from './history-epochs.js';
import { SNAPSHOTS_KEPT, type StoredRecord, requireSeqArgument, requireLimitArgument, encodeAppendBatch, decodeRecord, encodeSnapshotData, decodeSnapshot, requireSnapshotWithinHead, requireCompactionCovered } from './record-codec.js';

interface StoredSnapshot {
  readonly seq: number;
  readonly data: string;
}

/**
 * ActionLog held in process memory. Nothing survives the process; use it where durability is
 * not the point (unit tests, `dev` runs). Same validation, errors and retention as SQLite.
 */
export class MemoryActionLog implements ActionLog {
  /** Contiguous and ascending: compaction only ever removes a prefix, appends only add a suffix. */
  #rows: StoredRecord[] = [];
  /** Kept separately from the rows so it does not go back when compaction empties them. */
  #head = 0;
  /** Ascending by seq, at most SNAPSHOTS_KEPT entries. */
  #snapshots: StoredSnapshot[] = [];
  #closed = false;
  #epochs: EpochSpan[] = [];

  async openEpoch(): Promise<readonly EpochSpan[]> {
    this.#assertOpen();
    this.#epochs = withNewEpoch(this.#epochs, this.#head);
    return this.#epochs;
  }

  async head(): Promise<number> {
    this.#assertOpen();
    return this.#head;
  }

  async append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult> {
    this.#assertOpen();
    const rows = encodeAppendBatch(expectedHead, records);
    if (this.#head !== expectedHead) return { ok: false, head: this.#head };
    this.#rows.push(...rows);
    this.#head += rows.length;
    return { ok: true, head: this.#head };
  }

  async read(afterSeq: number, limit: number): Promise<LogRecord[]> {
    this.#assertOpen();
    requireSeqArgument('afterSeq', afterSeq);
    requireLimitArgument(limit);
    const first = this.#rows[0];
    if (first === undefined || limit === 0) return [];
    // Rows are gap-free, so the position of afterSeq+1 is plain arithmetic.
    const start = Math.max(0, afterSeq + 1 - first.seq);
    const end = limit === Number.POSITIVE_INFINITY ? this.#rows.length : start + limit;
    return this.#rows.slice(start, end).map(decodeRecord);
  }

  async oldestSeq(): Promise<number> {
    this.#assertOpen();
    return this.#rows[0]?.seq ?? this.#head + 1;
  }

  async saveSnapshot(snapshot: LogSnapshot): Promise<void> {
    this.#assertOpen();
    requireSeqArgument('snapshot.serverSeq', snapshot.serverSeq);
    const data = encodeSnapshotData(snapshot);
    requireSnapshotWithinHead(snapshot.serverSeq, this.#head);
    const kept = this.#snapshots.filter((s) => s.seq !== snapshot.serverSeq);
    kept.push({ seq: snapshot.serverSeq, data });
    kept.sort((a, b) => a.seq - b.seq);
    this.#snapshots = kept.slice(-SNAPSHOTS_KEPT);
  }

  async latestSnapshot(): Promise<LogSnapshot | undefined> {
    this.#assertOpen();
    const latest = this.#snapshots.at(-1);
    return latest === undefined ? undefined : decodeSnapshot(latest.seq, latest.data);
  }

  async compact(uptoSeq: number): Promise<void> {
    this.#assertOpen();
    requireSeqArgument('uptoSeq', uptoSeq);
    requireCompactionCovered(uptoSeq, this.#snapshots.at(-1)?.seq);
    const first = this.#rows[0];
    if (first === undefined || uptoSeq < first.seq) return;
    this.#rows = this.#rows.slice(uptoSeq - first.seq + 1);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('action log: MemoryActionLog is closed');
  }
}
