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
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type WebSocket from 'ws';
import { nowUs, scanString } from './clock.js';
import { Histogram } from './histogram.js';
import { openSocket } from './open-socket.js';
import { cpuSeconds, spawnServer, type ServerChild } from './proc.js';
import { HubProducer } from './producers.js';
import { startPostgres, type RunningPostgres } from './throwaway-postgres.js';

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
  const int = (name: string, v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
    return n;
  };
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

/** One subscriber connection: initialize, subscribe (retrying until its node knows the chat), record stamps. */
async function subscriber(wsUrl: string, chat: string, warmStartUs: () => number, hist: Histogram, onCount: () => void): Promise<WebSocket> {
  const ws = await openSocket(wsUrl);
  let id = 0;
  const pending = new Map<number, (msg: { error?: { message: string } }) => void>();
  const request = (method: string, params: unknown): Promise<{ error?: { message: string } }> =>
    new Promise((resolve) => {
      pending.set(++id, resolve);
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  ws.on('message', (data) => {
    const text = String(data);
    if (text.includes('"method":"action"')) {
      const now = nowUs();
      const from = warmStartUs();
      scanString(text, (sent) => {
        if (sent < from) return;
        hist.record(now - sent);
        onCount();
      });
      return;
    }
    const msg = JSON.parse(text) as { id?: number; error?: { message: string } };
    if (typeof msg.id === 'number') pending.get(msg.id)?.(msg);
  });
  await request('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: randomUUID() });
  const deadline = Date.now() + 15_000;
  for (;;) {
    const answer = await request('subscribe', { channel: chat });
    if (!answer.error) return ws;
    if (Date.now() > deadline) throw new Error(`subscribe failed: ${answer.error.message}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function run(cfg: Config, nodes: number, pgServer: { url: string }): Promise<Row> {
  const dbName = `bench_${nodes}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: pgServer.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(pgServer.url);
  url.pathname = `/${dbName}`;
  const hubs: ServerChild[] = [];
  const sockets: WebSocket[] = [];
  let producer: HubProducer | undefined;
  try {
    for (let i = 0; i < nodes; i++) {
      hubs.push(await spawnServer(['dist/server/main.js', '--port', '0', '--store', url.toString(), '--log-level', 'error'], `hub node ${i + 1}`));
    }
    const wsUrls = hubs.map((h) => h.url.replace('http://', 'ws://') + '/ahp');
    producer = await HubProducer.open(wsUrls[0]!, cfg.rate, 'bench ');
    const hist = new Histogram();
    const remote = new Histogram();
    let warmStart = Number.POSITIVE_INFINITY;
    let received = 0;
    for (let i = 0; i < cfg.subscribers; i++) {
      const node = i % nodes;
      sockets.push(
        await subscriber(
          wsUrls[node]!,
          producer.channel,
          () => warmStart,
          node === 0 ? hist : remote,
          () => received++,
        ),
      );
    }
    // Warm up for one second (not counted), then measure.
    const intervalUs = 1e6 / cfg.rate;
    const cpuBefore = hubs.map((h) => cpuSeconds(h.pid));
    const startUs = nowUs();
    // Whole µs: the stamps are whole µs, so the receivers' cut matches the producer's count.
    warmStart = Math.ceil(startUs + 1e6);
    const endUs = warmStart + cfg.seconds * 1e6;
    let sent = 0;
    let next = startUs;
    while (nowUs() < endUs) {
      const now = nowUs();
      while (next <= now) {
        producer.send(next);
        if (next >= warmStart) sent++;
        next += intervalUs;
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const expected = sent * cfg.subscribers;
    const drainDeadline = Date.now() + 5_000;
    while (received < expected && Date.now() < drainDeadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const hubCpu = hubs.reduce((sum, h, i) => sum + cpuSeconds(h.pid) - cpuBefore[i]!, 0);
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
    for (const h of hubs) await h.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
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
  let server: RunningPostgres | undefined;
  const url = process.env['PG_URL'] ?? (server = await startPostgres({ fsync: true })).url;
  try {
    const rows: Row[] = [];
    for (const nodes of cfg.nodes) {
      rows.push(await run(cfg, nodes, { url }));
      process.stderr.write(`  ${nodes} node(s) done\n`);
    }
    process.stdout.write(table(rows, cfg) + '\n');
  } finally {
    server?.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`cluster bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
