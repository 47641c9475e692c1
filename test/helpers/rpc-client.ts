/**
 * A raw JSON-RPC WebSocket client for integration tests: it speaks the wire exactly as any AHP
 * client would, records every envelope and notification, and lets tests wait on them.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { waitFor } from './wait-for.js';

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export interface Notification {
  method: string;
  params: Record<string, unknown>;
}

export class RpcClient {
  readonly envelopes: ActionEnvelope[] = [];
  readonly notifications: Notification[] = [];
  /** Error responses with id null (answers to bad notifications / frames). */
  readonly errors: Array<{ code: number; message: string }> = [];
  readonly clientId: string;
  #nextId = 1;
  #clientSeq = 0;
  #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  closed = false;
  closeCode: number | undefined;

  private constructor(
    readonly ws: WebSocket,
    clientId: string,
  ) {
    this.clientId = clientId;
    ws.on('message', (data) => this.#onMessage(String(data)));
    ws.on('close', (code) => {
      this.closed = true;
      this.closeCode = code;
      for (const p of this.#pending.values()) p.reject(new Error('connection closed'));
      this.#pending.clear();
    });
  }

  static async connect(wsUrl: string, options: { token?: string; clientId?: string } = {}): Promise<RpcClient> {
    const url = options.token ? `${wsUrl}?token=${encodeURIComponent(options.token)}` : wsUrl;
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    return new RpcClient(ws, options.clientId ?? randomUUID());
  }

  /** Connects and initializes, optionally subscribing. */
  static async open(wsUrl: string, options: { token?: string; clientId?: string; subscribe?: string[] } = {}): Promise<RpcClient> {
    const client = await RpcClient.connect(wsUrl, options);
    await client.initialize(options.subscribe ?? []);
    return client;
  }

  #onMessage(text: string): void {
    const msg = JSON.parse(text) as { id?: number | null; result?: unknown; error?: { code: number; message: string; data?: unknown }; method?: string; params?: Record<string, unknown> };
    if (msg.method) {
      if (msg.method === 'action') this.envelopes.push(msg.params as unknown as ActionEnvelope);
      else this.notifications.push({ method: msg.method, params: msg.params ?? {} });
      return;
    }
    if (msg.id === null || msg.id === undefined) {
      if (msg.error) this.errors.push(msg.error);
      return;
    }
    const p = this.#pending.get(msg.id);
    if (!p) return;
    this.#pending.delete(msg.id);
    if (msg.error) p.reject(new RpcError(msg.error.code, msg.error.message, msg.error.data));
    else p.resolve(msg.result);
  }

  request<T = Record<string, unknown>>(method: string, params?: unknown): Promise<T> {
    const id = this.#nextId++;
    if (this.closed) return Promise.reject(new Error('connection closed'));
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  notify(method: string, params: unknown): void {
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  sendRaw(text: string): void {
    this.ws.send(text);
  }

  initialize(initialSubscriptions: string[] = [], protocolVersions = ['1.0.0']): Promise<{ serverSeq: number; snapshots: Array<{ resource: string; state: unknown; fromSeq: number }> }> {
    return this.request('initialize', { channel: 'ahp-root://', protocolVersions, clientId: this.clientId, initialSubscriptions });
  }

  async subscribe<S = Record<string, unknown>>(channel: string, delivery?: { maxLatencyMs: number }): Promise<{ state: S; fromSeq: number }> {
    const r = await this.request<{ snapshot: { state: S; fromSeq: number } }>('subscribe', delivery ? { channel, delivery } : { channel });
    return r.snapshot;
  }

  /** Dispatches and returns the clientSeq used. */
  dispatch(channel: string, action: Record<string, unknown>): number {
    const clientSeq = ++this.#clientSeq;
    this.notify('dispatchAction', { channel, clientSeq, action });
    return clientSeq;
  }

  /** Dispatches and waits for its echo (accepted or rejected). */
  async dispatchAndWait(channel: string, action: Record<string, unknown>): Promise<ActionEnvelope> {
    const clientSeq = this.dispatch(channel, action);
    return waitFor(() => this.envelopes.find((e) => e.origin?.clientId === this.clientId && e.origin.clientSeq === clientSeq), {
      what: `echo of ${String(action['type'])}`,
    });
  }

  async createSession(title?: string): Promise<{ session: string; chat: string }> {
    const session = `ahp-session:/${randomUUID()}`;
    const r = await this.request<{ defaultChat: string }>('createSession', title ? { channel: session, title } : { channel: session });
    return { session, chat: r.defaultChat };
  }

  waitForEnvelope(predicate: (e: ActionEnvelope) => boolean, what = 'envelope'): Promise<ActionEnvelope> {
    return waitFor(() => this.envelopes.find(predicate), { what });
  }

  waitForNotification(predicate: (n: Notification) => boolean, what = 'notification'): Promise<Notification> {
    return waitFor(() => this.notifications.find(predicate), { what });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await new Promise<void>((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }
}
