/**
 * ActionLog on PostgreSQL (the `pg` package): the store several hub processes share.
 *
 * Durability: `append` resolves after COMMIT, which PostgreSQL (synchronous_commit=on, its
 * default) acknowledges only once the WAL record is flushed, so an acknowledged append survives
 * the hub process, the PostgreSQL process and the machine stopping.
 *
 * Concurrency: the head is one row (`ahp_log_head`); `append` locks it (SELECT … FOR UPDATE),
 * compares, inserts the batch and moves the head in one transaction, so of several processes
 * appending at the same head exactly one wins and the others get `{ok: false, head}`. Each commit
 * also sends NOTIFY on `ahp_log` with the new head: the wake-up other processes follow the log
 * with (the log, not the notification, is the truth; a missed NOTIFY only delays a reader).
 *
 * JSON is stored as text (not jsonb) so every value round-trips bit for bit, exactly as the
 * SQLite engine stores it; the shared record codec does the (de)serialisation and error reports.
 */
import pg from 'pg';
import type { AppendResult, LogRecord, LogSnapshot, SharedActionLog, WriteTurn } from './action-log.js';
import {
  SNAPSHOTS_KEPT,
  decodeConsecutiveRecords,
  decodeRecord,
  decodeSnapshot,
  encodeAppendBatch,
  encodeSnapshotData,
  requireCompactionCovered,
  requireLimitArgument,
  requireSeqArgument,
  requireSnapshotWithinHead,
  type RawRecordRow,
} from './record-codec.js';

/** Bump when the schema changes; a database written by a newer build is refused, not misread. */
const SCHEMA_VERSION = 1;

/** The LISTEN/NOTIFY channel every append notifies with its new head. */
export const LOG_NOTIFY_CHANNEL = 'ahp_log';

/** Serialises schema creation when several hubs start on an empty database at once. */
const MIGRATION_LOCK_KEY = 0x61687001;
/** Orders snapshot saves against compaction. */
const SNAPSHOT_LOCK_KEY = 0x61687002;

export interface PostgresActionLogOptions {
  /** `postgres://user:password@host:port/database` */
  readonly url: string;
  /** Connections in the pool (default 4). */
  readonly poolSize?: number;
  /** Called for errors on idle pooled connections (e.g. PostgreSQL restarted); they are replaced. */
  readonly onConnectionError?: (error: Error) => void;
}

export class PostgresActionLog implements SharedActionLog {
  readonly #pool: pg.Pool;
  readonly #where: string;
  readonly #url: string;
  readonly #onConnectionError: ((error: Error) => void) | undefined;
  #closed = false;
  readonly #appendListeners = new Set<(head: number) => void>();
  #listener: pg.Client | undefined;
  #listenRetry: NodeJS.Timeout | undefined;

  /** Connects, creates or checks the schema, and returns the log. Throws a descriptive Error. */
  static async open(options: PostgresActionLogOptions): Promise<PostgresActionLog> {
    const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 4 });
    pool.on('error', (error) => options.onConnectionError?.(error));
    const where = describeUrl(options.url);
    try {
      await migrate(pool);
    } catch (cause) {
      await pool.end().catch(() => undefined);
      throw new Error(`action log: cannot open PostgreSQL log at ${where}: ${errorMessage(cause)}`, { cause });
    }
    return new PostgresActionLog(pool, where, options);
  }

  private constructor(pool: pg.Pool, where: string, options: PostgresActionLogOptions) {
    this.#pool = pool;
    this.#where = where;
    this.#url = options.url;
    this.#onConnectionError = options.onConnectionError;
  }

  /** Where the log lives, without the password: for log lines and error messages. */
  get where(): string {
    return this.#where;
  }

  async head(): Promise<number> {
    this.#assertOpen();
    const result = await this.#pool.query<{ head: string }>('SELECT head FROM ahp_log_head');
    return this.#parseHead(result.rows[0]?.head);
  }

  async append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult> {
    this.#assertOpen();
    const rows = encodeAppendBatch(expectedHead, records);
    const client = await this.#pool.connect();
    let released = false;
    try {
      await client.query('BEGIN');
      const locked = await client.query<{ head: string }>('SELECT head FROM ahp_log_head FOR UPDATE');
      const head = this.#parseHead(locked.rows[0]?.head);
      if (head !== expectedHead) {
        await client.query('ROLLBACK');
        return { ok: false, head };
      }
      if (rows.length > 0) {
        await client.query(
          `INSERT INTO ahp_records (seq, channel, action, origin)
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[])`,
          [rows.map((r) => r.seq), rows.map((r) => r.channel), rows.map((r) => r.action), rows.map((r) => r.origin)],
        );
        const newHead = expectedHead + rows.length;
        await client.query('UPDATE ahp_log_head SET head = $1', [newHead]);
        await client.query('SELECT pg_notify($1, $2)', [LOG_NOTIFY_CHANNEL, String(newHead)]);
      }
      await client.query('COMMIT');
      return { ok: true, head: expectedHead + rows.length };
    } catch (error) {
      // A failed ROLLBACK means the connection is broken: discard it rather than reuse it.
      try {
        await client.query('ROLLBACK');
      } catch {
        client.release(true);
        released = true;
      }
      throw new Error(`action log: append at ${expectedHead} to ${this.#where} failed: ${errorMessage(error)}`, { cause: error });
    } finally {
      if (!released) client.release();
    }
  }

  async read(afterSeq: number, limit: number): Promise<LogRecord[]> {
    this.#assertOpen();
    requireSeqArgument('afterSeq', afterSeq);
    requireLimitArgument(limit);
    const result = await this.#pool.query<{ seq: string; channel: unknown; action: unknown; origin: unknown }>(
      'SELECT seq, channel, action, origin FROM ahp_records WHERE seq > $1 ORDER BY seq LIMIT $2',
      [afterSeq, limit === Number.POSITIVE_INFINITY ? null : limit],
    );
    const rows: RawRecordRow[] = result.rows.map((row) => ({ ...row, seq: Number(row.seq) }));
    return decodeConsecutiveRecords(rows, this.#where);
  }

  async oldestSeq(): Promise<number> {
    this.#assertOpen();
    // One statement, one snapshot: MIN(seq) and head come from the same committed state.
    const result = await this.#pool.query<{ oldest: string | null; head: string }>(
      'SELECT (SELECT MIN(seq) FROM ahp_records) AS oldest, head FROM ahp_log_head',
    );
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
      await client.query('SELECT pg_advisory_xact_lock($1)', [SNAPSHOT_LOCK_KEY]);
      const head = await client.query<{ head: string }>('SELECT head FROM ahp_log_head');
      requireSnapshotWithinHead(snapshot.serverSeq, this.#parseHead(head.rows[0]?.head));
      await client.query(
        'INSERT INTO ahp_snapshots (seq, data) VALUES ($1, $2) ON CONFLICT (seq) DO UPDATE SET data = EXCLUDED.data',
        [snapshot.serverSeq, data],
      );
      await client.query('DELETE FROM ahp_snapshots WHERE seq NOT IN (SELECT seq FROM ahp_snapshots ORDER BY seq DESC LIMIT $1)', [SNAPSHOTS_KEPT]);
    });
  }

  async latestSnapshot(): Promise<LogSnapshot | undefined> {
    this.#assertOpen();
    const result = await this.#pool.query<{ seq: string; data: unknown }>('SELECT seq, data FROM ahp_snapshots ORDER BY seq DESC LIMIT 1');
    const row = result.rows[0];
    return row === undefined ? undefined : decodeSnapshot(Number(row.seq), row.data);
  }

  async compact(uptoSeq: number): Promise<void> {
    this.#assertOpen();
    requireSeqArgument('uptoSeq', uptoSeq);
    await this.#transaction(async (client) => {
      // The snapshot lock orders this against saveSnapshot, so the covering snapshot cannot be
      // pruned between the check and the delete.
      await client.query('SELECT pg_advisory_xact_lock($1)', [SNAPSHOT_LOCK_KEY]);
      const latest = await client.query<{ seq: string }>('SELECT MAX(seq) AS seq FROM ahp_snapshots');
      const seq = latest.rows[0]?.seq;
      requireCompactionCovered(uptoSeq, seq === null || seq === undefined ? undefined : Number(seq));
      await client.query('DELETE FROM ahp_records WHERE seq <= $1', [uptoSeq]);
    });
  }

  /**
   * The write turn is a transaction holding the head row's lock (SELECT … FOR UPDATE): other
   * processes' appends and turns wait on that row until this one commits or rolls back. If this
   * process dies or loses its connection, PostgreSQL aborts the transaction and frees the row,
   * so a turn can never outlive its holder, and nothing half-decided is ever written.
   */
  async beginWriteTurn(afterSeq: number): Promise<WriteTurn> {
    this.#assertOpen();
    requireSeqArgument('afterSeq', afterSeq);
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
      const locked = await client.query<{ head: string }>('SELECT head FROM ahp_log_head FOR UPDATE');
      head = this.#parseHead(locked.rows[0]?.head);
      const rows = await client.query<{ seq: string; channel: unknown; action: unknown; origin: unknown }>(
        'SELECT seq, channel, action, origin FROM ahp_records WHERE seq > $1 ORDER BY seq',
        [afterSeq],
      );
      missed = rows.rows.map((row) => decodeRecord({ ...row, seq: Number(row.seq) }));
      const expected = Math.max(0, head - afterSeq);
      const contiguous = missed.every((r, i) => r.serverSeq === afterSeq + 1 + i);
      if (afterSeq > head || missed.length !== expected || !contiguous) {
        throw new Error(
          `cannot catch up from ${afterSeq} to head ${head}: ` +
            (afterSeq > head ? 'the caller is ahead of the log' : 'records were compacted away; reload from the newest snapshot'),
        );
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
          if (rows.length > 0) {
            await client.query(
              `INSERT INTO ahp_records (seq, channel, action, origin)
               SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[])`,
              [rows.map((r) => r.seq), rows.map((r) => r.channel), rows.map((r) => r.action), rows.map((r) => r.origin)],
            );
            await client.query('UPDATE ahp_log_head SET head = $1', [head + rows.length]);
            await client.query('SELECT pg_notify($1, $2)', [LOG_NOTIFY_CHANNEL, String(head + rows.length)]);
          }
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
   * LISTENs on a dedicated connection (pooled connections cannot hold a LISTEN). When that
   * connection drops (PostgreSQL restarted) it is re-established every second; callers must not
   * rely on notifications alone (the hub also polls), since ones sent while it was down are lost.
   */
  onAppended(listener: (head: number) => void): () => void {
    this.#appendListeners.add(listener);
    if (this.#listener === undefined && this.#listenRetry === undefined) void this.#listen();
    return () => this.#appendListeners.delete(listener);
  }

  async #listen(): Promise<void> {
    this.#listenRetry = undefined;
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.#url });
    const retry = (error: Error): void => {
      if (this.#listener === client) this.#listener = undefined;
      client.end().catch(() => undefined);
      if (this.#closed || this.#listenRetry !== undefined) return;
      this.#onConnectionError?.(error);
      this.#listenRetry = setTimeout(() => void this.#listen(), 1_000);
      this.#listenRetry.unref();
    };
    client.on('error', retry);
    client.on('end', () => {
      if (this.#listener === client) retry(new Error('the LISTEN connection ended'));
    });
    client.on('notification', (message) => {
      const head = Number(message.payload);
      if (!Number.isSafeInteger(head)) return;
      for (const l of this.#appendListeners) l(head);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${LOG_NOTIFY_CHANNEL}`);
      if (this.#closed) {
        await client.end();
        return;
      }
      this.#listener = client;
    } catch (error) {
      retry(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Closes every pooled connection and the LISTEN connection. Safe to call more than once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#listenRetry);
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end().catch(() => undefined);
    await this.#pool.end();
  }

  async #transaction(body: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    const client = await this.#pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      await body(client);
      await client.query('COMMIT');
    } catch (error) {
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
  }
}

/**
 * Creates the schema in an empty database, or checks an existing one. An advisory lock held for
 * the transaction makes hubs that start together on a new database take turns.
 */
async function migrate(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const exists = await client.query<{ name: string | null }>(`SELECT to_regclass('ahp_meta')::text AS name`);
    if (exists.rows[0]?.name) {
      const stored = await client.query<{ value: string }>(`SELECT value FROM ahp_meta WHERE key = 'schema_version'`);
      const value = stored.rows[0]?.value;
      const version = value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
      if (version === undefined) throw new Error(`not an action log (ahp_meta.schema_version is ${JSON.stringify(value) ?? 'missing'})`);
      if (version > SCHEMA_VERSION) {
        throw new Error(
          `the database has schema version ${version}, written by a newer build; this build understands up to ` +
            `${SCHEMA_VERSION}. Upgrade the hub (downgrading the database is not supported).`,
        );
      }
      // version === SCHEMA_VERSION: nothing to migrate yet. Future versions upgrade here, in order.
      await client.query('COMMIT');
      return;
    }
    await client.query(`
      CREATE TABLE ahp_meta (key text PRIMARY KEY, value text NOT NULL);
      CREATE TABLE ahp_log_head (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        head bigint NOT NULL CHECK (head >= 0)
      );
      CREATE TABLE ahp_records (
        seq bigint PRIMARY KEY,
        channel text NOT NULL,
        action text NOT NULL,  -- JSON text
        origin text            -- JSON text, or NULL when the record has no origin
      );
      CREATE TABLE ahp_snapshots (seq bigint PRIMARY KEY, data text NOT NULL);
      -- Which hub process runs each session's agent (postgres-agent-leases.ts).
      CREATE TABLE ahp_agent_leases (session text PRIMARY KEY, node text NOT NULL, expires_at timestamptz NOT NULL);
      INSERT INTO ahp_log_head (head) VALUES (0);
    `);
    await client.query(`INSERT INTO ahp_meta (key, value) VALUES ('schema_version', $1)`, [String(SCHEMA_VERSION)]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** host:port/database of a connection URL: never the password. */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `postgres://${parsed.username ? `${decodeURIComponent(parsed.username)}@` : ''}${parsed.host}${parsed.pathname}`;
  } catch {
    return 'postgres://(unparseable URL)';
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
