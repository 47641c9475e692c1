/**
 * What one group commit's append costs for small batches: `npm run bench:append` (= build + `node
 * dist/bench/append.js`); flags after `--`, see USAGE.
 *
 * Part 1 appends batches of 1, 2, 5 and 10 fan-out-bench deltas (the same record shape) through the
 * real `SqliteActionLog` with `--sync normal` and `full`, and reports per append the wall time
 * (p50, p99, max) and the CPU time of this process (user + system: less sensitive to a busy
 * machine than wall time, though cache misses still vary). Part 2 runs the same transaction on a
 * copy of the log's schema (BEGIN IMMEDIATE; read head; insert each row; update head; COMMIT; then
 * the head marker's pwrite) with one SQLite setting changed at a time, so each setting's effect is
 * measured beside the baseline in the same run. Settings that would break the documented promise
 * (docs/continuity.md: what is acknowledged survives a kill of the hub process and is never
 * corrupted by an OS crash) are marked so.
 *
 * This is not a test and is never run by vitest.
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteActionLog } from '../server/storage/sqlite-action-log.js';
import type { LogRecord } from '../server/storage/action-log.js';
import { stampedText, nowUs } from './clock.js';

const USAGE = `usage: npm run bench:append -- [flags]
  --appends 3000      appends measured per (variant, batch size)   [3000]
  --batches 1,2,5,10  records per append                            [1,2,5,10]
  --variants all      part 2's settings: all, or a comma list of their indexes (0 = baseline)
  --replica-only      skip part 1 (the real SqliteActionLog)
  --dir DIR           where the temporary databases go             [os.tmpdir()]`;

interface Config {
  appends: number;
  batches: number[];
  dir: string;
  /** Indexes into VARIANTS; undefined = all. */
  variants: number[] | undefined;
  /** Skip part 1 (the real log). */
  replicaOnly: boolean;
}

function parseConfig(argv: readonly string[]): Config {
  const c: Config = { appends: 3000, batches: [1, 2, 5, 10], dir: tmpdir(), variants: undefined, replicaOnly: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--replica-only') {
      c.replicaOnly = true;
      continue;
    }
    const v = argv[++i];
    if (flag === '--variants' && v) c.variants = v === 'all' ? undefined : v.split(',').map(Number);
    else if (flag === '--appends' && Number(v) >= 10) c.appends = Math.floor(Number(v));
    else if (flag === '--batches' && v) c.batches = v.split(',').map(Number);
    else if (flag === '--dir' && v) c.dir = v;
    else {
      process.stdout.write(`${USAGE}\n`);
      process.exit(flag === '--help' || flag === '-h' ? 0 : 1);
    }
  }
  return c;
}

const TURN = `turn-${'0'.repeat(36)}`;
const CHANNEL = `ahp-chat:/${'0'.repeat(36)}`;
function records(fromSeq: number, count: number): LogRecord[] {
  return Array.from({ length: count }, (_, i) => ({
    serverSeq: fromSeq + i,
    channel: CHANNEL,
    action: { type: 'chat/delta', turnId: TURN, partId: 'md-1', content: stampedText(nowUs(), 'lorem ipsum dolor ') },
    origin: { clientId: 'bench-producer-1-0', clientSeq: fromSeq + i },
  }));
}

interface Stats {
  mean: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  cpu: number;
}

function stats(wallUs: number[], cpuUs: number): Stats {
  const s = [...wallUs].sort((a, b) => a - b);
  const q = (p: number): number => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { mean: s.reduce((a, b) => a + b, 0) / s.length, p50: q(0.5), p99: q(0.99), p999: q(0.999), max: s[s.length - 1]!, cpu: cpuUs / wallUs.length };
}

/** Times `appends` calls of `append(head, batch)` after 200 unmeasured ones. */
async function measure(batch: number, appends: number, append: (head: number, recs: LogRecord[]) => unknown): Promise<Stats> {
  let head = 0;
  for (let i = 0; i < 200; i++) {
    await append(head, records(head + 1, batch));
    head += batch;
  }
  const wall: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < appends; i++) {
    const recs = records(head + 1, batch);
    const t = nowUs();
    await append(head, recs);
    wall.push(nowUs() - t);
    head += batch;
  }
  const cpu = process.cpuUsage(cpu0);
  return stats(wall, cpu.user + cpu.system);
}

/** The log's append transaction on a copy of its schema, with `pragmas` run after opening. */
function replica(file: string, pragmas: readonly string[]): { append: (head: number, recs: LogRecord[]) => void; close(): void } {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  for (const p of pragmas) db.pragma(p);
  db.exec(`CREATE TABLE records (seq INTEGER PRIMARY KEY, channel TEXT NOT NULL, action TEXT NOT NULL, origin TEXT) STRICT;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT; INSERT INTO meta VALUES ('head', '0');`);
  const selectHead = db.prepare<[], string>(`SELECT value FROM meta WHERE key = 'head'`).pluck();
  const updateHead = db.prepare<[string]>(`UPDATE meta SET value = ? WHERE key = 'head'`);
  const insert = db.prepare<[number, string, string, string | null]>('INSERT INTO records (seq, channel, action, origin) VALUES (?, ?, ?, ?)');
  const tx = db.transaction((expected: number, recs: LogRecord[]) => {
    if (Number(selectHead.get()) !== expected) throw new Error('head moved');
    for (const r of recs) insert.run(r.serverSeq, r.channel, JSON.stringify(r.action), r.origin ? JSON.stringify(r.origin) : null);
    updateHead.run(String(expected + recs.length));
  });
  const marker = openSync(`${file}.head`, 'w');
  const slot = Buffer.alloc(32);
  return {
    append: (head, recs) => {
      tx.immediate(head, recs);
      writeSync(marker, slot, 0, 32, 0);
    },
    close: () => {
      closeSync(marker);
      db.close();
    },
  };
}

const VARIANTS: { name: string; pragmas: string[]; keepsPromise: boolean }[] = [
  { name: 'baseline (WAL, synchronous NORMAL, wal_autocheckpoint 1000)', pragmas: [], keepsPromise: true },
  { name: 'wal_autocheckpoint 10000 (checkpoints 10× rarer, 10× bigger)', pragmas: ['wal_autocheckpoint = 10000'], keepsPromise: true },
  { name: 'wal_autocheckpoint 100', pragmas: ['wal_autocheckpoint = 100'], keepsPromise: true },
  { name: 'cache_size 64 MiB', pragmas: ['cache_size = -65536'], keepsPromise: true },
  { name: 'locking_mode EXCLUSIVE (no shared-memory locks per transaction)', pragmas: ['locking_mode = EXCLUSIVE'], keepsPromise: false },
  { name: 'synchronous OFF (reference only)', pragmas: ['synchronous = OFF'], keepsPromise: false },
];

const f = (v: number): string => v.toFixed(0);

async function main(): Promise<void> {
  const cfg = parseConfig(process.argv.slice(2));
  const root = mkdtempSync(join(cfg.dir, 'ahp-append-'));
  let n = 0;
  const fresh = (): string => join(root, `log-${n++}.db`);
  try {
    process.stdout.write(`# Append latency per group commit (small batches)\n\n${process.version} · ${cfg.appends} appends per row after 200 unmeasured · µs per append · under ${cfg.dir}\n\n`);
    if (!cfg.replicaOnly) process.stdout.write('## SqliteActionLog\n\n| sync | records/append | mean µs | p50 µs | p99 µs | p99.9 µs | max µs | CPU µs/append |\n|---|---:|---:|---:|---:|---:|---:|---:|\n');
    for (const sync of cfg.replicaOnly ? [] : (['normal', 'full'] as const)) {
      for (const batch of cfg.batches) {
        const log = SqliteActionLog.open({ file: fresh(), synchronous: sync });
        const s = await measure(batch, sync === 'full' ? Math.min(cfg.appends, 300) : cfg.appends, (head, recs) => log.append(head, recs));
        await log.close();
        process.stdout.write(`| ${sync} | ${batch} | ${f(s.mean)} | ${f(s.p50)} | ${f(s.p99)} | ${f(s.p999)} | ${f(s.max)} | ${f(s.cpu)} |\n`);
      }
    }
    process.stdout.write(
      '\n## One setting changed at a time (same transaction on a copy of the schema)\n\n| setting | keeps the promise | records/append | mean µs | p50 µs | p99 µs | p99.9 µs | max µs | CPU µs/append |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n',
    );
    for (const batch of cfg.batches) {
      for (const v of VARIANTS.filter((_, i) => cfg.variants === undefined || cfg.variants.includes(i))) {
        const r = replica(fresh(), v.pragmas);
        const s = await measure(batch, cfg.appends, r.append);
        r.close();
        process.stdout.write(`| ${v.name} | ${v.keepsPromise ? 'yes' : 'no'} | ${batch} | ${f(s.mean)} | ${f(s.p50)} | ${f(s.p99)} | ${f(s.p999)} | ${f(s.max)} | ${f(s.cpu)} |\n`);
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`append bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
