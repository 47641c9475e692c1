/**
 * Cluster benchmark, many sessions: one tenant with `--sessions` (100) concurrent streaming
 * sessions on 1, 2 and 3 hub processes sharing one PostgreSQL log. Session i's producer (an agent
 * streaming `chat/delta`s at `--rate` per session) talks to node i mod n, its one subscriber to
 * node (i+1) mod n, so with two or more nodes every update crosses nodes. Reports aggregate
 * delivered writes/s, p99 send → receive latency, CPU and memory per node, and the write turns
 * the nodes took (from their /metrics): turns/s, records appended per turn, records a turn
 * handed over to fold under the lock, and the mean time taking a turn took.
 *
 * `npm run bench` runs it after the cluster fan-out table; flags:
 *   --sessions 100  --rate 10  --seconds 5  --nodes 1,2,3
 * BENCH_CPU_PROF=<dir> profiles every node (node --cpu-prof). Not a test; never run by vitest.
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type WebSocket from 'ws';
import { drain, pace, positiveInt, stampSubscriber, startCluster, turnsBetween, withPostgres, type TurnFigures } from './cluster-setup.js';
import { Histogram } from './histogram.js';
import { nowUs } from './clock.js';
import { HubProducer } from './producers.js';

interface Config {
  sessions: number;
  rate: number;
  seconds: number;
  nodes: number[];
}

interface Row {
  nodes: number;
  sent: number;
  received: number;
  writesPerSecond: number;
  p99: number;
  cpuPerNode: number[];
  rssPerNode: number[];
  turns: TurnFigures;
  elapsed: number;
  load: number;
  status: string;
}

async function run(cfg: Config, nodes: number, pgUrl: string): Promise<Row> {
  const cluster = await startCluster(pgUrl, nodes, 'bench_sessions');
  const sockets: WebSocket[] = [];
  const producers: HubProducer[] = [];
  try {
    const { wsUrls } = cluster;
    const hist = new Histogram();
    let warmStart = Number.POSITIVE_INFINITY;
    let received = 0;
    for (let i = 0; i < cfg.sessions; i++) {
      const producer = await HubProducer.open(wsUrls[i % nodes]!, cfg.rate, 'bench ', false, `-s${i}`);
      producers.push(producer);
      sockets.push(
        await stampSubscriber(
          wsUrls[(i + 1) % nodes]!,
          producer.channel,
          () => warmStart,
          hist,
          () => received++,
        ),
      );
    }
    const cpuBefore = cluster.cpuSeconds();
    const turnsBefore = await cluster.turnFigures();
    const paced = await pace(
      cfg.rate,
      cfg.seconds,
      (start) => (warmStart = start),
      (stamp) => {
        for (const p of producers) p.send(stamp);
        return producers.length;
      },
    );
    await drain(() => received >= paced.sent, 5_000);
    const elapsed = (nowUs() - paced.warmStart) / 1e6;
    const cpuPerNode = cluster.cpuSeconds().map((c, i) => (c - cpuBefore[i]!) / elapsed);
    const turns = turnsBetween(turnsBefore, await cluster.turnFigures());
    const rejected = producers.reduce((n, p) => n + p.stats().rejected, 0);
    const status = rejected > 0 ? `${rejected} rejected (${producers.find((p) => p.stats().errors.length > 0)?.stats().errors[0] ?? ''})` : received < paced.sent ? `${paced.sent - received} not delivered in 5 s` : 'ok';
    return { nodes, sent: paced.sent, received, writesPerSecond: received / cfg.seconds, p99: hist.quantile(0.99) / 1000, cpuPerNode, rssPerNode: cluster.rssMiB(), turns, elapsed, load: loadavg()[0]!, status };
  } finally {
    for (const s of sockets) s.terminate();
    for (const p of producers) await p.close();
    await cluster.stop();
  }
}

function table(rows: Row[], cfg: Config): string {
  const lines = [
    `cluster sessions: one tenant, ${cfg.sessions} streaming sessions at ${cfg.rate} deltas/s each for ${cfg.seconds} s, ` +
      `producer on node i mod n, subscriber on node i+1 mod n; ${cpus().length} cores; PostgreSQL fsync on; load = 1-min load average at the row's end`,
    '| nodes | delivered | writes/s | p99 ms | CPU per node (cores) | RSS per node MiB | turns/s | records per turn | handed over per turn | ms per turn taken | load | status |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const t = r.turns;
    const per = (n: number): string => (t.turns > 0 ? (n / t.turns).toFixed(1) : '–');
    lines.push(
      `| ${r.nodes} | ${r.received}/${r.sent} | ${r.writesPerSecond.toFixed(0)} | ${r.p99.toFixed(1)} | ${r.cpuPerNode.map((c) => c.toFixed(2)).join(' / ')} | ` +
        `${r.rssPerNode.map((m) => m.toFixed(0)).join(' / ')} | ${(t.turns / r.elapsed).toFixed(1)} | ${per(t.appended)} | ${per(t.handedOver)} | ` +
        `${t.turns > 0 ? ((t.waitSeconds * 1000) / t.turns).toFixed(1) : '–'} | ${r.load.toFixed(1)} | ${r.status} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: { sessions: { type: 'string', default: '100' }, rate: { type: 'string', default: '10' }, seconds: { type: 'string', default: '5' }, nodes: { type: 'string', default: '1,2,3' } },
  });
  const cfg: Config = {
    sessions: positiveInt('sessions', values.sessions!),
    rate: positiveInt('rate', values.rate!),
    seconds: positiveInt('seconds', values.seconds!),
    nodes: values.nodes!.split(',').map((n) => positiveInt('nodes', n)),
  };
  await withPostgres(async (url) => {
    const rows: Row[] = [];
    for (const nodes of cfg.nodes) {
      rows.push(await run(cfg, nodes, url));
      process.stderr.write(`  ${nodes} node(s) done\n`);
    }
    process.stdout.write(table(rows, cfg) + '\n');
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`cluster sessions bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
