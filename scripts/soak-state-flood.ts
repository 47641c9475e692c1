/**
 * Soak phase "state" (issue 18.1): users of one tenant fill session after session with queued
 * messages until the hub refuses, with the default quotas. Reports the hub's peak RSS, what
 * refused, whether another tenant still works, and whether a restart on the same data dir
 * starts (and how long it takes). Used by scripts/soak.ts (`--only state`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import { openSocket } from '../bench/open-socket.js';
import { rssMiB } from '../bench/proc.js';

/** What soak.ts's `startHub` gives back, as far as this phase needs it. */
export interface StateFloodHub {
  readonly child: { readonly pid?: number | undefined; kill(signal: NodeJS.Signals): boolean };
  readonly wsUrl: string;
  readonly exited: Promise<number | null>;
}

export interface StateFloodFigures {
  readonly users: number;
  readonly acceptedChars: number;
  readonly sessions: number;
  /** Refusals by their named code (user_state_quota, tenant_state_quota, channel_too_large, …). */
  readonly refusals: Record<string, number>;
  readonly rssBeforeMiB: number;
  readonly rssPeakMiB: number;
  readonly otherTenantWorks: boolean;
  readonly restartOk: boolean;
  readonly restartMs: number;
}

/** A bare JSON-RPC client: requests by id, dispatches by clientSeq, echoes matched to them (also used by soak-floods.ts). */
export class FloodClient {
  readonly clientId = randomUUID();
  /** Sees every action envelope of the channels this client subscribed to. */
  onAction: ((envelope: { channel: string; action: { type: string; [key: string]: unknown } }) => void) | undefined;
  readonly #waiting = new Map<number, (msg: { result?: unknown; error?: { message: string } }) => void>();
  readonly #echoes = new Map<number, (reason: string | undefined) => void>();
  #id = 0;
  #seq = 0;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data)) as { id?: number; method?: string; params?: { origin?: { clientId: string; clientSeq: number }; rejectionReason?: string }; result?: unknown; error?: { message: string } };
      if (msg.method === 'action') {
        this.onAction?.(msg.params as unknown as { channel: string; action: { type: string } });
        const origin = msg.params?.origin;
        if (origin?.clientId === this.clientId) this.#echoes.get(origin.clientSeq)?.(msg.params?.rejectionReason);
        return;
      }
      if (typeof msg.id === 'number') this.#waiting.get(msg.id)?.(msg);
    });
  }

  static async open(wsUrl: string, token?: string): Promise<FloodClient> {
    const client = new FloodClient(await openSocket(wsUrl, token));
    await client.request('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: client.clientId });
    return client;
  }

  request(method: string, params: unknown): Promise<{ result?: unknown; error?: { message: string } }> {
    const id = ++this.#id;
    return new Promise((resolve) => {
      this.#waiting.set(id, (msg) => {
        this.#waiting.delete(id);
        resolve(msg);
      });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** Dispatches and resolves with the rejection reason (undefined = accepted). */
  dispatch(channel: string, action: Record<string, unknown>): Promise<string | undefined> {
    const clientSeq = ++this.#seq;
    return new Promise((resolve) => {
      this.#echoes.set(clientSeq, (reason) => {
        this.#echoes.delete(clientSeq);
        resolve(reason);
      });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel, clientSeq, action } }));
    });
  }
}

const MESSAGE_CHARS = 100_000;
const refusalCode = (reason: string): string => /\((\w+)\)/.exec(reason)?.[1] ?? 'other';

export async function stateFlood(startHub: (args: string[]) => Promise<StateFloodHub>, quick: boolean): Promise<StateFloodFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'ahp-soak-state-'));
  const users = quick ? 1 : 4;
  const tokens = Array.from({ length: users }, (_, i) => `soak-state-user-${i}-0123456789`);
  const other = 'soak-state-other-0123456789';
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ tokens: [...tokens.map((token, i) => ({ token, user: `filler-${i}`, tenant: 'a', role: 'user' })), { token: other, user: 'bystander', tenant: 'b', role: 'user' }] }));
  const args = ['--data', join(dir, 'data'), '--auth', join(dir, 'tokens.json')];
  let hub = await startHub(args);
  const refusals: Record<string, number> = {};
  let acceptedChars = 0;
  let sessions = 0;
  let peak = 0;
  const rssBefore = rssMiB(hub.child.pid!).rss;
  const text = 'q'.repeat(MESSAGE_CHARS);
  try {
    for (const token of tokens) {
      const client = await FloodClient.open(hub.wsUrl, token);
      let quota = false;
      while (!quota) {
        const session = `ahp-session:/${randomUUID()}`;
        const created = await client.request('createSession', { channel: session });
        if (created.error) {
          refusals[refusalCode(created.error.message)] = (refusals[refusalCode(created.error.message)] ?? 0) + 1;
          break;
        }
        sessions++;
        const chat = (created.result as { defaultChat: string }).defaultChat;
        // Bursts of 20 queued messages, until the chat is full or a quota refuses.
        for (let burst = 0; !quota; burst++) {
          const reasons = await Promise.all(Array.from({ length: 20 }, (_, i) => client.dispatch(chat, { type: 'chat/pendingMessageSet', kind: 'queued', id: `m${burst * 20 + i}`, message: { text, origin: { kind: 'user' } } })));
          peak = Math.max(peak, rssMiB(hub.child.pid!).rss);
          let full = false;
          for (const reason of reasons) {
            if (reason === undefined) {
              acceptedChars += MESSAGE_CHARS;
              continue;
            }
            const code = refusalCode(reason);
            refusals[code] = (refusals[code] ?? 0) + 1;
            if (code.endsWith('_quota')) quota = true;
            else if (code === 'channel_too_large') full = true;
            else throw new Error(`the aggregate-state flood was refused for another reason: ${reason.slice(0, 200)}`);
          }
          if (full) break;
        }
      }
      client.ws.terminate();
    }
    const bystander = await FloodClient.open(hub.wsUrl, other);
    const session = `ahp-session:/${randomUUID()}`;
    const created = await bystander.request('createSession', { channel: session });
    const chat = (created.result as { defaultChat?: string } | undefined)?.defaultChat;
    const otherTenantWorks = chat !== undefined && (await bystander.dispatch(chat, { type: 'chat/pendingMessageSet', kind: 'queued', id: 'b', message: { text: 'hello', origin: { kind: 'user' } } })) === undefined;
    bystander.ws.terminate();

    hub.child.kill('SIGTERM');
    await hub.exited;
    const start = performance.now();
    let restartOk = true;
    try {
      hub = await startHub(args);
    } catch {
      restartOk = false;
    }
    return { users, acceptedChars, sessions, refusals, rssBeforeMiB: rssBefore, rssPeakMiB: peak, otherTenantWorks, restartOk, restartMs: performance.now() - start };
  } finally {
    hub.child.kill('SIGTERM');
    await hub.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}
