/**
 * The soak run's hub process and clients (scripts/soak.ts): starting `node dist/server/main.js`
 * on a fresh port, timing `/healthz`, and a WebSocket client that dispatches and reads envelopes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import { openSocket } from '../bench/open-socket.js';

/** The soak run's flags (`parseOptions` in soak.ts). */
export interface Options {
  seed: number;
  cycles: number;
  fuzzFrames: number;
  quick: boolean;
  only: string | undefined;
}

// ─── The hub process ──────────────────────────────────────────────────────────

export interface HubChild {
  child: ChildProcess;
  port: number;
  url: string;
  wsUrl: string;
  exited: Promise<number | null>;
  stderr(): string;
}

export async function startHub(args: string[], openFileLimit?: number, startDeadlineMs = 20_000): Promise<HubChild> {
  // SOAK_HUB_NODE_FLAGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the hub itself.
  const nodeFlags = (process.env['SOAK_HUB_NODE_FLAGS'] ?? '').split(' ').filter(Boolean);
  const argv = [...nodeFlags, 'dist/server/main.js', '--port', '0', '--log-level', 'error', ...args];
  const child =
    openFileLimit === undefined
      ? spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('bash', ['-c', `ulimit -n ${openFileLimit} && exec "$0" "$@"`, process.execPath, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`hub did not start in ${startDeadlineMs / 1000} s: ${err}`)), startDeadlineMs);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(m[1]!);
      }
    });
    void exited.then((code) => reject(new Error(`hub exited with ${code}: ${err}`)));
  });
  return { child, port: Number(new URL(url).port), url, wsUrl: url.replace('http://', 'ws://') + '/ahp', exited, stderr: () => err };
}

export async function healthzMs(url: string, timeoutMs = 5_000): Promise<number> {
  const start = performance.now();
  const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
  if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
  await res.text();
  return performance.now() - start;
}

// ─── A minimal AHP client ─────────────────────────────────────────────────────

export interface Envelope {
  channel: string;
  serverSeq: number;
  action: Record<string, unknown>;
  origin?: { clientId: string; clientSeq: number };
  rejectionReason?: string;
}

export class Client {
  readonly clientId = randomUUID();
  readonly echoes: Envelope[] = [];
  closeCode: number | undefined;
  received = 0;
  #nextId = 1;
  #clientSeq = 0;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.#onMessage(String(data)));
    ws.on('close', (code) => {
      this.closeCode = code;
      for (const p of this.#pending.values()) p.reject(new Error(`closed (${code})`));
      this.#pending.clear();
    });
    ws.on('error', () => {});
  }

  static async open(wsUrl: string, token?: string): Promise<Client> {
    const client = new Client(await openSocket(wsUrl, token));
    await client.request('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: client.clientId });
    return client;
  }

  request<T = Record<string, unknown>>(method: string, params: unknown): Promise<T> {
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  dispatch(channel: string, action: Record<string, unknown>): number {
    const clientSeq = ++this.#clientSeq;
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel, clientSeq, action } }));
    return clientSeq;
  }

  async createSession(): Promise<{ session: string; chat: string }> {
    const session = `ahp-session:/${randomUUID()}`;
    const r = await this.request<{ defaultChat: string }>('createSession', { channel: session });
    return { session, chat: r.defaultChat };
  }

  #onMessage(text: string): void {
    this.received++;
    const msg = JSON.parse(text) as { id?: number; result?: unknown; error?: { code: number; message: string }; method?: string; params?: Envelope };
    if (msg.method === 'action' && msg.params?.origin?.clientId === this.clientId) this.echoes.push(msg.params);
    if (typeof msg.id !== 'number') return;
    const p = this.#pending.get(msg.id);
    if (!p) return;
    this.#pending.delete(msg.id);
    if (msg.error) p.reject(new Error(`${msg.error.code} ${msg.error.message}`));
    else p.resolve(msg.result);
  }

  close(): void {
    this.ws.terminate();
  }
}
