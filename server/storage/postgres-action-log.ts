/**
 * ActionLog on PostgreSQL: the log of ONE partition (one tenant's hub) of a PostgresStore
 * (postgres-store.ts owns the pool, the schema and the LISTEN connection; get a log with
 * `store.actionLog(partition)`). Every statement here is scoped to `partition = $1`.
 *
 * Durability: `append` resolves after COMMIT, which PostgreSQL (synchronous_commit=on, its
 * default) acknowledges only once the WAL record is flushed, so an acknowledged append survives
 * the hub process, the PostgreSQL process and the machine stopping.
 *
 * Concurrency: the partition's head is one row of `ahp_log_head`; `append` locks it (SELECT …
 * FOR UPDATE), compares, inserts the batch and moves the head in one transaction, so of several
 * processes appending at the same head exactly one wins and the others get `{ok: false, head}`.
 * Other partitions' rows are never locked, so tenants never wait for each other's writers. Each
 * commit also sends NOTIFY on `ahp_log` with the partition and its new head: the wake-up other
 * processes follow the log with (the log, not the notification, is the truth; a missed NOTIFY
 * only delays a reader).
 *
 * JSON is stored as text (not jsonb) so every value round-trips bit for bit, exactly as the
 * SQLite engine stores it; the shared record codec does the (de)serialisation and error reports.
 */
import type pg from 'pg';
import type { AppendResult, HeadWatch, LogRecord, LogSnapshot, SharedActionLog, WriteTurn } from './action-log.js';
import {
  SNAPSHOTS_KEPT,
  decodeConsecutiveRecords,
  decodeSnapshot,
  encodeAppendBatch,
  encodeSnapshotData,
  requireCompactionCovered,
  requireLimitArgument,
  requireSeqArgument,
  requireSnapshotWithinHead,
  type RawRecordRow,
  type StoredRecord,
} from './record-codec.js';
import { errorMessage } from '../log.js';
import { type EpochSpan, withNewEpoch } from './history-epochs.js';

/** The LISTEN/NOTIFY channel every append notifies with its partition and new head. */
export const LOG_NOTIFY_CHANNEL = 'ahp_log';

/**
 * Orders snapshot saves against compaction within one partition: the advisory lock
 * (SNAPSHOT_LOCK_CLASS, hashtext(partition)). A hash collision between two partitions only makes
 * their snapshot saves take turns; it never mixes their rows.
 */
const SNAPSHOT_LOCK_CLASS = 0x61687002;
/**
 * The cluster's compaction lease per partition (COMPACTION_LOCK_CLASS, hashtext(partition)),
 * taken with pg_try_advisory_xact_lock: one node compacts a tenant at a time, the others skip.
 */
const COMPACTION_LOCK_CLASS = 0x61687003;

/** What a partition's log needs from its store (postgres-store.ts). */
export interface PostgresPartition {
  readonly name: string;
  /** The store's shared pool: never ended by a partition. */
  readonly pool: pg.Pool;
  /** Server and partition, without the password: for error messages. */
  readonly where: string;
  readonly storeClosed: () => boolean;
  /** Subscribes to this partition's wake-ups on the store's one LISTEN connection. */
  readonly onAppended: (listener: (head: number) => void) => () => void;
  /** Watches this partition's head through the store's one head poll for every partition. */
  readonly watchHead: (listener: (head: number) => void) => HeadWatch;
}

/** The NOTIFY payload an append sends on `ahp_log`: which partition, and its new head. */
function encodeWakeUp(partition: string, head: number): string {
  return JSON.stringify({ partition, head });
}

/** The partition and head of a NOTIFY payload, or undefined for anything else. */
export function decodeWakeUp(payload: string | undefined): { partition: string; head: number } | undefined {
  if (payload === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(payload);
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const { partition, head } = parsed as { partition?: unknown; head?: unknown };
    if (typeof partition !== 'string' || typeof head !== 'number' || !Number.isSafeInteger(head) || head < 0) return undefined;
    return { partition, head };
  } catch {
    return undefined;
  }
}

type RecordRow = { seq: string; channel: unknown; action: unknown; origin: unknown };

export class PostgresActionLog implements SharedActionLog {
  readonly #partition: PostgresPartition;
  readonly #pool: pg.Pool;
  readonly #name: string;
  readonly #where: string;
  #closed = false;
  /** Unsubscribe functions of this handle's onAppended listeners, removed on close. */
  readonly #subscriptions = new Set<() => void>();

  /** Made by `PostgresStore.actionLog`, which has created the partition's head row. */
  constructor(partition: PostgresPartition) {
    this.#partition = partition;
    this.#pool = partition.pool;
    this.#name = partition.name;
    this.#where = partition.where;
  }

  /** The partition this log belongs to. */
  get partition(): string {
    return this.#name;
  }

  /** Where the log lives (server and partition, without the password): for log lines and errors. */
  get where(): string {
    return this.#where;
  }

  async head(): Promise<number> {
    this.#assertOpen();
    const result = await this.#pool.query<{ head: string }>('SELECT head FROM ahp_log_head WHERE partition = $1', [this.#name]);
    return this.#parseHead(result.rows[0]?.head);
  }

  async append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult> {
    this.#assertOpen();
    const rows = encodeAppendBatch(expectedHead, records);
    try {
      // A lost race writes nothing: ROLLBACK, which (unlike COMMIT) does not wait for a WAL flush.
      return await this.#transaction(
        async (client): Promise<AppendResult> => {
          const head = await this.#lockHead(client);
          if (head !== expectedHead) return { ok: false, head };
          await this.#insertBatch(client, expectedHead, rows);
          return { ok: true, head: expectedHead + rows.length };
        },
        (result) => result.ok,
      );
    } catch (error) {
      throw new Error(`action log: append at ${expectedHead} to ${this.#where} failed: ${errorMessage(error)}`, { cause: error });
    }
  }

  async read(afterSeq: number, limit: number): Promise<LogRecord[]> {
    this.#assertOpen();
    requireSeqArgument('afterSeq', afterSeq);
    requireLimitArgument(limit);
    return this.#selectAfter(this.#pool, afterSeq, limit);
  }

  /**
   * The partition's one epoch, created with it on the first open by any node (`ahp_meta` key
   * `epoch:<partition>`): every node of a cluster answers the same, so a client moving between
   * nodes keeps its replay; a partition rebuilt from nothing gets a new one.
   */
  async openEpoch(): Promise<readonly EpochSpan[]> {
    this.#assertOpen();
    const key = `epoch:${this.#name}`;
    const [fresh] = withNewEpoch([], 0);
    await this.#pool.query('INSERT INTO ahp_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, fresh!.epoch]);
    const row = await this.#pool.query<{ value: string }>('SELECT value FROM ahp_meta WHERE key = $1', [key]);
    return [{ epoch: row.rows[0]?.value ?? fresh!.epoch, fromSeq: 1 }];
  }

  async oldestSeq(): Promise<number> {
    this.#assertOpen();
    // One statement, one snapshot: MIN(seq) and head come from the same committed state.
    const result = await this.#pool.query<{ oldest: string | null; head: string }>('SELECT (SELECT MIN(seq) FROM ahp_records WHERE partition = $1) AS oldest, head FROM ahp_log_head WHERE partition = $1', [this.#name]);
    const row = result.rows[0];
    if (row?.oldest !== null && row?.oldest !== undefined) return Number(row.oldest);
    return this.#parseHead(row?.head) + 1;
  }

  async saveSnapshot(snapshot: LogSnapshot): Promise<void> {
    this.#assertOpen();
    requireSeqArgument('snapshot.serverSeq', snapshot.serverSeq);
    const data = encodeSnapshotData(snapshot);
    await this.#transaction(async (client) => {
      // Snapshots and compaction take their own lock, never the head row: a process holding the
      // write turn may save a snapshot, and the head only grows, so a plain read suffices here.
      await this.#lockSnapshots(client);
      const head = await client.query<{ head: string }>('SELECT head FROM ahp_log_head WHERE partition = $1', [this.#name]);
      requireSnapshotWithinHead(snapshot.serverSeq, this.#parseHead(head.rows[0]?.head));
      await client.query('INSERT INTO ahp_snapshots (partition, seq, data) VALUES ($1, $2, $3) ON CONFLICT (partition, seq) DO UPDATE SET data = EXCLUDED.data', [this.#name, snapshot.serverSeq, data]);
      await client.query(
        `DELETE FROM ahp_snapshots WHERE partition = $1
           AND seq NOT IN (SELECT seq FROM ahp_snapshots WHERE partition = $1 ORDER BY seq DESC LIMIT $2)`,
        [this.#name, SNAPSHOTS_KEPT],
      );
    });
  }

  async latestSnapshot(): Promise<LogSnapshot | undefined> {
    this.#assertOpen();
    const result = await this.#pool.query<{ seq: string; data: unknown }>('SELECT seq, data FROM ahp_snapshots WHERE partition = $1 ORDER BY seq DESC LIMIT 1', [this.#name]);
    const row = result.rows[0];
    return row === undefined ? undefined : decodeSnapshot(Number(row.seq), row.data);
  }

  async compact(uptoSeq: number): Promise<void> {
    this.#assertOpen();
    requireSeqArgument('uptoSeq', uptoSeq);
    await this.#transaction(async (client) => {
      // The snapshot lock orders this against saveSnapshot, so the covering snapshot cannot be
      // pruned between the check and the delete.
      await this.#lockSnapshots(client);
      const latest = await client.query<{ seq: string }>('SELECT MAX(seq) AS seq FROM ahp_snapshots WHERE partition = $1', [this.#name]);
      const seq = latest.rows[0]?.seq;
      requireCompactionCovered(uptoSeq, seq === null || seq === undefined ? undefined : Number(seq));
      await client.query('DELETE FROM ahp_records WHERE partition = $1 AND seq <= $2', [this.#name, uptoSeq]);
    });
  }

  /**
   * Cluster compaction (log-compactor.ts): under the partition's compaction lease, drops every
   * snapshot but the newest and every record at or before `min(newest snapshot, head - keepRecords)`
   * (the newest snapshot plus the replay window stay; records after the snapshot stay for
   * recovery). Undefined when another node holds the lease or no snapshot exists yet.
   */
  async compactBehindNewestSnapshot(keepRecords: number): Promise<{ uptoSeq: number; recordsDeleted: number; snapshotsDeleted: number } | undefined> {
    this.#assertOpen();
    requireSeqArgument('keepRecords', keepRecords);
    return this.#transaction(async (client) => {
      const lease = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1::int, hashtext($2)) AS ok', [COMPACTION_LOCK_CLASS, this.#name]);
      if (!lease.rows[0]?.ok) return undefined;
      await this.#lockSnapshots(client);
      const latest = await client.query<{ seq: string | null }>('SELECT MAX(seq) AS seq FROM ahp_snapshots WHERE partition = $1', [this.#name]);
      const newest = latest.rows[0]?.seq;
      if (newest === null || newest === undefined) return undefined;
      const head = await client.query<{ head: string }>('SELECT head FROM ahp_log_head WHERE partition = $1', [this.#name]);
      const uptoSeq = Math.min(Number(newest), Math.max(0, this.#parseHead(head.rows[0]?.head) - keepRecords));
      const records = await client.query('DELETE FROM ahp_records WHERE partition = $1 AND seq <= $2', [this.#name, uptoSeq]);
      const snapshots = await client.query('DELETE FROM ahp_snapshots WHERE partition = $1 AND seq < $2', [this.#name, Number(newest)]);
      return { uptoSeq, recordsDeleted: records.rowCount ?? 0, snapshotsDeleted: snapshots.rowCount ?? 0 };
    });
  }

  /** Bytes this partition's records and snapshots hold (row sizes, as PostgreSQL stores them). */
  async retainedBytes(): Promise<number> {
    this.#assertOpen();
    const r = await this.#pool.query<{ bytes: string }>(
      `SELECT (SELECT COALESCE(SUM(pg_column_size(r.*)), 0) FROM ahp_records r WHERE partition = $1)
            + (SELECT COALESCE(SUM(pg_column_size(s.*)), 0) FROM ahp_snapshots s WHERE partition = $1) AS bytes`,
      [this.#name],
    );
    return Number(r.rows[0]?.bytes ?? 0);
  }

  /**
   * The write turn is a transaction holding this partition's head row lock (SELECT … FOR
   * UPDATE): other processes' appends and turns on the same partition wait on that row until
   * this one commits or rolls back; other partitions are unaffected. If this process dies or
   * loses its connection, PostgreSQL aborts the transaction and frees the row, so a turn can
   * never outlive its holder, and nothing half-decided is ever written.
   */
  async beginWriteTurn(afterSeqNow: number | (() => number)): Promise<WriteTurn> {
    this.#assertOpen();
    const seqOf = (): number => (typeof afterSeqNow === 'number' ? afterSeqNow : afterSeqNow());
    if (typeof afterSeqNow === 'number') requireSeqArgument('afterSeq', afterSeqNow);
    const client = await this.#pool.connect();
    let done = false;
    const finish = async (sql: 'COMMIT' | 'ROLLBACK'): Promise<void> => {
      if (done) return;
      done = true;
      try {
        await client.query(sql);
        client.release();
      } catch (error) {
        client.release(true);
        throw error;
      }
    };
    let head: number;
    let missed: LogRecord[];
    try {
      await client.query('BEGIN');
      head = await this.#lockHead(client);
      const afterSeq = seqOf();
      requireSeqArgument('afterSeq', afterSeq);
      if (afterSeq > head) throw new Error(`cannot catch up from ${afterSeq} to head ${head}: the caller is ahead of the log`);
      // Caught up (the usual case): no query while the head lock is held. No record lies above
      // the head, since #insertBatch inserts and moves the head in one transaction under this lock.
      missed = afterSeq === head ? [] : await this.#selectAfter(client, afterSeq, Number.POSITIVE_INFINITY);
      // #selectAfter reports a gap among the rows; a missing start or end means compaction.
      if (missed.length !== head - afterSeq || (missed.length > 0 && missed[0]?.serverSeq !== afterSeq + 1)) {
        throw new Error(`cannot catch up from ${afterSeq} to head ${head}: records were compacted away; reload from the newest snapshot`);
      }
    } catch (error) {
      await finish('ROLLBACK').catch(() => undefined);
      throw new Error(`action log: write turn on ${this.#where} failed: ${errorMessage(error)}`, { cause: error });
    }
    return {
      head,
      missed,
      append: async (records) => {
        if (done) throw new Error('action log: this write turn has ended');
        try {
          const rows = encodeAppendBatch(head, records);
          await this.#insertBatch(client, head, rows);
          await finish('COMMIT');
          return { ok: true, head: head + rows.length };
        } catch (error) {
          await finish('ROLLBACK').catch(() => undefined);
          throw new Error(`action log: append at ${head} to ${this.#where} failed: ${errorMessage(error)}`, { cause: error });
        }
      },
      release: () => finish('ROLLBACK').catch(() => undefined),
    };
  }

  /**
   * Calls `listener` with this partition's new head after appends (by any process, this one
   * included), woken by the store's one LISTEN connection. A hint only: notifications sent while
   * that connection was down are lost, so callers also poll.
   */
  onAppended(listener: (head: number) => void): () => void {
    if (this.#closed || this.#partition.storeClosed()) return () => undefined;
    const unsubscribe = this.#partition.onAppended(listener);
    const remove = (): void => {
      unsubscribe();
      this.#subscriptions.delete(remove);
    };
    this.#subscriptions.add(remove);
    return remove;
  }

  /**
   * Calls `listener` with this partition's head after each of the store's head polls (one
   * statement for every partition, postgres-follower.ts): what covers wake-ups that were lost.
   */
  watchHead(listener: (head: number) => void): HeadWatch {
    if (this.#closed || this.#partition.storeClosed()) return { problem: undefined, stop: () => undefined };
    const watch = this.#partition.watchHead(listener);
    const remove = (): void => {
      watch.stop();
      this.#subscriptions.delete(remove);
    };
    this.#subscriptions.add(remove);
    return {
      get problem() {
        return watch.problem;
      },
      stop: remove,
    };
  }

  /**
   * Retires this handle: later calls refuse, its wake-up listeners are removed. The store's pool
   * and other partitions stay open (`PostgresStore.close` ends those). Safe to call more than once.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const remove of [...this.#subscriptions]) remove();
  }

  /** This partition's records after `afterSeq` in order, at most `limit`; a gap among them is corruption. */
  async #selectAfter(queryable: pg.Pool | pg.PoolClient, afterSeq: number, limit: number): Promise<LogRecord[]> {
    const result = await queryable.query<RecordRow>('SELECT seq, channel, action, origin FROM ahp_records WHERE partition = $1 AND seq > $2 ORDER BY seq LIMIT $3', [this.#name, afterSeq, limit === Number.POSITIVE_INFINITY ? null : limit]);
    const rows: RawRecordRow[] = result.rows.map((row) => ({ ...row, seq: Number(row.seq) }));
    return decodeConsecutiveRecords(rows, this.#where);
  }

  /** Locks this partition's head row for the transaction and returns the head. */
  async #lockHead(client: pg.PoolClient): Promise<number> {
    const locked = await client.query<{ head: string }>('SELECT head FROM ahp_log_head WHERE partition = $1 FOR UPDATE', [this.#name]);
    return this.#parseHead(locked.rows[0]?.head);
  }

  /** Inside a transaction holding the head lock: inserts the batch, moves the head, notifies. */
  async #insertBatch(client: pg.PoolClient, head: number, rows: readonly StoredRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const newHead = head + rows.length;
    // One statement, one round trip while the head lock is held (a write turn's lock is the
    // cluster's critical section for the tenant): data-modifying CTEs always run to completion.
    await client.query(
      `WITH inserted AS (
         INSERT INTO ahp_records (partition, seq, channel, action, origin)
         SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[])
       ), moved AS (
         UPDATE ahp_log_head SET head = $6 WHERE partition = $1
       )
       SELECT pg_notify($7, $8)`,
      [this.#name, rows.map((r) => r.seq), rows.map((r) => r.channel), rows.map((r) => r.action), rows.map((r) => r.origin), newHead, LOG_NOTIFY_CHANNEL, encodeWakeUp(this.#name, newHead)],
    );
  }

  async #lockSnapshots(client: pg.PoolClient): Promise<void> {
    await client.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [SNAPSHOT_LOCK_CLASS, this.#name]);
  }

  /**
   * Runs `body` in a transaction on a pooled connection and returns its result: COMMIT, unless
   * `commit(result)` says to ROLLBACK; ROLLBACK if anything throws.
   */
  async #transaction<T>(body: (client: pg.PoolClient) => Promise<T>, commit: (result: T) => boolean = () => true): Promise<T> {
    const client = await this.#pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await body(client);
      await client.query(commit(result) ? 'COMMIT' : 'ROLLBACK');
      return result;
    } catch (error) {
      // A failed ROLLBACK means the connection is broken: discard it rather than reuse it.
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw error;
    } finally {
      client.release(broken);
    }
  }

  #parseHead(value: unknown): number {
    if (typeof value === 'string' && /^\d+$/.test(value)) {
      const head = Number(value);
      if (Number.isSafeInteger(head)) return head;
    }
    throw new Error(`action log: ${this.#where} is corrupt: ahp_log_head.head is ${JSON.stringify(value) ?? 'missing'}`);
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error(`action log: PostgresActionLog for ${this.#where} is closed`);
    if (this.#partition.storeClosed()) throw new Error(`action log: the PostgresStore of ${this.#where} is closed`);
  }
}
