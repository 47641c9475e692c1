/**
 * The durable, ordered action log: the port the hub writes every sequenced record to before it
 * acknowledges it, one log per tenant (`tenant-logs.ts`). Implementations: SQLite (embedded
 * default), memory (tests), PostgreSQL (a partition of `PostgresStore`, shared by a cluster).
 * `append` is its one atomic primitive (append-if-at-expected-position), which is what lets
 * several hub processes share one log.
 *
 * The log knows records and snapshots as JSON values; it knows nothing of sockets or reducers.
 */
import type { EpochSpan } from './history-epochs.js';

/** One sequenced record. `channel` is an AHP channel URI or the hub's internal catalogue channel. */
export interface LogRecord {
  /** Strictly increasing and gap-free within one log (one tenant's partition). */
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
  /**
   * Bytes the log's records and snapshots take on disk now (pages in use, not the file's high-water
   * mark), for the per-tenant disk quota. Absent where the hub does not measure it (memory,
   * PostgreSQL: size the database there).
   */
  storedBytes?(): number;
  /**
   * Writes and commits about 64 KiB that leave nothing behind, and throws when the storage
   * cannot take it (full disk, read-only mount): how a tenant whose batch was abandoned on a
   * failing disk learns that appends may work again (server.ts). Absent: the log has no disk of
   * its own to probe (memory, PostgreSQL).
   */
  probeWrite?(): Promise<void>;
  /**
   * Starts a new epoch of this log's history (storage/history-epochs.ts): stores a random id with
   * head + 1 and returns every epoch span kept, oldest first. Called once by each hub that opens
   * the log. Absent: the log keeps no epochs (PostgreSQL, whose nodes share one log), and
   * `reconnect` only refuses cursors beyond the head.
   */
  openEpoch?(): Promise<readonly EpochSpan[]>;
  /** Drops records with serverSeq <= uptoSeq. Callers only compact what a saved snapshot covers. */
  compact(uptoSeq: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The exclusive right to append next, held by one process of a cluster at a time: the one way
 * several hub processes decide against the same state. Taking it locks the log's head and reads
 * every record after the caller's position (what other processes appended); the holder folds
 * those, decides, and appends; the append commits and ends the turn. Nobody else can append
 * while a turn is held, so a decision made under it can never lose an append race.
 */
export interface WriteTurn {
  /** The log head when the turn was taken. */
  readonly head: number;
  /** Records after the caller's position up to `head`, ascending (what it had not folded yet). */
  readonly missed: readonly LogRecord[];
  /** Appends at `head` (the same contract as `ActionLog.append`) and ends the turn. */
  append(records: readonly LogRecord[]): Promise<AppendResult>;
  /** Ends the turn without appending. Safe to call more than once, and after `append`. */
  release(): Promise<void>;
}

/** An ActionLog several processes share (PostgreSQL): write turns and wake-ups on append. */
export interface SharedActionLog extends ActionLog {
  /**
   * Waits for the write turn, then returns it with every record after `afterSeq`. Throws if
   * records after `afterSeq` were compacted away (the caller must reload from a snapshot).
   * A function is read once the turn is held: a caller that folds while it waits for the lock
   * (turn-wait-fold.ts) is handed only what it has not folded yet.
   */
  beginWriteTurn(afterSeq: number | (() => number)): Promise<WriteTurn>;
  /** Calls `listener` with the new head after other processes' appends (a hint, may be lost or late). */
  onAppended(listener: (head: number) => void): () => void;
  /**
   * The store reads the heads of all its partitions in one statement on a schedule
   * (postgres-follower.ts) and calls `listener` with this partition's head after each read: what
   * covers lost wake-ups, so the write gate has no poll of its own (an idle node costs the same
   * for 1 or 1,000 tenants). Required: a wrapper of a shared log must pass it through.
   */
  watchHead(listener: (head: number) => void): HeadWatch;
}

/** A subscription to the store's head poll (`SharedActionLog.watchHead`). */
export interface HeadWatch {
  /** Why the last head poll failed (the log is unreachable), or undefined once one succeeded. */
  readonly problem: string | undefined;
  stop(): void;
}

export function isSharedActionLog(log: ActionLog): log is SharedActionLog {
  return typeof (log as Partial<SharedActionLog>).beginWriteTurn === 'function';
}
