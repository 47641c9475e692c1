/**
 * Agent leases in PostgreSQL: which hub process runs the in-process agent of a session, per
 * partition (tenant) of a PostgresStore (`store.agentLeases(partition, {node, ttlMs})`); two
 * partitions may both have a session with the same name and different holders. A process that
 * starts a turn takes (or takes over) the session's lease and renews every lease it holds every
 * `renewMs`; a lease not renewed for `ttlMs` means its process died. Any live process may then
 * claim it — `DELETE … WHERE expires_at < now() RETURNING`, so exactly one does — and end the
 * turns that process was running (see server/hub/agent-lease-keeper.ts).
 *
 * A node that drains (SIGTERM, docs/cluster.md) hands its leases over instead of letting them
 * expire: the row is marked `handoff:<node>` and never expires, so no node ends its turns as lost;
 * the next live node to tick claims it (`claimHandedOver`, `FOR UPDATE SKIP LOCKED`, so exactly
 * one does) and resumes the turns there, as a restarted hub does. A node that starts after the
 * whole cluster stopped claims such leases too.
 *
 * Time is PostgreSQL's clock (`now()`), never the processes' own, so clock skew between hub
 * machines cannot expire a healthy lease.
 */
import type pg from 'pg';
import type { PostgresLeaseSweeper, SweepHandler } from './postgres-lease-sweeper.js';

export interface AgentLeaseStore {
  /** Takes the session's lease for this node (overwriting any holder's). */
  hold(session: string): Promise<void>;
  /**
   * The lease tick: `handler` runs after each sweep of the node's one lease statement for every
   * partition (postgres-lease-sweeper.ts), which renewed this node's leases and claimed for it
   * this partition's expired and handed-over ones. The returned function unsubscribes and
   * resolves once a sweep in flight was handled.
   */
  onSweep(handler: SweepHandler): () => Promise<void>;
  /** Extends every lease this node holds. */
  renew(): Promise<void>;
  /** Removes and returns the sessions whose lease expired (their holder stopped renewing). */
  claimExpired(): Promise<string[]>;
  /**
   * Drain: marks this node's leases of `sessions` as handed over (any node may claim them, none
   * ends their turns as lost) and drops this node's other leases. Returns how many were handed over.
   */
  handOver(sessions: readonly string[]): Promise<number>;
  /** How many leases this node handed over are not claimed yet. */
  unclaimedHandOvers(): Promise<number>;
  /** Takes (for this node) and returns the sessions whose lease another node handed over. */
  claimHandedOver(): Promise<string[]>;
  close(): Promise<void>;
}

export class PostgresAgentLeases implements AgentLeaseStore {
  readonly #pool: pg.Pool;
  readonly #partition: string;
  readonly #node: string;
  readonly #ttlMs: number;
  readonly #storeClosed: () => boolean;
  readonly #sweeper: PostgresLeaseSweeper;
  #closed = false;

  /** Made by `PostgresStore.agentLeases`; the pool and the sweeper are the store's, never ended here. */
  constructor(pool: pg.Pool, partition: string, node: string, ttlMs: number, storeClosed: () => boolean, sweeper: PostgresLeaseSweeper) {
    this.#pool = pool;
    this.#sweeper = sweeper;
    this.#partition = partition;
    this.#node = node;
    this.#ttlMs = ttlMs;
    this.#storeClosed = storeClosed;
  }

  async hold(session: string): Promise<void> {
    this.#assertOpen();
    await this.#pool.query(
      `INSERT INTO ahp_agent_leases (partition, session, node, expires_at) VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond')
       ON CONFLICT (partition, session) DO UPDATE SET node = EXCLUDED.node, expires_at = EXCLUDED.expires_at`,
      [this.#partition, session, this.#node, this.#ttlMs],
    );
  }

  onSweep(handler: SweepHandler): () => Promise<void> {
    this.#assertOpen();
    return this.#sweeper.subscribe(this.#partition, handler);
  }

  async renew(): Promise<void> {
    this.#assertOpen();
    await this.#pool.query(`UPDATE ahp_agent_leases SET expires_at = now() + $3 * interval '1 millisecond' WHERE partition = $1 AND node = $2`, [this.#partition, this.#node, this.#ttlMs]);
  }

  async claimExpired(): Promise<string[]> {
    this.#assertOpen();
    const result = await this.#pool.query<{ session: string }>('DELETE FROM ahp_agent_leases WHERE partition = $1 AND expires_at < now() RETURNING session', [this.#partition]);
    return result.rows.map((r) => r.session);
  }

  async handOver(sessions: readonly string[]): Promise<number> {
    this.#assertOpen();
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      const handed = await client.query(`UPDATE ahp_agent_leases SET node = $3, expires_at = 'infinity' WHERE partition = $1 AND node = $2 AND session = ANY($4::text[])`, [this.#partition, this.#node, this.#handOffMark, [...sessions]]);
      await client.query('DELETE FROM ahp_agent_leases WHERE partition = $1 AND node = $2', [this.#partition, this.#node]);
      await client.query('COMMIT');
      return handed.rowCount ?? 0;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async unclaimedHandOvers(): Promise<number> {
    this.#assertOpen();
    const result = await this.#pool.query<{ n: string }>('SELECT COUNT(*) AS n FROM ahp_agent_leases WHERE partition = $1 AND node = $2', [this.#partition, this.#handOffMark]);
    return Number(result.rows[0]?.n ?? 0);
  }

  async claimHandedOver(): Promise<string[]> {
    this.#assertOpen();
    const result = await this.#pool.query<{ session: string }>(
      `UPDATE ahp_agent_leases SET node = $2, expires_at = now() + $3 * interval '1 millisecond'
       WHERE partition = $1 AND session IN (
         SELECT session FROM ahp_agent_leases WHERE partition = $1 AND node LIKE 'handoff:%' AND node <> $4 FOR UPDATE SKIP LOCKED
       ) RETURNING session`,
      [this.#partition, this.#node, this.#ttlMs, this.#handOffMark],
    );
    return result.rows.map((r) => r.session);
  }

  /** The node name a handed-over lease carries: `handoff:` and the node that handed it over. */
  get #handOffMark(): string {
    return `handoff:${this.#node}`;
  }

  /** Retires this object; the store's pool stays open (`PostgresStore.close` ends it). */
  async close(): Promise<void> {
    this.#closed = true;
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error(`agent leases of partition ${JSON.stringify(this.#partition)} are closed`);
    if (this.#storeClosed()) throw new Error(`agent leases of partition ${JSON.stringify(this.#partition)}: the PostgresStore is closed`);
  }
}
