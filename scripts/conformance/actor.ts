/**
 * An actor of a conformance case: an AHP client over one WebSocket (through its own fault proxy)
 * that keeps what a careful client keeps — its clientId and clientSeq counter, the operations it
 * sent and what it heard about each, its cursor (the highest serverSeq it received), and one
 * replica per subscribed channel folded from the snapshot with the shared reducers (x- actions
 * ignored, as a stock AHP client does). After a connection loss it opens a new connection with
 * `reconnect` and sends every operation it has no answer for again, with its original clientSeq.
 *
 * `Flaws` are the planted client bugs: each turns off one of those habits, to show that the
 * invariant a case names catches a client (or a hub) that does not have it.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import type { ChatState, RootState, SessionState } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { rootReducer } from '../../shared/state/root-reducer.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';

export interface Flaws {
  /** After reconnecting, operations without an answer are not sent again. */
  noResend?: boolean;
  /** Unanswered operations are sent again as new ones (a fresh clientSeq, fresh ids). */
  resendAsNew?: boolean;
  /** Envelopes are folded even when their serverSeq was already folded. */
  noDedupe?: boolean;
  /** `reconnect` resumes from the live edge (the serverSeq a fresh `initialize` reports), not from what it received. */
  cursorAhead?: boolean;
  /** A `snapshot` answer to `reconnect` is not adopted (the old replica is kept). */
  keepStaleOnSnapshot?: boolean;
  /** Channels `reconnect` reports missing are kept as they were. */
  ignoreMissing?: boolean;
  /** The chat replica orders its turns by their wall-clock `startedAt`. */
  orderByClock?: boolean;
  /** A dispatch counts as applied when sent (optimistic), and a rejection never rolls it back. */
  neverRollBack?: boolean;
  /** After a refused createSession ("exists"), the client creates another session instead of looking it up. */
  recreateOnExists?: boolean;
  /** HTTP: a 5xx ends the attempt; the client gives up instead of retrying. */
  giveUpOn5xx?: boolean;
  /** HTTP: "not found" after a reply that got no answer is taken as a refusal (never looked up). */
  trustNotFound?: boolean;
  /** SSE: the stream is reopened without `Last-Event-ID`. */
  resumeWithoutLastEventId?: boolean;
  /** ACP bridge: its hub connection is not re-opened when it drops. */
  bridgeNoReconnect?: boolean;
}

export type OperationStatus = 'pending' | 'accepted' | 'rejected';

export interface Operation {
  readonly key: string;
  clientSeq: number;
  readonly channel: string;
  action: Record<string, unknown>;
  status: OperationStatus;
  serverSeq?: number;
  reason?: string;
  /** How many times it was sent. */
  sends: number;
}

type Reducer = (state: unknown, action: { type: string }) => unknown;
const reducerOf = (channel: string): Reducer => {
  const reducer = (channel === 'ahp-root://' ? rootReducer : channel.startsWith('ahp-session:') ? sessionReducer : chatReducer) as unknown as (s: unknown, a: unknown) => unknown;
  return (state, action) => (action.type.startsWith('x-') ? state : reducer(state, action));
};

export interface Replica {
  state: unknown;
  fromSeq: number;
  folded: Set<number>;
  missing: boolean;
}

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
}

export class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export class Actor {
  readonly clientId = randomUUID();
  readonly operations: Operation[] = [];
  readonly replicas = new Map<string, Replica>();
  /** Every envelope this actor received (live, duplicated, replayed), in arrival order. */
  readonly received: ActionEnvelope[] = [];
  readonly closeCodes: number[] = [];
  cursor = 0;
  #ws: WebSocket | undefined;
  #nextId = 1;
  #clientSeq = 0;
  #pending = new Map<number, Pending>();
  #url = '';
  #token: string | undefined;

  constructor(
    readonly name: string,
    readonly flaws: Flaws = {},
  ) {}

  get connected(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN;
  }

  /** First connection: `initialize`. */
  async connect(url: string, token?: string): Promise<void> {
    this.#url = url;
    this.#token = token;
    await this.#open();
    await this.request('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: this.clientId, initialSubscriptions: [] });
  }

  /** A new connection after a loss: `reconnect` from the cursor, then every unanswered operation again. */
  async reconnect(token?: string): Promise<{ type: string; missing: string[] }> {
    if (token !== undefined) this.#token = token;
    this.#ws?.terminate();
    await this.#open();
    if (this.flaws.cursorAhead) {
      const init = await this.request<{ serverSeq: number }>('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: this.clientId, initialSubscriptions: [] });
      this.cursor = Math.max(this.cursor, init.serverSeq);
    }
    const subscriptions = [...this.replicas.keys()].filter((c) => !this.replicas.get(c)!.missing);
    const result = await this.request<{ type: 'replay'; actions: ActionEnvelope[]; missing: string[] } | { type: 'snapshot'; snapshots: Array<{ resource: string; state: unknown; fromSeq: number }>; missing: string[] }>('reconnect', {
      channel: 'ahp-root://',
      clientId: this.clientId,
      lastSeenServerSeq: this.cursor,
      subscriptions,
    });
    for (const channel of result.missing) {
      const replica = this.replicas.get(channel);
      if (replica && !this.flaws.ignoreMissing) replica.missing = true;
    }
    if (result.type === 'replay') for (const e of result.actions) this.#onEnvelope(e);
    else if (!this.flaws.keepStaleOnSnapshot) {
      for (const s of result.snapshots) {
        this.replicas.set(s.resource, { state: s.state, fromSeq: s.fromSeq, folded: new Set(), missing: false });
        if (s.fromSeq > this.cursor) this.cursor = s.fromSeq;
      }
    }
    this.#resendUnanswered();
    return { type: result.type, missing: result.missing };
  }

  #resendUnanswered(): void {
    if (this.flaws.noResend) return;
    for (const op of this.operations) {
      if (op.status !== 'pending') continue;
      if (this.flaws.resendAsNew) {
        op.clientSeq = ++this.#clientSeq;
        op.action = freshIds(op.action);
      }
      this.#send(op);
    }
  }

  async #open(): Promise<void> {
    const url = this.#token ? `${this.#url}${this.#url.includes('?') ? '&' : '?'}token=${encodeURIComponent(this.#token)}` : this.#url;
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new RpcFailure(res.statusCode ?? 0, `HTTP ${res.statusCode}`)));
    });
    this.#ws = ws;
    ws.on('message', (data) => this.#onMessage(String(data)));
    ws.on('error', () => undefined);
    ws.on('close', (code) => {
      if (this.#ws !== ws) return;
      this.closeCodes.push(code);
      for (const p of this.#pending.values()) p.reject(new Error('connection lost'));
      this.#pending.clear();
    });
  }

  close(): void {
    const ws = this.#ws;
    this.#ws = undefined;
    ws?.terminate();
  }

  /** Cuts the connection from this side (the client noticed a dead link, e.g. no answer to a ping). */
  drop(): void {
    this.#ws?.terminate();
  }

  request<T = Record<string, unknown>>(method: string, params: unknown): Promise<T> {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error('connection lost'));
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  async subscribe(channel: string): Promise<void> {
    const r = await this.request<{ snapshot: { state: unknown; fromSeq: number } }>('subscribe', { channel });
    this.replicas.set(channel, { state: r.snapshot.state, fromSeq: r.snapshot.fromSeq, folded: new Set(), missing: false });
    // Answers never overtake envelopes: everything up to fromSeq on our channels is in hand.
    if (r.snapshot.fromSeq > this.cursor) this.cursor = r.snapshot.fromSeq;
  }

  /** Sends an operation (a dispatch); its answer arrives as an echo. */
  dispatch(key: string, channel: string, action: Record<string, unknown>): Operation {
    const op: Operation = { key, clientSeq: ++this.#clientSeq, channel, action, status: 'pending', sends: 0 };
    this.operations.push(op);
    if (this.flaws.neverRollBack) {
      const replica = this.replicas.get(channel);
      if (replica) replica.state = reducerOf(channel)(replica.state, action as { type: string });
    }
    this.#send(op);
    return op;
  }

  operation(key: string): Operation | undefined {
    return this.operations.find((o) => o.key === key);
  }

  #send(op: Operation): void {
    op.sends++;
    const ws = this.#ws;
    if (ws?.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel: op.channel, clientSeq: op.clientSeq, action: op.action } }));
  }

  #onMessage(text: string): void {
    const msg = JSON.parse(text) as { id?: number | null; result?: unknown; error?: { code: number; message: string }; method?: string; params?: Record<string, unknown> };
    if (msg.method === 'action') return this.#onEnvelope(msg.params as unknown as ActionEnvelope);
    if (msg.method || msg.id === null || msg.id === undefined) return;
    const p = this.#pending.get(msg.id);
    if (!p) return;
    this.#pending.delete(msg.id);
    if (msg.error) p.reject(new RpcFailure(msg.error.code, msg.error.message));
    else p.resolve(msg.result);
  }

  #onEnvelope(e: ActionEnvelope): void {
    this.received.push(e);
    if (e.serverSeq > this.cursor) this.cursor = e.serverSeq;
    if (e.origin?.clientId === this.clientId) {
      const op = this.operations.find((o) => o.clientSeq === e.origin!.clientSeq);
      if (op && op.status === 'pending') {
        op.status = e.rejectionReason === undefined ? 'accepted' : 'rejected';
        op.serverSeq = e.serverSeq;
        if (e.rejectionReason !== undefined) op.reason = e.rejectionReason;
      }
      // An optimistic client already folded its own action.
      if (this.flaws.neverRollBack) return;
    }
    if (e.rejectionReason !== undefined) return;
    this.#fold(e.channel, e);
  }

  #fold(channel: string, e: ActionEnvelope): void {
    const replica = this.replicas.get(channel);
    if (!replica || replica.missing) return;
    if (e.serverSeq <= replica.fromSeq) return;
    if (replica.folded.has(e.serverSeq) && !this.flaws.noDedupe) return;
    replica.folded.add(e.serverSeq);
    replica.state = reducerOf(channel)(replica.state, e.action as { type: string });
    if (this.flaws.orderByClock) replica.state = turnsByClock(replica.state);
  }
}

/** The same operation minted again: every id-like field gets a new value (what a naive retry does). */
function freshIds(action: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(action);
  if (typeof copy['turnId'] === 'string') copy['turnId'] = `${copy['turnId']}-again-${randomUUID().slice(0, 8)}`;
  return copy;
}

/** A chat state with its turns sorted by `startedAt` (a client that orders history by wall clock). */
function turnsByClock(state: unknown): unknown {
  const chat = state as { turns?: Array<{ startedAt?: string }> };
  if (!Array.isArray(chat.turns)) return state;
  return { ...chat, turns: [...chat.turns].sort((x, y) => String(x.startedAt).localeCompare(String(y.startedAt))) };
}

/** A state without the hub's own `_meta["hub/…"]` keys (data a stock replica cannot have). */
export function withoutHubMeta(state: unknown): unknown {
  if (typeof state !== 'object' || state === null) return state;
  const record = state as Record<string, unknown>;
  const meta = record['_meta'] as Record<string, unknown> | undefined;
  if (!meta) return state;
  const kept = Object.fromEntries(Object.entries(meta).filter(([k]) => !k.startsWith('hub/')));
  const { _meta: _dropped, ...rest } = record;
  return Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest;
}

export type { ChatState, RootState, SessionState };
