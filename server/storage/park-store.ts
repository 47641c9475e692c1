/**
 * Where a node keeps the chat states of the sessions it parked (docs/architecture.md, "Parked
 * sessions"): one SQLite file of this process's own, in a fresh directory under the system's
 * temporary directory, removed on close.
 *
 * It is a cache, never a source of truth: every parked state was folded from records that are in
 * the log, and every tenant snapshot still holds it (the hub reads it back from here), so a
 * process that dies with sessions parked loses nothing — the next one recovers from the log. For
 * the same reason it is written without fsync. Its rollback journal is kept in memory, so a write
 * that fails half way (a full disk) is rolled back and leaves what was stored before intact.
 * Failures throw; the caller (`ChatTable`, `SessionParking`) decides what a failure means
 * (docs/continuity.md, "Parked sessions"). SQLite is synchronous here, so a lookup of a
 * parked chat can load it on the spot, inside the hub's synchronous decisions. The directory is
 * named after the process, so a cache left behind by a process that was killed (no close ran) is
 * removed by the next one that parks: crashes do not pile up files in the temporary directory.
 * Each image is stored with its HMAC-SHA-256 under a key drawn at random when the process starts
 * and held only in its memory, checked on every read: an image changed in the file (another
 * program, a bad disk) is refused even when it is still valid JSON for its chat, since a state
 * loaded from it would differ from the log without anything noticing — and even when whoever
 * changed it also rewrote the digest beside it (issue 33.5b: a plain SHA-256 there could simply
 * be recomputed), since nobody outside the process knows the key.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const PREFIX = 'ahp-hub-parked-';

/** This process's key for the images' MACs: never written anywhere, so nothing outside can forge one. */
const MAC_KEY = randomBytes(32);

function digestOf(image: string): string {
  return createHmac('sha256', MAC_KEY).update(image).digest('base64');
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function removeCachesOfDeadProcesses(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = name.startsWith(PREFIX) ? Number(name.slice(PREFIX.length).split('-')[0]) : Number.NaN;
    if (Number.isInteger(pid) && pid > 0 && !alive(pid)) rmSync(join(parent, name), { recursive: true, force: true });
  }
}

export class ParkStore {
  readonly #dir: string;
  readonly #db: Database.Database;
  readonly #put: Database.Statement<[string, string, string, string]>;
  readonly #read: Database.Statement<[string], { chat: string; image: string; digest: string }>;
  readonly #drop: Database.Statement<[string]>;
  readonly #dropChat: Database.Statement<[string]>;

  /** The file the images are in (tests damage it). */
  readonly file: string;

  constructor(parent: string = tmpdir()) {
    removeCachesOfDeadProcesses(parent);
    this.#dir = mkdtempSync(join(parent, `${PREFIX}${process.pid}-`));
    this.file = join(this.#dir, 'parked.db');
    let db: Database.Database | undefined;
    try {
      db = new Database(this.file);
      // A cache of what the log already holds: nothing here needs to survive a crash, but a failed
      // write must roll back (an OFF journal cannot), so the journal stays in memory.
      db.pragma('journal_mode = MEMORY');
      db.pragma('synchronous = OFF');
      db.exec('CREATE TABLE parked (chat TEXT PRIMARY KEY, session TEXT NOT NULL, image TEXT NOT NULL, digest TEXT NOT NULL); CREATE INDEX parked_session ON parked (session)');
      this.#db = db;
    } catch (error) {
      // A directory that cannot hold the file (full, read-only) is not left behind.
      db?.close();
      rmSync(this.#dir, { recursive: true, force: true });
      throw error;
    }
    this.#put = this.#db.prepare('INSERT OR REPLACE INTO parked (chat, session, image, digest) VALUES (?, ?, ?, ?)');
    this.#read = this.#db.prepare('SELECT chat, image, digest FROM parked WHERE session = ? ORDER BY rowid');
    this.#drop = this.#db.prepare('DELETE FROM parked WHERE session = ?');
    this.#dropChat = this.#db.prepare('DELETE FROM parked WHERE chat = ?');
  }

  /**
   * Stores the JSON images of one session's chats, replacing whatever the session had (one
   * transaction: a failure stores nothing).
   */
  put(session: string, chats: ReadonlyArray<{ readonly uri: string; readonly json: string }>): void {
    this.#db.transaction(() => {
      this.#drop.run(session);
      for (const c of chats) this.#put.run(c.uri, session, c.json, digestOf(c.json));
    })();
  }

  /** The images stored for a session, in the order they were parked; throws when one is not what was stored. */
  read(session: string): string[] {
    return this.#read.all(session).map((row) => {
      if (digestOf(row.image) !== row.digest) throw new Error(`the parked image of ${row.chat} was changed in the cache file (its keyed digest does not match)`);
      return row.image;
    });
  }

  /** Forgets a session's images (it was loaded or disposed). */
  drop(session: string): void {
    this.#drop.run(session);
  }

  dropChat(chat: string): void {
    this.#dropChat.run(chat);
  }

  close(): void {
    try {
      this.#db.close();
    } finally {
      rmSync(this.#dir, { recursive: true, force: true });
    }
  }
}
