/**
 * Cluster mode: folds what other processes append while this one waits for the write turn.
 *
 * One tenant's write turn is a lock on its log head (write-gate.ts), so whatever a node does
 * while it holds the turn is the whole cluster's critical section for that tenant. Taking the
 * turn hands over every record appended since the node last folded; folding those under the
 * lock made each turn's cost grow with the number of nodes (with n nodes writing, a node folds
 * the batches of the n - 1 turns before its own), and since batches grow while the others wait,
 * the turn length fed on itself: writes/s fell as nodes were added (docs/cluster.md, "Many
 * sessions on one tenant").
 *
 * So while the lock request is pending, this reads the log outside the turn (a pooled
 * connection, no lock) at once and after every wake-up (NOTIFY), and folds each page through
 * the same path following uses. Once the turn is held it stops: the gate reads the position it
 * has folded to (`beginWriteTurn` takes it lazily) and the turn hands over only the rest, at
 * most the batch of the turn just before. A read still in flight then is discarded, so a record
 * is never folded twice and never out of order.
 */
import type { LogRecord, SharedActionLog } from '../storage/action-log.js';
import type { FoldTarget } from './fold-target.js';

export class TurnWaitFold {
  #stopped = false;
  #reading = false;
  #again = false;
  readonly #unsubscribe: () => void;

  constructor(
    private readonly log: SharedActionLog,
    private readonly target: FoldTarget,
    private readonly pageSize: number,
    /** False once the gate stopped acquiring (closing): nothing is folded then. */
    private readonly acquiring: () => boolean,
  ) {
    this.#unsubscribe = log.onAppended(() => this.#read());
    this.#read();
  }

  /** The turn is held (or was not taken): nothing is folded from here on. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#unsubscribe();
  }

  #read(): void {
    if (this.#stopped) return;
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = true;
    void this.#readPages().finally(() => (this.#reading = false));
  }

  async #readPages(): Promise<void> {
    do {
      this.#again = false;
      const from = this.target.serverSeq;
      let records: LogRecord[];
      try {
        records = await this.log.read(from, this.pageSize);
      } catch {
        return; // the log is unreachable: the turn being taken reports it
      }
      // Folded meanwhile by someone else, or the turn began: this page is not ours to fold.
      if (this.#stopped || !this.acquiring() || this.target.serverSeq !== from || this.target.hasPendingRecords()) return;
      if (records.length === 0) continue;
      // A gap (compaction overtook this node): the turn's own catch-up finds it and fails.
      if (records[0]!.serverSeq !== from + 1) return;
      try {
        this.target.foldRemote(records);
      } catch (error) {
        this.stop();
        this.target.fail(error);
        return;
      }
      if (records.length === this.pageSize) this.#again = true;
    } while (this.#again && !this.#stopped);
  }
}
