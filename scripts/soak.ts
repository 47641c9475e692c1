/**
 * `npm run soak`: a reproducible, time-bounded attack-and-fault run against a real hub process on
 * loopback (`node dist/server/main.js`, as `npm start` runs it). Not part of `npm test`.
 *
 *   1. Kill cycles under load: writers dispatch as fast as their budget allows, the hub is SIGKILLed
 *      at a seeded moment, and every action the hub echoed as accepted is looked up in the SQLite
 *      log (same seq, same action, same origin). The next cycle restarts on the same data directory
 *      and checks `serverSeq` never went back.
 *   2. Fuzz: seeded random frames (broken JSON, wrong JSON-RPC shapes, random methods and params,
 *      random actions, bad UTF-8, oversized frames) from many connections; the hub must keep
 *      answering `/healthz` and a canary's dispatch round trip afterwards.
 *   3. Slow consumers: subscribers that never read while a producer streams; the hub must close
 *      them (4008) and its memory must stay bounded.
 *   4. Connection floods (with tokens): one token opens far more sockets than its cap while
 *      half-open HTTP requests pile up; another user still connects and `/healthz` still answers.
 *   5. The aggregate-state flood (scripts/soak-state-flood.ts), then issue 18's other floods
 *      (scripts/soak-floods.ts): 1,000 SSE streams, an agent spawn flood, a full disk, a burst of
 *      3,000 permission requests.
 *
 * Flags: --seed N (1), --cycles N (25), --fuzz-frames N (1000000), --quick (small numbers),
 * --only kill|fuzz|slow|flood|state|sse|spawn|disk|permissions (one phase, with the same seeded inputs as in the full run).
 * Prints one line per phase and a summary; exits non-zero if any action was lost or the hub died.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type WebSocket from 'ws';
import { SqliteActionLog } from '../server/storage/sqlite-action-log.js';
import { openSocket } from '../bench/open-socket.js';
import { rssMiB } from '../bench/proc.js';
import { tenantLogFile } from '../server/storage/tenant-logs.js';
import { DEV_PRINCIPAL } from '../server/auth/auth.js';
import { prng } from './prng.js';
import { Client, startHub, type Options } from './soak-hub.js';
import { fuzz } from './soak-fuzz.js';
import { stateFlood } from './soak-state-flood.js';
import { describeDisk, describePermissions, describeSpawn, describeSse, diskFlood, permissionBurst, sseFlood, spawnFlood } from './soak-floods.js';

/** The dev tenant's log file in a data directory (dev mode has one tenant). */
const devLogFile = (dataDir: string): string => tenantLogFile(dataDir, DEV_PRINCIPAL.tenant);

// ─── Options ──────────────────────────────────────────────────────────────────

function parseOptions(argv: readonly string[]): Options {
  const o: Options = { seed: 1, cycles: 25, fuzzFrames: 1_000_000, quick: false, only: undefined };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const num = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isSafeInteger(v) || v < 0) throw new Error(`${flag} needs a non-negative integer`);
      return v;
    };
    if (flag === '--seed') o.seed = num();
    else if (flag === '--cycles') o.cycles = num();
    else if (flag === '--fuzz-frames') o.fuzzFrames = num();
    else if (flag === '--only') o.only = argv[++i];
    else if (flag === '--quick') {
      o.quick = true;
      o.cycles = 3;
      o.fuzzFrames = 50_000;
    } else throw new Error(`unknown flag ${flag}; flags: --seed N --cycles N --fuzz-frames N --quick --only kill|fuzz|slow|flood|state|sse|spawn|disk|permissions`);
  }
  return o;
}

// ─── Phase 1: SIGKILL cycles under load ───────────────────────────────────────

interface KillFigures {
  cycles: number;
  echoedChecked: number;
  lost: number;
  rejected: number;
  actionsPerSecond: number;
}

async function killCycles(o: Options, random: () => number): Promise<KillFigures> {
  const data = mkdtempSync(join(tmpdir(), 'ahp-soak-'));
  const writers = 4;
  let checked = 0;
  let lost = 0;
  let rejected = 0;
  let accepted = 0;
  let loadMs = 0;
  let lastHead = 0;
  try {
    for (let cycle = 1; cycle <= o.cycles; cycle++) {
      const hub = await startHub(['--data', data]);
      const clients = await Promise.all(Array.from({ length: writers }, () => Client.open(hub.wsUrl)));
      const sessions = await Promise.all(clients.map((c) => c.createSession()));
      // Each writer toggles isRead on its own session, paced just under the per-connection budget
      // (450/s) so every dispatch is meant to be accepted.
      const killAfterMs = 400 + Math.floor(random() * 1_200);
      const start = performance.now();
      let stop = false;
      const pumps = clients.map(async (c, i) => {
        let n = 0;
        while (!stop) {
          const due = start + (n / 450) * 1000;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, Math.min(wait, 20)));
          else {
            c.dispatch(sessions[i]!.session, { type: 'session/isReadChanged', isRead: n % 2 === 0 });
            n++;
          }
        }
      });
      await new Promise((r) => setTimeout(r, killAfterMs));
      hub.child.kill('SIGKILL');
      stop = true;
      await Promise.all(pumps);
      await hub.exited;
      loadMs += performance.now() - start;
      for (const c of clients) c.close();

      // Every accepted echo must be in the log, byte for byte, under its seq.
      const log = SqliteActionLog.open({ file: devLogFile(data) });
      try {
        const echoes = clients.flatMap((c) => c.echoes);
        const ok = echoes.filter((e) => e.rejectionReason === undefined);
        rejected += echoes.length - ok.length;
        accepted += ok.length;
        const from = Math.min(...ok.map((e) => e.serverSeq), Number.MAX_SAFE_INTEGER) - 1;
        const stored = new Map((await log.read(Math.max(0, from), Number.POSITIVE_INFINITY)).map((r) => [r.serverSeq, r]));
        for (const e of ok) {
          checked++;
          const r = stored.get(e.serverSeq);
          // The stored origin also names the actor (for the duplicate ledger); the echo never does.
          const storedOrigin = r?.origin && { clientId: r.origin.clientId, clientSeq: r.origin.clientSeq };
          if (!r || JSON.stringify(r.action) !== JSON.stringify(e.action) || JSON.stringify(storedOrigin) !== JSON.stringify(e.origin)) lost++;
        }
        const head = await log.head();
        if (head < lastHead) throw new Error(`cycle ${cycle}: serverSeq went back from ${lastHead} to ${head}`);
        lastHead = head;
      } finally {
        await log.close();
      }
    }
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
  return { cycles: o.cycles, echoedChecked: checked, lost, rejected, actionsPerSecond: Math.round(accepted / (loadMs / 1000)) };
}

// ─── Phase 3: slow consumers ──────────────────────────────────────────────────

interface SlowFigures {
  consumers: number;
  closedSlow: number;
  rssBeforeMiB: number;
  rssPeakMiB: number;
  perConsumerMiB: number;
  producedActions: number;
}

async function slowConsumers(o: Options): Promise<SlowFigures> {
  const data = mkdtempSync(join(tmpdir(), 'ahp-soak-slow-'));
  const hub = await startHub(['--data', data]);
  const producer = await Client.open(hub.wsUrl);
  const { session } = await producer.createSession();
  const consumers = o.quick ? 10 : 40;
  const slow: Client[] = [];
  for (let i = 0; i < consumers; i++) {
    const c = await Client.open(hub.wsUrl);
    await c.request('subscribe', { channel: session });
    // Stop reading: the socket's receive buffer fills, then the hub's send buffer for it grows.
    (c.ws as unknown as { _socket: Socket })._socket.pause();
    slow.push(c);
  }
  const rssBefore = rssMiB(hub.child.pid!).rss;
  let peak = rssBefore;
  // Large title changes make the backlog grow fast: ~16 KB per envelope.
  const filler = 'x'.repeat(16 * 1024);
  let produced = 0;
  const deadline = performance.now() + (o.quick ? 5_000 : 15_000);
  const started = performance.now();
  let messages = 0;
  while (performance.now() < deadline && slow.some((c) => c.closeCode === undefined)) {
    // 400 messages/s: under the producer's own budget, so nothing it sends is refused.
    const due = started + (messages / 400) * 1000;
    if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
    for (let i = 0; i < 39; i++) producer.dispatch(session, { type: 'session/isReadChanged', isRead: i % 2 === 0, _meta: { filler: filler + produced } });
    produced += 39;
    messages += 40;
    await producer.request('ping', { channel: 'ahp-root://' });
    peak = Math.max(peak, rssMiB(hub.child.pid!).rss);
  }
  // The closes reach our paused sockets only when they read again.
  for (const c of slow) (c.ws as unknown as { _socket: Socket })._socket.resume();
  const until = performance.now() + 10_000;
  while (performance.now() < until && slow.some((c) => c.closeCode === undefined)) await new Promise((r) => setTimeout(r, 100));
  const closedSlow = slow.filter((c) => c.closeCode === 4008).length;
  for (const c of slow) c.close();
  producer.close();
  hub.child.kill('SIGTERM');
  await hub.exited;
  rmSync(data, { recursive: true, force: true });
  return { consumers, closedSlow, rssBeforeMiB: rssBefore, rssPeakMiB: peak, perConsumerMiB: (peak - rssBefore) / consumers, producedActions: produced };
}

// ─── Phase 4: connection floods ───────────────────────────────────────────────

interface FloodFigures {
  attempts: number;
  accepted: number;
  refused429: number;
  refusedAtHttpCap: number;
  otherUserConnected: boolean;
  halfOpen: number;
  healthzAnswered: boolean;
  /** Time until /healthz answered on a fresh connection, the worse of two checks. */
  healthzWorstMs: number;
}

async function floods(o: Options): Promise<FloodFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'ahp-soak-flood-'));
  const tokens = { viewer: 'soak-viewer-token-0123456789', user: 'soak-user-token-0123456789' };
  writeFileSync(
    join(dir, 'tokens.json'),
    JSON.stringify({
      tokens: [
        { token: tokens.viewer, user: 'flooder', tenant: 'a', role: 'viewer' },
        { token: tokens.user, user: 'someone', tenant: 'b', role: 'user' },
      ],
    }),
  );
  // Under `ulimit -n 1024`, where 1,100 half-open requests used to starve /healthz.
  const hub = await startHub(['--data', join(dir, 'data'), '--auth', join(dir, 'tokens.json')], 1024);
  const attempts = o.quick ? 300 : 1_000;
  const open: WebSocket[] = [];
  let refused429 = 0;
  /** Upgrades whose TCP connection was refused by the HTTP connection cap during the burst. */
  let refusedAtHttpCap = 0;
  let worst = 0;
  const sockets: Socket[] = [];
  try {
    // Half-open HTTP requests first: they must not starve /healthz.
    const halfOpen = 1_100;
    for (let i = 0; i < halfOpen; i++) {
      const s = connect(hub.port, '127.0.0.1');
      s.on('error', () => {});
      s.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      sockets.push(s);
    }
    // During the burst newcomers are refused; once it is over /healthz must answer again.
    const first = await healthzEventually(hub.port, 10_000);
    worst = Math.max(worst, first ?? Infinity);
    for (let batch = 0; batch < attempts; batch += 100) {
      const results = await Promise.allSettled(Array.from({ length: Math.min(100, attempts - batch) }, () => openSocket(hub.wsUrl, tokens.viewer)));
      for (const r of results) {
        if (r.status === 'fulfilled') open.push(r.value);
        else if (/429/.test(String(r.reason))) refused429++;
        else refusedAtHttpCap++;
      }
    }
    const second = await healthzEventually(hub.port, 10_000);
    worst = Math.max(worst, second ?? Infinity);
    let otherUserConnected = false;
    try {
      const other = await Client.open(hub.wsUrl, tokens.user);
      await other.request('ping', { channel: 'ahp-root://' });
      otherUserConnected = true;
      other.close();
    } catch {
      otherUserConnected = false;
    }
    return { attempts, accepted: open.length, refused429, refusedAtHttpCap, otherUserConnected, halfOpen, healthzAnswered: first !== undefined && second !== undefined, healthzWorstMs: worst };
  } finally {
    for (const ws of open) ws.terminate();
    for (const s of sockets) s.destroy();
    hub.child.kill('SIGTERM');
    await hub.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Ms until `/healthz` answers 200 on a fresh connection, retrying; undefined if it never did. */
async function healthzEventually(port: number, deadlineMs: number): Promise<number | undefined> {
  const start = performance.now();
  while (performance.now() - start < deadlineMs) {
    const status = await new Promise<number>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 2_000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(0));
      req.end();
    });
    if (status === 200) return performance.now() - start;
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

// ─── Main ─────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  // Each phase has its own stream, so `--only` replays a phase exactly as the full run does.
  const phaseRandom = (phase: number): (() => number) => prng(o.seed * 16 + phase);
  const runs = (phase: string): boolean => o.only === undefined || o.only === phase;
  const started = performance.now();
  const say = (line: string): void => void process.stdout.write(line + '\n');
  const failures: string[] = [];
  say(`soak: seed ${o.seed}, ${o.cycles} kill cycles, ${o.fuzzFrames} fuzz frames${o.quick ? ' (quick)' : ''}${o.only ? `, only ${o.only}` : ''}`);

  let lost = 0;
  if (runs('kill')) {
    const kill = await killCycles(o, phaseRandom(1));
    lost = kill.lost;
    say(`kill cycles: ${kill.cycles} SIGKILLs under load (~${kill.actionsPerSecond} accepted actions/s held), ${kill.echoedChecked} echoed actions checked in the log, lost ${kill.lost}, rejected ${kill.rejected}`);
    if (kill.lost > 0) failures.push(`${kill.lost} echoed actions lost`);
  }
  if (runs('fuzz')) {
    const fz = await fuzz(o, phaseRandom(2));
    say(
      `fuzz: ${fz.frames} frames in ${fz.seconds.toFixed(1)} s from 100 connections (hub CPU ${fz.hubCpuPercent.toFixed(0)}%, other processes ${fz.otherCpuPercent.toFixed(0)}%); ` +
        `closes by code ${JSON.stringify(fz.closes)}; worst /healthz ${fz.healthzWorstMs.toFixed(0)} ms, ${fz.healthFailures.length} polls over 5 s` +
        `${fz.healthFailures.length ? ' (' + fz.healthFailures.slice(0, 3).join('; ') + ')' : ''}; canary round trip after: ${fz.canaryOk ? 'ok' : 'FAILED'}`,
    );
    // One slow poll on a shared 2-core machine is scheduling; three in a row is a hub that stopped serving.
    if (!fz.canaryOk || fz.longestFailureRun >= 3) failures.push('the hub stopped serving under fuzz');
  }
  if (runs('slow')) {
    const slow = await slowConsumers(o);
    say(
      `slow consumers: ${slow.consumers} paused subscribers, ${slow.closedSlow} closed with 4008 after ${slow.producedActions} actions; hub RSS ${slow.rssBeforeMiB.toFixed(0)} → peak ${slow.rssPeakMiB.toFixed(0)} MiB (≤ ${slow.perConsumerMiB.toFixed(1)} MiB per slow consumer)`,
    );
    if (slow.closedSlow < slow.consumers) failures.push(`${slow.consumers - slow.closedSlow} slow consumers were never closed`);
  }
  if (runs('flood')) {
    const fl = await floods(o);
    say(
      `floods (hub under ulimit -n 1024): ${fl.halfOpen} half-open HTTP requests + ${fl.attempts} upgrades from one viewer token: ${fl.accepted} accepted (the per-user cap), ${fl.refused429} refused 429, ${fl.refusedAtHttpCap} cut at the HTTP connection cap; another tenant's user connected: ${fl.otherUserConnected ? 'yes' : 'NO'}; /healthz answered ${fl.healthzAnswered ? 'yes' : 'NO'}, worst ${fl.healthzWorstMs.toFixed(0)} ms`,
    );
    if (!fl.healthzAnswered) failures.push('/healthz starved by the flood');
    if (!fl.otherUserConnected) failures.push('a flood from one token locked out another tenant');
  }
  if (runs('state')) {
    // A restart loads the whole tenant (up to its quota): give it longer than an empty start.
    const st = await stateFlood((args) => startHub(args, undefined, 120_000), o.quick);
    say(
      `aggregate-state flood: ${st.users} users of one tenant filled ${st.sessions} sessions with ${(st.acceptedChars / 2 ** 20).toFixed(0)} Mi characters of queued messages; ` +
        `refused ${JSON.stringify(st.refusals)}; hub RSS ${st.rssBeforeMiB.toFixed(0)} → peak ${st.rssPeakMiB.toFixed(0)} MiB; another tenant worked: ${st.otherTenantWorks ? 'yes' : 'NO'}; ` +
        `restart on the data dir: ${st.restartOk ? `ok in ${(st.restartMs / 1000).toFixed(1)} s` : 'FAILED'}`,
    );
    if (!st.restartOk) failures.push('the hub did not start again after the aggregate-state flood');
    if (!Object.keys(st.refusals).some((code) => code.endsWith('_quota'))) failures.push('no state quota refused the aggregate-state flood');
    if (!st.otherTenantWorks) failures.push('the aggregate-state flood locked out another tenant');
  }
  if (runs('sse')) {
    const sse = await sseFlood(startHub, o.quick);
    say(describeSse(sse));
    if (sse.failures > 0) failures.push(`${sse.failures} of another tenant's requests failed during the SSE flood`);
  }
  if (runs('spawn')) {
    const spawnRuns = await spawnFlood(startHub, o.quick);
    say(describeSpawn(spawnRuns));
    if (spawnRuns.some((r) => !r.hubUp)) failures.push('the hub died in the agent spawn flood');
  }
  if (runs('disk')) {
    const disk = await diskFlood(startHub);
    say(describeDisk(disk));
    if (disk.some((r) => !r.hubUp || r.otherAccepted < r.otherWrites)) failures.push("a full tenant disk took the hub or another tenant's writes down");
  }
  if (runs('permissions')) {
    const perm = await permissionBurst(startHub, o.quick);
    say(describePermissions(perm));
    if (!perm.hubUp) failures.push('the hub died in the permission burst');
  }
  say(`summary: ${((performance.now() - started) / 1000).toFixed(0)} s; actions lost: ${lost}; ${failures.length === 0 ? 'PASS' : 'FAIL: ' + failures.join('; ')}`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`soak failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
