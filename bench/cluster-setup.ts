/**
 * What the two cluster benchmarks (cluster.ts: one chat fanned out; cluster-sessions.ts: many
 * streaming sessions of one tenant) share: a fresh database per row on one PostgreSQL, n hub
 * processes on it, timestamped subscribers, CPU per node and the write-turn figures each node
 * reports on /metrics. Not a test; never run by vitest.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type WebSocket from 'ws';
import { nowUs, scanString } from './clock.js';
import type { Histogram } from './histogram.js';
import { openSocket } from './open-socket.js';
import { cpuSeconds, rssMiB, spawnServer, type ServerChild } from './proc.js';
import { startPostgres, type RunningPostgres } from './throwaway-postgres.js';

/** Parses a flag that must be a positive integer. */
export function positiveInt(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
  return n;
}

/**
 * Runs `body` against a PostgreSQL server: the one PG_URL names, else a throwaway one from
 * Debian's binaries with fsync on (stopped afterwards).
 */
export async function withPostgres<T>(body: (url: string) => Promise<T>): Promise<T> {
  let server: RunningPostgres | undefined;
  const url = process.env['PG_URL'] ?? (server = await startPostgres({ fsync: true })).url;
  try {
    return await body(url);
  } finally {
    server?.stop();
  }
}

/** What one node's /metrics says about its write turns (cluster mode). */
export interface TurnFigures {
  turns: number;
  /** Seconds all those turns took to take (lock wait plus hand-over). */
  waitSeconds: number;
  appended: number;
  handedOver: number;
}

export interface Cluster {
  readonly hubs: readonly ServerChild[];
  readonly wsUrls: readonly string[];
  cpuSeconds(): number[];
  rssMiB(): number[];
  turnFigures(): Promise<TurnFigures[]>;
  stop(): Promise<void>;
}

/**
 * Starts `nodes` hub processes on a new database of `pgUrl` (dropped by `stop`). BENCH_CPU_PROF
 * (a directory) runs each node under `node --cpu-prof`, its profile written there as it exits.
 */
export async function startCluster(pgUrl: string, nodes: number, dbPrefix: string): Promise<Cluster> {
  const dbName = `${dbPrefix}_${nodes}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(pgUrl);
  url.pathname = `/${dbName}`;
  const profileDir = process.env['BENCH_CPU_PROF'];
  const nodeFlags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const hubs: ServerChild[] = [];
  const stop = async (): Promise<void> => {
    for (const h of hubs) await h.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  };
  try {
    for (let i = 0; i < nodes; i++) hubs.push(await spawnServer([...nodeFlags, 'dist/server/main.js', '--port', '0', '--store', url.toString(), '--log-level', 'error'], `hub node ${i + 1}`));
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    hubs,
    wsUrls: hubs.map((h) => h.url.replace('http://', 'ws://') + '/ahp'),
    cpuSeconds: () => hubs.map((h) => cpuSeconds(h.pid)),
    rssMiB: () => hubs.map((h) => rssMiB(h.pid).rss),
    turnFigures: () => Promise.all(hubs.map((h) => scrapeTurnFigures(h.url))),
    stop,
  };
}

async function scrapeTurnFigures(baseUrl: string): Promise<TurnFigures> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const value = (pattern: RegExp): number => Number(pattern.exec(text)?.[1] ?? 0);
  return {
    turns: value(/^ahp_hub_write_turn_wait_seconds_count (\S+)$/m),
    waitSeconds: value(/^ahp_hub_write_turn_wait_seconds_sum (\S+)$/m),
    appended: value(/^ahp_hub_write_turn_records_total\{kind="appended"\} (\S+)$/m),
    handedOver: value(/^ahp_hub_write_turn_records_total\{kind="handed_over"\} (\S+)$/m),
  };
}

/** The figures between two scrapes, summed over the nodes. */
export function turnsBetween(before: readonly TurnFigures[], after: readonly TurnFigures[]): TurnFigures {
  const sum = (key: keyof TurnFigures): number => after.reduce((n, a, i) => n + a[key] - (before[i]?.[key] ?? 0), 0);
  return { turns: sum('turns'), waitSeconds: sum('waitSeconds'), appended: sum('appended'), handedOver: sum('handedOver') };
}

/**
 * One subscriber connection: initialize, subscribe (retrying until its node knows the chat), and
 * record the send → receive time of every stamp sent from `warmStartUs()` on.
 */
export async function stampSubscriber(wsUrl: string, chat: string, warmStartUs: () => number, hist: Histogram, onCount: () => void): Promise<WebSocket> {
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

/**
 * Paces `send(stampUs)` at `rate` per second: one second of warm-up (not counted), then
 * `seconds` measured; returns the measured start and how many stamps were sent after it.
 */
export async function pace(rate: number, seconds: number, onWarmStart: (warmStartUs: number) => void, send: (stampUs: number) => number): Promise<{ warmStart: number; sent: number }> {
  const intervalUs = 1e6 / rate;
  const startUs = nowUs();
  // Whole µs: the stamps are whole µs, so the receivers' cut matches the sender's count.
  const warmStart = Math.ceil(startUs + 1e6);
  onWarmStart(warmStart);
  const endUs = warmStart + seconds * 1e6;
  let sent = 0;
  let next = startUs;
  while (nowUs() < endUs) {
    const now = nowUs();
    while (next <= now) {
      const n = send(next);
      if (next >= warmStart) sent += n;
      next += intervalUs;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return { warmStart, sent };
}

/** Waits up to `ms` for `done()`. */
export async function drain(done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}
