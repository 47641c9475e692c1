// Run by test/faults/paused-viewers.test.ts inside its own network namespace (`unshare -n`) whose
// TCP buffers are a few KiB, so what 500 paused sockets are sent stays in the hub process (where
// the per-token bound applies) instead of in the kernel's socket buffers (~4 MiB each on loopback).
// Starts a real hub (dist/server/main.js), opens 500 WebSockets of one viewer token subscribed to
// a chat and pauses them, has a user write into that chat, and prints one JSON line of what the hub
// held unsent (its `ahp_hub_fanout_queue_bytes` gauge, sampled) and how many it closed with 4008.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';

const [dir, viewerCountArg, messagesArg] = process.argv.slice(2);
const VIEWERS = Number(viewerCountArg);
const MESSAGES = Number(messagesArg);
const tokens = { alice: 'alice-token-0123456789', viewer: 'viewer-token-012345678', admin: 'admin-token-0123456789' };
const authFile = join(dir, 'tokens.json');
writeFileSync(
  authFile,
  JSON.stringify({
    tokens: [
      { token: tokens.alice, user: 'alice', tenant: 'acme', role: 'user' },
      { token: tokens.viewer, user: 'victor', tenant: 'acme', role: 'viewer' },
      { token: tokens.admin, user: 'root', tenant: 'acme', role: 'admin' },
    ],
  }),
);

async function until(what, probe, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const hub = spawn(process.execPath, ['dist/server/main.js', '--port', '0', '--data', dir, '--auth', authFile, '--log-level', 'error'], { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
hub.stdout.on('data', (d) => (out += d.toString()));
try {
  const url = await until('the hub to listen', () => /listening on (http:\/\/\S+)/.exec(out)?.[1]);
  const wsUrl = `${url.replace(/^http/, 'ws')}/ahp`;

  /** A WebSocket that answers requests by id; `closeCode` once closed. */
  const open = async (token) => {
    const ws = new WebSocket(`${wsUrl}?token=${token}`);
    const pending = new Map();
    const echoes = new Set();
    const state = { ws, echoes, closeCode: undefined, nextId: 1 };
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      if (msg.method === 'action' && msg.params.origin) echoes.add(msg.params.origin.clientSeq);
      const p = msg.id !== undefined ? pending.get(msg.id) : undefined;
      if (p) msg.error ? p.reject(new Error(msg.error.message)) : p.resolve(msg.result);
    });
    ws.on('close', (code) => (state.closeCode = code));
    ws.on('error', () => undefined);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    state.request = (method, params) =>
      new Promise((resolve, reject) => {
        const id = state.nextId++;
        pending.set(id, { resolve, reject });
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      });
    await state.request('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: `${token}-${Math.random()}`, initialSubscriptions: [] });
    return state;
  };

  const alice = await open(tokens.alice);
  const session = 'ahp-session:/paused-viewers';
  const { defaultChat: chat } = await alice.request('createSession', { channel: session, title: 'paused viewers' });
  await alice.request('subscribe', { channel: chat });

  const viewers = [];
  for (let i = 0; i < VIEWERS; i++) {
    const viewer = await open(tokens.viewer);
    await viewer.request('subscribe', { channel: chat });
    viewer.ws._socket.pause(); // a tab that stopped reading (frozen, or on a dead network)
    viewers.push(viewer);
  }

  const metric = async (pattern) => {
    const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${tokens.admin}` } })).text();
    return Number(pattern.exec(text)?.[1] ?? 0);
  };
  const queuedBytes = () => metric(/^ahp_hub_fanout_queue_bytes (\d+(?:\.\d+)?(?:e\+\d+)?)$/m);
  const slowCloses = () => metric(/^ahp_hub_server_closes_total\{code="4008"\} (\d+)$/m);

  let maxQueued = 0;
  const text = 'x'.repeat(60_000);
  for (let seq = 1; seq <= MESSAGES; seq++) {
    alice.ws.send(
      JSON.stringify({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel: chat, clientSeq: seq, action: { type: 'chat/pendingMessageSet', kind: 'queued', id: `m${seq}`, message: { text, origin: { kind: 'user' } } } } }),
    );
    await until(`the echo of message ${seq}`, () => (alice.echoes.has(seq) ? true : undefined));
    maxQueued = Math.max(maxQueued, await queuedBytes());
  }
  // Settled: 50 samples in a row alike (the paused sockets never drain).
  let last = -1;
  let same = 0;
  const finalQueued = await until('the backlog to settle', async () => {
    const now = await queuedBytes();
    maxQueued = Math.max(maxQueued, now);
    same = now === last ? same + 1 : 0;
    last = now;
    return same >= 50 ? now : undefined;
  });
  const status = readFileSync(`/proc/${hub.pid}/status`, 'utf8');
  const rssMiB = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
  const closes = await slowCloses();
  console.log(JSON.stringify({ viewers: VIEWERS, messages: MESSAGES, maxQueued, finalQueued, slowCloses: closes, rssMiB: Math.round(rssMiB), aliceOpen: alice.closeCode === undefined }));
  for (const v of viewers) v.ws.terminate();
  alice.ws.terminate();
} finally {
  hub.kill('SIGKILL');
}
