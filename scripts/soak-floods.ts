/**
 * Soak phases of issue 18's floods, each against a real hub process (used by scripts/soak.ts):
 *
 *   sse    — one viewer opens 1,000 SSE event streams at once and holds them, while another
 *            tenant's `/healthz` (fresh connection each) and WebSocket round trip (fresh upgrade,
 *            initialize, dispatch echoed) are sampled: their p99 during the flood.
 *   spawn  — one user starts a turn in 1,000 sessions of an ACP agent that never answers, the hub
 *            under `ulimit -n 1024`: with the default caps, and with caps above what the
 *            descriptors allow (spawns fail with EMFILE); processes capped, the hub stays up.
 *   disk   — tenant `acme`'s data dir on its own 8 MiB tmpfs, filled by its user's messages: its
 *            writes are refused by name while another tenant's writes succeed; then the same with
 *            `--tenant-disk-quota` on the ordinary disk.
 *   permissions — one ACP agent asks 3,000 tool permissions at once (two turns of 1,500: a turn
 *            holds at most 2,000 parts), all answered at once; worst `/healthz` during it.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { rssMiB } from '../bench/proc.js';
import { tenantDir } from '../server/storage/tenant-logs.js';
import { childrenOf, floodAgentTurns, SILENT_AGENT } from './spawn-flood.js';
import { FloodClient } from './soak-state-flood.js';

/** What soak.ts's `startHub` gives back, as far as these phases need it. */
export interface FloodHub {
  readonly child: { readonly pid?: number | undefined; readonly exitCode: number | null; kill(signal: NodeJS.Signals): boolean };
  readonly url: string;
  readonly port: number;
  readonly wsUrl: string;
  readonly exited: Promise<number | null>;
  stderr(): string;
}
export type StartHub = (args: string[], openFileLimit?: number) => Promise<FloodHub>;

const alive = (hub: FloodHub): boolean => hub.child.exitCode === null;

async function stop(hub: FloodHub): Promise<void> {
  if (alive(hub)) hub.child.kill('SIGTERM');
  await hub.exited;
}

function writeTokens(dir: string, tokens: Array<{ token: string; user: string; tenant: string; role: string }>): string {
  const file = join(dir, 'tokens.json');
  writeFileSync(file, JSON.stringify({ tokens }), { mode: 0o600 });
  return file;
}

/** The `q` quantile (0..1) of samples, in ms; Infinity for a failed sample. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** Ms until `/healthz` answers on a fresh connection; Infinity when it fails or takes over 5 s. */
function healthzOnFreshConnection(port: number): Promise<number> {
  const start = performance.now();
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 5_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - start : Number.POSITIVE_INFINITY));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(Number.POSITIVE_INFINITY));
    req.end();
  });
}

/** Polls `/healthz` every `everyMs` until stopped; returns the samples. */
function healthSampler(port: number, everyMs: number): { stop(): Promise<number[]> } {
  const samples: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      samples.push(await healthzOnFreshConnection(port));
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}

const fmt = (ms: number): string => (Number.isFinite(ms) ? `${ms.toFixed(0)} ms` : 'failed');
const queued = (id: string, text: string) => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: { text, origin: { kind: 'user' } } });

// ─── sse: 1,000 streams from one viewer ───────────────────────────────────────

export interface SseFloodFigures {
  streams: number;
  accepted: number;
  refused429: number;
  reset: number;
  samples: number;
  healthzP99Ms: number;
  healthzWorstMs: number;
  wsP99Ms: number;
  wsWorstMs: number;
  failures: number;
}

export async function sseFlood(startHub: StartHub, quick: boolean): Promise<SseFloodFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'ahp-soak-sse-'));
  const t = { viewer: 'soak-sse-viewer-0123456789', owner: 'soak-sse-owner-0123456789', other: 'soak-sse-other-0123456789' };
  const auth = writeTokens(dir, [
    { token: t.viewer, user: 'watcher', tenant: 'a', role: 'viewer' },
    { token: t.owner, user: 'owner', tenant: 'a', role: 'user' },
    { token: t.other, user: 'bystander', tenant: 'b', role: 'user' },
  ]);
  const hub = await startHub(['--data', join(dir, 'data'), '--auth', auth]);
  const held: IncomingMessage[] = [];
  try {
    const owner = await FloodClient.open(hub.wsUrl, t.owner);
    const sessions: string[] = [];
    for (let i = 0; i < 10; i++) {
      const uri = `ahp-session:/${randomUUID()}`;
      await owner.request('createSession', { channel: uri });
      sessions.push(uri.slice('ahp-session:/'.length));
    }
    owner.ws.terminate();
    const bystander = await FloodClient.open(hub.wsUrl, t.other);
    const theirs = `ahp-session:/${randomUUID()}`;
    await bystander.request('createSession', { channel: theirs });
    bystander.ws.terminate();

    // The other tenant's round trip: a fresh upgrade, initialize, one dispatch echoed.
    const wsRoundTrip = async (n: number): Promise<number> => {
      const start = performance.now();
      try {
        const c = await FloodClient.open(hub.wsUrl, t.other);
        const reason = await c.dispatch(theirs, { type: 'session/isReadChanged', isRead: n % 2 === 0 });
        c.ws.terminate();
        return reason === undefined ? performance.now() - start : Number.POSITIVE_INFINITY;
      } catch {
        return Number.POSITIVE_INFINITY;
      }
    };
    const health: number[] = [];
    const ws: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      for (let n = 0; sampling; n++) {
        const [h, w] = await Promise.all([healthzOnFreshConnection(hub.port), wsRoundTrip(n)]);
        health.push(h);
        ws.push(w);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const streams = quick ? 300 : 1_000;
    const results = await Promise.all(
      Array.from(
        { length: streams },
        (_, i) =>
          new Promise<number>((resolve) => {
            const req = httpRequest(`${hub.url}/v2/sessions/${sessions[i % sessions.length]}/events`, { headers: { authorization: `Bearer ${t.viewer}` }, agent: false }, (res) => {
              if (res.statusCode === 200) held.push(res);
              else res.resume();
              resolve(res.statusCode ?? 0);
            });
            req.on('error', () => resolve(0));
            req.end();
          }),
      ),
    );
    // Hold the streams while sampling goes on.
    await new Promise((r) => setTimeout(r, quick ? 3_000 : 10_000));
    sampling = false;
    await sampler;
    const all = [...health, ...ws];
    return {
      streams,
      accepted: results.filter((s) => s === 200).length,
      refused429: results.filter((s) => s === 429).length,
      reset: results.filter((s) => s === 0).length,
      samples: health.length,
      healthzP99Ms: quantile(health, 0.99),
      healthzWorstMs: Math.max(...health),
      wsP99Ms: quantile(ws, 0.99),
      wsWorstMs: Math.max(...ws),
      failures: all.filter((ms) => !Number.isFinite(ms)).length,
    };
  } finally {
    for (const res of held) res.destroy();
    await stop(hub);
    rmSync(dir, { recursive: true, force: true });
  }
}

export function describeSse(f: SseFloodFigures): string {
  return (
    `1,000 SSE streams: one viewer opened ${f.streams} event streams at once: ${f.accepted} held, ${f.refused429} refused 429, ${f.reset} reset; ` +
    `another tenant over ${f.samples} samples: /healthz p99 ${fmt(f.healthzP99Ms)} (worst ${fmt(f.healthzWorstMs)}), WebSocket upgrade + dispatch echoed p99 ${fmt(f.wsP99Ms)} (worst ${fmt(f.wsWorstMs)}), ${f.failures} failed`
  );
}

// ─── spawn: agent processes under ulimit -n 1024 ──────────────────────────────

export interface SpawnRun {
  caps: string;
  sessions: number;
  processes: number;
  errors: Record<string, number>;
  hubUp: boolean;
  healthzMs: number;
  rssMiB: number;
  seconds: number;
}

async function spawnRun(startHub: StartHub, sessions: number, limits: object | undefined, caps: string): Promise<SpawnRun> {
  const dir = mkdtempSync(join(tmpdir(), 'ahp-soak-spawn-'));
  const agents = join(dir, 'agents.json');
  writeFileSync(agents, JSON.stringify({ agents: { silent: SILENT_AGENT }, ...(limits ? { limits } : {}) }));
  const hub = await startHub(['--data', join(dir, 'data'), '--agents', agents], 1024);
  const started = performance.now();
  try {
    const { client, errors } = await floodAgentTurns(hub, sessions, 120_000);
    const counts: Record<string, number> = {};
    for (const type of errors.values()) counts[type] = (counts[type] ?? 0) + 1;
    const seconds = (performance.now() - started) / 1000;
    const up = alive(hub);
    const figures = {
      caps,
      sessions,
      processes: up ? childrenOf(hub.child.pid!) : 0,
      errors: counts,
      hubUp: up,
      healthzMs: up ? await healthzOnFreshConnection(hub.port) : Number.POSITIVE_INFINITY,
      rssMiB: up ? rssMiB(hub.child.pid!).rss : 0,
      seconds,
    };
    client.ws.terminate();
    return figures;
  } finally {
    await stop(hub);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function spawnFlood(startHub: StartHub, quick: boolean): Promise<SpawnRun[]> {
  const sessions = quick ? 100 : 1_000;
  return [
    await spawnRun(startHub, sessions, undefined, 'default caps (8 per user)'),
    await spawnRun(startHub, sessions, { maxProcesses: 5_000, maxProcessesPerTenant: 5_000, maxProcessesPerUser: 5_000 }, 'caps of 5,000 (past the descriptors)'),
  ];
}

export function describeSpawn(runs: readonly SpawnRun[]): string {
  return (
    'agent spawn flood (hub under ulimit -n 1024): ' +
    runs
      .map(
        (r) =>
          `${r.caps}: ${r.sessions} turns in ${r.sessions} sessions → ${r.processes} agent processes, turns ended ${JSON.stringify(r.errors)}; hub ${r.hubUp ? 'up' : 'DOWN'}, /healthz ${fmt(r.healthzMs)}, RSS ${r.rssMiB.toFixed(0)} MiB (${r.seconds.toFixed(1)} s)`,
      )
      .join('; ')
  );
}

// ─── disk: one tenant's disk full, or over its quota ──────────────────────────

const IN_DOUBT = 'in doubt';

export interface DiskRun {
  how: string;
  acceptedBefore: number;
  /** Writes left unanswered while the log retried them (the batch that hit the full disk). */
  inDoubt: number;
  refusal: string;
  otherWrites: number;
  otherAccepted: number;
  hubUp: boolean;
}

async function diskRun(startHub: StartHub, how: 'tmpfs' | 'quota'): Promise<DiskRun> {
  const dir = mkdtempSync(join(tmpdir(), 'ahp-soak-disk-'));
  const t = { acme: 'soak-disk-acme-0123456789', other: 'soak-disk-other-0123456789' };
  const auth = writeTokens(dir, [
    { token: t.acme, user: 'filler', tenant: 'acme', role: 'user' },
    { token: t.other, user: 'bystander', tenant: 'evil', role: 'user' },
  ]);
  const data = join(dir, 'data');
  const acmeDir = tenantDir(data, 'acme');
  let mounted = false;
  if (how === 'tmpfs') {
    mkdirSync(acmeDir, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', acmeDir]);
    mounted = true;
  }
  const hub = await startHub(['--data', data, '--auth', auth, ...(how === 'quota' ? ['--tenant-disk-quota', '4m'] : [])]);
  try {
    const filler = await FloodClient.open(hub.wsUrl, t.acme);
    const text = 'd'.repeat(100_000);
    let accepted = 0;
    let inDoubt = 0;
    let refusal: string | undefined;
    // 40 messages of 100,000 characters per chat (half a chat's bound), chat after chat.
    for (let s = 0; refusal === undefined && s < 100; s++) {
      const created = await filler.request('createSession', { channel: `ahp-session:/${randomUUID()}` });
      if (created.error) {
        refusal = `createSession: ${created.error.message}`;
        break;
      }
      const chat = (created.result as { defaultChat: string }).defaultChat;
      for (let i = 0; i < 40 && refusal === undefined; i++) {
        // The batch that hits the full disk is kept in doubt (retried, not answered until the log
        // takes it): after 5 s without an answer the next write shows what the tenant gets.
        const reason = await Promise.race([filler.dispatch(chat, queued(`m${s}-${i}`, text)), new Promise<string>((r) => setTimeout(() => r(IN_DOUBT), 5_000))]);
        if (reason === undefined) accepted++;
        else if (reason === IN_DOUBT) inDoubt++;
        else refusal = reason;
      }
    }
    filler.ws.terminate();
    const other = await FloodClient.open(hub.wsUrl, t.other);
    const created = await other.request('createSession', { channel: `ahp-session:/${randomUUID()}` });
    const chat = (created.result as { defaultChat?: string } | undefined)?.defaultChat;
    const writes = 100;
    let otherAccepted = 0;
    const answer = (p: Promise<string | undefined>): Promise<string | undefined> => Promise.race([p, new Promise<string>((r) => setTimeout(() => r(IN_DOUBT), 10_000))]);
    if (chat) for (let i = 0; i < writes; i++) if ((await answer(other.dispatch(chat, queued(`o${i}`, 'o'.repeat(1_000))))) === undefined) otherAccepted++;
    other.ws.terminate();
    return {
      how: how === 'tmpfs' ? "acme's tenant dir on an 8 MiB tmpfs" : '--tenant-disk-quota 4m',
      acceptedBefore: accepted,
      inDoubt,
      refusal: (refusal ?? 'never refused').slice(0, 160),
      otherWrites: writes,
      otherAccepted,
      hubUp: alive(hub),
    };
  } finally {
    await stop(hub);
    if (mounted) execFileSync('umount', [acmeDir]);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function diskFlood(startHub: StartHub): Promise<DiskRun[]> {
  return [await diskRun(startHub, 'tmpfs'), await diskRun(startHub, 'quota')];
}

export function describeDisk(runs: readonly DiskRun[]): string {
  return (
    'full disk: ' +
    runs
      .map(
        (r) =>
          `${r.how}: ${r.acceptedBefore} messages of 100,000 characters accepted, ${r.inDoubt} held in doubt, then refused "${r.refusal}"; the other tenant's writes: ${r.otherAccepted}/${r.otherWrites} accepted; hub ${r.hubUp ? 'up' : 'DOWN'}`,
      )
      .join('; ')
  );
}

// ─── permissions: 3,000 permission requests at once ───────────────────────────

export interface PermissionFigures {
  requests: number;
  askedSeconds: number;
  answeredSeconds: number;
  healthzWorstMs: number;
  healthzSamples: number;
  hubUp: boolean;
}

export async function permissionBurst(startHub: StartHub, quick: boolean): Promise<PermissionFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'ahp-soak-perm-'));
  const agents = join(dir, 'agents.json');
  writeFileSync(agents, JSON.stringify({ agents: { scripted: { kind: 'acp', command: process.execPath, args: [resolve('test/acp/scripted-agent.mjs')], startupTimeoutMs: 60_000 } } }));
  const hub = await startHub(['--data', join(dir, 'data'), '--agents', agents]);
  const perTurn = quick ? 300 : 1_500;
  const turns = 2;
  try {
    const client = await FloodClient.open(hub.wsUrl);
    const chats: Array<{ chat: string; turnId: string }> = [];
    for (let i = 0; i < turns; i++) {
      const created = await client.request('createSession', { channel: `ahp-session:/${randomUUID()}`, provider: 'scripted' });
      const chat = (created.result as { defaultChat: string }).defaultChat;
      await client.request('subscribe', { channel: chat });
      chats.push({ chat, turnId: `t-${randomUUID()}` });
    }
    let ready = 0;
    let reports = 0;
    client.onAction = (e) => {
      if (e.action.type === 'chat/toolCallReady' && e.action['confirmed'] === undefined) ready++;
      if (e.action.type === 'chat/responsePart' || e.action.type === 'chat/delta') if (JSON.stringify(e.action).includes('REPORT')) reports++;
    };
    const health = healthSampler(hub.port, 100);
    const start = performance.now();
    const script = JSON.stringify({ steps: [{ permissionBurst: { count: perTurn } }, { awaitPermissions: true }, { stop: 'end_turn' }] });
    for (const { chat, turnId } of chats) void client.dispatch(chat, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: { text: script, origin: { kind: 'user' } } });
    const total = perTurn * turns;
    const until = (done: () => boolean, what: string): Promise<void> =>
      (async () => {
        const deadline = performance.now() + 600_000;
        while (!done()) {
          if (!alive(hub) || performance.now() > deadline) throw new Error(`permission burst: ${what} (hub ${alive(hub) ? 'up' : 'down'}): ${hub.stderr().slice(-2_000)}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
    await until(() => ready >= total, `only ${ready} of ${total} asked`);
    const asked = performance.now();
    const answers: Array<Promise<string | undefined>> = [];
    for (const { chat, turnId } of chats)
      for (let i = 0; i < perTurn; i++) answers.push(client.dispatch(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: `burst-${i}`, approved: true, confirmed: 'user-action', selectedOptionId: 'ok' }));
    const refused = (await Promise.all(answers)).filter((r) => r !== undefined);
    if (refused.length > 0) throw new Error(`permission burst: ${refused.length} answers refused: ${refused[0]}`);
    // Each agent reports once every answer reached it.
    await until(() => reports >= turns, 'the agents did not get every answer');
    const answered = performance.now();
    const samples = await health.stop();
    const figures = {
      requests: total,
      askedSeconds: (asked - start) / 1000,
      answeredSeconds: (answered - asked) / 1000,
      healthzWorstMs: Math.max(...samples, await healthzOnFreshConnection(hub.port)),
      healthzSamples: samples.length,
      hubUp: alive(hub),
    };
    client.ws.terminate();
    return figures;
  } finally {
    await stop(hub);
    rmSync(dir, { recursive: true, force: true });
  }
}

export function describePermissions(f: PermissionFigures): string {
  return `permission burst: ${f.requests} tool permission requests at once from one ACP agent (2 turns of ${f.requests / 2}): all asked in ${f.askedSeconds.toFixed(1)} s, all ${f.requests} answers reached the agent ${f.answeredSeconds.toFixed(1)} s later; worst /healthz ${fmt(f.healthzWorstMs)} over ${f.healthzSamples} polls; hub ${f.hubUp ? 'up' : 'DOWN'}`;
}
