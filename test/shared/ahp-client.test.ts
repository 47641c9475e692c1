/**
 * AhpClient against an in-memory fake hub: a FakeSocket per connection (implements WebSocketLike),
 * with all delivery through microtasks. Nothing sleeps: tests await promises or poll with
 * `waitFor` (deadline-bounded), and timers go through a FakeScheduler that runs only when told.
 *
 * Channel states in most tests are a tiny list reducer (injected per subscription), so these
 * tests exercise the reconciliation machinery, not the chat reducer.
 */
import { describe, expect, it } from 'vitest';
import { AhpClient, AhpConnectionError, AhpError, AhpRequestError, AhpTimeoutError, type AhpClientOptions, type ChannelChange, type ConnectionState, type Scheduler, type WebSocketLike } from '../../shared/client/ahp-client.js';
import { backoffDelay } from '../../shared/client/backoff.js';
import { RECONNECT_NOW_CLOSE_CODE } from '../../shared/protocol/close-codes.js';
import { Reconciler } from '../../shared/client/reconciler.js';
import type { ActionEnvelope, WireAction } from '../../shared/protocol/messages.js';
import { initialChatState, type ChatState } from '../../shared/protocol/state.js';
import { ROOT_URI } from '../../shared/protocol/uris.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';

// ─── Test state: a list ──────────────────────────────────────────────────────

interface ListState {
  readonly items: readonly string[];
}

/** `test/add` appends (also used by `test/reject`, which the fake server rejects); `test/clear` empties. */
function listReducer(state: ListState, action: WireAction): ListState {
  switch (action.type) {
    case 'test/add':
    case 'test/reject':
      return { items: [...state.items, String(action.item)] };
    case 'test/clear':
      return { items: [] };
    default:
      return state;
  }
}

const add = (item: string): WireAction => ({ type: 'test/add', item });

// ─── Polling and timers ─────────────────────────────────────────────────────

/** Lets every queued microtask (our whole fake transport) run. */
function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function waitFor(predicate: () => boolean, what = 'condition', timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await tick();
  }
}

class FakeScheduler implements Scheduler {
  readonly #tasks = new Map<number, { callback: () => void; delayMs: number }>();
  #next = 1;
  setTimeout(callback: () => void, delayMs: number): unknown {
    const id = this.#next++;
    this.#tasks.set(id, { callback, delayMs });
    return id;
  }
  clearTimeout(handle: unknown): void {
    if (typeof handle === 'number') this.#tasks.delete(handle);
  }
  delays(): number[] {
    return [...this.#tasks.values()].map((t) => t.delayMs);
  }
  /** Runs (and removes) every task whose delay matches. Returns how many ran. */
  run(match: (delayMs: number) => boolean): number {
    let ran = 0;
    for (const [id, task] of [...this.#tasks]) {
      if (!match(task.delayMs)) continue;
      this.#tasks.delete(id);
      task.callback();
      ran++;
    }
    return ran;
  }
}

/** Request timeouts use this; reconnect delays (capped well below) are told apart by size. */
const REQUEST_TIMEOUT_MS = 60_000;
const isBackoff = (ms: number) => ms < REQUEST_TIMEOUT_MS;

// ─── Fake transport and hub ─────────────────────────────────────────────────

class FakeSocket implements WebSocketLike {
  readyState = 0;
  onopen: ((event: unknown) => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onclose: ((event: { code?: number; reason?: unknown }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;

  constructor(
    readonly url: string,
    private readonly toServer: (text: string) => void,
  ) {}

  // Client side
  send(data: string): void {
    if (this.readyState !== 1) throw new Error('socket not open');
    queueMicrotask(() => this.toServer(data));
  }
  close(code = 1000, reason = ''): void {
    if (this.readyState >= 2) return;
    this.readyState = 3;
    queueMicrotask(() => this.onclose?.({ code, reason }));
  }

  // Server side
  serverOpen(): void {
    this.readyState = 1;
    queueMicrotask(() => this.onopen?.({}));
  }
  serverSend(message: unknown): void {
    if (this.readyState !== 1) return;
    const text = JSON.stringify(message);
    queueMicrotask(() => this.onmessage?.({ data: text }));
  }
  serverDrop(code = 1006): void {
    if (this.readyState >= 2) return;
    this.readyState = 3;
    queueMicrotask(() => this.onclose?.({ code, reason: '' }));
  }
}

interface RpcMessage {
  readonly id?: number;
  readonly method: string;
  readonly params: Record<string, unknown>;
}

interface Connection {
  readonly socket: FakeSocket;
  clientId: string | undefined;
  readonly subscriptions: Set<string>;
}

class RpcFailure {
  constructor(
    readonly code: number,
    readonly message: string,
    readonly data?: unknown,
  ) {}
}

type Handler = (params: Record<string, unknown>, conn: Connection, id: number | undefined) => unknown;

class FakeHub {
  serverSeq = 0;
  readonly channels = new Map<string, ListState>();
  /** Channels holding a real ChatState, reduced with the shared chatReducer. */
  readonly chats = new Map<string, ChatState>();
  readonly history: ActionEnvelope[] = [];
  readonly connections: Connection[] = [];
  /** Every message any client sent, in arrival order. */
  readonly received: RpcMessage[] = [];
  acceptConnections = true;
  /** When false, dispatches are held (not applied, not echoed) until `processHeld`. */
  autoProcess = true;
  held: Array<{ conn: Connection; params: Record<string, unknown> }> = [];
  reconnectMode: 'replay' | 'snapshot' = 'replay';
  readonly handlers = new Map<string, Handler>();

  readonly createSocket = (url: string): WebSocketLike => {
    const conn: Connection = { socket: new FakeSocket(url, (t) => this.#receive(conn, t)), clientId: undefined, subscriptions: new Set() };
    this.connections.push(conn);
    if (this.acceptConnections) conn.socket.serverOpen();
    else conn.socket.serverDrop();
    return conn.socket;
  };

  get current(): Connection {
    const conn = this.connections.at(-1);
    if (!conn) throw new Error('no connection yet');
    return conn;
  }

  requests(method: string): RpcMessage[] {
    return this.received.filter((m) => m.method === method);
  }

  /** Server-originated action (no origin). */
  serverAction(channel: string, action: WireAction): ActionEnvelope {
    return this.#commit(channel, action, undefined);
  }

  processHeld(): void {
    const held = this.held;
    this.held = [];
    for (const { conn, params } of held) this.#process(conn, params);
  }

  notifyAll(method: string, params: unknown): void {
    for (const conn of this.connections) conn.socket.serverSend({ jsonrpc: '2.0', method, params });
  }

  #receive(conn: Connection, text: string): void {
    const msg = JSON.parse(text) as RpcMessage;
    this.received.push(msg);
    if (msg.id === undefined) {
      this.#notification(conn, msg);
      return;
    }
    try {
      const result = this.#request(conn, msg);
      if (result === NO_REPLY) return;
      conn.socket.serverSend({ jsonrpc: '2.0', id: msg.id, result });
    } catch (error) {
      if (!(error instanceof RpcFailure)) throw error;
      conn.socket.serverSend({ jsonrpc: '2.0', id: msg.id, error: { code: error.code, message: error.message, data: error.data } });
    }
  }

  #request(conn: Connection, { id, method, params }: RpcMessage): unknown {
    const custom = this.handlers.get(method);
    if (custom) return custom(params, conn, id);
    switch (method) {
      case 'initialize':
        conn.clientId = String(params.clientId);
        return {
          protocolVersion: (params.protocolVersions as string[])[0],
          serverSeq: this.serverSeq,
          serverInfo: { name: 'fake-hub', version: '0' },
          snapshots: [],
        };
      case 'ping':
        return {};
      case 'subscribe': {
        const channel = String(params.channel);
        const state = this.channels.get(channel) ?? this.chats.get(channel);
        if (!state) throw new RpcFailure(-32008, `no channel ${channel}`);
        conn.subscriptions.add(channel);
        return { snapshot: { resource: channel, state, fromSeq: this.serverSeq } };
      }
      case 'reconnect':
        return this.#reconnect(conn, params);
      default:
        throw new RpcFailure(-32601, `unknown method ${method}`);
    }
  }

  #reconnect(conn: Connection, params: Record<string, unknown>): unknown {
    const wanted = params.subscriptions as string[];
    const lastSeen = Number(params.lastSeenServerSeq);
    const missing = wanted.filter((c) => !this.channels.has(c));
    const kept = wanted.filter((c) => this.channels.has(c));
    for (const c of kept) conn.subscriptions.add(c);
    if (this.reconnectMode === 'snapshot') {
      return {
        type: 'snapshot',
        snapshots: kept.map((c) => ({ resource: c, state: this.channels.get(c), fromSeq: this.serverSeq })),
        missing,
      };
    }
    const actions = this.history.filter((e) => e.serverSeq > lastSeen && kept.includes(e.channel));
    return { type: 'replay', actions, missing };
  }

  #notification(conn: Connection, { method, params }: RpcMessage): void {
    if (method === 'unsubscribe') conn.subscriptions.delete(String(params.channel));
    if (method !== 'dispatchAction') return;
    const channel = String(params.channel);
    if (!this.channels.has(channel) && !this.chats.has(channel)) return; // unknown channel: silently ignored (§1.5)
    if (this.autoProcess) this.#process(conn, params);
    else this.held.push({ conn, params });
  }

  #process(conn: Connection, params: Record<string, unknown>): void {
    const channel = String(params.channel);
    const action = params.action as WireAction;
    const origin = { clientId: conn.clientId ?? '?', clientSeq: Number(params.clientSeq) };
    if (action.type === 'test/reject') {
      // Like the real hub: not sequenced (stamped with the current head, 0 on a fresh log), sent to the sender only.
      const envelope: ActionEnvelope = { channel, action, serverSeq: this.serverSeq, origin, rejectionReason: 'not allowed' };
      conn.socket.serverSend({ jsonrpc: '2.0', method: 'action', params: envelope });
      return;
    }
    this.#commit(channel, action, origin);
  }

  #commit(channel: string, action: WireAction, origin: ActionEnvelope['origin']): ActionEnvelope {
    const list = this.channels.get(channel);
    const chat = this.chats.get(channel);
    if (list) this.channels.set(channel, listReducer(list, action));
    else if (chat) this.chats.set(channel, chatReducer(chat, action));
    else throw new Error(`no channel ${channel}`);
    const envelope: ActionEnvelope = { channel, action, serverSeq: ++this.serverSeq, ...(origin && { origin }) };
    this.history.push(envelope);
    this.#broadcast(envelope);
    return envelope;
  }

  #broadcast(envelope: ActionEnvelope): void {
    for (const conn of this.connections) {
      if (conn.subscriptions.has(envelope.channel)) conn.socket.serverSend({ jsonrpc: '2.0', method: 'action', params: envelope });
    }
  }
}

const NO_REPLY = Symbol('no reply');

// ─── Fixture ─────────────────────────────────────────────────────────────────

const CHAT = 'ahp-chat:/c1';
const OTHER = 'ahp-chat:/c2';

function setup(overrides: Partial<AhpClientOptions> = {}) {
  const hub = new FakeHub();
  hub.channels.set(CHAT, { items: [] });
  hub.channels.set(OTHER, { items: [] });
  const scheduler = new FakeScheduler();
  const warnings: string[] = [];
  const client = new AhpClient({
    url: 'ws://hub.test/ahp',
    createSocket: hub.createSocket,
    clientId: 'client-A',
    scheduler,
    random: () => 1, // jitter at its maximum: delays equal the exponential ceiling
    reconnect: { initialDelayMs: 100, maxDelayMs: 1000 },
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    logger: { warn: (message) => warnings.push(message) },
    ...overrides,
  });
  const states: ConnectionState[] = [];
  client.onConnectionState((s) => states.push(s));
  return { hub, scheduler, client, states, warnings };
}

async function connectedWithChat(overrides: Partial<AhpClientOptions> = {}) {
  const fx = setup(overrides);
  await fx.client.connect();
  const chat = await fx.client.subscribe<ListState>(CHAT, { reducer: listReducer });
  const changes: ChannelChange[] = [];
  chat.onChange((_view, change) => changes.push(change));
  return { ...fx, chat, changes };
}

/** Drops the current connection and runs the scheduled reconnect until the client is open again. */
async function dropAndReconnect(fx: { hub: FakeHub; scheduler: FakeScheduler; client: AhpClient }, beforeReconnect?: () => void) {
  fx.hub.current.socket.serverDrop();
  await waitFor(() => fx.client.connectionState === 'reconnecting', 'reconnecting');
  beforeReconnect?.();
  expect(fx.scheduler.run(isBackoff)).toBe(1);
  await waitFor(() => fx.client.connectionState === 'open', 'reopened');
}

// ─── Tests ───────────────────────────────────────────────────────────────────

describe('AhpClient handshake and requests', () => {
  it('sends initialize first with the clientId and offered versions, then reports open', async () => {
    const { hub, client, states } = setup({ clientInfo: { name: 'test', version: '1' } });
    const result = await client.connect();

    expect(result.serverInfo.name).toBe('fake-hub');
    expect(hub.received[0]).toMatchObject({
      method: 'initialize',
      params: { channel: ROOT_URI, clientId: 'client-A', protocolVersions: ['1.0.0', '0.9.0', '0.8.0'], clientInfo: { name: 'test' } },
    });
    expect(states).toEqual(['connecting', 'open']);
    expect(client.connectionState).toBe('open');
  });

  it('appends the token to the URL and asks a token function again on every connection', async () => {
    let n = 0;
    const fx = setup({ url: 'ws://hub.test/ahp?x=1', token: () => `t${++n}` });
    await fx.client.connect();
    expect(fx.hub.current.socket.url).toBe('ws://hub.test/ahp?x=1&token=t1');
    await dropAndReconnect(fx);
    expect(fx.hub.current.socket.url).toBe('ws://hub.test/ahp?x=1&token=t2');
  });

  it('correlates responses that arrive out of order', async () => {
    const { hub, client } = setup();
    const parked: Array<() => void> = [];
    hub.handlers.set('x-test/echo', (params, conn, id) => {
      parked.push(() => conn.socket.serverSend({ jsonrpc: '2.0', id, result: { echo: params.value } }));
      return NO_REPLY;
    });
    await client.connect();
    const first = client.request('x-test/echo', { channel: ROOT_URI, value: 'one' });
    const second = client.request('x-test/echo', { channel: ROOT_URI, value: 'two' });
    await waitFor(() => parked.length === 2, 'both requests at the server');
    parked[1]?.(); // answer the second first
    parked[0]?.();
    await expect(second).resolves.toEqual({ echo: 'two' });
    await expect(first).resolves.toEqual({ echo: 'one' });
  });

  it('surfaces JSON-RPC errors as AhpRequestError with code, message and data', async () => {
    const { hub, client } = setup();
    hub.handlers.set('x-test/fail', () => {
      throw new RpcFailure(-32009, 'permission denied', { request: 'r1' });
    });
    await client.connect();
    const error = await client.request('x-test/fail', { channel: ROOT_URI }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AhpRequestError);
    expect(error).toMatchObject({ code: -32009, message: 'permission denied', data: { request: 'r1' }, method: 'x-test/fail' });
    // The one base: the kind the code means, since the hub named none in data.kind.
    expect(error).toBeInstanceOf(AhpError);
    expect(error).toMatchObject({ kind: 'permission_denied' });
  });

  it('times out a request that gets no answer', async () => {
    const { hub, client, scheduler } = setup();
    hub.handlers.set('x-test/silent', () => NO_REPLY);
    await client.connect();
    const pending = client.request('x-test/silent', { channel: ROOT_URI });
    await waitFor(() => hub.requests('x-test/silent').length === 1, 'request sent');
    scheduler.run((ms) => ms === REQUEST_TIMEOUT_MS);
    await expect(pending).rejects.toBeInstanceOf(AhpTimeoutError);
    await expect(pending).rejects.toMatchObject({ kind: 'timeout' });
  });

  it('validates results when given a schema', async () => {
    const { hub, client } = setup();
    hub.handlers.set('x-test/n', () => ({ n: 'not a number' }));
    await client.connect();
    const schema = {
      parse: (v: unknown) => {
        if (typeof v === 'object' && v && typeof (v as { n?: unknown }).n === 'number') return v as { n: number };
        throw new Error('bad');
      },
    };
    await expect(client.request('x-test/n', { channel: ROOT_URI }, { schema })).rejects.toMatchObject({ name: 'AhpProtocolError', kind: 'unexpected_response' });
  });

  it('createSession generates a session URI and returns the default chat', async () => {
    const { hub, client } = setup();
    hub.handlers.set('createSession', () => ({ defaultChat: 'ahp-chat:/d1' }));
    await client.connect();
    const result = await client.createSession({ title: 'Demo' });
    expect(result.session).toMatch(/^ahp-session:\/[0-9a-f-]{36}$/);
    expect(result.defaultChat).toBe('ahp-chat:/d1');
    expect(hub.requests('createSession')[0]?.params).toEqual({ channel: result.session, title: 'Demo' });
  });

  it('listSessions sends the page parameters and validates the page', async () => {
    const { hub, client } = setup();
    const summary = { resource: 'ahp-session:/s1', provider: 'demo', title: 'One', status: 1, modifiedAt: '2026-01-01T00:00:00Z' };
    hub.handlers.set('listSessions', () => ({ items: [summary], nextCursor: '1' }));
    await client.connect();
    await expect(client.listSessions({ limit: 1 })).resolves.toEqual({ items: [summary], nextCursor: '1' });
    expect(hub.requests('listSessions')[0]?.params).toEqual({ channel: ROOT_URI, limit: 1 });

    hub.handlers.set('listSessions', () => ({ items: [{ resource: 'ahp-session:/s2' }] }));
    await expect(client.listSessions()).rejects.toMatchObject({ name: 'AhpProtocolError' });
  });

  it('delivers root and extension notifications to their listeners until unsubscribed', async () => {
    const { hub, client } = setup();
    await client.connect();
    const seen: Array<[string, unknown]> = [];
    const off = client.onNotification('root/sessionAdded', (params, method) => seen.push([method, params]));
    client.onNotification('x-collab/cursor', (params, method) => seen.push([method, params]));
    hub.notifyAll('root/sessionAdded', { summary: { resource: 'ahp-session:/s1' } });
    hub.notifyAll('x-collab/cursor', { at: 3 });
    await waitFor(() => seen.length === 2, 'two notifications');
    off();
    hub.notifyAll('root/sessionAdded', { summary: { resource: 'ahp-session:/s2' } });
    await tick();
    expect(seen).toEqual([
      ['root/sessionAdded', { summary: { resource: 'ahp-session:/s1' } }],
      ['x-collab/cursor', { at: 3 }],
    ]);
  });

  it('rejects requests made before connect()', async () => {
    const { client } = setup();
    await expect(client.ping()).rejects.toBeInstanceOf(AhpConnectionError);
  });
});

describe('AhpClient write-ahead reconciliation', () => {
  it('applies a dispatch optimistically and moves it to confirmed on its echo', async () => {
    const { hub, chat, changes } = await connectedWithChat();
    hub.autoProcess = false;

    const result = chat.dispatch(add('a'));
    expect(chat.state.items).toEqual(['a']);
    expect(chat.confirmed.items).toEqual([]);
    expect(chat.pendingActions.map((p) => p.clientSeq)).toEqual([1]);

    await waitFor(() => hub.held.length === 1, 'dispatch at the server');
    expect(hub.requests('dispatchAction')[0]?.params).toEqual({ channel: CHAT, clientSeq: 1, action: add('a') });
    hub.processHeld();

    const outcome = await result;
    expect(outcome.accepted).toBe(true);
    expect(outcome.accepted && outcome.envelope.origin).toEqual({ clientId: 'client-A', clientSeq: 1 });
    expect(chat.confirmed.items).toEqual(['a']);
    expect(chat.state.items).toEqual(['a']);
    expect(chat.pendingActions).toEqual([]);
    expect(changes.map((c) => c.type)).toEqual(['dispatched', 'envelope']);
  });

  it('drops the optimistic effect of a rejected action and resolves accepted:false', async () => {
    const { chat, changes } = await connectedWithChat();
    const result = chat.dispatch({ type: 'test/reject', item: 'nope' });
    expect(chat.state.items).toEqual(['nope']);

    await expect(result).resolves.toMatchObject({ accepted: false, reason: 'not allowed' });
    expect(chat.state.items).toEqual([]);
    expect(chat.confirmed.items).toEqual([]);
    expect(chat.pendingActions).toEqual([]);
    expect(changes.at(-1)).toMatchObject({ type: 'envelope', envelope: { rejectionReason: 'not allowed' } });
  });

  it('honours a rejection stamped with the serverSeq of an action already applied', async () => {
    const { hub, chat } = await connectedWithChat();
    await chat.dispatch(add('a')); // serverSeq 1, applied
    const result = await chat.dispatch({ type: 'test/reject', item: 'b' }); // rejection stamped 1 too
    expect(result).toMatchObject({ accepted: false, reason: 'not allowed', envelope: { serverSeq: 1 } });
    expect(chat.state.items).toEqual(['a']);
    expect(chat.lastAppliedSeq).toBe(hub.serverSeq);
  });

  it('rebases pending actions on top of a foreign action', async () => {
    const { hub, chat } = await connectedWithChat();
    hub.autoProcess = false;
    const mine = chat.dispatch(add('mine'));
    await waitFor(() => hub.held.length === 1, 'dispatch at the server');

    hub.serverAction(CHAT, add('theirs'));
    await waitFor(() => chat.confirmed.items.length === 1, 'foreign action applied');
    expect(chat.confirmed.items).toEqual(['theirs']);
    expect(chat.state.items).toEqual(['theirs', 'mine']);

    hub.processHeld();
    await expect(mine).resolves.toMatchObject({ accepted: true });
    expect(chat.confirmed.items).toEqual(['theirs', 'mine']);
    expect(chat.state).toBe(chat.confirmed);
  });

  it('refuses dispatches beyond the pending limit without rejecting', async () => {
    const { hub, chat } = await connectedWithChat({ maxPendingActions: 2 });
    hub.autoProcess = false;
    void chat.dispatch(add('1'));
    void chat.dispatch(add('2'));
    await expect(chat.dispatch(add('3'))).resolves.toEqual({ accepted: false, reason: 'too many pending actions' });
    expect(chat.state.items).toEqual(['1', '2']);
  });

  it('ignores an envelope it has already applied', async () => {
    const { hub, chat } = await connectedWithChat();
    const envelope = hub.serverAction(CHAT, add('x'));
    await waitFor(() => chat.confirmed.items.length === 1, 'applied');
    hub.current.socket.serverSend({ jsonrpc: '2.0', method: 'action', params: envelope });
    await tick();
    expect(chat.confirmed.items).toEqual(['x']);
  });

  it('drops an un-echoed pending action once a later own action on the channel is echoed', () => {
    const r = new Reconciler(listReducer, { items: [] }, 0);
    r.addPending({ clientSeq: 1, action: add('lost') });
    r.addPending({ clientSeq: 2, action: add('kept') });
    const outcome = r.applyEnvelope({ channel: CHAT, action: add('kept'), serverSeq: 5, origin: { clientId: 'me', clientSeq: 2 } }, 'me');
    expect(outcome).toMatchObject({ kind: 'confirmed', pending: { clientSeq: 2 }, skipped: [{ clientSeq: 1 }] });
    expect(r.optimistic.items).toEqual(['kept']);
  });

  it('routes an envelope that overtakes its subscribe response through the new view', async () => {
    const { hub, client } = setup();
    await client.connect();
    hub.handlers.set('subscribe', (_params, conn) => {
      conn.subscriptions.add(CHAT);
      const snapshot = { resource: CHAT, state: hub.channels.get(CHAT), fromSeq: hub.serverSeq };
      hub.serverAction(CHAT, add('early')); // broadcast before the response goes out
      return { snapshot };
    });
    const chat = await client.subscribe<ListState>(CHAT, { reducer: listReducer });
    await waitFor(() => chat.confirmed.items.length === 1, 'early envelope applied');
    expect(chat.confirmed.items).toEqual(['early']);
  });
});

describe('AhpClient with the shared chat reducer', () => {
  it('picks chatReducer for chat channels: turnStarted is optimistic, then confirmed by its echo', async () => {
    const { hub, client } = setup();
    const chatUri = 'ahp-chat:/real';
    hub.chats.set(chatUri, initialChatState(chatUri, 'Real', '2026-01-01T00:00:00Z'));
    await client.connect();
    const chat = await client.subscribe(chatUri); // typed ChannelView<ChatState> from the URI
    hub.autoProcess = false;

    const turnStarted: WireAction = {
      type: 'chat/turnStarted',
      turnId: 't1',
      startedAt: '2026-01-01T00:00:01Z',
      message: { text: 'hello', origin: { kind: 'user' } },
    };
    const result = chat.dispatch(turnStarted);
    expect(chat.state.activeTurn?.id).toBe('t1');
    expect(chat.confirmed.activeTurn).toBeUndefined();

    await waitFor(() => hub.held.length === 1, 'dispatch at the server');
    hub.processHeld();
    await expect(result).resolves.toMatchObject({ accepted: true });
    expect(chat.confirmed.activeTurn?.id).toBe('t1');
    expect(chat.confirmed).toEqual(hub.chats.get(chatUri));
  });
});

describe('AhpClient reconnect', () => {
  it('replays missed envelopes through listeners, drops missing channels, resends pending with the original clientSeq', async () => {
    const fx = await connectedWithChat();
    const { hub, client, chat, changes } = fx;
    const other = await client.subscribe<ListState>(OTHER, { reducer: listReducer });
    const goneReasons: string[] = [];
    other.onGone((reason) => goneReasons.push(reason));

    await chat.dispatch(add('before'));
    expect(client.lastSeenServerSeq).toBe(1);

    hub.autoProcess = false;
    const echoLost = chat.dispatch(add('processed-but-echo-lost')); // clientSeq 2
    const neverArrived = chat.dispatch(add('lost-in-transit')); // clientSeq 3
    await waitFor(() => hub.held.length === 2, 'both at the server');

    hub.current.socket.serverDrop();
    await waitFor(() => client.connectionState === 'reconnecting', 'reconnecting');
    // The server applied #2 but the connection was gone by then; #3 never reached it.
    hub.held.pop();
    hub.processHeld();
    hub.serverAction(CHAT, add('while-away')); // seq 3
    hub.channels.delete(OTHER);
    const queuedWhileAway = chat.dispatch(add('queued-while-away')); // clientSeq 4, not sent yet
    expect(chat.state.items).toEqual(['before', 'processed-but-echo-lost', 'lost-in-transit', 'queued-while-away']);

    hub.autoProcess = true;
    const changesBefore = changes.length;
    fx.scheduler.run(isBackoff);
    await waitFor(() => client.connectionState === 'open', 'reopened');

    const initializes = hub.requests('initialize');
    expect(initializes).toHaveLength(2);
    expect(initializes[1]?.params.clientId).toBe('client-A');
    expect(hub.requests('reconnect')[0]?.params).toEqual({
      channel: ROOT_URI,
      clientId: 'client-A',
      lastSeenServerSeq: 1,
      subscriptions: [CHAT, OTHER],
    });

    await expect(echoLost).resolves.toMatchObject({ accepted: true, envelope: { serverSeq: 2 } });
    await expect(neverArrived).resolves.toMatchObject({ accepted: true });
    await expect(queuedWhileAway).resolves.toMatchObject({ accepted: true });

    // Replayed envelopes reached listeners, flagged as replayed.
    const replayed = changes.slice(changesBefore).filter((c) => c.type === 'envelope' && c.replayed);
    expect(replayed.map((c) => c.type === 'envelope' && c.envelope.serverSeq)).toEqual([2, 3]);

    // Resent with their original clientSeqs, in order, after the reconnect result.
    const resent = hub.received.slice(hub.received.findIndex((m) => m.method === 'reconnect')).filter((m) => m.method === 'dispatchAction');
    expect(resent.map((m) => m.params.clientSeq)).toEqual([3, 4]);

    expect(chat.confirmed.items).toEqual(['before', 'processed-but-echo-lost', 'while-away', 'lost-in-transit', 'queued-while-away']);
    expect(chat.state).toBe(chat.confirmed);
    expect(hub.channels.get(CHAT)?.items).toEqual(chat.confirmed.items);

    expect(other.status).toBe('gone');
    expect(goneReasons).toHaveLength(1);
    expect(client.view(OTHER)).toBeUndefined();
    expect(fx.states).toEqual(['connecting', 'open', 'reconnecting', 'open']);
  });

  it('never applies a replayed envelope twice', async () => {
    const fx = await connectedWithChat();
    fx.hub.serverAction(CHAT, add('x'));
    await waitFor(() => fx.chat.confirmed.items.length === 1, 'applied');
    // A sloppy server that replays everything from the beginning.
    fx.hub.handlers.set('reconnect', (_params, conn) => {
      conn.subscriptions.add(CHAT);
      return { type: 'replay', actions: fx.hub.history, missing: [] };
    });
    await dropAndReconnect(fx);
    expect(fx.chat.confirmed.items).toEqual(['x']);
  });

  it('resets confirmed state from a snapshot reconnect and keeps pending actions', async () => {
    const fx = await connectedWithChat();
    const { hub, chat, changes } = fx;
    await chat.dispatch(add('a'));
    hub.reconnectMode = 'snapshot';

    let pending: Promise<unknown> = Promise.resolve();
    await dropAndReconnect(fx, () => {
      hub.serverAction(CHAT, { type: 'test/clear' });
      hub.serverAction(CHAT, add('fresh'));
      pending = chat.dispatch(add('mine'));
    });

    await expect(pending).resolves.toMatchObject({ accepted: true });
    expect(changes.some((c) => c.type === 'reset')).toBe(true);
    expect(chat.confirmed.items).toEqual(['fresh', 'mine']);
    expect(fx.client.lastSeenServerSeq).toBe(hub.serverSeq);
  });

  it('falls back to re-subscribing when the server refuses reconnect', async () => {
    const fx = await connectedWithChat();
    fx.hub.handlers.set('reconnect', () => {
      throw new RpcFailure(-32601, 'unknown method reconnect');
    });
    await dropAndReconnect(fx, () => fx.hub.serverAction(CHAT, add('missed')));
    expect(fx.chat.confirmed.items).toEqual(['missed']);
    expect(fx.chat.status).toBe('active');
  });

  it('backs off exponentially with a cap, and starts over after a success', async () => {
    const fx = setup();
    await fx.client.connect();
    fx.hub.acceptConnections = false;
    fx.hub.current.socket.serverDrop();
    await waitFor(() => fx.client.connectionState === 'reconnecting', 'reconnecting');

    // Each run makes one failing attempt; the failure schedules the next delay.
    const delays: number[] = [];
    for (let attempt = 0; attempt < 6; attempt++) {
      await waitFor(() => fx.scheduler.delays().some(isBackoff), `attempt ${attempt} scheduled`);
      delays.push(...fx.scheduler.delays().filter(isBackoff));
      fx.scheduler.run(isBackoff);
    }
    await waitFor(() => fx.scheduler.delays().some(isBackoff), 'attempt 6 scheduled');
    expect(delays).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(fx.scheduler.delays().filter(isBackoff)).toEqual([1000]);
    expect(fx.hub.connections).toHaveLength(7); // the first connection + 6 failed attempts
    expect(fx.client.connectionState).toBe('reconnecting');

    fx.hub.acceptConnections = true;
    fx.scheduler.run(isBackoff);
    await waitFor(() => fx.client.connectionState === 'open', 'open again');

    fx.hub.current.socket.serverDrop();
    await waitFor(() => fx.scheduler.delays().some(isBackoff), 'fresh backoff');
    expect(fx.scheduler.delays().filter(isBackoff)).toEqual([100]);
  });

  it('reconnects at once, without back-off, when the hub closes with the drain code (4012); any other close backs off', async () => {
    const fx = setup();
    await fx.client.connect();
    fx.hub.current.socket.serverDrop(RECONNECT_NOW_CLOSE_CODE);
    await waitFor(() => fx.scheduler.delays().some(isBackoff), 'reconnect scheduled');
    expect(fx.scheduler.delays().filter(isBackoff)).toEqual([0]);
    fx.scheduler.run(isBackoff);
    await waitFor(() => fx.client.connectionState === 'open', 'open again');
    expect(fx.hub.connections).toHaveLength(2);

    // A drained node's successor refusing too: the next attempt backs off as usual.
    fx.hub.acceptConnections = false;
    fx.hub.current.socket.serverDrop(RECONNECT_NOW_CLOSE_CODE);
    await waitFor(() => fx.scheduler.delays().some(isBackoff), 'immediate attempt scheduled');
    expect(fx.scheduler.delays().filter(isBackoff)).toEqual([0]);
    fx.scheduler.run(isBackoff);
    await waitFor(() => fx.scheduler.delays().some(isBackoff), 'backed-off attempt scheduled');
    expect(fx.scheduler.delays().filter(isBackoff)).toEqual([200]);
    fx.hub.acceptConnections = true;
    fx.scheduler.run(isBackoff);
    await waitFor(() => fx.client.connectionState === 'open', 'open after the back-off');

    fx.hub.current.socket.serverDrop(1001);
    await waitFor(() => fx.scheduler.delays().some(isBackoff), 'going-away reconnect scheduled');
    expect(fx.scheduler.delays().filter(isBackoff)).toEqual([100]);
  });

  it('does not reconnect after close(); pending dispatches reject as closed for good', async () => {
    const { hub, client, chat, scheduler } = await connectedWithChat();
    hub.autoProcess = false;
    const pending = chat.dispatch(add('a'));
    client.close();
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AhpConnectionError);
    expect(error).toMatchObject({ permanent: true, kind: 'client_closed' });
    await tick();
    expect(client.connectionState).toBe('closed');
    expect(scheduler.delays().filter(isBackoff)).toEqual([]);
    expect(hub.connections).toHaveLength(1);
    await expect(chat.dispatch(add('b'))).rejects.toBeInstanceOf(AhpConnectionError);
  });

  it('closes for good when reconnect is disabled', async () => {
    const { hub, client } = setup({ reconnect: false });
    await client.connect();
    hub.current.socket.serverDrop();
    await waitFor(() => client.connectionState === 'closed', 'closed');
    await expect(client.ping()).rejects.toMatchObject({ permanent: true });
  });

  it('queues requests made while reconnecting and sends them after recovery', async () => {
    const fx = await connectedWithChat();
    let ping: Promise<void> = Promise.resolve();
    await dropAndReconnect(fx, () => {
      ping = fx.client.ping();
    });
    await expect(ping).resolves.toBeUndefined();
    const methods = fx.hub.received.map((m) => m.method);
    expect(methods.lastIndexOf('ping')).toBeGreaterThan(methods.lastIndexOf('reconnect'));
  });
});

describe('backoffDelay', () => {
  it('grows exponentially, is capped, and keeps at least half of the ceiling under jitter', () => {
    const options = { initialDelayMs: 100, maxDelayMs: 1000 };
    expect([0, 1, 2, 3, 4, 10, 5000].map((a) => backoffDelay(a, options, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
    expect([0, 1, 2, 3, 4].map((a) => backoffDelay(a, options, () => 0))).toEqual([50, 100, 200, 400, 500]);
  });
});
