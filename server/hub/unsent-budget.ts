/**
 * Unsent data bounded across connections (issue 33.5a). Each connection may hold 4 MiB unsent
 * (`sendOrCloseSlow`), but one user may hold 1,000 connections: 500 paused tabs of one viewer
 * could make the hub hold 2 GiB for one token. So every connection also belongs to its
 * principal's budget, which belongs to its tenant's; past either bound the connections holding
 * the most unsent data — the slowest consumers — are closed with 4008 (slow consumer) and cut at
 * once (their backlog freed; such a client may see 1006 instead) until the rest fit.
 *
 * The sum is kept incrementally: each send notes that connection's unsent bytes (socket plus lag
 * queue), so a connection that drained without being sent to since is counted high, never low.
 * Only when a sum passes its bound are its connections measured again, exactly, before any is
 * closed: the common path costs one map update per send.
 */
import { CloseCode, type Connection } from './connection.js';

/** Defaults: 8 connections' worth of the per-connection bound per user, 64 per tenant. */
export const DEFAULT_MAX_UNSENT_PER_PRINCIPAL = 32 * 1024 * 1024;
export const DEFAULT_MAX_UNSENT_PER_TENANT = 256 * 1024 * 1024;

export class UnsentBudget {
  readonly #held = new Map<Connection, number>();
  #total = 0;

  constructor(
    readonly maxBytes: number,
    /** The connection's unsent bytes now (socket plus what the hub queued for it). */
    private readonly measure: (conn: Connection) => number,
    /** The tenant's budget, which every connection of this principal's also counts against. */
    private readonly parent?: UnsentBudget,
  ) {}

  /** What the connections of this budget hold unsent, as last noted. */
  get total(): number {
    return this.#total;
  }

  get connections(): number {
    return this.#held.size;
  }

  /** `conn` holds `bytes` unsent now (called after each send); sheds the slowest when over the bound. */
  note(conn: Connection, bytes: number): void {
    this.#set(conn, bytes);
    this.parent?.note(conn, bytes);
    if (this.#total > this.maxBytes) this.#shed();
  }

  /** `conn` closed: it holds nothing here any more. */
  forget(conn: Connection): void {
    const held = this.#held.get(conn);
    if (held === undefined) return;
    this.#held.delete(conn);
    this.#total -= held;
    this.parent?.forget(conn);
  }

  #set(conn: Connection, bytes: number): void {
    this.#total += bytes - (this.#held.get(conn) ?? 0);
    this.#held.set(conn, bytes);
  }

  /** Measures every connection again, then closes the ones holding the most until the rest fit. */
  #shed(): void {
    for (const conn of this.#held.keys()) {
      const bytes = this.measure(conn);
      this.#set(conn, bytes);
      if (this.parent) this.parent.#set(conn, bytes);
    }
    if (this.#total <= this.maxBytes) return;
    const slowestFirst = [...this.#held].sort((a, b) => b[1] - a[1]);
    for (const [conn] of slowestFirst) {
      if (this.#total <= this.maxBytes) break;
      // Forgotten first: closing may call back into sends for this connection.
      this.forget(conn);
      conn.close(CloseCode.SlowConsumer, 'slow consumer: this user holds too much unsent data across its connections; reconnect and resume');
      // Cut at once: its backlog is what the bound is about, and the handshake would keep it 30 s.
      conn.terminate?.();
    }
  }
}
