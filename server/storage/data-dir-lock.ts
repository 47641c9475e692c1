/**
 * One hub process per data directory. Two processes appending to the same log would each keep
 * their own in-memory state and sequence, so the second must refuse to start. The lock is an
 * exclusive SQLite transaction held open on `hub.lock` for the life of the process: SQLite takes
 * an OS file lock (fcntl), which the kernel releases when the process dies, even by SIGKILL, so a
 * crash never leaves a stale lock behind to clean up by hand.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { errorMessage } from '../log.js';

export interface DataDirLock {
  readonly file: string;
  release(): void;
}

class DataDirLockedError extends Error {
  constructor(readonly dataDir: string) {
    super(`data directory ${dataDir} is in use by another hub process (its lock file hub.lock is held): stop that hub (Ctrl+C where it runs), or give this one its own directory, e.g. --data ./data-team`);
    this.name = 'DataDirLockedError';
  }
}

export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'hub.lock');
  // timeout 0: a held lock is an answer, not something to wait for.
  const db = new Database(file, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') throw new DataDirLockedError(dataDir);
    throw new Error(`cannot lock data directory ${dataDir}: ${errorMessage(err)}`, { cause: err });
  }
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      db.close();
    },
  };
}
