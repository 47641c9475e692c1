import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ActionLog, LogRecord } from '../../server/storage/action-log.js';
import { SqliteActionLog } from '../../server/storage/sqlite-action-log.js';
import { describeActionLogContract } from './action-log.contract.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

function makeTempDir(): string {
  return mkdtempSync(join(tmpdir(), 'ahp-action-log-'));
}

describeActionLogContract(
  'SqliteActionLog',
  async () => {
    const dir = makeTempDir();
    const file = join(dir, 'log.db');
    const opened: ActionLog[] = [];
    const open = (): SqliteActionLog => {
      const log = SqliteActionLog.open({ file });
      opened.push(log);
      return log;
    };
    return {
      log: open(),
      reopen: async () => open(),
      cleanup: async () => {
        for (const log of opened) await log.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  { persistent: true },
);

function tick(serverSeq: number): LogRecord {
  return { serverSeq, channel: 'ahp://sessions/s1', action: { type: 'test/tick', n: serverSeq } };
}

describe('SqliteActionLog specifics', () => {
  let dir: string;
  let file: string;
  const opened: SqliteActionLog[] = [];
  const open = (options: { synchronous?: 'normal' | 'full' } = {}): SqliteActionLog => {
    const log = SqliteActionLog.open({ file, ...options });
    opened.push(log);
    return log;
  };

  beforeEach(() => {
    dir = makeTempDir();
    file = join(dir, 'nested', 'deeper', 'log.db');
  });

  afterEach(async () => {
    for (const log of opened.splice(0)) await log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs raw SQL on the file through a separate connection, as an operator or a bug might. */
  function tamper(sql: string): void {
    const db = new Database(file);
    try {
      db.exec(sql);
    } finally {
      db.close();
    }
  }

  it('creates missing parent directories and puts the file in WAL mode', async () => {
    const log = open();
    await log.append(0, [tick(1)]);
    const db = new Database(file, { readonly: true });
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get('schema_version')).toBe('1');
    } finally {
      db.close();
    }
  });

  it('works with synchronous: full', async () => {
    const log = open({ synchronous: 'full' });
    expect(await log.append(0, [tick(1), tick(2)])).toEqual({ ok: true, head: 2 });
  });

  it('append-if-at-head is atomic across two connections to the same file', async () => {
    const a = open();
    const b = open();
    expect(await a.append(0, [tick(1)])).toEqual({ ok: true, head: 1 });
    expect(await b.append(0, [tick(1)])).toEqual({ ok: false, head: 1 });
    expect(await b.append(1, [tick(2)])).toEqual({ ok: true, head: 2 });
    expect(await a.head()).toBe(2);
    expect((await a.read(0, 10)).map((r) => r.serverSeq)).toEqual([1, 2]);
  });

  it('refuses to open a file with a newer schema version, with a clear error', async () => {
    await open().close();
    tamper(`UPDATE meta SET value = '99' WHERE key = 'schema_version'`);
    expect(() => open()).toThrow(/schema version 99.*newer build.*up to 1/);
  });

  it('refuses SQLite files that are not action logs, and files that are not SQLite at all', () => {
    mkdirSync(dirname(file), { recursive: true });
    tamper('CREATE TABLE other (x)');
    expect(() => open()).toThrow(/not an action log .*other/);
    rmSync(file);
    writeFileSync(file, 'this is definitely not a database'.repeat(200));
    expect(() => open()).toThrow(new RegExp(`cannot open ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  });

  it('reports corrupt record columns by seq instead of crashing', async () => {
    const log = open();
    await log.append(0, [tick(1), tick(2), tick(3)]);
    tamper(`UPDATE records SET action = '{"type": broken' WHERE seq = 2`);
    await expect(log.read(0, 10)).rejects.toThrow(/record 2 is corrupt: action column is not valid JSON/);
    expect((await log.read(2, 10)).map((r) => r.serverSeq)).toEqual([3]);

    tamper(`UPDATE records SET action = '[1,2]', origin = 'nope' WHERE seq = 3`);
    await expect(log.read(2, 10)).rejects.toThrow(/record 3 is corrupt: action is not an object/);
    tamper(`UPDATE records SET action = '{"type":"ok"}' WHERE seq = 3`);
    await expect(log.read(2, 10)).rejects.toThrow(/record 3 is corrupt: origin column is not valid JSON/);
  });

  it('reports a corrupt snapshot, a corrupt head and a gap in the records clearly', async () => {
    const log = open();
    await log.append(0, [tick(1), tick(2), tick(3)]);
    await log.saveSnapshot({ serverSeq: 1, data: {} });
    tamper(`UPDATE snapshots SET data = 'not json' WHERE seq = 1`);
    await expect(log.latestSnapshot()).rejects.toThrow(/snapshot 1 is corrupt/);

    tamper('DELETE FROM records WHERE seq = 2');
    await expect(log.read(0, 10)).rejects.toThrow(/records 2\.\.2 are missing/);

    tamper(`UPDATE meta SET value = 'three' WHERE key = 'head'`);
    await expect(log.head()).rejects.toThrow(/meta\.head is "three"/);
  });

  it('refuses to open when the head went back behind the head marker, and says how to accept the loss', async () => {
    const log = open();
    await log.append(0, [tick(1), tick(2), tick(3)]);
    await log.close();
    // What a damaged WAL looks like once SQLite drops its bad frames: an older, consistent file.
    tamper(`DELETE FROM records WHERE seq > 1; UPDATE meta SET value = '1' WHERE key = 'head'`);
    expect(() => open()).toThrow(/lost committed records: its head is 1 but \S+\.head shows 3 records were committed.*delete \S+\.head/s);
    rmSync(`${file}.head`);
    const accepted = open();
    expect(await accepted.head()).toBe(1);
    expect((await accepted.append(1, [tick(2)])).ok).toBe(true);
  });

  it('survives one torn marker slot, refuses a marker with no valid slot', async () => {
    const log = open();
    await log.append(0, [tick(1)]);
    await log.append(1, [tick(2)]);
    await log.close();
    const marker = `${file}.head`;
    const bytes = readFileSync(marker);
    expect(bytes.length).toBe(64);
    const torn = Buffer.from(bytes);
    torn.fill(0xab, 8, 24); // one slot spoiled mid-write
    writeFileSync(marker, torn);
    const reopened = open();
    expect(await reopened.head()).toBe(2);
    await reopened.close();
    writeFileSync(marker, Buffer.alloc(64, 0x55));
    expect(() => open()).toThrow(/head marker \S+ is damaged/);
  });

  it('keeps only the two newest snapshots', async () => {
    const log = open();
    await log.append(0, [tick(1), tick(2), tick(3)]);
    for (const serverSeq of [1, 2, 3]) await log.saveSnapshot({ serverSeq, data: serverSeq });
    const db = new Database(file, { readonly: true });
    try {
      expect(db.prepare('SELECT seq FROM snapshots ORDER BY seq').pluck().all()).toEqual([2, 3]);
    } finally {
      db.close();
    }
  });
});

/**
 * Resolves once `done()` holds, re-checked on every chunk the child writes (no sleeping); rejects
 * if the child exits first or the deadline passes.
 */
function untilOutput(child: ChildProcess, done: () => boolean, timeoutMs: number, state: () => string): Promise<void> {
  return new Promise((resolve, reject) => {
    const finish = (error?: Error): void => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('close', onClose);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onData = (): void => {
      if (done()) finish();
    };
    const onClose = (): void => finish(new Error(`child exited early: ${state()}`));
    const timer = setTimeout(() => finish(new Error(`deadline passed: ${state()}`)), timeoutMs);
    child.stdout?.on('data', onData);
    child.on('close', onClose);
    onData();
  });
}

/*
 * The durability promise, tested for real: a child process appends one record at a time and
 * prints each seq only after its append resolved; we SIGKILL it mid-stream and check that every
 * acknowledged record is on disk. The child cannot load TypeScript (no loader on Node 20), so it
 * imports the compiled module from dist/, which is (re)built here if missing or stale so the test
 * can never silently run against old code or skip.
 */
describe('SqliteActionLog durability across a process kill', () => {
  const compiled = join(REPO_ROOT, 'dist/server/storage/sqlite-action-log.js');
  const sources = ['action-log.ts', 'record-codec.ts', 'sqlite-action-log.ts'].map((name) => join(REPO_ROOT, 'server/storage', name));
  const isFresh = (): boolean => existsSync(compiled) && sources.every((source) => statSync(source).mtimeMs <= statSync(compiled).mtimeMs);

  beforeAll(() => {
    if (isFresh()) return; // `npm test` builds before vitest, so this is the usual path.
    let output = '';
    try {
      execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: REPO_ROOT, encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      // tsc exits non-zero for type errors anywhere but still emits; only errors in the storage
      // module matter here. (A touched-but-unchanged source is not re-emitted by an incremental
      // build, so a clean storage build is the criterion, not the output's mtime.)
      output = error instanceof Error && 'stdout' in error ? `${String(error.stdout)}\n${error.message}` : String(error);
    }
    const storageErrors = output.split('\n').filter((line) => line.startsWith('server/storage/'));
    if (storageErrors.length > 0 || !existsSync(compiled)) {
      throw new Error(`could not build ${compiled}:\n${output}`);
    }
  }, 180_000);

  let dir: string;
  beforeEach(() => {
    dir = makeTempDir();
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const CHILD_SCRIPT = `
    const { SqliteActionLog } = await import(process.env.ACTION_LOG_MODULE);
    const log = SqliteActionLog.open({ file: process.env.ACTION_LOG_FILE });
    for (let seq = 1; seq <= 1_000_000; seq++) {
      const action = { type: 'test/tick', n: seq };
      const result = await log.append(seq - 1, [{ serverSeq: seq, channel: 'ahp://kill', action }]);
      if (!result.ok) throw new Error('unexpected conflict at ' + seq);
      // Written only after the append resolved: every line the parent sees is an acknowledged append.
      process.stdout.write(seq + '\\n');
    }
  `;

  it('keeps every acknowledged append after SIGKILL', async () => {
    const file = join(dir, 'killed.db');
    const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD_SCRIPT], {
      cwd: REPO_ROOT,
      env: { ...process.env, ACTION_LOG_MODULE: pathToFileURL(compiled).href, ACTION_LOG_FILE: file },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const acknowledged: number[] = [];
    let pending = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? ''; // a partial line was not fully acknowledged yet
      for (const line of lines) acknowledged.push(Number(line));
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const closed = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)));

    try {
      await untilOutput(
        child,
        () => acknowledged.length >= 50,
        20_000,
        () => `${acknowledged.length} acknowledged; stderr:\n${stderr}`,
      );
      // Kill it without warning while it is still appending.
      child.kill('SIGKILL');
      expect(await closed).toBe('SIGKILL');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }

    const last = acknowledged.at(-1) ?? 0;
    expect(acknowledged).toEqual(Array.from({ length: acknowledged.length }, (_, i) => i + 1));
    const log = SqliteActionLog.open({ file });
    try {
      const head = await log.head();
      expect(head).toBeGreaterThanOrEqual(last);
      const stored = await log.read(0, Number.POSITIVE_INFINITY);
      expect(stored.map((r) => r.serverSeq)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
      for (const seq of acknowledged) {
        expect(stored[seq - 1]).toStrictEqual({ serverSeq: seq, channel: 'ahp://kill', action: { type: 'test/tick', n: seq } });
      }
    } finally {
      await log.close();
    }
  });
});
