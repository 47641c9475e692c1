/**
 * Allocation and GC profile of the hub per update: `npm run bench:alloc` (= build + `node
 * dist/bench/alloc.js`); flags after `--`, see USAGE.
 *
 * The same topology as the fan-out bench (hub in a child with its SQLite log, one producer, N
 * subscribers in a worker thread), but it counts instead of timing, so the figures do not depend
 * on how busy the machine is: the hub child preloads bench/alloc-probe.ts, which runs a full GC,
 * counts every byte the V8 heap allocates while `--updates` deltas are sent and delivered to every
 * subscriber, and splits a heap-profiler sample of them into the socket layer and the core.
 * Prints, per N: heap bytes per update (all, core, socket layer), scavenges per 10k updates, the
 * deltas per frame the subscribers saw (above 1: the hub merged adjacent deltas of one batch, which
 * lowers the cost per update; the producer sends one delta per timer tick to keep that rare), and the
 * top allocation sites.
 *
 * This is not a test and is never run by vitest.
 */
import { spawn } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HubProducer } from './producers.js';
import { nowUs } from './clock.js';
import type { SubscriberWorkerData, WorkerCommand, WorkerReport } from './subscribers.js';
import type { ProbeResult } from './alloc-probe.js';

const HERE = dirname(fileURLToPath(import.meta.url));

const USAGE = `usage: npm run bench:alloc -- [flags]
  --subscribers 10,100     subscriber counts (comma list)                 [10,100]
  --updates 5000           deltas counted per N (after the warm-up)        [5000]
  --warmup 1000            deltas sent first, not counted (JIT, caches)    [1000]
  --rate 250               deltas/s the producer sends at most (one per timer tick) [250]
  --repeat 1               runs per N (each its own hub); the table shows each run
  --hub-main FILE          hub entry point (A/B another build)  [dist/server/main.js]
  --top 12                 allocation sites listed per N
  --out FILE               JSON results                [dist/bench-results/alloc.json]`;

interface Config {
  subscribers: number[];
  updates: number;
  warmup: number;
  rate: number;
  repeat: number;
  hubMain: string;
  top: number;
  out: string;
}

function parseConfig(argv: readonly string[]): Config {
  const c: Config = { subscribers: [10, 100], updates: 5000, warmup: 1000, rate: 250, repeat: 1, hubMain: join(HERE, '..', 'server', 'main.js'), top: 12, out: join(HERE, '..', 'bench-results', 'alloc.json') };
  const num = (flag: string, v: string | undefined): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < 1) throw new Error(`${flag} needs a number ≥ 1\n${USAGE}`);
    return Math.floor(n);
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = (): string | undefined => argv[++i];
    if (flag === '--subscribers') c.subscribers = (value() ?? '').split(',').map((s) => num(flag, s));
    else if (flag === '--updates') c.updates = num(flag, value());
    else if (flag === '--warmup') c.warmup = num(flag, value());
    else if (flag === '--rate') c.rate = num(flag, value());
    else if (flag === '--repeat') c.repeat = num(flag, value());
    else if (flag === '--hub-main') c.hubMain = value() ?? c.hubMain;
    else if (flag === '--top') c.top = num(flag, value());
    else if (flag === '--out') c.out = value() ?? c.out;
    else if (flag === '--help' || flag === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else throw new Error(`unknown flag ${flag}\n${USAGE}`);
  }
  return c;
}

interface HubChild {
  url: string;
  ask<T>(cmd: string, answer: string): Promise<T>;
  stop(): Promise<void>;
}

function startHub(cfg: Config, dataDir: string): Promise<HubChild> {
  const args = ['--expose-gc', '--import', join(HERE, 'alloc-probe.js'), cfg.hubMain, '--port', '0', '--data', dataDir, '--log-level', 'warn'];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ask = <T>(cmd: string, answer: string): Promise<T> =>
    new Promise((resolve) => {
      const on = (m: { type?: string }): void => {
        if (m.type !== answer) return;
        child.off('message', on);
        resolve(m as T);
      };
      child.on('message', on);
      child.send({ cmd });
    });
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`hub did not listen within 20 s: ${err}`));
    }, 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1]!, ask, stop });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`hub exited (${code}): ${err}`));
    });
  });
}

function startSubscribers(url: string, channel: string, n: number): Promise<Worker> {
  const data: SubscriberWorkerData = { kind: 'ahp', url, count: n, channel, maxLatencyMs: 0, offset: 0, parse: 'scan', client: 'lean' };
  const w = new Worker(join(HERE, 'subscribers.js'), { workerData: data });
  return new Promise((resolve, reject) => {
    w.on('message', (m: { type: string; message?: string }) => {
      if (m.type === 'ready') resolve(w);
      else if (m.type === 'error') reject(new Error(`subscriber worker: ${m.message}`));
    });
    w.once('error', reject);
  });
}

function received(w: Worker): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: { type: string; count?: number }): void => {
      if (m.type !== 'progress') return;
      w.off('message', on);
      resolve(m.count ?? 0);
    };
    w.on('message', on);
    w.postMessage({ cmd: 'progress' } satisfies WorkerCommand);
  });
}

/**
 * Sends `count` deltas, one per timer tick of 1000/`rate` ms (never catching up in bursts, so the
 * hub's batches hold one delta and nothing merges: the cost per update is the unmerged one), then
 * waits until every subscriber has all of them.
 */
async function sendAndDeliver(producer: HubProducer, w: Worker, count: number, rate: number, expectAtLeast: number): Promise<void> {
  for (let sent = 0; sent < count; sent++) {
    producer.send(nowUs());
    await new Promise((r) => setTimeout(r, 1000 / rate));
  }
  const deadline = Date.now() + 60_000;
  while ((await received(w)) < expectAtLeast) {
    if (Date.now() > deadline) throw new Error(`subscribers did not get all ${expectAtLeast} deliveries within 60 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Row {
  n: number;
  run: number;
  updates: number;
  /** Deltas delivered per frame received (1 = none merged). */
  deltasPerFrame: number;
  probe: ProbeResult;
}

function report(w: Worker): Promise<WorkerReport> {
  return new Promise((resolve) => {
    const on = (m: { type: string }): void => {
      if (m.type !== 'report') return;
      w.off('message', on);
      resolve(m as WorkerReport);
    };
    w.on('message', on);
    w.postMessage({ cmd: 'report' } satisfies WorkerCommand);
  });
}

async function runOne(cfg: Config, n: number, run: number): Promise<Row> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ahp-alloc-'));
  const hub = await startHub(cfg, dataDir);
  let producer: HubProducer | undefined;
  let w: Worker | undefined;
  try {
    const ws = `${hub.url.replace('http://', 'ws://')}/ahp`;
    producer = await HubProducer.open(ws, cfg.rate, 'lorem ipsum dolor ');
    w = await startSubscribers(ws, producer.channel, n);
    // Warm-up: everything counted (window from 0), so wait for warm-up × N deliveries.
    w.postMessage({ cmd: 'window', fromUs: 0, toUs: Number.POSITIVE_INFINITY } satisfies WorkerCommand);
    await sendAndDeliver(producer, w, cfg.warmup, cfg.rate, cfg.warmup * n);
    await hub.ask('start', 'started');
    w.postMessage({ cmd: 'window', fromUs: Math.floor(nowUs()), toUs: Number.POSITIVE_INFINITY } satisfies WorkerCommand);
    await sendAndDeliver(producer, w, cfg.updates, cfg.rate, cfg.updates * n);
    const probe = await hub.ask<ProbeResult>('stop', 'stopped');
    if (producer.stats().rejected > 0) throw new Error(`the hub refused ${producer.stats().rejected} deltas: ${producer.stats().errors[0]}`);
    const seen = await report(w);
    return { n, run, updates: cfg.updates, deltasPerFrame: seen.frames > 0 ? seen.hist.count / seen.frames : Number.NaN, probe };
  } finally {
    if (w) {
      w.postMessage({ cmd: 'close' } satisfies WorkerCommand);
      await w.terminate();
    }
    await producer?.close();
    await hub.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const kb = (bytes: number): string => (bytes / 1024).toFixed(1);

function table(rows: Row[]): string {
  const lines = [
    '| N | run | updates | deltas/frame | heap KB/update | core KB/update | socket KB/update | socket B/delivery | scavenges per 10k updates | scavenge ms per 10k | mark-compacts |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const p = r.probe;
    const sampled = p.layers.socket + p.layers.core || 1;
    const perUpdate = p.heapBytes / r.updates;
    const socket = (perUpdate * p.layers.socket) / sampled;
    lines.push(
      `| ${r.n} | ${r.run} | ${r.updates} | ${r.deltasPerFrame.toFixed(2)} | ${kb(perUpdate)} | ${kb((perUpdate * p.layers.core) / sampled)} | ${kb(socket)} | ${(socket / r.n).toFixed(0)} | ${((p.scavenges * 10_000) / r.updates).toFixed(1)} | ${((p.scavengeMs * 10_000) / r.updates).toFixed(1)} | ${p.markCompacts} |`,
    );
  }
  return lines.join('\n');
}

function sites(r: Row, top: number): string {
  const sampled = r.probe.layers.socket + r.probe.layers.core || 1;
  const lines = [`Top allocation sites, N=${r.n} (share of the heap sample):`, ''];
  for (const s of r.probe.top.slice(0, top)) lines.push(`- ${((100 * s.bytes) / sampled).toFixed(1)}% [${s.layer}] ${s.site}`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const cfg = parseConfig(process.argv.slice(2));
  process.stdout.write(`# AHP hub allocation profile\n\n${process.version} · hub: ${cfg.hubMain} · ${cfg.warmup} warm-up + ${cfg.updates} counted deltas at ${cfg.rate}/s · subscribers byte-scan (lean client)\n\n`);
  const rows: Row[] = [];
  for (let run = 1; run <= cfg.repeat; run++) {
    for (const n of cfg.subscribers) {
      process.stderr.write(`… N=${n} run ${run} `);
      const r = await runOne(cfg, n, run);
      process.stderr.write(`${kb(r.probe.heapBytes / r.updates)} KB/update\n`);
      rows.push(r);
    }
  }
  process.stdout.write(`${table(rows)}\n\n`);
  for (const r of rows.filter((x) => x.run === 1)) process.stdout.write(`${sites(r, cfg.top)}\n\n`);
  process.stdout.write(
    'heap = bytes the V8 heap allocated in the hub process while the counted deltas were sent and delivered (GC-to-GC accounting, full GC before and after); core / socket = that total split by a heap-profiler sample (socket: ws, Node net/stream internals, server/transport); per delivery = per update ÷ N; scavenge ms is timed (the one column that depends on how busy the machine is).\n',
  );
  mkdirSync(dirname(cfg.out), { recursive: true });
  writeFileSync(cfg.out, `${JSON.stringify({ when: new Date().toISOString(), config: cfg, rows }, null, 2)}\n`);
  process.stdout.write(`JSON: ${cfg.out}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`alloc bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
