/**
 * Fan-out benchmark: one chat (or document), N subscribers, one producer streaming timestamped
 * updates. `npm run bench` (= build + `node dist/bench/fanout.js`); flags after `--`, see USAGE.
 *
 * Topology (2 cores in mind): the server under test runs in a CHILD PROCESS (hub: the real
 * `dist/server/main.js` with its SQLite log in a temp dir; baseline: bench/raw-ws-server.ts, a
 * plain `ws` broadcast of the producer's bytes; optional Hocuspocus 2). The producer runs on the
 * bench's main thread; the N subscriber sockets run in worker thread(s) of the bench process, so
 * the producer's timers never wait behind subscriber message handling. Subscribers use a lean
 * RFC 6455 client (bench/lean-ws.ts) by default: with 1000 sockets on the second core, the client
 * side saturates first under overload, and the status column says when it did.
 *
 * Every update carries its send time (CLOCK_MONOTONIC µs, shared by all threads/processes);
 * merged deltas keep every marker, so latency is recorded per logical update per subscriber.
 * Only updates sent after the warm-up count. Nothing here is hard-coded: if a server or the
 * subscriber thread cannot keep up, the status column says so.
 *
 * This is not a test and is never run by vitest.
 */
import { Worker } from 'node:worker_threads';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Histogram } from './histogram.js';
import { nowUs } from './clock.js';
import { cpuSeconds, machineBusySeconds, rssMiB, spawnServer, type ServerChild } from './proc.js';
import { HocuspocusProducer, HubProducer, RawProducer, type Producer } from './producers.js';
import type { SubscriberKind, SubscriberWorkerData, WorkerCommand, WorkerReport } from './subscribers.js';

// ─── Configuration ────────────────────────────────────────────────────────────

type ServerKind = 'raw' | 'hub' | 'hub-coalesced' | 'hocuspocus';
/**
 * `unpaced`: one producer connection (one agent) sends `unpacedCount` deltas as fast as its socket
 * takes them, to `unpacedSubscribers` subscribers (of the hub, and of plain ws as the baseline);
 * the row shows that nothing is lost and how fast the hub takes and fans out one fast agent.
 */
type Load = 'sustained' | 'overload' | 'unpaced';

interface Config {
  subscribers: number[];
  rate: number;
  seconds: number;
  overloadSeconds: number;
  /** Updates/s in overload; undefined = auto: min(5000, overloadFrames / N). */
  overloadRate: number | undefined;
  overloadFrames: number;
  coalesceMs: number;
  warmupSeconds: number;
  drainSeconds: number;
  subWorkers: number;
  servers: ServerKind[];
  loads: Load[];
  filler: string;
  cpuProf: boolean;
  sync: 'normal' | 'full';
  /** auto: JSON.parse in sustained runs, byte-scan in overload runs (keeps the client cheap). */
  parse: 'json' | 'scan' | 'auto';
  client: 'ws' | 'lean';
  producerSubscribes: boolean;
  /** Where the hub's temporary data directory is created. */
  dataRoot: string;
  repeat: number;
  /** Runs of each sustained scenario (at least `repeat`): its p99 and CPU ratios are the medians of paired runs. */
  sustainedRepeat: number;
  /** Hub entry point to spawn (A/B a patched build); default dist/server/main.js. */
  hubMain: string;
  /** Seconds to wait, before each scenario, for the machine to go quiet (other processes). */
  quietWait: number;
  out: string;
  unpacedCount: number;
  unpacedSubscribers: number;
  /** Instead of the scenario table: per N and server, the highest sustained rate that keeps p99 ≤ 100 ms and 100 % delivered. */
  ceiling: boolean;
  ceilingP99Ms: number;
}

const USAGE = `usage: npm run bench -- [flags]
  --subscribers 10,100,1000,10000  subscriber counts (comma list)    [10,100,1000,10000]
  --rate 50                sustained updates/s                       [50]
  --seconds 10             sustained measurement seconds             [10]
  --overload-seconds 5     overload measurement seconds              [5]
  --overload-rate auto     overload updates/s; auto = min(5000, overload-frames / N)
  --overload-frames 500000 offered frames/s used by --overload-rate auto
  --coalesce-ms 20         delivery.maxLatencyMs for the hub-coalesced run
  --warmup 1               warm-up seconds before measuring (not counted; overload runs use ≤1 s)
  --drain 2                max seconds to wait for stragglers after the producer stops
  --sub-workers 1          subscriber worker threads
  --servers raw,hub,hub-coalesced,hocuspocus
  --loads sustained,overload,unpaced
  --unpaced-count 10000    deltas the unpaced producer sends as fast as it can (hub only)
  --unpaced-subscribers 100 subscribers of the unpaced row
  --filler-bytes 18        filler text per delta besides the timestamp marker
  --sync normal|full       hub SQLite durability (--sync of the hub)  [normal]
  --parse auto|json|scan   subscribers JSON.parse every action frame, or only byte-scan them;
                           auto = json when sustained, scan under overload            [auto]
  --repeat 1               run every scenario K times (interleaved); the table shows the median-p99 run
  --sustained-repeat 3     run each sustained scenario at least K times (interleaved): one sustained
                           run's p99 is the tail of ~500 updates, so single runs of the same build
                           differ by 1.5x; the ratios are medians of the K paired runs
  --quiet-wait 0           before each scenario wait up to S seconds for other processes to
                           use < 25% CPU (shared machines); 0 = don't wait
  --hub-main FILE          hub entry point to spawn (A/B a patched build) [dist/server/main.js]
  --client lean|ws         subscriber sockets: bench/lean-ws.ts (minimal RFC 6455 client, cheap per
                           frame) or the \`ws\` client library                          [lean]
  --producer-subscribes    hub producer connections also subscribe to the chat (an agent that
                           follows its chat); default: they only dispatch
  --data-root DIR          parent of the hub's temporary SQLite directory [os.tmpdir()]
  --cpu-prof               run server children with --cpu-prof (profiles next to --out, in prof/)
  --quick                  short run: --seconds 4 --overload-seconds 3 --warmup 1 --drain 2
  --ceiling                instead of the table: per N and server, raise the sustained rate
                           (doubling from --rate, then bisecting) until p99 > --ceiling-p99 ms or
                           delivery < 100 %; prints the ceiling table
  --ceiling-p99 100        the p99 (ms) a ceiling run may not pass
  --out FILE               JSON results                               [dist/bench-results/latest.json]`;

function parseConfig(argv: readonly string[]): Config {
  const here = dirname(fileURLToPath(import.meta.url));
  const c: Config = {
    subscribers: [10, 100, 1000, 10_000],
    rate: 50,
    seconds: 10,
    overloadSeconds: 5,
    overloadRate: undefined,
    overloadFrames: 500_000,
    coalesceMs: 20,
    warmupSeconds: 1,
    drainSeconds: 2,
    subWorkers: 1,
    servers: ['raw', 'hub', 'hub-coalesced', 'hocuspocus'],
    loads: ['sustained', 'overload', 'unpaced'],
    filler: 'lorem ipsum dolor ',
    cpuProf: false,
    sync: 'normal',
    parse: 'auto',
    client: 'lean',
    producerSubscribes: false,
    dataRoot: tmpdir(),
    repeat: 1,
    sustainedRepeat: 3,
    hubMain: join(here, '..', 'server', 'main.js'),
    quietWait: 0,
    out: join(here, '..', 'bench-results', 'latest.json'),
    unpacedCount: 10_000,
    unpacedSubscribers: 100,
    ceiling: false,
    ceilingP99Ms: 100,
  };
  const num = (name: string, v: string | undefined, min = 0): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min) throw new Error(`${name} needs a number ≥ ${min}\n${USAGE}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? [argv[i]!.slice(0, argv[i]!.indexOf('=')), argv[i]!.slice(argv[i]!.indexOf('=') + 1)] : [argv[i]!, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    switch (flag) {
      case '--subscribers':
        c.subscribers = (value() ?? '').split(',').map((s) => num('--subscribers', s, 1));
        break;
      case '--rate':
        c.rate = num(flag, value(), 1);
        break;
      case '--seconds':
        c.seconds = num(flag, value(), 0.5);
        break;
      case '--overload-seconds':
        c.overloadSeconds = num(flag, value(), 0.5);
        break;
      case '--overload-rate': {
        const v = value();
        c.overloadRate = v === 'auto' ? undefined : num(flag, v, 1);
        break;
      }
      case '--overload-frames':
        c.overloadFrames = num(flag, value(), 1);
        break;
      case '--unpaced-count':
        c.unpacedCount = Math.floor(num(flag, value(), 1));
        break;
      case '--unpaced-subscribers':
        c.unpacedSubscribers = Math.floor(num(flag, value(), 1));
        break;
      case '--coalesce-ms':
        c.coalesceMs = num(flag, value(), 1);
        break;
      case '--warmup':
        c.warmupSeconds = num(flag, value(), 0);
        break;
      case '--drain':
        c.drainSeconds = num(flag, value(), 0.5);
        break;
      case '--sub-workers':
        c.subWorkers = Math.floor(num(flag, value(), 1));
        break;
      case '--servers': {
        const list = (value() ?? '').split(',').filter(Boolean) as ServerKind[];
        for (const s of list) if (!['raw', 'hub', 'hub-coalesced', 'hocuspocus'].includes(s)) throw new Error(`unknown server ${s}\n${USAGE}`);
        c.servers = list;
        break;
      }
      case '--loads': {
        const list = (value() ?? '').split(',').filter(Boolean) as Load[];
        for (const l of list) if (l !== 'sustained' && l !== 'overload' && l !== 'unpaced') throw new Error(`unknown load ${l}\n${USAGE}`);
        c.loads = list;
        break;
      }
      case '--filler-bytes':
        c.filler = 'lorem ipsum dolor sit amet consectetur adipiscing elit '.repeat(100).slice(0, num(flag, value(), 0));
        break;
      case '--sync': {
        const v = value();
        if (v !== 'normal' && v !== 'full') throw new Error(`--sync must be normal or full\n${USAGE}`);
        c.sync = v;
        break;
      }
      case '--parse': {
        const v = value();
        if (v !== 'json' && v !== 'scan' && v !== 'auto') throw new Error(`--parse must be auto, json or scan\n${USAGE}`);
        c.parse = v;
        break;
      }
      case '--quiet-wait':
        c.quietWait = num(flag, value(), 0);
        break;
      case '--hub-main':
        c.hubMain = value() ?? c.hubMain;
        break;
      case '--repeat':
        c.repeat = Math.floor(num(flag, value(), 1));
        break;
      case '--sustained-repeat':
        c.sustainedRepeat = Math.floor(num(flag, value(), 1));
        break;
      case '--client': {
        const v = value();
        if (v !== 'ws' && v !== 'lean') throw new Error(`--client must be ws or lean\n${USAGE}`);
        c.client = v;
        break;
      }
      case '--producer-subscribes':
        c.producerSubscribes = true;
        break;
      case '--data-root':
        c.dataRoot = value() ?? c.dataRoot;
        break;
      case '--cpu-prof':
        c.cpuProf = true;
        break;
      case '--quick':
        c.seconds = 4;
        c.overloadSeconds = 3;
        c.warmupSeconds = 1;
        c.drainSeconds = 2;
        break;
      case '--ceiling':
        c.ceiling = true;
        break;
      case '--ceiling-p99':
        c.ceilingP99Ms = num('--ceiling-p99', value(), 1);
        break;
      case '--out':
        c.out = value() ?? c.out;
        break;
      case '--help':
      case '-h':
        process.stdout.write(USAGE + '\n');
        process.exit(0);
        break;
      default:
        throw new Error(`unknown flag ${flag}\n${USAGE}`);
    }
  }
  return c;
}

// ─── Scenario run ─────────────────────────────────────────────────────────────

interface Scenario {
  load: Load;
  server: ServerKind;
  n: number;
  rate: number;
  seconds: number;
  maxLatencyMs: number;
}

interface Result {
  load: Load;
  server: ServerKind;
  subscribers: number;
  offeredRate: number;
  /** Updates sent inside the measurement window, and their rate. */
  sent: number;
  sentRate: number;
  expected: number;
  delivered: number;
  deliveredPct: number;
  /** Logical updates (timestamps) delivered per second, window start → last receipt. */
  deliveredPerSec: number;
  framesPerSec: number;
  updatesPerFrame: number;
  avgFrameBytes: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
  /** Time from the producer's last send to the last receipt. */
  drainMs: number;
  serverCpuPct: number;
  /** Server CPU time per delivered update in the window (µs): what one delivery costs the server. */
  serverCpuUsPerDelivery: number;
  /** CPU of the whole bench process (producer + subscriber threads) during the window. */
  benchCpuPct: number;
  /** CPU used by everything else on the machine during the window (kernel softirq included). */
  otherCpuPct: number;
  serverRssMiB: number;
  serverPeakRssMiB: number;
  subscriberElu: number;
  closedSubscribers: number;
  closeCodes: Record<string, number>;
  rejected: number;
  producerLanes: number;
  producerMaxLagMs: number;
  connectMs: number;
  /** Unpaced row: logical updates per second from the first send to the last receipt. */
  throughput: number;
  status: string;
}

const HERE = dirname(fileURLToPath(import.meta.url));

async function startServer(s: Scenario, cfg: Config, dataDir: string | undefined): Promise<ServerChild> {
  const prof = cfg.cpuProf ? ['--cpu-prof', '--cpu-prof-interval=250', `--cpu-prof-dir=${join(dirname(cfg.out), 'prof')}`, `--cpu-prof-name=${s.server}-${s.load}-${s.n}.cpuprofile`] : [];
  // Graceful shutdown is not under test: without a profile to write, give it 1 s, then SIGKILL.
  const killAfterMs = cfg.cpuProf ? 30_000 : 1_000;
  if (s.server === 'raw') return spawnServer([...prof, join(HERE, 'raw-ws-server.js')], 'raw ws server', 20_000, killAfterMs);
  if (s.server === 'hocuspocus') return spawnServer([...prof, join(HERE, 'hocuspocus-server.js')], 'hocuspocus server', 20_000, killAfterMs);
  return spawnServer([...prof, cfg.hubMain, '--port', '0', '--data', dataDir!, '--log-level', 'warn', '--sync', cfg.sync], 'hub', 20_000, killAfterMs);
}

function request<T extends { type: string }>(w: Worker, cmd: WorkerCommand, type: T['type']): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: { type: string }): void => {
      if (m.type === type) {
        w.off('message', on);
        resolve(m as T);
      }
    };
    w.on('message', on);
    w.postMessage(cmd);
  });
}

function startWorkers(kind: SubscriberKind, url: string, n: number, channel: string, maxLatencyMs: number, count: number, parse: 'json' | 'scan', client: 'ws' | 'lean'): Promise<{ workers: Worker[]; connectMs: number }> {
  const workers: Worker[] = [];
  const ready: Promise<number>[] = [];
  let offset = 0;
  for (let i = 0; i < count; i++) {
    const share = Math.floor(n / count) + (i < n % count ? 1 : 0);
    if (share === 0) continue;
    const data: SubscriberWorkerData = { kind, url, count: share, channel, maxLatencyMs, offset, parse, client };
    offset += share;
    const w = new Worker(join(HERE, 'subscribers.js'), { workerData: data });
    workers.push(w);
    ready.push(
      new Promise<number>((resolve, reject) => {
        const on = (m: { type: string; connectMs?: number; message?: string }): void => {
          if (m.type === 'ready') {
            w.off('message', on);
            resolve(m.connectMs ?? 0);
          } else if (m.type === 'error') reject(new Error(`subscriber worker: ${m.message}`));
        };
        w.on('message', on);
        w.once('error', reject);
      }),
    );
  }
  return Promise.all(ready).then((ms) => ({ workers, connectMs: Math.max(...ms) }));
}

/** Sends `rate` updates/s from startUs until endUs; counts those stamped at or after fromUs. */
function pace(producer: Producer, rate: number, startUs: number, fromUs: number, endUs: number, onWindow: () => void): Promise<{ inWindow: number; total: number; maxLagMs: number; lastSendUs: number }> {
  const intervalMs = Math.max(1, Math.floor(1000 / rate));
  let total = 0;
  let inWindow = 0;
  let maxLag = 0;
  let windowSeen = false;
  let lastSendUs = 0;
  return new Promise((resolve) => {
    const tick = (): void => {
      const now = nowUs();
      const until = Math.min(now, endUs);
      const due = Math.floor(((until - startUs) * rate) / 1e6) + 1;
      if (due - total > 1) maxLag = Math.max(maxLag, ((due - total - 1) * 1000) / rate);
      while (total < due) {
        const t = nowUs();
        if (!windowSeen && t >= fromUs) {
          windowSeen = true;
          onWindow();
        }
        producer.send(t);
        total++;
        if (Math.floor(t) >= fromUs) inWindow++;
        lastSendUs = t;
      }
      if (now >= endUs) resolve({ inWindow, total, maxLagMs: maxLag, lastSendUs });
      else setTimeout(tick, intervalMs);
    };
    const wait = Math.max(0, (startUs - nowUs()) / 1000);
    setTimeout(tick, wait);
  });
}

async function runScenario(s: Scenario, cfg: Config): Promise<Result> {
  const dataDir = s.server.startsWith('hub') ? mkdtempSync(join(cfg.dataRoot, 'ahp-bench-')) : undefined;
  const server = await startServer(s, cfg, dataDir);
  const baseWs = server.url.replace('http://', 'ws://');
  let producer: Producer | undefined;
  let workers: Worker[] = [];
  try {
    let producerLanes = 1;
    if (s.server === 'raw') producer = await RawProducer.open(baseWs, cfg.filler);
    else if (s.server === 'hocuspocus') producer = await HocuspocusProducer.open(baseWs, cfg.filler);
    else {
      // Unpaced: one connection, as one agent streaming from a fast model.
      const hp = await HubProducer.open(`${baseWs}/ahp`, s.load === 'unpaced' ? 1 : s.rate, cfg.filler, cfg.producerSubscribes);
      producerLanes = hp.laneCount;
      producer = hp;
    }
    const kind: SubscriberKind = s.server === 'raw' ? 'raw' : s.server === 'hocuspocus' ? 'hocuspocus' : 'ahp';
    const url = s.server.startsWith('hub') ? `${baseWs}/ahp` : baseWs;
    const started = await startWorkers(kind, url, s.n, producer.channel, s.maxLatencyMs, cfg.subWorkers, parseModeFor(s.load, cfg), cfg.client);
    workers = started.workers;

    const startUs = Math.floor(nowUs()) + 50_000;
    const warmup = s.load === 'unpaced' ? 0 : s.load === 'overload' ? Math.min(1, cfg.warmupSeconds) : cfg.warmupSeconds;
    const fromUs = startUs + Math.floor(warmup * 1e6);
    const endUs = fromUs + Math.floor(s.seconds * 1e6);
    for (const w of workers) w.postMessage({ cmd: 'window', fromUs, toUs: Number.POSITIVE_INFINITY } satisfies WorkerCommand);
    let cpu0 = Number.NaN;
    let benchCpu0 = process.cpuUsage();
    let busy0 = Number.NaN;
    let t0 = 0;
    const onWindow = (): void => {
      cpu0 = cpuSeconds(server.pid);
      benchCpu0 = process.cpuUsage();
      busy0 = machineBusySeconds();
      t0 = nowUs();
    };
    const paced = s.load === 'unpaced' ? await blast(producer, cfg.unpacedCount, startUs, onWindow) : await pace(producer, s.rate, startUs, fromUs, endUs, onWindow);
    const firstSendUs = t0;
    // The unpaced producer is done when the hub has taken (echoed) everything, not when it wrote it.
    // (Plain ws has no echoes: its row ends when the subscribers have everything, below.)
    if (s.load === 'unpaced' && s.server !== 'raw') await waitUntil(() => producer!.stats().echoed + producer!.stats().rejected >= paced.total, 120);
    const cpu1 = cpuSeconds(server.pid);
    const benchCpu = process.cpuUsage(benchCpu0);
    const busy1 = machineBusySeconds();
    const t1 = nowUs();
    const windowS = (t1 - t0) / 1e6;
    const serverCpuS = cpu1 - cpu0;
    const benchCpuS = (benchCpu.user + benchCpu.system) / 1e6;

    // Drain: wait until every subscriber has every in-window update, or give up.
    const expected = paced.inWindow * s.n;
    const drainDeadline = nowUs() + (s.load === 'unpaced' ? Math.max(cfg.drainSeconds, 30) : cfg.drainSeconds) * 1e6;
    for (;;) {
      const progress = await Promise.all(workers.map((w) => request<{ type: 'progress'; count: number; closed: number }>(w, { cmd: 'progress' }, 'progress')));
      const got = progress.reduce((a, p) => a + p.count, 0);
      const closed = progress.reduce((a, p) => a + p.closed, 0);
      if (got >= expected - closed * paced.inWindow || nowUs() > drainDeadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const mem = rssMiB(server.pid);
    const reports = await Promise.all(workers.map((w) => request<WorkerReport>(w, { cmd: 'report' }, 'report')));

    const hist = new Histogram();
    let frames = 0;
    let bytes = 0;
    let lastRecv = 0;
    let closed = 0;
    const closeCodes: Record<string, number> = {};
    let elu = 0;
    for (const r of reports) {
      hist.merge(r.hist);
      frames += r.frames;
      bytes += r.bytes;
      lastRecv = Math.max(lastRecv, r.lastRecvUs);
      closed += r.closed;
      for (const [k, v] of Object.entries(r.closeCodes)) closeCodes[k] = (closeCodes[k] ?? 0) + v;
      elu = Math.max(elu, r.elu);
    }
    const spanS = lastRecv > fromUs ? (lastRecv - fromUs) / 1e6 : s.seconds;
    const delivered = hist.count;
    const stats = producer.stats();
    const drainMs = lastRecv > 0 ? Math.max(0, (lastRecv - paced.lastSendUs) / 1000) : Number.NaN;
    const r: Result = {
      load: s.load,
      server: s.server,
      subscribers: s.n,
      offeredRate: s.rate,
      sent: paced.inWindow,
      sentRate: s.load === 'unpaced' ? paced.inWindow / Math.max(1e-3, (paced.lastSendUs - firstSendUs) / 1e6) : paced.inWindow / s.seconds,
      expected,
      delivered,
      deliveredPct: expected > 0 ? (100 * delivered) / expected : 0,
      deliveredPerSec: delivered / spanS,
      framesPerSec: frames / spanS,
      updatesPerFrame: frames > 0 ? delivered / frames : Number.NaN,
      avgFrameBytes: frames > 0 ? bytes / frames : Number.NaN,
      p50Ms: hist.quantile(0.5) / 1000,
      p90Ms: hist.quantile(0.9) / 1000,
      p99Ms: hist.quantile(0.99) / 1000,
      maxMs: hist.max / 1000,
      meanMs: hist.count ? hist.sum / hist.count / 1000 : Number.NaN,
      drainMs,
      serverCpuPct: (100 * serverCpuS) / windowS,
      // Deliveries in the window only (in-window updates × receivers), the CPU was measured over it.
      serverCpuUsPerDelivery: delivered > 0 ? (serverCpuS * 1e6) / delivered : Number.NaN,
      benchCpuPct: (100 * benchCpuS) / windowS,
      otherCpuPct: Math.max(0, (100 * (busy1 - busy0 - serverCpuS - benchCpuS)) / windowS),
      serverRssMiB: mem.rss,
      serverPeakRssMiB: mem.peak,
      subscriberElu: elu,
      closedSubscribers: closed,
      closeCodes,
      rejected: stats.rejected,
      producerLanes,
      producerMaxLagMs: paced.maxLagMs,
      connectMs: started.connectMs,
      throughput: lastRecv > firstSendUs ? paced.inWindow / ((lastRecv - firstSendUs) / 1e6) : Number.NaN,
      status: '',
    };
    r.status = verdict(r, stats.errors, cfg);
    return r;
  } finally {
    // With --cpu-prof the hub stops first (subscribers still reading) so the profile is not
    // polluted by writes into sockets the bench has just torn down.
    if (cfg.cpuProf) await server.stop();
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => void w.terminate().then(() => resolve()), 2_000);
            w.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            w.postMessage({ cmd: 'close' } satisfies WorkerCommand);
          }),
      ),
    );
    await producer?.close().catch(() => {});
    await server.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

function parseModeFor(load: Load, cfg: Config): 'json' | 'scan' {
  return cfg.parse === 'auto' ? (load === 'overload' ? 'scan' : 'json') : cfg.parse;
}

/**
 * Sends `count` updates as fast as the producer's socket takes them: no pacing at all, only a
 * pause while more than 4 MiB sit unsent in the producer's own socket (what any writer does).
 */
async function blast(producer: Producer, count: number, startUs: number, onWindow: () => void): Promise<{ inWindow: number; total: number; maxLagMs: number; lastSendUs: number }> {
  // Timers may fire a little early against the monotonic clock: every update must be in the window.
  while (nowUs() < startUs) await new Promise((r) => setTimeout(r, Math.max(1, (startUs - nowUs()) / 1000)));
  onWindow();
  let lastSendUs = 0;
  for (let i = 0; i < count; i++) {
    lastSendUs = nowUs();
    producer.send(lastSendUs);
    if ((i & 255) === 255) while (producer.bufferedAmount() > 4 * 1024 * 1024) await new Promise((r) => setTimeout(r, 1));
  }
  return { inWindow: count, total: count, maxLagMs: 0, lastSendUs };
}

async function waitUntil(done: () => boolean, maxSeconds: number): Promise<void> {
  const deadline = Date.now() + maxSeconds * 1000;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

function verdict(r: Result, errors: string[], cfg: Config): string {
  const notes: string[] = [];
  if (r.load === 'unpaced') {
    const lost = r.expected - r.delivered;
    notes.push(lost === 0 ? '0 lost' : `LOST ${lost} of ${r.expected} deliveries`);
    notes.push(`${k(r.sent)} deltas written at ${k(r.sentRate)}/s, taken and fanned out at ${k(r.throughput)}/s`);
    if (r.rejected > 0) notes.push(`${r.rejected} refused by the server (${errors[0] ?? ''})`);
    if (r.closedSubscribers > 0) notes.push(`${r.closedSubscribers} subscribers disconnected (codes ${JSON.stringify(r.closeCodes)})`);
    if (r.otherCpuPct > 25) notes.push(`noisy: other processes used ${r.otherCpuPct.toFixed(0)}% CPU`);
    return notes.join('; ');
  }
  const offered = r.sentRate * r.subscribers;
  if (r.delivered < r.expected) {
    notes.push(`FELL BEHIND: only ${r.deliveredPct.toFixed(1)}% delivered ${cfg.drainSeconds}s after the producer stopped`);
  } else if (r.deliveredPerSec < 0.95 * offered || r.drainMs > 1000) {
    notes.push(`saturated: ${k(r.deliveredPerSec)}/s of ${k(offered)}/s offered; backlog drained ${(r.drainMs / 1000).toFixed(1)}s after the producer stopped`);
  } else {
    notes.push('kept up');
  }
  if (r.closedSubscribers > 0) notes.push(`${r.closedSubscribers} subscribers disconnected (codes ${JSON.stringify(r.closeCodes)})`);
  if (r.rejected > 0) notes.push(`${r.rejected} updates refused by the server (${errors[0] ?? ''})`);
  if (r.subscriberElu > 0.9) notes.push(`subscriber thread saturated (ELU ${r.subscriberElu.toFixed(2)}): client-bound, latencies are an upper bound`);
  if (r.otherCpuPct > 25) notes.push(`noisy: other processes used ${r.otherCpuPct.toFixed(0)}% CPU`);
  if (r.producerMaxLagMs > 50) notes.push(`producer ran up to ${r.producerMaxLagMs.toFixed(0)} ms behind schedule`);
  if (r.server === 'hub-coalesced' && r.updatesPerFrame < 1.05 && r.load === 'overload') notes.push('no deltas were merged');
  return notes.join('; ');
}

// ─── Output ───────────────────────────────────────────────────────────────────

const f = (v: number, d = 1): string => (Number.isFinite(v) ? v.toFixed(d) : '—');
const k = (v: number): string => (!Number.isFinite(v) ? '—' : v >= 10_000 ? `${(v / 1000).toFixed(0)}k` : v >= 1000 ? `${(v / 1000).toFixed(1)}k` : v.toFixed(0));

function label(r: Pick<Result, 'server'> & Partial<Pick<Result, 'load'>>, cfg: Config): string {
  if (r.server === 'hub-coalesced') return `hub, maxLatencyMs ${cfg.coalesceMs}`;
  if (r.server === 'hub' && r.load === 'unpaced') return 'hub, one unpaced agent';
  if (r.server === 'raw' && r.load === 'unpaced') return 'plain ws, one unpaced producer';
  if (r.server === 'hub') return 'hub (immediate)';
  if (r.server === 'raw') return 'plain ws broadcast';
  return 'Hocuspocus 2 (in-memory)';
}

function table(results: Result[], cfg: Config): string {
  const head =
    '| load | server | N | upd/s offered | upd/s sent | delivered | deltas/s delivered | frames/s | upd/frame | bytes/frame | p50 ms | p99 ms | max ms | srv CPU | srv µs/delivery | bench CPU | other CPU | srv RSS MiB | sub ELU | status |';
  const sep = '|' + '---|'.repeat(20);
  const rows = results.map(
    (r) =>
      `| ${r.load} | ${label(r, cfg)} | ${r.subscribers} | ${k(r.offeredRate)} | ${k(r.sentRate)} | ${f(r.deliveredPct, 1)}% | ${k(r.deliveredPerSec)} | ${k(r.framesPerSec)} | ${f(r.updatesPerFrame, 2)} | ${f(r.avgFrameBytes, 0)} | ${f(r.p50Ms, 2)} | ${f(r.p99Ms, 2)} | ${f(r.maxMs, 1)} | ${f(r.serverCpuPct, 0)}% | ${f(r.serverCpuUsPerDelivery, 2)} | ${f(r.benchCpuPct, 0)}% | ${f(r.otherCpuPct, 0)}% | ${f(r.serverRssMiB, 0)} | ${f(r.subscriberElu, 2)} | ${r.status} |`,
  );
  return [head, sep, ...rows].join('\n');
}

function ratios(results: Result[], cfg: Config): string {
  const lines = ['| N | load | server | p50 ÷ raw | p99 ÷ raw | deltas/s ÷ raw | srv CPU per delivery ÷ raw |', '|---|---|---|---|---|---|---|'];
  const runsOf = groupRuns(results);
  for (const runs of runsOf.values()) {
    const first = runs[0]!;
    if (first.server === 'raw') continue;
    const bases = runsOf.get(groupKey({ ...first, server: 'raw' }));
    if (!bases) continue;
    // The k-th run of a server is paired with the k-th plain ws run (they ran one after the other).
    const pairs = runs.slice(0, bases.length).map((r, k) => [r, bases[k]!] as const);
    const ratio = (pick: (r: Result) => number): string => {
      const each = pairs.map(([r, b]) => pick(r) / pick(b));
      const median = [...each].sort((x, y) => x - y)[Math.floor((each.length - 1) / 2)]!;
      return each.length > 1 ? `${f(median, 2)}× (${each.map((x) => f(x, 2)).join(', ')})` : `${f(median, 2)}×`;
    };
    lines.push(`| ${first.subscribers} | ${first.load} | ${label(first, cfg)} | ${ratio((r) => r.p50Ms)} | ${ratio((r) => r.p99Ms)} | ${ratio((r) => r.deliveredPerSec)} | ${ratio((r) => r.serverCpuUsPerDelivery)} |`);
  }
  return lines.join('\n');
}

// ─── Main ─────────────────────────────────────────────────────────────────────

/** Waits until the machine spends < 25% of a core on tasks for one second, or gives up. */
async function waitQuiet(maxSeconds: number): Promise<void> {
  const deadline = Date.now() + maxSeconds * 1000;
  for (;;) {
    const b0 = machineBusySeconds();
    const own0 = process.cpuUsage();
    await new Promise((r) => setTimeout(r, 1000));
    const own = process.cpuUsage(own0);
    const other = machineBusySeconds() - b0 - (own.user + own.system) / 1e6;
    if (!(other > 0.25) || Date.now() > deadline) return;
    process.stderr.write(`(waiting for a quiet machine: others use ${(other * 100).toFixed(0)}% CPU) `);
  }
}

function groupKey(r: Pick<Result, 'subscribers' | 'load' | 'server'>): string {
  return `${r.subscribers}|${r.load}|${r.server}`;
}

/** Runs per (N, load, server), in the order they ran. */
function groupRuns(results: Result[]): Map<string, Result[]> {
  const groups = new Map<string, Result[]>();
  for (const r of results) groups.set(groupKey(r), [...(groups.get(groupKey(r)) ?? []), r]);
  return groups;
}

/** Per (N, load, server): the run with the median p99. */
function medianRuns(results: Result[]): Result[] {
  return [...groupRuns(results).values()].map((g) => [...g].sort((a, b) => a.p99Ms - b.p99Ms)[Math.floor((g.length - 1) / 2)]!);
}

function overloadRateFor(n: number, cfg: Config): number {
  return cfg.overloadRate ?? Math.max(1, Math.min(5000, Math.round(cfg.overloadFrames / n)));
}

/** One ceiling probe's outcome: whether the rate held, and why not. */
function ceilingVerdict(r: Result, cfg: Config): string | undefined {
  if (r.delivered < r.expected) return `${r.deliveredPct.toFixed(1)}% delivered`;
  if (r.closedSubscribers > 0) return `${r.closedSubscribers} subscribers closed`;
  if (r.rejected > 0) return `${r.rejected} updates refused`;
  if (r.p99Ms > cfg.ceilingP99Ms) return `p99 ${r.p99Ms.toFixed(1)} ms`;
  return undefined;
}

interface CeilingRow {
  n: number;
  server: ServerKind;
  /** The highest rate that held, its run, and the lowest that did not (undefined: never failed). */
  rate: number;
  held: Result | undefined;
  failedAt: number | undefined;
  why: string;
}

/**
 * Ceiling search per (N, server): double the sustained rate from --rate until a run fails
 * (p99 over the bound, anything undelivered, closed or refused), then bisect four times between
 * the last rate that held and the first that failed. A run is one sustained scenario; the machine
 * must be quiet (--quiet-wait helps on shared machines).
 */
async function ceilingSearch(cfg: Config): Promise<CeilingRow[]> {
  const rows: CeilingRow[] = [];
  const probe = async (n: number, server: ServerKind, rate: number): Promise<{ r?: Result; why?: string }> => {
    if (cfg.quietWait > 0) await waitQuiet(cfg.quietWait);
    process.stderr.write(`… ceiling ${server} N=${n} @ ${rate}/s `);
    try {
      const r = await runScenario({ load: 'sustained', server, n, rate, seconds: cfg.seconds, maxLatencyMs: 0 }, cfg);
      const why = ceilingVerdict(r, cfg);
      process.stderr.write(`p99 ${f(r.p99Ms, 2)} ms, ${f(r.deliveredPct, 1)}%${why ? ` → fails (${why})` : ''}\n`);
      return why ? { r, why } : { r };
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      process.stderr.write(`FAILED: ${why}\n`);
      return { why };
    }
  };
  const maxRate = 100_000;
  for (const n of cfg.subscribers) {
    for (const server of cfg.servers.filter((x) => x !== 'hub-coalesced')) {
      let good = 0;
      let held: Result | undefined;
      let bad: number | undefined;
      let why = `held at ${maxRate}/s (search bound)`;
      for (let rate = Math.max(1, cfg.rate); rate <= maxRate; rate *= 2) {
        const p = await probe(n, server, rate);
        if (p.why === undefined) {
          good = rate;
          held = p.r;
        } else {
          bad = rate;
          why = p.why;
          break;
        }
      }
      for (let step = 0; step < 4 && bad !== undefined && bad - good > 1; step++) {
        const mid = Math.round((good + bad) / 2);
        const p = await probe(n, server, mid);
        if (p.why === undefined) {
          good = mid;
          held = p.r;
        } else {
          bad = mid;
          why = p.why;
        }
      }
      rows.push({ n, server, rate: good, held, failedAt: bad, why });
    }
  }
  return rows;
}

function ceilingTable(rows: CeilingRow[], cfg: Config): string {
  const lines = [`| subscribers | server | ceiling (upd/s) | deliveries/s at it | p99 at it (ms) | srv CPU at it | first failing rate | why it failed |`, '|---:|---|---:|---:|---:|---:|---:|---|'];
  for (const r of rows) {
    const h = r.held;
    lines.push(
      `| ${r.n} | ${label({ server: r.server }, cfg)} | ${r.rate === 0 ? `< ${cfg.rate}` : k(r.rate)} | ${h ? k(h.deliveredPerSec) : '—'} | ${h ? f(h.p99Ms, 2) : '—'} | ${h ? `${f(h.serverCpuPct, 0)}%` : '—'} | ${r.failedAt === undefined ? '—' : k(r.failedAt)} | ${r.why} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const cfg = parseConfig(process.argv.slice(2));
  if (cfg.ceiling) {
    process.stdout.write(`# AHP hub ceiling search\n\nsustained runs of ${cfg.seconds}s (warm-up ${cfg.warmupSeconds}s); a rate holds while p99 ≤ ${cfg.ceilingP99Ms} ms and every update reaches every subscriber\n\n`);
    const rows = await ceilingSearch(cfg);
    process.stdout.write(ceilingTable(rows, cfg) + '\n');
    mkdirSync(dirname(cfg.out), { recursive: true });
    writeFileSync(cfg.out, JSON.stringify({ when: new Date().toISOString(), ceiling: rows }, null, 2) + '\n');
    process.stdout.write(`JSON: ${cfg.out}\n`);
    return;
  }
  const scenarios: Scenario[] = [];
  for (const n of cfg.subscribers) {
    for (const load of cfg.loads) {
      if (load === 'unpaced') continue;
      // Repeats interleave the servers (raw, hub, …, raw, hub, …) so slow drifts hit all alike.
      const runs = load === 'sustained' ? Math.max(cfg.repeat, cfg.sustainedRepeat) : cfg.repeat;
      for (let rep = 0; rep < runs; rep++) {
        for (const server of cfg.servers) {
          // Coalescing is compared under overload; at the sustained rate deltas are 20 ms apart.
          if (load === 'sustained' && server === 'hub-coalesced') continue;
          scenarios.push({
            load,
            server,
            n,
            rate: load === 'sustained' ? cfg.rate : overloadRateFor(n, cfg),
            seconds: load === 'sustained' ? cfg.seconds : cfg.overloadSeconds,
            maxLatencyMs: server === 'hub-coalesced' ? cfg.coalesceMs : 0,
          });
        }
      }
    }
  }
  if (cfg.loads.includes('unpaced') && cfg.servers.some((s) => s.startsWith('hub'))) {
    // Plain ws gets the same unpaced stream, so the hub's row has a baseline in the same run.
    const unpacedServers = cfg.servers.includes('raw') ? (['raw', 'hub'] as const) : (['hub'] as const);
    for (let rep = 0; rep < cfg.repeat; rep++) {
      for (const server of unpacedServers) scenarios.push({ load: 'unpaced', server, n: cfg.unpacedSubscribers, rate: cfg.unpacedCount, seconds: 0, maxLatencyMs: 0 });
    }
  }
  const cpu = cpus();
  const env = {
    node: process.version,
    cpu: cpu[0]?.model ?? 'unknown',
    cores: cpu.length,
    memGiB: +(totalmem() / 2 ** 30).toFixed(1),
    topology: `server in a child process; producer on the bench main thread; ${cfg.subWorkers} subscriber worker thread(s) in the bench process (${cfg.client === 'lean' ? 'lean RFC 6455 client' : 'ws client'})`,
  };
  process.stdout.write(`# AHP hub fan-out bench\n\n${env.node} · ${env.cpu} × ${env.cores} · ${env.memGiB} GiB · ${env.topology}\n`);
  process.stdout.write(
    `sustained: ${cfg.rate} upd/s for ${cfg.seconds}s · overload: ${cfg.overloadRate ?? `auto (min(5000, ${cfg.overloadFrames}/N))`} upd/s for ${cfg.overloadSeconds}s · warm-up ${cfg.warmupSeconds}s (overload ≤1s) · drain ≤${cfg.drainSeconds}s · subscribers: ${cfg.parse === 'auto' ? 'JSON.parse every frame when sustained, byte-scan under overload' : cfg.parse === 'json' ? 'JSON.parse every frame' : 'byte-scan frames'} · hub log: SQLite (--sync ${cfg.sync}) under ${cfg.dataRoot}\n\n`,
  );
  const results: Result[] = [];
  const skipped: string[] = [];
  const began = Date.now();
  for (const s of scenarios) {
    if (cfg.quietWait > 0) await waitQuiet(cfg.quietWait);
    const t = Date.now();
    process.stderr.write(`… ${s.load} ${s.server} N=${s.n} @ ${s.rate}/s `);
    try {
      const r = await runScenario(s, cfg);
      results.push(r);
      process.stderr.write(`p50 ${f(r.p50Ms, 2)} ms p99 ${f(r.p99Ms, 2)} ms, ${f(r.deliveredPct, 1)}% (${((Date.now() - t) / 1000).toFixed(1)}s)\n`);
    } catch (err) {
      const msg = `${s.load} ${s.server} N=${s.n}: ${err instanceof Error ? err.message : String(err)}`;
      skipped.push(msg);
      process.stderr.write(`FAILED: ${msg}\n`);
    }
  }
  const shown = medianRuns(results);
  const repeated = shown.length < results.length;
  if (repeated) process.stdout.write(`A row run more than once (sustained: ${Math.max(cfg.repeat, cfg.sustainedRepeat)} times) shows its median-p99 run (all runs are in the JSON).\n\n`);
  process.stdout.write(table(shown, cfg) + '\n\n');
  process.stdout.write(`Latency and throughput relative to plain ws broadcast (same N, same load${repeated ? '; a repeated row: the median of its paired runs, each run in parentheses' : ''}):\n\n` + ratios(results, cfg) + '\n\n');
  process.stdout.write(
    'Columns: deltas/s = logical updates (timestamps) received by all subscribers per second, window start → last receipt; frames/s = WebSocket frames carrying them (lower than deltas/s only when coalesced); latency = producer send → subscriber receive, per update per subscriber; srv CPU = server child CPU during the window (100% = one core); bench CPU = producer + subscribers (same window); other CPU = user+system CPU of every other process on the machine during the window — high values mean a noisy run; sub ELU = event-loop utilisation of the subscriber thread.\n',
  );
  if (skipped.length) process.stdout.write(`\nFailed scenarios:\n${skipped.map((s) => `- ${s}`).join('\n')}\n`);
  process.stdout.write(`\nTotal ${((Date.now() - began) / 1000).toFixed(0)} s\n`);

  mkdirSync(dirname(cfg.out), { recursive: true });
  let pkgVersion = '';
  try {
    pkgVersion = (JSON.parse(readFileSync(join(HERE, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    /* best effort */
  }
  writeFileSync(cfg.out, JSON.stringify({ when: new Date().toISOString(), version: pkgVersion, env, config: { ...cfg, filler: cfg.filler.length }, results, failed: skipped }, null, 2) + '\n');
  process.stdout.write(`JSON: ${cfg.out}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
