/**
 * Cluster benchmark: the same fan-out workload on 1, 2 and 3 hub processes sharing one PostgreSQL
 * log. One producer (on node 1) streams timestamped `chat/delta`s at a fixed rate into one chat;
 * N subscribers are spread round-robin over the nodes. Latency is send → receive per update per
 * subscriber (CLOCK_MONOTONIC, shared by every process), so for subscribers on nodes 2 and 3 it
 * includes node 1's commit, the NOTIFY wake-up and their read of the log.
 *
 * `npm run bench` runs it after the fan-out table (`node dist/bench/cluster.js`); flags:
 *   --subscribers 300  --rate 200  --seconds 5  --nodes 1,2,3
 * PostgreSQL: a throwaway server from Debian's binaries (fsync on), or the one PG_URL names.
 * This is not a test and is never run by vitest.
 */
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import type WebSocket from 'ws';
import { drain, pace, positiveInt, stampSubscriber, startCluster, withPostgres } from './cluster-setup.js';
import { Histogram } from './histogram.js';
import { HubProducer } from './producers.js';

interface Config {
  subscribers: number;
  rate: number;
  seconds: number;
  nodes: number[];
}

function parseConfig(argv: readonly string[]): Config {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      subscribers: { type: 'string', default: '300' },
      rate: { type: 'string', default: '200' },
      seconds: { type: 'string', default: '5' },
      nodes: { type: 'string', default: '1,2,3' },
    },
  });
  const int = positiveInt;
  return {
    subscribers: int('subscribers', values.subscribers!),
    rate: int('rate', values.rate!),
    seconds: int('seconds', values.seconds!),
    nodes: values.nodes!.split(',').map((n) => int('nodes', n)),
  };
}

interface Row {
  nodes: number;
  subscribers: number;
  rate: number;
  sent: number;
  expected: number;
  received: number;
  p50: number;
  p99: number;
  max: number;
  p99Remote: number | undefined;
  hubCpu: number;
  status: string;
}

async function run(cfg: Config, nodes: number, pgUrl: string): Promise<Row> {
  const cluster = await startCluster(pgUrl, nodes, 'bench');
  const sockets: WebSocket[] = [];
  let producer: HubProducer | undefined;
  try {
    const { wsUrls } = cluster;
    producer = await HubProducer.open(wsUrls[0]!, cfg.rate, 'bench ');
    const hist = new Histogram();
    const remote = new Histogram();
    let warmStart = Number.POSITIVE_INFINITY;
    let received = 0;
    for (let i = 0; i < cfg.subscribers; i++) {
      const node = i % nodes;
      sockets.push(
        await stampSubscriber(
          wsUrls[node]!,
          producer.channel,
          () => warmStart,
          node === 0 ? hist : remote,
          () => received++,
        ),
      );
    }
    // Warm up for one second (not counted), then measure.
    const cpuBefore = cluster.cpuSeconds();
    const sending = producer;
    const { sent } = await pace(
      cfg.rate,
      cfg.seconds,
      (start) => (warmStart = start),
      (stamp) => {
        sending.send(stamp);
        return 1;
      },
    );
    const expected = sent * cfg.subscribers;
    await drain(() => received >= expected, 5_000);
    const hubCpu = cluster.cpuSeconds().reduce((sum, c, i) => sum + c - cpuBefore[i]!, 0);
    const all = new Histogram();
    all.merge(hist);
    all.merge(remote);
    const stats = producer.stats();
    const status = stats.rejected > 0 ? `${stats.rejected} rejected (${stats.errors[0] ?? ''})` : received < expected ? `${expected - received} not delivered in 5 s` : 'ok';
    return {
      nodes,
      subscribers: cfg.subscribers,
      rate: cfg.rate,
      sent,
      expected,
      received,
      p50: all.quantile(0.5) / 1000,
      p99: all.quantile(0.99) / 1000,
      max: all.max / 1000,
      p99Remote: remote.count > 0 ? remote.quantile(0.99) / 1000 : undefined,
      hubCpu,
      status,
    };
  } finally {
    for (const s of sockets) s.terminate();
    await producer?.close();
    await cluster.stop();
  }
}

function table(rows: Row[], cfg: Config): string {
  const lines = [
    `cluster fan-out: ${cfg.subscribers} subscribers spread over the nodes, 1 producer on node 1 at ${cfg.rate} updates/s for ${cfg.seconds} s; ` + `${cpus().length} cores; PostgreSQL fsync on`,
    '| nodes | delivered | p50 ms | p99 ms | p99 ms (nodes 2–3) | max ms | hub CPU s (all nodes) | status |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(`| ${r.nodes} | ${r.received}/${r.expected} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.p99Remote === undefined ? '–' : r.p99Remote.toFixed(1)} | ` + `${r.max.toFixed(1)} | ${r.hubCpu.toFixed(2)} | ${r.status} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const cfg = parseConfig(process.argv.slice(2));
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
  process.stderr.write(`cluster bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
