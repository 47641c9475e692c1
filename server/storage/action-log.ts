/**
 * The durable, ordered action log: the port the hub writes every sequenced record to before it
 * acknowledges it. Implementations: SQLite (embedded default), memory (tests). A distributed
 * engine (PostgreSQL, Redis) implements the same port; `append` is its one atomic primitive
 * (append-if-at-expected-position), which is what lets several hub processes share one log.
 *
 * The log knows records and snapshots as JSON values; it knows nothing of sockets or reducers.
 */

/** One sequenced record. `channel` is an AHP channel URI or the hub's internal catalogue channel. */
export interface LogRecord {
  /** Global, strictly increasing, gap-free within one log. */
  readonly serverSeq: number;
  readonly channel: string;
  readonly action: { readonly type: string } & Record<string, unknown>;
  /**
   * Set for actions a client dispatched. `actor` (who dispatched) lets recovery rebuild the hub's
   * principal-scoped duplicate ledger; it is stored, never sent to clients.
   */
  readonly origin?: { readonly clientId: string; readonly clientSeq: number; readonly actor?: { readonly tenant: string; readonly user: string } } | undefined;
}

/** A point-in-time image of everything the hub needs to resume without replaying from seq 1. */
export interface LogSnapshot {
  /** The snapshot reflects every record with serverSeq <= this. */
  readonly serverSeq: number;
  /** Opaque to the log: the hub's own JSON image. */
  readonly data: unknown;
}

export type AppendResult =
  | { readonly ok: true; readonly head: number }
  /** Someone else appended first: nothing was written; `head` is the log's actual head. */
  | { readonly ok: false; readonly head: number };

export interface ActionLog {
  /** Highest serverSeq stored, 0 for an empty log (also after compaction: the head never goes back). */
  head(): Promise<number>;
  /**
   * Atomically appends `records` iff the current head equals `expectedHead` and the records carry
   * serverSeq expectedHead+1, expectedHead+2, … in order. All or nothing. When it resolves ok,
   * the records survive a process kill.
   */
  append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult>;
  /** Records with serverSeq > afterSeq, ascending, at most `limit` of them. */
  read(afterSeq: number, limit: number): Promise<LogRecord[]>;
  /** Smallest serverSeq still readable, or head+1 when none is. */
  oldestSeq(): Promise<number>;
  /** Stores a snapshot; an older one may be dropped. */
  saveSnapshot(snapshot: LogSnapshot): Promise<void>;
  /** The newest snapshot, if any. */
  latestSnapshot(): Promise<LogSnapshot | undefined>;
  /** Drops records with serverSeq <= uptoSeq. Callers only compact what a saved snapshot covers. */
  compact(uptoSeq: number): Promise<void>;
  close(): Promise<void>;
}
