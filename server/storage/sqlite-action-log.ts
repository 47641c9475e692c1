/**
 * ActionLog on an embedded SQLite file (better-sqlite3): the hub's default durable store.
 *
 * Durability: the database runs in WAL mode. With `synchronous=NORMAL` (the default here) a
 * committed transaction has been written to the WAL file with write(2) before `append` resolves,
 * so it survives the hub process being killed at any point: that is the promise we make. It is
 * not fsync'd until the next checkpoint, so an OS crash or power loss can lose the most recent
 * commits (never corrupt the file). `synchronous: 'full'` fsyncs the WAL on every commit and adds
 * durability against OS crash and power loss, at a large cost in appends per second.
 *
 * Damage: SQLite drops WAL frames that fail their checksum, and everything after them, without a
 * word: a truncated or bit-flipped WAL opens as an older, consistent log whose head has gone back.
 * So the log keeps independent evidence of its last durable head in a small side file
 * (`<file>.head`, see `HeadMarker`), written after every committed append, and refuses to open
 * when the database's head is behind it. `PRAGMA quick_check` at open catches damage to the main
 * database file's pages.
 *
 * Concurrency: every write runs in a BEGIN IMMEDIATE transaction, which takes SQLite's single
 * write lock up front, so the read-head-then-insert in `append` is atomic even when several
 * processes share the file. better-sqlite3 is synchronous; the methods return Promises only
 * because the port is async (so network-backed engines fit) and do all their work before returning.
 */
import { closeSync, fstatSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { ActionLog, AppendResult, LogRecord, LogSnapshot } from './action-log.js';
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
import { type EpochSpan, parseEpochSpans, withNewEpoch } from './history-epochs.js';

export interface SqliteActionLogOptions {
  /** Path of the database file; missing parent directories are created. */
  readonly file: string;
  /**
   * 'normal' (default): survives a process kill. 'full': also survives OS crash / power loss,
   * at the price of an fsync per append.
   */
  readonly synchronous?: 'normal' | 'full';
}

/** Bump when the schema changes; a file written by a newer build is refused rather than misread. */
const SCHEMA_VERSION = 1;

interface SnapshotRow {
  readonly seq: number;
  readonly data: unknown;
}

export class SqliteActionLog implements ActionLog {
  readonly #db: Database.Database;
  readonly #file: string;
  readonly #marker: HeadMarker;
  /** Fixed once the file exists (nothing here runs `PRAGMA page_size` + `VACUUM`), so read once. */
  readonly #pageSize: number;
  #closed = false;

  // Prepared once and reused: preparing is most of the cost of a small statement.
  readonly #selectHead: Database.Statement<[], unknown>;
  readonly #updateHead: Database.Statement<[string]>;
  readonly #insertRecord: Database.Statement<[number, string, string, string | null]>;
  readonly #selectRecords: Database.Statement<[number, number], RawRecordRow>;
  readonly #selectOldestSeq: Database.Statement<[], number | null>;
  readonly #deleteRecordsUpTo: Database.Statement<[number]>;
  readonly #upsertSnapshot: Database.Statement<[number, string]>;
  readonly #pruneSnapshots: Database.Statement<[number]>;
  readonly #selectLatestSnapshot: Database.Statement<[], SnapshotRow>;

  // Transactions wrap the statements above; `.immediate()` is used for every write.
  readonly #appendTx: Database.Transaction<(expectedHead: number, rows: readonly StoredRecord[]) => AppendResult>;
  readonly #saveSnapshotTx: Database.Transaction<(seq: number, data: string) => void>;
  readonly #compactTx: Database.Transaction<(uptoSeq: number) => void>;
  readonly #probeTx: Database.Transaction<() => void>;
  readonly #oldestSeqTx: Database.Transaction<() => number>;

  /** Opens (creating if needed) the log at `options.file`. Throws a descriptive Error on failure. */
  static open(options: SqliteActionLogOptions): SqliteActionLog {
    const { file, synchronous = 'normal' } = options;
    mkdirSync(dirname(file), { recursive: true });
    let db: Database.Database;
    try {
      db = new Database(file);
    } catch (cause) {
      throw new Error(`action log: cannot open ${file}: ${errorMessage(cause)}`, { cause });
    }
    let marker: HeadMarker;
    try {
      // journal_mode must be set outside a transaction; it is persistent in the file.
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal') throw new Error(`SQLite refused WAL mode (journal_mode is ${String(mode)})`);
      // synchronous is per connection, so it is set on every open.
      db.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      migrate(db);
      const damage = db.pragma('quick_check', { simple: true });
      if (damage !== 'ok') throw new Error(`the database file is damaged (quick_check: ${String(damage)}); restore it from a backup`);
      marker = HeadMarker.open(`${file}.head`);
    } catch (cause) {
      db.close();
      throw new Error(`action log: cannot open ${file}: ${errorMessage(cause)}`, { cause });
    }
    const log = new SqliteActionLog(db, file, marker);
    try {
      log.#checkAgainstMarker();
    } catch (err) {
      db.close();
      marker.close();
      throw err;
    }
    return log;
  }

  private constructor(db: Database.Database, file: string, marker: HeadMarker) {
    this.#db = db;
    this.#file = file;
    this.#marker = marker;
    this.#pageSize = Number(db.pragma('page_size', { simple: true }));
    this.#selectHead = db.prepare<[], unknown>(`SELECT value FROM meta WHERE key = 'head'`).pluck();
    this.#updateHead = db.prepare<[string]>(`UPDATE meta SET value = ? WHERE key = 'head'`);
    this.#insertRecord = db.prepare<[number, string, string, string | null]>('INSERT INTO records (seq, channel, action, origin) VALUES (?, ?, ?, ?)');
    // LIMIT -1 means "no limit" in SQLite; read() maps Infinity to it.
    this.#selectRecords = db.prepare<[number, number], RawRecordRow>('SELECT seq, channel, action, origin FROM records WHERE seq > ? ORDER BY seq LIMIT ?');
    this.#selectOldestSeq = db.prepare<[], number | null>('SELECT MIN(seq) FROM records').pluck();
    this.#deleteRecordsUpTo = db.prepare<[number]>('DELETE FROM records WHERE seq <= ?');
    this.#upsertSnapshot = db.prepare<[number, string]>('INSERT OR REPLACE INTO snapshots (seq, data) VALUES (?, ?)');
    this.#pruneSnapshots = db.prepare<[number]>('DELETE FROM snapshots WHERE seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?)');
    this.#selectLatestSnapshot = db.prepare<[], SnapshotRow>('SELECT seq, data FROM snapshots ORDER BY seq DESC LIMIT 1');

    // The one atomic primitive: check the head and insert every row inside a single
    // transaction, so a batch is all-or-nothing and two writers can never both win.
    this.#appendTx = db.transaction((expectedHead: number, rows: readonly StoredRecord[]): AppendResult => {
      const head = this.#readHead();
      if (head !== expectedHead) return { ok: false, head };
      for (const row of rows) {
        try {
          this.#insertRecord.run(row.seq, row.channel, row.action, row.origin);
        } catch (cause) {
          // Only possible if meta.head lags behind the records table, i.e. the file was edited.
          throw new Error(`action log: ${this.#file} is inconsistent: record ${row.seq} already exists above head ${head} ` + `(${errorMessage(cause)})`, { cause });
        }
      }
      const newHead = expectedHead + rows.length;
      // head lives in meta, not MAX(seq), so compaction can never make it go back.
      if (rows.length > 0) this.#updateHead.run(String(newHead));
      return { ok: true, head: newHead };
    });
    this.#saveSnapshotTx = db.transaction((seq: number, data: string): void => {
      requireSnapshotWithinHead(seq, this.#readHead());
      this.#upsertSnapshot.run(seq, data);
      this.#pruneSnapshots.run(SNAPSHOTS_KEPT);
    });
    this.#compactTx = db.transaction((uptoSeq: number): void => {
      // Checked inside the write transaction so another process cannot swap the snapshot out
      // between the check and the delete.
      requireCompactionCovered(uptoSeq, this.#selectLatestSnapshot.get()?.seq);
      this.#deleteRecordsUpTo.run(uptoSeq);
    });
    const insertProbe = db.prepare(`INSERT OR REPLACE INTO meta (key, value) VALUES ('probe', hex(randomblob(32768)))`);
    const deleteProbe = db.prepare(`DELETE FROM meta WHERE key = 'probe'`);
    this.#probeTx = db.transaction((): void => {
      insertProbe.run();
      deleteProbe.run();
    });
    // A read transaction: MIN(seq) and head come from the same committed state.
    this.#oldestSeqTx = db.transaction((): number => this.#selectOldestSeq.get() ?? this.#readHead() + 1);
  }

  /**
   * A new epoch after the head, stored in `meta.epochs` in one write transaction (history-epochs.ts).
   * When the file takes no write (a full disk at start: the hub still opens and refuses writes),
   * the new epoch is this process's only: forgotten at the next open, so a cursor from it then
   * gets snapshots, which is safe.
   */
  async openEpoch(): Promise<readonly EpochSpan[]> {
    this.#assertOpen();
    const stored = () => parseEpochSpans(this.#db.prepare<[], string>(`SELECT value FROM meta WHERE key = 'epochs'`).pluck().get());
    try {
      return this.#db
        .transaction((): EpochSpan[] => {
          const spans = withNewEpoch(stored(), this.#readHead());
          this.#db.prepare<[string]>(`INSERT OR REPLACE INTO meta (key, value) VALUES ('epochs', ?)`).run(JSON.stringify(spans));
          return spans;
        })
        .immediate();
    } catch {
      return withNewEpoch(stored(), this.#readHead());
    }
  }

  async head(): Promise<number> {
    this.#assertOpen();
    return this.#readHead();
  }

  async append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult> {
    this.#assertOpen();
    // Validate and serialise before taking the write lock, keeping the locked section short.
    const rows = encodeAppendBatch(expectedHead, records);
    const result = this.#appendTx.immediate(expectedHead, rows);
    // After the commit, never before: the marker may lag the log (a kill between the two) but is
    // never ahead of what was committed.
    if (result.ok && rows.length > 0) this.#marker.write(result.head);
    return result;
  }

  async read(afterSeq: number, limit: number): Promise<LogRecord[]> {
    this.#assertOpen();
    requireSeqArgument('afterSeq', afterSeq);
    requireLimitArgument(limit);
    const rows = this.#selectRecords.all(afterSeq, limit === Number.POSITIVE_INFINITY ? -1 : limit);
    return decodeConsecutiveRecords(rows, this.#file);
  }

  async oldestSeq(): Promise<number> {
    this.#assertOpen();
    return this.#oldestSeqTx.deferred();
  }

  async saveSnapshot(snapshot: LogSnapshot): Promise<void> {
    this.#assertOpen();
    requireSeqArgument('snapshot.serverSeq', snapshot.serverSeq);
    const data = encodeSnapshotData(snapshot);
    this.#saveSnapshotTx.immediate(snapshot.serverSeq, data);
  }

  async latestSnapshot(): Promise<LogSnapshot | undefined> {
    this.#assertOpen();
    const row = this.#selectLatestSnapshot.get();
    return row === undefined ? undefined : decodeSnapshot(row.seq, row.data);
  }

  async compact(uptoSeq: number): Promise<void> {
    this.#assertOpen();
    requireSeqArgument('uptoSeq', uptoSeq);
    this.#compactTx.immediate(uptoSeq);
  }

  async probeWrite(): Promise<void> {
    this.#assertOpen();
    // Inserted and deleted in one transaction: the commit still writes the dirtied pages.
    this.#probeTx.immediate();
  }

  storedBytes(): number {
    this.#assertOpen();
    const pages = Number(this.#db.pragma('page_count', { simple: true })) - Number(this.#db.pragma('freelist_count', { simple: true }));
    return pages * this.#pageSize;
  }

  /** Closes the database (checkpointing the WAL). Safe to call more than once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
    this.#marker.close();
  }

  /** Refuses a log whose head went back behind the last head it is known to have committed. */
  #checkAgainstMarker(): void {
    const head = this.#readHead();
    const marked = this.#marker.read();
    if (marked !== undefined && head < marked) {
      throw new Error(
        `action log: ${this.#file} lost committed records: its head is ${head} but ${this.#marker.file} shows ` +
          `${marked} records were committed. The WAL (${this.#file}-wal) or the database was truncated or damaged, ` +
          `or the machine lost power while running with --sync normal. Restore the data directory from a backup; ` +
          `to accept the loss and continue from ${head}, delete ${this.#marker.file}.`,
      );
    }
    if (marked !== head) this.#marker.write(head);
  }

  #readHead(): number {
    return parseHead(this.#selectHead.get(), this.#file);
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error(`action log: SqliteActionLog for ${this.#file} is closed`);
  }
}

/**
 * Creates the schema in a fresh file, or checks an existing one. Runs under BEGIN IMMEDIATE so
 * two processes opening a new file at once cannot both create it.
 */
function migrate(db: Database.Database): void {
  db.transaction(() => {
    const tables = new Set(db.prepare<[], string>(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all());
    if (tables.has('meta')) {
      const stored = db.prepare<[], unknown>(`SELECT value FROM meta WHERE key = 'schema_version'`).pluck().get();
      const version = typeof stored === 'string' && /^\d+$/.test(stored) ? Number(stored) : undefined;
      if (version === undefined) {
        throw new Error(`not an action log (meta.schema_version is ${JSON.stringify(stored) ?? 'missing'})`);
      }
      if (version > SCHEMA_VERSION) {
        throw new Error(`the file has schema version ${version}, written by a newer build; this build understands up to ` + `${SCHEMA_VERSION}. Upgrade the hub (downgrading the file is not supported).`);
      }
      // version === SCHEMA_VERSION: nothing to migrate yet. Future versions upgrade here, in order.
      return;
    }
    if (tables.size > 0) {
      throw new Error(`not an action log (it has tables ${[...tables].join(', ')} but no meta table)`);
    }
    // STRICT makes SQLite reject wrongly typed values instead of silently storing them.
    db.exec(`
      CREATE TABLE records (
        seq INTEGER PRIMARY KEY,
        channel TEXT NOT NULL,
        action TEXT NOT NULL,  -- JSON
        origin TEXT            -- JSON, or NULL when the record has no origin
      ) STRICT;
      CREATE TABLE snapshots (
        seq INTEGER PRIMARY KEY,
        data TEXT NOT NULL     -- JSON
      ) STRICT;
      CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT
      ) STRICT;
    `);
    const insertMeta = db.prepare<[string, string]>('INSERT INTO meta (key, value) VALUES (?, ?)');
    insertMeta.run('schema_version', String(SCHEMA_VERSION));
    insertMeta.run('head', '0');
  }).immediate();
}

function parseHead(value: unknown, file: string): number {
  if (typeof value === 'string' && /^\d+$/.test(value)) {
    const head = Number(value);
    if (Number.isSafeInteger(head)) return head;
  }
  throw new Error(`action log: ${file} is corrupt: meta.head is ${JSON.stringify(value) ?? 'missing'}`);
}

/**
 * The last committed head, kept outside SQLite: two 32-byte slots, written alternately, each
 * `AHPHEAD1` + head (u64 LE) + FNV-1a checksum. A write that tears (power loss mid-write) spoils
 * at most one slot; reading takes the highest valid one. One pwrite per append, no fsync: with
 * `--sync normal` the WAL is not fsynced either, and a marker that lags is harmless.
 */
class HeadMarker {
  static readonly SLOT_BYTES = 32;
  static readonly MAGIC = Buffer.from('AHPHEAD1', 'latin1');
  readonly #fd: number;
  readonly #buffer = Buffer.alloc(HeadMarker.SLOT_BYTES);
  #nextSlot = 0;
  #closed = false;

  private constructor(
    readonly file: string,
    fd: number,
  ) {
    this.#fd = fd;
  }

  static open(file: string): HeadMarker {
    closeSync(openSync(file, 'a')); // create it if missing, without truncating
    return new HeadMarker(file, openSync(file, 'r+'));
  }

  /** The highest valid head recorded; undefined for a new (empty) marker. Throws when damaged. */
  read(): number | undefined {
    const size = fstatSync(this.#fd).size;
    if (size === 0) return undefined;
    const data = Buffer.alloc(HeadMarker.SLOT_BYTES * 2);
    const got = readSync(this.#fd, data, 0, data.length, 0);
    let best: number | undefined;
    for (let slot = 0; slot * HeadMarker.SLOT_BYTES + HeadMarker.SLOT_BYTES <= got; slot++) {
      const head = HeadMarker.#decode(data.subarray(slot * HeadMarker.SLOT_BYTES, (slot + 1) * HeadMarker.SLOT_BYTES));
      if (head !== undefined && (best === undefined || head > best)) best = head;
    }
    if (best === undefined) {
      throw new Error(`the head marker ${this.file} is damaged (no valid slot); restore the data directory from a backup, or delete it to trust the database as it is`);
    }
    return best;
  }

  write(head: number): void {
    const b = this.#buffer;
    HeadMarker.MAGIC.copy(b, 0);
    b.writeBigUInt64LE(BigInt(head), 8);
    b.writeUInt32LE(fnv1a(b, 16), 16);
    writeSync(this.#fd, b, 0, b.length, this.#nextSlot * HeadMarker.SLOT_BYTES);
    this.#nextSlot ^= 1;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }

  static #decode(slot: Buffer): number | undefined {
    if (!slot.subarray(0, 8).equals(HeadMarker.MAGIC)) return undefined;
    if (slot.readUInt32LE(16) !== fnv1a(slot, 16)) return undefined;
    const head = slot.readBigUInt64LE(8);
    return head <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(head) : undefined;
  }
}

function fnv1a(bytes: Buffer, length: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < length; i++) {
    hash ^= bytes[i]!;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
