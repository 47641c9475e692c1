/**
 * The agent-lease tick of one process, for every partition (tenant) at once: every `tickMs`, ONE
 * statement renews every lease this node holds, claims (deletes) the leases other nodes let
 * expire and takes the leases draining nodes handed over, in every partition whose keeper is
 * subscribed; each partition's keeper is then handed what was claimed in its partition
 * (server/hub/agent-lease-keeper.ts ends or resumes those turns). An idle node thus costs
 * PostgreSQL one statement per tick whatever its number of tenants, not three per tenant.
 *
 * Claims lock with SKIP LOCKED: two nodes sweeping at once never wait on each other's rows (so
 * they cannot deadlock), and a row another statement holds is claimed on a later tick, if it is
 * still claimable then. A lease this node renews is never one it claims (`node <> $1`), so no
 * row is changed twice by the one statement.
 */
import type pg from 'pg';
import { errorMessage } from '../log.js';

/** What one sweep claimed in one partition. */
export interface LeaseClaims {
  /** Sessions whose holder stopped renewing: their turns are to be ended as lost. */
  readonly expired: readonly string[];
  /** Sessions a draining node handed over: now held by this node, their turns are to be resumed. */
  readonly handedOver: readonly string[];
}

/** Runs after each sweep with what it claimed in the subscriber's partition; must not throw. */
export type SweepHandler = (claims: LeaseClaims) => Promise<void>;

const SWEEP_SQL = `
WITH renewed AS (
  UPDATE ahp_agent_leases SET expires_at = now() + $2 * interval '1 millisecond'
  WHERE node = $1 AND partition = ANY($3::text[])
  RETURNING 1
), expired AS (
  DELETE FROM ahp_agent_leases l USING (
    SELECT partition, session FROM ahp_agent_leases
    WHERE partition = ANY($3::text[]) AND node <> $1 AND expires_at < now()
    FOR UPDATE SKIP LOCKED
  ) e
  WHERE l.partition = e.partition AND l.session = e.session
  RETURNING l.partition, l.session
), handed AS (
  UPDATE ahp_agent_leases l SET node = $1, expires_at = now() + $2 * interval '1 millisecond'
  FROM (
    SELECT partition, session FROM ahp_agent_leases
    WHERE partition = ANY($3::text[]) AND node LIKE 'handoff:%' AND node <> $4
    FOR UPDATE SKIP LOCKED
  ) h
  WHERE l.partition = h.partition AND l.session = h.session
  RETURNING l.partition, l.session
)
SELECT 'expired' AS kind, partition, session FROM expired
UNION ALL SELECT 'handedOver' AS kind, partition, session FROM handed`;

export class PostgresLeaseSweeper {
  readonly #pool: pg.Pool;
  readonly #node: string;
  readonly #ttlMs: number;
  readonly #tickMs: number;
  readonly #onError: (error: Error) => void;
  readonly #handlers = new Map<string, SweepHandler>();
  #timer: NodeJS.Timeout | undefined;
  /** The sweep in flight (statement and handlers), awaited by an unsubscribing keeper. */
  #sweeping: Promise<void> | undefined;

  constructor(pool: pg.Pool, node: string, ttlMs: number, onError: (error: Error) => void) {
    this.#pool = pool;
    this.#node = node;
    this.#ttlMs = ttlMs;
    // Renewed four times per lifetime: a lease survives three missed ticks.
    this.#tickMs = Math.max(50, Math.floor(ttlMs / 4));
    this.#onError = onError;
  }

  /**
   * Subscribes the partition's keeper (one per partition and node). The returned function
   * unsubscribes and resolves once a sweep in flight has been handled, so a draining keeper
   * sees every lease claimed for it before it hands its own over.
   */
  subscribe(partition: string, handler: SweepHandler): () => Promise<void> {
    if (this.#handlers.has(partition)) throw new Error(`agent leases: partition ${JSON.stringify(partition)} already has a keeper on node ${this.#node}`);
    this.#handlers.set(partition, handler);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => {
        this.#sweeping ??= this.#sweep().finally(() => (this.#sweeping = undefined));
      }, this.#tickMs);
      this.#timer.unref();
    }
    return async () => {
      if (this.#handlers.get(partition) === handler) this.#handlers.delete(partition);
      if (this.#handlers.size === 0) this.stop();
      await this.#sweeping;
    };
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #sweep(): Promise<void> {
    const handlers = new Map(this.#handlers);
    if (handlers.size === 0) return;
    let rows: Array<{ kind: string; partition: string; session: string }>;
    try {
      const result = await this.#pool.query<{ kind: string; partition: string; session: string }>(SWEEP_SQL, [this.#node, this.#ttlMs, [...handlers.keys()], `handoff:${this.#node}`]);
      rows = result.rows;
    } catch (error) {
      this.#onError(new Error(`agent lease sweep failed; retried next tick: ${errorMessage(error)}`, { cause: error }));
      return;
    }
    const claims = new Map<string, { expired: string[]; handedOver: string[] }>();
    for (const row of rows) {
      let c = claims.get(row.partition);
      if (c === undefined) claims.set(row.partition, (c = { expired: [], handedOver: [] }));
      (row.kind === 'expired' ? c.expired : c.handedOver).push(row.session);
    }
    // Handlers run one partition after the other: ending turns dispatches, and a burst of every
    // tenant's claims at once would only queue on the pool.
    for (const [partition, c] of claims) await handlers.get(partition)?.(c);
  }
}
