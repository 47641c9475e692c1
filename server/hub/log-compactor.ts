/**
 * Cluster mode: prunes a tenant's shared log on a schedule. A hub never compacts a shared log as
 * it writes a snapshot (other nodes may not have read the records yet); instead each node runs
 * this every `intervalMs`, and the log's compaction lease (a PostgreSQL try-lock per partition)
 * lets one node at a time do it while the others skip that round. What stays: the newest snapshot
 * and the replay window (the last `keepRecords` records, and every record after the newest
 * snapshot, which recovery replays). A node that had not read records pruned meanwhile finds the
 * gap when it next follows the log and reloads from the newest snapshot; a client reconnecting
 * from before what is kept is answered with snapshots (its node's replay window no longer
 * reaches back that far), never with a gap.
 *
 * A round is skipped while the tenant's head (as this node follows it) has not moved since the
 * last round that ran: with nothing appended there is nothing new to compact nor to measure, and
 * an idle node with many tenants would otherwise pay two statements per tenant per round. (The
 * newest snapshot is written as records are appended, so one written after the last round is
 * compacted behind at the next round after the next append.)
 */
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';

export interface CompactingLog {
  compactBehindNewestSnapshot(keepRecords: number): Promise<{ uptoSeq: number; recordsDeleted: number; snapshotsDeleted: number } | undefined>;
  retainedBytes(): Promise<number>;
}

export function isCompactingLog(log: unknown): log is CompactingLog {
  const l = log as Partial<CompactingLog> | undefined;
  return typeof l?.compactBehindNewestSnapshot === 'function' && typeof l.retainedBytes === 'function';
}

/** Default time between compaction rounds of one tenant's shared log. */
export const DEFAULT_COMPACT_INTERVAL_MS = 60_000;

export class LogCompactor {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #closed = false;
  /** The head when the last round ran to its end; undefined before the first. */
  #roundHead: number | undefined;

  constructor(
    private readonly log: CompactingLog,
    private readonly keepRecords: number,
    intervalMs: number,
    /** Reports the bytes the tenant's log retains after each round (the per-tenant gauge). */
    private readonly onRetained: (bytes: number) => void,
    private readonly logger: Logger,
    /** The tenant's head as this node has followed it (rounds are skipped while it stays put). */
    private readonly head?: () => number,
  ) {
    this.#timer = setInterval(() => {
      if (this.head !== undefined && this.head() === this.#roundHead) return;
      this.#running ??= this.runOnce().finally(() => (this.#running = undefined));
    }, intervalMs);
    this.#timer.unref();
  }

  /** One round: compacts if this node gets the lease, then measures what is retained. */
  async runOnce(): Promise<void> {
    if (this.#closed) return;
    const head = this.head?.();
    try {
      const result = await this.log.compactBehindNewestSnapshot(this.keepRecords);
      if (result && (result.recordsDeleted > 0 || result.snapshotsDeleted > 0)) this.logger.debug('shared log compacted', { ...result });
      this.onRetained(await this.log.retainedBytes());
      this.#roundHead = head;
    } catch (err) {
      this.logger.warn('shared log compaction failed; retried next round', errorFields(err));
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#running;
  }
}
