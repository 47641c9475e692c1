/**
 * The PostgreSQL store of a cluster (the `pg` package): one connection pool, one LISTEN
 * connection and one schema, holding many independent *partitions*. A partition is the whole
 * durable state of one tenant's hub: its own action log (serverSeq from 1, its own head row and
 * so its own write turn), its own snapshots and its own agent leases. Every table is keyed by
 * the partition name, which is always a bound parameter, never SQL text.
 *
 * Who closes what: `PostgresStore.close()` ends the pool and the LISTEN connection, after which
 * every log and lease object it handed out refuses calls. Closing a partition's log or leases
 * (`log.close()`, `leases.close()`) only retires that object (its wake-up listeners are removed);
 * the pool stays open for the store's other partitions. The composition root closes the store
 * last, after every hub that uses it.
 *
 * Pool sizing: a write turn holds one pooled connection from `beginWriteTurn` until its append
 * or release, so the pool should be larger than the number of partitions that write at the same
 * time in this process; other calls wait for a free connection, they do not fail.
 */
import pg from 'pg';
import { LOG_NOTIFY_CHANNEL, PostgresActionLog, type PostgresPartition, decodeWakeUp } from './postgres-action-log.js';
import { PostgresAgentLeases } from './postgres-agent-leases.js';
import { PostgresLeaseSweeper } from './postgres-lease-sweeper.js';
import { errorMessage } from '../log.js';
import { PostgresLogFollower } from './postgres-follower.js';
import { COLLAB_TABLE_DDL, PostgresCollabLog } from './postgres-collab-log.js';

/**
 * Bump when the schema changes; a database written by a newer build is refused, not misread.
 * 2: every table keyed by partition (per-tenant logs). 1: one log for all tenants (never released).
 */
export const SCHEMA_VERSION = 2;

/** Serialises schema creation when several hubs start on an empty database at once. */
const MIGRATION_LOCK_KEY = 0x61687001;

/** Longest partition name, in UTF-16 code units (a NOTIFY payload stays far under 8000 bytes). */
export const MAX_PARTITION_NAME_LENGTH = 256;

const DEFAULT_POOL_SIZE = 10;

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` */
  readonly url: string;
  /** Connections in the shared pool (default 10); see "Pool sizing" above. */
  readonly poolSize?: number;
  /**
   * Called for errors on idle pooled connections and the LISTEN connection (both are replaced),
   * and when a wake-up listener throws (the other listeners still run).
   */
  readonly onConnectionError?: (error: Error) => void;
}

export interface AgentLeaseOptions {
  /** This process's id in the lease rows. */
  readonly node: string;
  /** A lease not renewed for this long is expired. */
  readonly ttlMs: number;
}

export class PostgresStore {
  readonly #pool: pg.Pool;
  readonly #where: string;
  readonly #onConnectionError: ((error: Error) => void) | undefined;
  #closed = false;
  /** Wake-ups and the head poll of every partition: one LISTEN connection, one statement per poll. */
  readonly #follower: PostgresLogFollower;
  /** One lease sweep for every partition, per node name and lease lifetime (a reloaded tenant gets a new node name). */
  readonly #sweepers = new Map<string, PostgresLeaseSweeper>();

  /** Connects, creates or checks the schema, and returns the store. Throws a descriptive Error. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
    if (!Number.isSafeInteger(poolSize) || poolSize < 1) throw new RangeError(`PostgreSQL store: poolSize must be a positive integer, got ${String(poolSize)}`);
    const pool = new pg.Pool({ connectionString: options.url, max: poolSize });
    // The pool listens for errors only on idle clients. A checked-out client (a held write turn, a
    // transaction between two statements) that loses its backend (PostgreSQL restarting,
    // pg_terminate_backend: 57P01) emits `error` too, and an unheard `error` event ends the
    // process. Every client gets a listener for its whole life; the statement in flight fails on
    // its own and the broken client is discarded when released.
    pool.on('connect', (client) => client.on('error', (error) => options.onConnectionError?.(error)));
    pool.on('error', (error) => options.onConnectionError?.(error));
    const where = describeUrl(options.url);
    try {
      await migrate(pool);
    } catch (cause) {
      await pool.end().catch(() => undefined);
      throw new Error(`action log: cannot open PostgreSQL store at ${where}: ${errorMessage(cause)}`, { cause });
    }
    return new PostgresStore(pool, where, options);
  }

  private constructor(pool: pg.Pool, where: string, options: PostgresStoreOptions) {
    this.#pool = pool;
    this.#where = where;
    this.#onConnectionError = options.onConnectionError;
    this.#follower = new PostgresLogFollower({ pool, url: options.url, where, channel: LOG_NOTIFY_CHANNEL, decode: decodeWakeUp, onConnectionError: options.onConnectionError });
  }

  /** Where the store lives, without the password: for log lines and error messages. */
  get where(): string {
    return this.#where;
  }

  /**
   * The action log of one partition (created empty, head 0, on first use). Each call returns a
   * new handle on the same rows; handles in this and other processes share the log exactly like
   * separate processes do (write turns, wake-ups). Closing the handle leaves the store open.
   */
  async actionLog(partition: string): Promise<PostgresActionLog> {
    requirePartitionName(partition);
    this.#assertOpen();
    try {
      await this.#pool.query('INSERT INTO ahp_log_head (partition, head) VALUES ($1, 0) ON CONFLICT (partition) DO NOTHING', [partition]);
    } catch (cause) {
      throw new Error(`action log: cannot open partition ${JSON.stringify(partition)} at ${this.#where}: ${errorMessage(cause)}`, { cause });
    }
    return new PostgresActionLog(this.#partition(partition));
  }

  /** The agent leases of one partition, held as `node`. Closing them leaves the store open. */
  agentLeases(partition: string, options: AgentLeaseOptions): PostgresAgentLeases {
    requirePartitionName(partition);
    this.#assertOpen();
    if (typeof options.node !== 'string' || options.node.length === 0) throw new RangeError('agent leases: node must be a non-empty string');
    if (!Number.isSafeInteger(options.ttlMs) || options.ttlMs < 0) throw new RangeError(`agent leases: ttlMs must be a non-negative integer, got ${String(options.ttlMs)}`);
    const key = `${options.ttlMs}:${options.node}`;
    let sweeper = this.#sweepers.get(key);
    if (sweeper === undefined) {
      sweeper = new PostgresLeaseSweeper(this.#pool, options.node, options.ttlMs, (error) => this.#onConnectionError?.(error));
      this.#sweepers.set(key, sweeper);
    }
    return new PostgresAgentLeases(this.#pool, partition, options.node, options.ttlMs, () => this.#closed, sweeper);
  }

  /** The shared update log of one partition's collaborative documents (postgres-collab-log.ts). */
  collabLog(partition: string): PostgresCollabLog {
    requirePartitionName(partition);
    this.#assertOpen();
    return new PostgresCollabLog(this.#pool, partition, () => this.#closed);
  }

  /** Ends the LISTEN connection and every pooled connection. Safe to call more than once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const sweeper of this.#sweepers.values()) sweeper.stop();
    await this.#follower.close();
    await this.#pool.end();
  }

  #partition(name: string): PostgresPartition {
    return {
      name,
      pool: this.#pool,
      where: `${this.#where} partition ${JSON.stringify(name)}`,
      storeClosed: () => this.#closed,
      onAppended: (listener) => this.#follower.onAppended(name, listener),
      watchHead: (listener) => this.#follower.watchHead(name, listener),
    };
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error(`action log: PostgresStore for ${this.#where} is closed`);
  }
}

/** A lone surrogate: PostgreSQL would store U+FFFD instead, making two names one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * A partition name is any string of 1..256 UTF-16 code units that PostgreSQL text can hold
 * unchanged: no NUL character (PostgreSQL refuses it) and no lone surrogate (it would be
 * replaced, so two different names would share one partition).
 */
function requirePartitionName(partition: string): void {
  if (typeof partition !== 'string' || partition.length < 1 || partition.length > MAX_PARTITION_NAME_LENGTH) {
    const got = typeof partition === 'string' ? `${partition.length} characters` : typeof partition;
    throw new RangeError(`PostgreSQL store: a partition name must be a string of 1..${MAX_PARTITION_NAME_LENGTH} characters, got ${got}`);
  }
  if (partition.includes('\u0000')) throw new RangeError('PostgreSQL store: a partition name must not contain the NUL character');
  if (LONE_SURROGATE.test(partition)) throw new RangeError('PostgreSQL store: a partition name must be well-formed Unicode (it has a lone surrogate)');
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
        throw new Error(`the database has schema version ${version}, written by a newer build; this build understands up to ` + `${SCHEMA_VERSION}. Upgrade the hub (downgrading the database is not supported).`);
      }
      if (version < SCHEMA_VERSION) {
        // Version 1 (one log shared by every tenant) only ever existed in unreleased development
        // builds; its serverSeqs cannot be split by tenant after the fact, so it is not migrated.
        throw new Error(
          `the database has schema version ${version}: it was created by a development build before per-tenant ` +
            `partitions and cannot be upgraded. Drop its ahp_* tables (ahp_meta, ahp_log_head, ahp_records, ` +
            `ahp_snapshots, ahp_agent_leases, ahp_collab_updates) or give the hub a new, empty database.`,
        );
      }
      // Added within version 2 (no reader of older builds minds an extra table).
      await client.query(COLLAB_TABLE_DDL);
      await client.query('COMMIT');
      return;
    }
    await client.query(`
      CREATE TABLE ahp_meta (key text PRIMARY KEY, value text NOT NULL);
      -- One row per partition (tenant): its log head, locked FOR UPDATE by its write turns only.
      CREATE TABLE ahp_log_head (
        partition text PRIMARY KEY CHECK (length(partition) BETWEEN 1 AND ${MAX_PARTITION_NAME_LENGTH}),
        head bigint NOT NULL CHECK (head >= 0)
      );
      CREATE TABLE ahp_records (
        partition text NOT NULL,
        seq bigint NOT NULL,
        channel text NOT NULL,
        action text NOT NULL,  -- JSON text
        origin text,           -- JSON text, or NULL when the record has no origin
        PRIMARY KEY (partition, seq)
      );
      CREATE TABLE ahp_snapshots (partition text NOT NULL, seq bigint NOT NULL, data text NOT NULL, PRIMARY KEY (partition, seq));
      -- Which hub process runs each session's agent (postgres-agent-leases.ts), per partition.
      CREATE TABLE ahp_agent_leases (
        partition text NOT NULL,
        session text NOT NULL,
        node text NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (partition, session)
      );
    `);
    await client.query(COLLAB_TABLE_DDL);
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
function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `postgres://${parsed.username ? `${decodeURIComponent(parsed.username)}@` : ''}${parsed.host}${parsed.pathname}`;
  } catch {
    return 'postgres://(unparseable URL)';
  }
}
