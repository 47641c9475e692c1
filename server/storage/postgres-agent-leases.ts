/**
 * Agent leases in PostgreSQL: which hub process runs the in-process agent of a session. A
 * process that starts a turn takes (or takes over) the session's lease and renews every lease it
 * holds every `renewMs`; a lease not renewed for `ttlMs` means its process died. Any live process
 * may then claim it — `DELETE … WHERE expires_at < now() RETURNING`, so exactly one does — and
 * end the turns that process was running (see server/hub/agent-lease-keeper.ts).
 *
 * Time is PostgreSQL's clock (`now()`), never the processes' own, so clock skew between hub
 * machines cannot expire a healthy lease.
 */
import pg from 'pg';

export interface AgentLeaseStore {
  /** Takes the session's lease for this node (overwriting any holder's). */
  hold(session: string): Promise<void>;
  /** Extends every lease this node holds. */
  renew(): Promise<void>;
  /** Removes and returns the sessions whose lease expired (their holder stopped renewing). */
  claimExpired(): Promise<string[]>;
  close(): Promise<void>;
}

export class PostgresAgentLeases implements AgentLeaseStore {
  readonly #pool: pg.Pool;
  readonly #node: string;
  readonly #ttlMs: number;

  static open(options: { url: string; node: string; ttlMs: number; onConnectionError?: (e: Error) => void }): PostgresAgentLeases {
    const pool = new pg.Pool({ connectionString: options.url, max: 2 });
    pool.on('error', (error) => options.onConnectionError?.(error));
    // The table is created by the log's schema migration (postgres-action-log.ts), which runs first.
    return new PostgresAgentLeases(pool, options.node, options.ttlMs);
  }

  private constructor(pool: pg.Pool, node: string, ttlMs: number) {
    this.#pool = pool;
    this.#node = node;
    this.#ttlMs = ttlMs;
  }

  async hold(session: string): Promise<void> {
    await this.#pool.query(
      `INSERT INTO ahp_agent_leases (session, node, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
       ON CONFLICT (session) DO UPDATE SET node = EXCLUDED.node, expires_at = EXCLUDED.expires_at`,
      [session, this.#node, this.#ttlMs],
    );
  }

  async renew(): Promise<void> {
    await this.#pool.query(`UPDATE ahp_agent_leases SET expires_at = now() + $2 * interval '1 millisecond' WHERE node = $1`, [this.#node, this.#ttlMs]);
  }

  async claimExpired(): Promise<string[]> {
    const result = await this.#pool.query<{ session: string }>('DELETE FROM ahp_agent_leases WHERE expires_at < now() RETURNING session');
    return result.rows.map((r) => r.session);
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
