/**
 * Cluster benchmark, many sessions: one tenant with `--sessions` (100) concurrent streaming
 * sessions on 1, 2 and 3 hub processes sharing one PostgreSQL log. Session i's producer (an agent
 * streaming `chat/delta`s at `--rate` per session) talks to node i mod n, its one subscriber to
 * node (i+1) mod n, so with two or more nodes every update crosses nodes. Reports aggregate
 * delivered writes/s, p99 send → receive latency, and CPU and memory per node.
 *
 *   node dist/bench/cluster-sessions.js --sessions 100 --rate 10 --seconds 5 --nodes 1,2,3
 *
 * Not a test; never run by vitest.
 */
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type WebSocket from 'ws';
import { nowUs, scanString } from './clock.js';
import { Histogram } from './histogram.js';
import { openSocket } from './open-socket.js';
import { cpuSeconds, rssMiB, spawnServer, type ServerChild } from './proc.js';
import { HubProducer } from './producers.js';
import { startPostgres, type RunningPostgres } from './throwaway-postgres.js';

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
  status: string;
}

async function subscribe(wsUrl: string, chat: string, warmStartUs: () => number, hist: Histogram, onCount: () => void): Promise<WebSocket> {
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
      scanString(text, (sent) => {
        if (sent < warmStartUs()) return;
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

async function run(cfg: Config, nodes: number, pgUrl: string): Promise<Row> {
  const dbName = `bench_sessions_${nodes}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(pgUrl);
  url.pathname = `/${dbName}`;
  const hubs: ServerChild[] = [];
  const sockets: WebSocket[] = [];
  const producers: HubProducer[] = [];
  try {
    for (let i = 0; i < nodes; i++) hubs.push(await spawnServer(['dist/server/main.js', '--port', '0', '--store', url.toString(), '--log-level', 'error'], `hub node ${i + 1}`));
    const wsUrls = hubs.map((h) => h.url.replace('http://', 'ws://') + '/ahp');
    const hist = new Histogram();
    let warmStart = Number.POSITIVE_INFINITY;
    let received = 0;
    for (let i = 0; i < cfg.sessions; i++) {
      const producer = await HubProducer.open(wsUrls[i % nodes]!, cfg.rate, 'bench ', false, `-s${i}`);
      producers.push(producer);
      sockets.push(
        await subscribe(
          wsUrls[(i + 1) % nodes]!,
          producer.channel,
          () => warmStart,
          hist,
          () => received++,
        ),
      );
    }
    const intervalUs = 1e6 / cfg.rate;
    const cpuBefore = hubs.map((h) => cpuSeconds(h.pid));
    const startUs = nowUs();
    warmStart = Math.ceil(startUs + 1e6);
    const endUs = warmStart + cfg.seconds * 1e6;
    let sent = 0;
    let next = startUs;
    while (nowUs() < endUs) {
      const now = nowUs();
      while (next <= now) {
        for (const p of producers) p.send(next);
        if (next >= warmStart) sent += producers.length;
        next += intervalUs;
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const drainDeadline = Date.now() + 5_000;
    while (received < sent && Date.now() < drainDeadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const elapsed = (nowUs() - warmStart) / 1e6;
    const cpuPerNode = hubs.map((h, i) => (cpuSeconds(h.pid) - cpuBefore[i]!) / elapsed);
    const rssPerNode = hubs.map((h) => rssMiB(h.pid).rss);
    const rejected = producers.reduce((n, p) => n + p.stats().rejected, 0);
    const status = rejected > 0 ? `${rejected} rejected (${producers.find((p) => p.stats().errors.length > 0)?.stats().errors[0] ?? ''})` : received < sent ? `${sent - received} not delivered in 5 s` : 'ok';
    return { nodes, sent, received, writesPerSecond: received / cfg.seconds, p99: hist.quantile(0.99) / 1000, cpuPerNode, rssPerNode, status };
  } finally {
    for (const s of sockets) s.terminate();
    for (const p of producers) await p.close();
    for (const h of hubs) await h.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

function table(rows: Row[], cfg: Config): string {
  const lines = [
    `cluster sessions: one tenant, ${cfg.sessions} streaming sessions at ${cfg.rate} deltas/s each for ${cfg.seconds} s, ` + `producer on node i mod n, subscriber on node i+1 mod n; ${cpus().length} cores; PostgreSQL fsync on`,
    '| nodes | delivered | writes/s | p99 ms | CPU per node (cores) | RSS per node MiB | status |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.nodes} | ${r.received}/${r.sent} | ${r.writesPerSecond.toFixed(0)} | ${r.p99.toFixed(1)} | ${r.cpuPerNode.map((c) => c.toFixed(2)).join(' / ')} | ` + `${r.rssPerNode.map((m) => m.toFixed(0)).join(' / ')} | ${r.status} |`,
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
  const int = (name: string, v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
    return n;
  };
  const cfg: Config = { sessions: int('sessions', values.sessions!), rate: int('rate', values.rate!), seconds: int('seconds', values.seconds!), nodes: values.nodes!.split(',').map((n) => int('nodes', n)) };
  let server: RunningPostgres | undefined;
  const url = process.env['PG_URL'] ?? (server = await startPostgres({ fsync: true })).url;
  try {
    const rows: Row[] = [];
    for (const nodes of cfg.nodes) {
      rows.push(await run(cfg, nodes, url));
      process.stderr.write(`  ${nodes} node(s) done\n`);
    }
    process.stdout.write(table(rows, cfg) + '\n');
  } finally {
    server?.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`cluster sessions bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
