/**
 * Phase 2 of `npm run soak` (scripts/soak.ts): seeded random frames from many connections; the hub
 * must keep answering `/healthz` and a canary's dispatch round trip afterwards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { openSocket } from '../bench/open-socket.js';
import { cpuSeconds, machineBusySeconds } from '../bench/proc.js';
import { prng } from './prng.js';
import { Client, healthzMs, startHub, type Options } from './soak-hub.js';

// ─── Phase 2: seeded fuzz ─────────────────────────────────────────────────────

export const METHODS = [
  'initialize',
  'ping',
  'subscribe',
  'unsubscribe',
  'dispatchAction',
  'reconnect',
  'listSessions',
  'createSession',
  'disposeSession',
  'createChat',
  'disposeChat',
  'x-input/submit',
  'x-input/status',
  'x-collab/join',
  'x-collab/sync',
  'nope',
];
export const ACTION_TYPES = ['chat/turnStarted', 'chat/delta', 'chat/inputCompleted', 'chat/pendingMessageSet', 'session/isReadChanged', 'session/defaultChatChanged', 'chat/truncated', 'x/unknown'];

export function fuzzValue(random: () => number, depth: number, channels: readonly string[]): unknown {
  const r = random();
  if (depth > 6 || r < 0.3) {
    const atoms = [null, true, false, 0, -1, 2 ** 53, 1.5, '', 'x', 'ahp-root://', channels[0], channels[1], '😀', '\u0000', 'a'.repeat(Math.floor(random() * 300))];
    return atoms[Math.floor(random() * atoms.length)];
  }
  if (r < 0.5) return Array.from({ length: Math.floor(random() * 4) }, () => fuzzValue(random, depth + 1, channels));
  const o: Record<string, unknown> = {};
  const keys = ['type', 'channel', 'clientSeq', 'action', 'turnId', 'message', 'text', 'id', 'protocolVersions', 'clientId', 'doc', 'data', '__proto__', 'constructor', 'k'];
  for (let i = Math.floor(random() * 5); i > 0; i--) o[keys[Math.floor(random() * keys.length)]!] = fuzzValue(random, depth + 1, channels);
  return o;
}

export function fuzzFrame(random: () => number, channels: readonly string[], seq: number): string | Buffer {
  const r = random();
  if (r < 0.05) return '{"jsonrpc":"2.0","method":' + 'x'.repeat(Math.floor(random() * 50)); // broken JSON
  if (r < 0.052) return Buffer.from([0x7b, 0xff, 0xfe, 0x7d]); // bad UTF-8 (closes the connection: rare)
  if (r < 0.1) return JSON.stringify(fuzzValue(random, 0, channels)); // not JSON-RPC
  if (r < 0.55) {
    const type = ACTION_TYPES[Math.floor(random() * ACTION_TYPES.length)]!;
    const action = { ...(fuzzValue(random, 1, channels) as object), type };
    return JSON.stringify({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel: channels[Math.floor(random() * channels.length)], clientSeq: seq, action } });
  }
  const method = METHODS[Math.floor(random() * METHODS.length)]!;
  const params = { channel: random() < 0.7 ? channels[Math.floor(random() * channels.length)] : 'ahp-root://', ...(fuzzValue(random, 1, channels) as object) };
  return JSON.stringify(random() < 0.7 ? { jsonrpc: '2.0', id: seq, method, params } : { jsonrpc: '2.0', method, params });
}

export interface FuzzFigures {
  frames: number;
  seconds: number;
  closes: Record<string, number>;
  healthzWorstMs: number;
  /** /healthz polls that failed (timeout after 5 s or error), with when and why. */
  healthFailures: string[];
  /** Most /healthz polls (1 s apart, 5 s timeout) that failed in a row. */
  longestFailureRun: number;
  hubCpuPercent: number;
  /** CPU used by every other process on the machine during the phase (100% = one core). */
  otherCpuPercent: number;
  canaryOk: boolean;
  hubExit: number | null;
}

export async function fuzz(o: Options, random: () => number): Promise<FuzzFigures> {
  const data = mkdtempSync(join(tmpdir(), 'ahp-soak-fuzz-'));
  const hub = await startHub(['--data', data]);
  const setup = await Client.open(hub.wsUrl);
  const { session, chat } = await setup.createSession();
  const channels = [session, chat, 'ahp-root://', 'ahp-chat:/nope'];
  const connections = 100;
  const perConnectionRate = 450; // frames/s, under the per-connection budget of 500/s
  const closes: Record<string, number> = {};
  let sent = 0;
  let worst = 0;
  const start = performance.now();
  const frameSeeds = Array.from({ length: connections }, () => Math.floor(random() * 2 ** 32));
  const healthFailures: string[] = [];
  const busyBefore = machineBusySeconds();
  const hubCpuBefore = cpuSeconds(hub.child.pid!);
  const ownCpuBefore = process.cpuUsage();
  let consecutiveFailures = 0;
  let worstRun = 0;
  const health = setInterval(() => {
    healthzMs(hub.url).then(
      (ms) => {
        worst = Math.max(worst, ms);
        consecutiveFailures = 0;
      },
      (err: unknown) => {
        healthFailures.push(`${((performance.now() - start) / 1000).toFixed(1)} s: ${String((err as Error).cause ?? err)}`);
        worstRun = Math.max(worstRun, ++consecutiveFailures);
      },
    );
  }, 1_000);
  try {
    await Promise.all(
      frameSeeds.map(async (seed, index) => {
        const rand = prng(seed);
        const quota = Math.ceil(o.fuzzFrames / connections);
        let done = 0;
        while (done < quota) {
          let ws: WebSocket;
          try {
            ws = await openSocket(hub.wsUrl);
          } catch {
            continue;
          }
          // Every other connection initializes first, so methods past initialize are reached too.
          if (index % 2 === 0) ws.send(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: randomUUID() } }));
          ws.on('message', () => {});
          const opened = performance.now();
          let n = 0;
          while (done < quota && ws.readyState === WebSocket.OPEN) {
            const due = opened + (n / perConnectionRate) * 1000;
            const wait = due - performance.now();
            // Paced, and never more than 256 KiB unsent: the fuzzer must not drown itself.
            if (wait > 0 || ws.bufferedAmount > 256 * 1024) {
              await new Promise((r) => setTimeout(r, Math.max(1, Math.min(wait, 50))));
              continue;
            }
            const frame = rand() < 0.0005 ? Buffer.alloc(1024 * 1024 + 1, 0x20) : fuzzFrame(rand, channels, done);
            ws.send(frame, { binary: false });
            n++;
            done++;
            sent++;
          }
          const code = await new Promise<number>((resolve) => {
            if (ws.readyState === WebSocket.CLOSED) return resolve(-1);
            ws.once('close', (c) => resolve(c));
            if (done >= quota) ws.close(1000);
          });
          closes[code] = (closes[code] ?? 0) + 1;
        }
      }),
    );
  } finally {
    clearInterval(health);
  }
  const seconds = (performance.now() - start) / 1000;
  const hubCpu = cpuSeconds(hub.child.pid!) - hubCpuBefore;
  const ownCpu = process.cpuUsage(ownCpuBefore);
  // Loopback TCP work is partly accounted as softirq, which machineBusySeconds leaves out: clamp at 0.
  const otherCpu = Math.max(0, machineBusySeconds() - busyBefore - hubCpu - (ownCpu.user + ownCpu.system) / 1e6);
  // The hub is still alive and still does its job: a fresh client's dispatch is echoed.
  let canaryOk = false;
  try {
    worst = Math.max(worst, await healthzMs(hub.url));
    const canary = await Client.open(hub.wsUrl);
    // Its own session: the fuzz may well have disposed the shared one.
    const own = await canary.createSession();
    const seq = canary.dispatch(own.session, { type: 'session/isReadChanged', isRead: true });
    await canary.request('ping', { channel: 'ahp-root://' });
    canaryOk = canary.echoes.some((e) => e.origin?.clientSeq === seq && e.rejectionReason === undefined);
    canary.close();
  } catch {
    canaryOk = false;
  }
  setup.close();
  hub.child.kill('SIGTERM');
  await hub.exited;
  rmSync(data, { recursive: true, force: true });
  return { frames: sent, seconds, closes, healthzWorstMs: worst, healthFailures, longestFailureRun: worstRun, hubCpuPercent: (100 * hubCpu) / seconds, otherCpuPercent: (100 * otherCpu) / seconds, canaryOk, hubExit: hub.child.exitCode };
}
