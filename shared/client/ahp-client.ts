/**
 * AHP client SDK: one WebSocket JSON-RPC connection to the hub, usable from Node and browsers.
 *
 *   const client = new AhpClient({ url, createSocket: (u) => new WebSocket(u) });
 *   await client.connect();
 *   const { session, defaultChat } = await client.createSession({ title: 'demo' });
 *   const chat = await client.subscribe(defaultChat);
 *   chat.onChange((view) => render(view.state));
 *   const result = await chat.dispatch({ type: 'chat/turnStarted', ... });
 *
 * Protocol references are to the AHP subset in the README (and upstream's §1.x). Highlights:
 * - Requests are correlated by numeric id, time out, and surface JSON-RPC errors as AhpRequestError.
 * - Each subscribed channel is a ChannelView doing write-ahead reconciliation (§1.6).
 * - When the socket drops (not after close()), the client reconnects with backoff, sends
 *   `initialize` with the same clientId, then `reconnect` (§1.7), applies the replay or
 *   snapshots through the same path as live traffic, and resends still-pending actions with
 *   their original clientSeq.
 *
 * Extensions (x-input/*, x-collab/*, …) build on the public `request`, `notify` and
 * `onNotification`; nothing here needs to change for a new method.
 */
import type { z } from 'zod';
import {
  JSONRPC,
  Limits,
  Method,
  ServerNotification,
  actionEnvelopeSchema,
  createChatResultSchema,
  createSessionResultSchema,
  initializeResultSchema,
  jsonRpcErrorSchema,
  listSessionsResultSchema,
  reconnectResultSchema,
  subscribeResultSchema,
  type ActionEnvelope,
  type InitializeResult,
  type WireAction,
} from '../protocol/messages.js';
import { ErrorCode } from '../protocol/errors.js';
import type { SessionSummary } from '../protocol/state.js';
import { ROOT_URI, channelKind, sessionUri } from '../protocol/uris.js';
import { SUPPORTED_VERSIONS } from '../protocol/version.js';
import { DEFAULT_BACKOFF, defaultScheduler, reconnectDelay, type BackoffOptions, type Scheduler } from './backoff.js';
import { ChannelViewImpl, erase, type ChannelView, type ChannelViewHost, type DispatchResult } from './channel-view.js';
import { defaultReducers, type ChatState, type ReducerRegistry, type RootState, type SessionState } from './default-reducers.js';
import { AhpAuthError, AhpConnectionError, AhpProtocolError, AhpRequestError, AhpTimeoutError } from './errors.js';
import { randomUuid } from './random-id.js';
import { SessionInputs } from './session-inputs.js';
import type { WireReducer } from './reconciler.js';
import { SocketReadyState, type CreateSocket, type WebSocketLike } from './websocket-like.js';

export { AhpAuthError, AhpConnectionError, AhpProtocolError, AhpRequestError, AhpTimeoutError } from './errors.js';
export type { ChannelChange, ChannelChangeListener, ChannelView, ChannelViewStatus, DispatchResult } from './channel-view.js';
export type { PendingAction, WireReducer } from './reconciler.js';
export type { ChatState, ReducerRegistry, RootState, SessionState } from './default-reducers.js';
export type { BackoffOptions, Scheduler } from './backoff.js';
export type { CreateSocket, WebSocketLike } from './websocket-like.js';

// ─── Options and public types ────────────────────────────────────────────────

export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface ReconnectOptions extends BackoffOptions {
  /** Give up (client closes for good) after this many consecutive failed attempts. Default: never. */
  readonly maxAttempts?: number;
}

export interface AhpClientLogger {
  warn(message: string, detail?: unknown): void;
}

export interface AhpClientOptions {
  /** e.g. `ws://localhost:8080/ahp`. */
  readonly url: string;
  /** Builds a socket; called for the first connection and for every reconnect attempt. */
  readonly createSocket: CreateSocket;
  /** Opaque id reused across reconnects so the server can recognise our echoes. Default: random UUID. */
  readonly clientId?: string;
  /** Offered to `initialize`, most preferred first. Default: SUPPORTED_VERSIONS. */
  readonly protocolVersions?: readonly string[];
  readonly clientInfo?: { readonly name: string; readonly version?: string };
  readonly locale?: string;
  /**
   * Bearer token for the endpoint, appended to the URL as `?<tokenQueryParam>=…` because browsers
   * cannot set headers on a WebSocket upgrade. A function is called before every connection
   * attempt, so a refreshed token is used on reconnect.
   */
  readonly token?: string | (() => string | Promise<string>);
  /** Query parameter carrying `token`. Default `token`. */
  readonly tokenQueryParam?: string;
  /** Backoff for automatic reconnects, or `false` to close for good when the socket drops. */
  readonly reconnect?: Partial<ReconnectOptions> | false;
  /** Per-request deadline (also bounds opening the socket). Default 30 s. */
  readonly requestTimeoutMs?: number;
  /** Most own actions awaiting their echo, across channels. Default 1000. */
  readonly maxPendingActions?: number;
  /** Reducers per channel kind; defaults are the shared/state reducers. */
  readonly reducers?: Partial<ReducerRegistry>;
  /** Timer seam (tests inject a fake one so nothing waits on real time). */
  readonly scheduler?: Scheduler;
  /** Jitter source in [0, 1). Default Math.random. */
  readonly random?: () => number;
  /** Where protocol anomalies and listener errors go. Default: dropped (library code never uses console). */
  readonly logger?: AhpClientLogger;
  /**
   * Asks why the first socket closed before it opened. A refused upgrade reaches a browser as a
   * bare close (code 1006, no HTTP status), so `connect()` sends one plain HTTP GET to the same
   * URL (ws→http, token in the query): this hub answers 401 there exactly when it would refuse the
   * upgrade for the token, and `connect()` then rejects with `AhpAuthError`; a probe that cannot
   * reach the host at all makes it "cannot reach the hub at …". Default: the global `fetch`;
   * `false` turns the probe off.
   */
  readonly refusalProbe?: RefusalProbe | false;
}

/** One plain HTTP GET of `url`, resolving with the status (see `AhpClientOptions.refusalProbe`). */
export type RefusalProbe = (url: string) => Promise<{ readonly status: number }>;

/** The global `fetch` as a probe, where there is one (browsers, Node 18+). */
function fetchProbe(): RefusalProbe | undefined {
  const fetchFn = (globalThis as { fetch?: (url: string, init: Record<string, unknown>) => Promise<{ status: number; text(): Promise<string> }> }).fetch;
  if (typeof fetchFn !== 'function') return undefined;
  return async (url) => {
    const res = await fetchFn(url, { method: 'GET', cache: 'no-store', credentials: 'omit' });
    await res.text().catch(() => '');
    return { status: res.status };
  };
}

/** ws://host/ahp?token=… → http://host/ahp?token=… (wss → https); undefined for other schemes. */
function httpUrlOf(socketUrl: string): string | undefined {
  const m = /^ws(s?):\/\/(.*)$/i.exec(socketUrl);
  return m ? `http${m[1]!.toLowerCase()}://${m[2]!}` : undefined;
}

/** The scheme and host of a socket URL, for messages (never its query, which may hold the token). */
function hostOf(socketUrl: string): string {
  return /^[a-z]+:\/\/[^/?#]*/i.exec(socketUrl)?.[0] ?? socketUrl.split('?')[0]!;
}

/** Every AHP command carries `params.channel` (§1.1); connection-level ones use ROOT_URI. */
export interface RequestParams {
  readonly channel: string;
  readonly _meta?: Record<string, unknown>;
  readonly [key: string]: unknown;
}

/** Anything with zod's `parse` shape: validates a result and gives it a type. */
export interface ResultSchema<T> {
  parse(input: unknown): T;
}

export interface RequestOptions {
  /** Overrides the client's requestTimeoutMs for this call. */
  readonly timeoutMs?: number;
}

export interface SubscribeOptions<S> {
  /** Chat channels: advisory tail size (§1.4). */
  readonly view?: { readonly turns?: number };
  readonly delivery?: { readonly maxLatencyMs?: number };
  /** Overrides the reducer picked by channel kind (needed for channels of other kinds). */
  readonly reducer?: WireReducer<S>;
}

export interface CreateSessionOptions {
  /** Client-chosen `ahp-session:/<uuid>`; generated when absent. */
  readonly session?: string;
  readonly provider?: string;
  readonly title?: string;
}

export interface CreateSessionResult {
  readonly session: string;
  readonly defaultChat: string;
}

export interface ListSessionsOptions {
  readonly limit?: number;
  /** `nextCursor` of the previous page. */
  readonly cursor?: string;
}

export interface ListSessionsResult {
  readonly items: SessionSummary[];
  /** Present when more sessions follow; pass it back as `cursor`. */
  readonly nextCursor?: string;
}

export type NotificationListener = (params: unknown, method: string) => void;
export type ConnectionStateListener = (state: ConnectionState, previous: ConnectionState) => void;

// Results are validated with the shared wire schemas (messages.ts). A rejection echo carries the
// hub's current head, which is 0 on a brand-new log; the envelope schema allows it.
const inboundEnvelopeSchema = actionEnvelopeSchema;
type ParsedReconnectResult = z.infer<typeof reconnectResultSchema>;

// ─── Internals ───────────────────────────────────────────────────────────────

interface OutstandingRequest {
  readonly method: string;
  readonly resolve: (result: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly timer: unknown;
  /** False while queued behind the (re)connect handshake. Sent requests die with their socket. */
  sent: boolean;
}

interface DispatchWaiter {
  readonly channel: string;
  readonly resolve: (result: DispatchResult) => void;
  readonly reject: (error: Error) => void;
}

interface PendingSubscribe {
  readonly promise: Promise<ChannelViewImpl<unknown>>;
  /** Envelopes for the channel that arrive before the snapshot does. */
  readonly buffer: ActionEnvelope[];
  cancelled: boolean;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Bounds memory for optimistic work a disconnected client can pile up (brief: "e.g. 1000"). */
const DEFAULT_MAX_PENDING_ACTIONS = 1000;
const NORMAL_CLOSURE = 1000;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Errors after which retrying the same handshake cannot succeed. */
function isFatalHandshakeError(error: unknown): boolean {
  return (error instanceof AhpRequestError && error.code === ErrorCode.UnsupportedProtocolVersion) || error instanceof AhpProtocolError;
}

/** A subscribe result's snapshot: `meta` is the snapshot's own `_meta` (outside `state`). */
interface WireSnapshot {
  readonly state: unknown;
  readonly fromSeq: number;
  readonly meta: Readonly<Record<string, unknown>> | undefined;
}

// ─── Client ──────────────────────────────────────────────────────────────────

export class AhpClient {
  readonly clientId: string;

  readonly #options: AhpClientOptions;
  readonly #scheduler: Scheduler;
  readonly #random: () => number;
  readonly #logger: AhpClientLogger;
  readonly #reducers: ReducerRegistry;
  readonly #reconnect: ReconnectOptions | undefined;
  readonly #requestTimeoutMs: number;
  readonly #maxPending: number;
  readonly #protocolVersions: readonly string[];

  #state: ConnectionState = 'closed';
  /** Set by close() or a fatal error: nothing reopens the client afterwards. */
  #closedError: AhpConnectionError | undefined;
  #connectPromise: Promise<InitializeResult> | undefined;
  #initializeResult: InitializeResult | undefined;

  #socket: WebSocketLike | undefined;
  /** Bumped whenever a socket is abandoned, so late events from it are ignored. */
  #generation = 0;
  /** Handshake (initialize + recovery) finished on the current socket: ordinary traffic may flow. */
  #ready = false;
  /** The latest socket's URL and whether it ever opened (what `#explainRefusal` asks about). */
  #attempt: { readonly url: string; opened: boolean } | undefined;
  #openWaiter: { resolve: () => void; reject: (error: Error) => void; timer: unknown } | undefined;
  #reconnectAttempt = 0;
  #reconnectTimer: unknown;

  #nextRequestId = 1;
  readonly #requests = new Map<number, OutstandingRequest>();
  /** Frames written while not ready, flushed in order after the handshake. */
  #outbox: Array<{ readonly frame: string; readonly requestId?: number }> = [];

  #nextClientSeq = 1;
  #lastSeenServerSeq = 0;
  readonly #views = new Map<string, ChannelViewImpl<unknown>>();
  readonly #subscribing = new Map<string, PendingSubscribe>();
  readonly #dispatchWaiters = new Map<number, DispatchWaiter>();
  /** Non-undefined while applying a reconnect result: live envelopes wait here (see #recover). */
  #heldEnvelopes: ActionEnvelope[] | undefined;

  readonly #notificationListeners = new Map<string, Set<NotificationListener>>();
  readonly #stateListeners = new Set<ConnectionStateListener>();

  readonly #viewHost: ChannelViewHost = {
    dispatch: (view, action) => this.#dispatch(view, action),
    unsubscribe: (channel) => this.unsubscribe(channel),
    reportError: (message, error) => this.#logger.warn(message, error),
  };

  constructor(options: AhpClientOptions) {
    this.#options = options;
    this.clientId = options.clientId ?? randomUuid();
    this.#scheduler = options.scheduler ?? defaultScheduler;
    this.#random = options.random ?? Math.random;
    this.#logger = options.logger ?? { warn: () => {} };
    this.#reducers = { ...defaultReducers, ...options.reducers };
    this.#reconnect = options.reconnect === false ? undefined : { ...DEFAULT_BACKOFF, ...options.reconnect };
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#maxPending = options.maxPendingActions ?? DEFAULT_MAX_PENDING_ACTIONS;
    this.#protocolVersions = options.protocolVersions ?? SUPPORTED_VERSIONS;
  }

  // ─── Introspection ───────────────────────────────────────────────────────

  /** 'closed' before the first connect(), after close(), and after a fatal error. */
  get connectionState(): ConnectionState {
    return this.#state;
  }

  /** Result of the latest successful `initialize` (refreshed on every reconnect). */
  get initializeResult(): InitializeResult | undefined {
    return this.#initializeResult;
  }

  /** Highest serverSeq known to be reflected locally; sent in `reconnect`. */
  get lastSeenServerSeq(): number {
    return this.#lastSeenServerSeq;
  }

  /** Own actions awaiting their echo, across all channels. */
  get pendingActionCount(): number {
    return this.#dispatchWaiters.size;
  }

  /** The live view of a subscribed channel, if any. */
  view(channel: string): ChannelView<unknown> | undefined {
    return this.#views.get(channel);
  }

  onConnectionState(listener: ConnectionStateListener): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /**
   * Listens to a server notification by method: `root/sessionAdded`, `root/sessionRemoved`,
   * `root/sessionSummaryChanged`, any `x-…` extension method, etc. Params arrive unvalidated —
   * validate with the extension's schema. Notifications are ephemeral (§1.4): they are not
   * replayed after a reconnect, so re-list what you cache from them when the state returns to
   * 'open'. `action` envelopes are not delivered here; use channel views.
   */
  onNotification(method: string, listener: NotificationListener): () => void {
    let set = this.#notificationListeners.get(method);
    if (!set) {
      set = new Set();
      this.#notificationListeners.set(method, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#notificationListeners.get(method) === set) this.#notificationListeners.delete(method);
    };
  }

  // ─── Lifecycle ───────────────────────────────────────────────────────────

  /**
   * Opens the socket and performs `initialize`. Idempotent while connecting or connected.
   * If the first attempt fails the promise rejects and the client returns to 'closed' (call
   * connect() again to retry); automatic reconnects only start once a connection was established.
   */
  connect(): Promise<InitializeResult> {
    if (this.#closedError) return Promise.reject(this.#closedError);
    if (this.#connectPromise) return this.#connectPromise;
    this.#setState('connecting');
    const attempt = this.#establish('connect').catch(async (error: unknown) => {
      const err = await this.#explainRefusal(toError(error));
      this.#abandonSocket(err);
      this.#connectPromise = undefined;
      if (!this.#closedError) {
        // Nothing will ever send the queued requests: fail them now rather than at their timeout.
        this.#failAllRequests(new AhpConnectionError(`connect failed: ${err.message}`, false, { cause: err }));
        this.#setState('closed');
      }
      throw err;
    });
    this.#connectPromise = attempt;
    return attempt;
  }

  /**
   * Closes for good: cancels reconnects, rejects outstanding requests and pending dispatches with
   * a permanent AhpConnectionError, ends every view. The client cannot be reopened.
   */
  close(): void {
    this.#shutdown(new AhpConnectionError('client closed', true));
  }

  // ─── Generic JSON-RPC (the extension point) ─────────────────────────────

  /**
   * Sends a JSON-RPC request and resolves with its `result`. Rejects with AhpRequestError
   * (server error: `code`, `message`, `data`), AhpTimeoutError, or AhpConnectionError (socket
   * dropped after sending — outcome unknown — or client closed). Called while reconnecting, the
   * request waits for the handshake to finish (its timeout keeps running). Pass `schema`
   * (e.g. a zod schema) to validate and type the result; a mismatch rejects with AhpProtocolError.
   */
  request(method: string, params: RequestParams, options?: RequestOptions): Promise<unknown>;
  request<T>(method: string, params: RequestParams, options: RequestOptions & { readonly schema: ResultSchema<T> }): Promise<T>;
  async request<T>(method: string, params: RequestParams, options?: RequestOptions & { readonly schema?: ResultSchema<T> }): Promise<unknown> {
    const result = await this.#request(method, params, { handshake: false, timeoutMs: options?.timeoutMs });
    const schema = options?.schema;
    if (!schema) return result;
    try {
      return schema.parse(result);
    } catch (error) {
      throw new AhpProtocolError(`${method}: unexpected result shape`, { cause: error });
    }
  }

  /**
   * Sends a JSON-RPC notification (no reply). While reconnecting it is queued and sent after the
   * handshake. Throws AhpConnectionError if the client is closed or was never connected.
   */
  notify(method: string, params: RequestParams): void {
    if (this.#closedError) throw this.#closedError;
    if (this.#state === 'closed') throw new AhpConnectionError('not connected: call connect() first', false);
    const frame = JSON.stringify({ jsonrpc: JSONRPC, method, params });
    if (this.#ready) this.#sendFrame(frame);
    else this.#outbox.push({ frame });
  }

  // ─── Typed helpers ───────────────────────────────────────────────────────

  /** Keep-alive round trip (§1.1). */
  async ping(): Promise<void> {
    await this.request(Method.Ping, { channel: ROOT_URI });
  }

  /** One page of the session catalogue (validated against the SessionSummary contract). */
  async listSessions(options: ListSessionsOptions = {}): Promise<ListSessionsResult> {
    const params: RequestParams = {
      channel: ROOT_URI,
      ...(options.limit !== undefined && { limit: options.limit }),
      ...(options.cursor !== undefined && { cursor: options.cursor }),
    };
    const result = await this.request(Method.ListSessions, params, { schema: listSessionsResultSchema });
    return result.nextCursor === undefined ? { items: result.items } : { items: result.items, nextCursor: result.nextCursor };
  }

  /**
   * The steering-input methods of one session (`inputCapabilities`, `getInputTarget`,
   * `submitInput`, `getInputStatus`) with their retry discipline. For the session's state,
   * `subscribe` to the session or its chats.
   */
  sessionInputs(uri: string): SessionInputs {
    return new SessionInputs(this, uri);
  }

  /** @deprecated The name promised a session; use `sessionInputs(uri)`, which returns the same object. */
  session(uri: string): SessionInputs {
    return this.sessionInputs(uri);
  }

  /** Creates a session under a client-chosen URI (generated when absent) with its default chat. */
  async createSession(options: CreateSessionOptions = {}): Promise<CreateSessionResult> {
    const session = options.session ?? sessionUri(randomUuid());
    const params: RequestParams = {
      channel: session,
      ...(options.provider !== undefined && { provider: options.provider }),
      ...(options.title !== undefined && { title: options.title }),
    };
    const result = await this.request(Method.CreateSession, params, { schema: createSessionResultSchema });
    return { session, defaultChat: result.defaultChat };
  }

  async disposeSession(session: string): Promise<void> {
    await this.request(Method.DisposeSession, { channel: session });
  }

  /** Creates a chat in `session`; the server allocates its URI. */
  async createChat(session: string, title?: string): Promise<{ chat: string }> {
    const params: RequestParams = { channel: session, ...(title !== undefined && { title }) };
    const result = await this.request(Method.CreateChat, params, { schema: createChatResultSchema });
    return { chat: result.chat };
  }

  async disposeChat(chat: string): Promise<void> {
    await this.request(Method.DisposeChat, { channel: chat });
  }

  // ─── Subscriptions ───────────────────────────────────────────────────────

  /**
   * Subscribes (or returns the existing view). Resolves once the snapshot arrived. The reducer
   * is picked by channel kind (root/session/chat) unless `options.reducer` is given.
   */
  subscribe(channel: typeof ROOT_URI, options?: SubscribeOptions<RootState>): Promise<ChannelView<RootState>>;
  subscribe(channel: `ahp-session:/${string}`, options?: SubscribeOptions<SessionState>): Promise<ChannelView<SessionState>>;
  subscribe(channel: `ahp-chat:/${string}`, options?: SubscribeOptions<ChatState>): Promise<ChannelView<ChatState>>;
  subscribe<S = unknown>(channel: string, options?: SubscribeOptions<S>): Promise<ChannelView<S>>;
  subscribe<S>(channel: string, options: SubscribeOptions<S> = {}): Promise<ChannelView<unknown>> {
    const existing = this.#views.get(channel);
    if (existing) return Promise.resolve(existing);
    const inFlight = this.#subscribing.get(channel);
    if (inFlight) return inFlight.promise;

    const kind = channelKind(channel);
    const reducer = options.reducer ? eraseReducer(options.reducer) : kind ? this.#reducerFor(kind) : undefined;
    if (!reducer) return Promise.reject(new TypeError(`subscribe: no reducer for channel ${channel}`));

    const subscribeParams: Record<string, unknown> = {
      channel,
      ...(options.view && { view: options.view }),
      ...(options.delivery && { delivery: options.delivery }),
    };
    const buffer: ActionEnvelope[] = [];
    const promise = this.#subscribeOnce(channel, subscribeParams).then((snapshot) => {
      const pending = this.#subscribing.get(channel);
      this.#subscribing.delete(channel);
      if (pending?.cancelled) {
        if (this.#ready) this.#sendFrame(JSON.stringify({ jsonrpc: JSONRPC, method: Method.Unsubscribe, params: { channel } }));
        throw new AhpConnectionError(`unsubscribed from ${channel} before the subscription completed`, false);
      }
      const view = erase(
        new ChannelViewImpl({
          channel,
          kind,
          reducer,
          state: snapshot.state,
          fromSeq: snapshot.fromSeq,
          snapshotMeta: snapshot.meta,
          subscribeParams,
          host: this.#viewHost,
        }),
      );
      this.#views.set(channel, view);
      this.#noteServerSeq(snapshot.fromSeq);
      // Envelopes that overtook the response; the view skips those already in the snapshot.
      for (const envelope of buffer) this.#applyToView(view, envelope, false);
      return view;
    });
    this.#subscribing.set(channel, { promise, buffer, cancelled: false });
    promise.catch(() => {
      if (this.#subscribing.get(channel)?.promise === promise) this.#subscribing.delete(channel);
    });
    return promise;
  }

  /** Stops following a channel; its view ends ('closed'), unconfirmed dispatches resolve accepted:false. */
  unsubscribe(channel: string): void {
    const inFlight = this.#subscribing.get(channel);
    if (inFlight) inFlight.cancelled = true;
    const view = this.#views.get(channel);
    if (!view) return;
    this.#views.delete(channel);
    // While disconnected there is nothing to tell: `reconnect` only lists channels we still hold.
    if (this.#ready) this.#sendFrame(JSON.stringify({ jsonrpc: JSONRPC, method: Method.Unsubscribe, params: { channel } }));
    this.#endView(view, 'closed', 'unsubscribed');
  }

  // ─── Internals: connection ───────────────────────────────────────────────

  async #establish(mode: 'connect' | 'reconnect'): Promise<InitializeResult> {
    const generation = ++this.#generation;
    const url = await this.#socketUrl();
    this.#assertCurrent(generation);
    this.#attempt = { url, opened: false };
    const socket = this.#options.createSocket(url);
    this.#socket = socket;
    this.#attach(socket, generation);
    await this.#waitForOpen(socket);
    this.#assertCurrent(generation);

    const raw = await this.#request(
      Method.Initialize,
      {
        channel: ROOT_URI,
        protocolVersions: [...this.#protocolVersions],
        clientId: this.clientId,
        ...(this.#options.clientInfo && { clientInfo: this.#options.clientInfo }),
        ...(this.#options.locale !== undefined && { locale: this.#options.locale }),
      },
      { handshake: true },
    );
    this.#assertCurrent(generation);
    const parsed = initializeResultSchema.safeParse(raw);
    if (!parsed.success) throw new AhpProtocolError('initialize: unexpected result shape', { cause: parsed.error });
    if (!this.#protocolVersions.includes(parsed.data.protocolVersion)) {
      throw new AhpProtocolError(`initialize: server chose ${parsed.data.protocolVersion}, which was not offered`);
    }
    const init: InitializeResult = parsed.data;
    this.#initializeResult = init;

    if (mode === 'reconnect') await this.#recover(generation, init.serverSeq);
    else this.#noteServerSeq(init.serverSeq); // nothing subscribed yet, so nothing older can be missed
    this.#assertCurrent(generation);

    this.#ready = true;
    this.#reconnectAttempt = 0;
    this.#resendPending();
    this.#flushOutbox();
    this.#setState('open');
    return init;
  }

  async #socketUrl(): Promise<string> {
    const { url, token } = this.#options;
    if (token === undefined) return url;
    const value = typeof token === 'function' ? await token() : token;
    const param = this.#options.tokenQueryParam ?? 'token';
    return `${url}${url.includes('?') ? '&' : '?'}${encodeURIComponent(param)}=${encodeURIComponent(value)}`;
  }

  #attach(socket: WebSocketLike, generation: number): void {
    socket.onopen = () => {
      if (generation !== this.#generation) return;
      if (this.#attempt) this.#attempt.opened = true;
      const waiter = this.#openWaiter;
      this.#openWaiter = undefined;
      if (waiter) {
        this.#scheduler.clearTimeout(waiter.timer);
        waiter.resolve();
      }
    };
    socket.onmessage = (event) => {
      if (generation === this.#generation) this.#onFrame(event.data);
    };
    socket.onclose = (event) => {
      if (generation !== this.#generation) return;
      const reason = typeof event.reason === 'string' && event.reason ? `: ${event.reason}` : '';
      this.#onSocketLost(new AhpConnectionError(`connection lost (code ${event.code ?? 'unknown'}${reason})`, false), event.code);
    };
    // Both browsers and `ws` follow an error with a close event; recovery is driven from there.
    socket.onerror = () => {};
  }

  #waitForOpen(socket: WebSocketLike): Promise<void> {
    if (socket.readyState === SocketReadyState.Open) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = this.#scheduler.setTimeout(() => {
        if (this.#openWaiter?.timer !== timer) return;
        this.#openWaiter = undefined;
        reject(new AhpTimeoutError('open', this.#requestTimeoutMs));
      }, this.#requestTimeoutMs);
      this.#openWaiter = { resolve, reject, timer };
    });
  }

  #assertCurrent(generation: number): void {
    if (this.#closedError) throw this.#closedError;
    if (generation !== this.#generation) throw new AhpConnectionError('connection lost during handshake', false);
  }

  /**
   * Why the first connection failed, in words a person can act on: a socket that closed before
   * opening is asked about once over plain HTTP (see `refusalProbe`). Anything else, or a probe
   * that answers something other than 401, leaves the error as it was.
   */
  async #explainRefusal(error: Error): Promise<Error> {
    const attempt = this.#attempt;
    if (!attempt || attempt.opened || !(error instanceof AhpConnectionError) || this.#closedError) return error;
    const probe = this.#options.refusalProbe === false ? undefined : (this.#options.refusalProbe ?? fetchProbe());
    const probeUrl = httpUrlOf(attempt.url);
    if (!probe || !probeUrl) return error;
    try {
      const { status } = await probe(probeUrl);
      return status === 401 ? new AhpAuthError(status, { cause: error }) : error;
    } catch (cause) {
      return new AhpConnectionError(`cannot reach the hub at ${hostOf(attempt.url)}`, false, { cause });
    }
  }

  /** The current socket closed on its own. */
  #onSocketLost(error: AhpConnectionError, closeCode: number | undefined): void {
    const wasReady = this.#ready;
    this.#abandonSocket(error);
    // If the handshake was still running, its own failure path decides what happens next
    // (connect() rejects, or the reconnect loop schedules another attempt).
    if (wasReady && !this.#closedError) this.#scheduleReconnect(closeCode);
  }

  /** Forgets the current socket: later events from it are ignored and its requests fail. */
  #abandonSocket(error: Error): void {
    const socket = this.#socket;
    this.#socket = undefined;
    this.#generation++;
    this.#ready = false;
    this.#heldEnvelopes = undefined;
    if (socket && socket.readyState !== SocketReadyState.Closed && socket.readyState !== SocketReadyState.Closing) {
      try {
        socket.close(NORMAL_CLOSURE);
      } catch {
        // Already unusable; nothing else to release.
      }
    }
    const waiter = this.#openWaiter;
    this.#openWaiter = undefined;
    if (waiter) {
      this.#scheduler.clearTimeout(waiter.timer);
      waiter.reject(error);
    }
    for (const [id, request] of this.#requests) {
      if (!request.sent) continue;
      this.#requests.delete(id);
      this.#scheduler.clearTimeout(request.timer);
      request.reject(error);
    }
  }

  /** `closeCode`: why the open socket closed (RECONNECT_NOW_CLOSE_CODE skips the back-off). */
  #scheduleReconnect(closeCode?: number): void {
    const options = this.#reconnect;
    if (!options) {
      this.#shutdown(new AhpConnectionError('connection lost and reconnect is disabled', true));
      return;
    }
    if (options.maxAttempts !== undefined && this.#reconnectAttempt >= options.maxAttempts) {
      this.#shutdown(new AhpConnectionError(`gave up after ${this.#reconnectAttempt} reconnect attempts`, true));
      return;
    }
    const delay = reconnectDelay(closeCode, this.#reconnectAttempt, options, this.#random);
    this.#reconnectAttempt++;
    this.#setState('reconnecting');
    this.#reconnectTimer = this.#scheduler.setTimeout(() => {
      this.#reconnectTimer = undefined;
      void this.#attemptReconnect();
    }, delay);
  }

  async #attemptReconnect(): Promise<void> {
    if (this.#closedError) return;
    try {
      await this.#establish('reconnect');
    } catch (error) {
      if (this.#closedError) return;
      if (isFatalHandshakeError(error)) {
        this.#shutdown(new AhpConnectionError(`reconnect failed: ${toError(error).message}`, true, { cause: error }));
        return;
      }
      this.#logger.warn('reconnect attempt failed', error);
      this.#abandonSocket(new AhpConnectionError('reconnect attempt failed', false, { cause: error }));
      this.#scheduleReconnect();
    }
  }

  #shutdown(error: AhpConnectionError): void {
    if (this.#closedError) return;
    this.#closedError = error;
    if (this.#reconnectTimer !== undefined) {
      this.#scheduler.clearTimeout(this.#reconnectTimer);
      this.#reconnectTimer = undefined;
    }
    this.#abandonSocket(error);
    this.#failAllRequests(error);
    for (const view of [...this.#views.values()]) this.#endView(view, 'closed', error.message);
    this.#views.clear();
    for (const pending of this.#subscribing.values()) pending.cancelled = true;
    // Dispatches not tied to a live view anymore (defensive; #endView settles the rest).
    for (const waiter of this.#dispatchWaiters.values()) waiter.reject(error);
    this.#dispatchWaiters.clear();
    this.#setState('closed');
  }

  #failAllRequests(error: Error): void {
    for (const request of this.#requests.values()) {
      this.#scheduler.clearTimeout(request.timer);
      request.reject(error);
    }
    this.#requests.clear();
    this.#outbox = [];
  }

  #setState(state: ConnectionState): void {
    const previous = this.#state;
    if (previous === state) return;
    this.#state = state;
    for (const listener of [...this.#stateListeners]) {
      try {
        listener(state, previous);
      } catch (error) {
        this.#logger.warn('connection state listener threw', error);
      }
    }
  }

  // ─── Internals: requests and frames ──────────────────────────────────────

  /**
   * `handshake` requests (initialize, reconnect, re-subscribe) go out on the socket being set up;
   * everything else waits in the outbox until the handshake is done, so that nothing the
   * application sends can overtake recovery.
   */
  #request(method: string, params: Record<string, unknown>, opts: { handshake: boolean; timeoutMs?: number | undefined }): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      if (this.#closedError) {
        reject(this.#closedError);
        return;
      }
      if (!opts.handshake && this.#state === 'closed') {
        reject(new AhpConnectionError('not connected: call connect() first', false));
        return;
      }
      const id = this.#nextRequestId++;
      const timeoutMs = opts.timeoutMs ?? this.#requestTimeoutMs;
      const frame = JSON.stringify({ jsonrpc: JSONRPC, id, method, params });
      const timer = this.#scheduler.setTimeout(() => {
        if (!this.#requests.delete(id)) return;
        reject(new AhpTimeoutError(method, timeoutMs));
      }, timeoutMs);
      const request: OutstandingRequest = { method, resolve, reject, timer, sent: false };
      this.#requests.set(id, request);
      if (opts.handshake || this.#ready) {
        request.sent = true;
        this.#sendFrame(frame);
      } else {
        this.#outbox.push({ frame, requestId: id });
      }
    });
  }

  #flushOutbox(): void {
    const outbox = this.#outbox;
    this.#outbox = [];
    for (const item of outbox) {
      if (item.requestId !== undefined) {
        const request = this.#requests.get(item.requestId);
        if (!request) continue; // timed out while queued
        request.sent = true;
      }
      this.#sendFrame(item.frame);
    }
  }

  #sendFrame(frame: string): void {
    const socket = this.#socket;
    if (!socket) return;
    try {
      socket.send(frame);
    } catch (error) {
      // The socket is going away; its close event drives recovery (and fails sent requests).
      this.#logger.warn('send failed', error);
    }
  }

  #onFrame(data: unknown): void {
    if (typeof data !== 'string') {
      this.#logger.warn('ignoring non-text frame');
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch (error) {
      this.#logger.warn('ignoring frame that is not JSON', error);
      return;
    }
    if (!isRecord(message) || message.jsonrpc !== JSONRPC) {
      this.#logger.warn('ignoring frame that is not JSON-RPC 2.0', message);
      return;
    }
    const { id, method } = message;
    if (typeof method === 'string') {
      if (id === undefined || id === null) this.#onNotification(method, message.params);
      // AHP defines no server → client requests; answer as a well-behaved JSON-RPC peer would.
      else this.#sendFrame(JSON.stringify({ jsonrpc: JSONRPC, id, error: { code: ErrorCode.MethodNotFound, message: `unknown method ${method}` } }));
      return;
    }
    this.#onResponse(message);
  }

  #onResponse(message: Record<string, unknown>): void {
    const id = typeof message.id === 'number' ? message.id : Number(message.id);
    const request = Number.isFinite(id) ? this.#requests.get(id) : undefined;
    if (!request) {
      // id null = the server could not read one of our frames; otherwise a response after timeout.
      this.#logger.warn('response to no outstanding request', message);
      return;
    }
    this.#requests.delete(id);
    this.#scheduler.clearTimeout(request.timer);
    if ('error' in message) {
      const parsed = jsonRpcErrorSchema.safeParse(message.error);
      request.reject(new AhpRequestError(request.method, parsed.success ? parsed.data : { code: ErrorCode.InternalError, message: 'malformed error response', data: message.error }));
    } else {
      request.resolve(message.result);
    }
  }

  #onNotification(method: string, params: unknown): void {
    if (method === ServerNotification.Action) {
      const parsed = inboundEnvelopeSchema.safeParse(params);
      if (!parsed.success) {
        this.#logger.warn('ignoring malformed action envelope', parsed.error);
        return;
      }
      if (this.#heldEnvelopes) this.#heldEnvelopes.push(parsed.data);
      else this.#routeEnvelope(parsed.data, false);
      return;
    }
    const listeners = this.#notificationListeners.get(method);
    if (!listeners) return;
    for (const listener of [...listeners]) {
      try {
        listener(params, method);
      } catch (error) {
        this.#logger.warn(`listener for ${method} threw`, error);
      }
    }
  }

  // ─── Internals: envelopes and dispatch ───────────────────────────────────

  /** The single path for live and replayed envelopes (replayed ones must notify listeners too). */
  #routeEnvelope(envelope: ActionEnvelope, replayed: boolean): void {
    const view = this.#views.get(envelope.channel);
    if (view) {
      this.#applyToView(view, envelope, replayed);
      return;
    }
    // Overtook its subscribe response: keep it until the snapshot arrives.
    this.#subscribing.get(envelope.channel)?.buffer.push(envelope);
    // Otherwise it is for a channel we no longer follow (it crossed our unsubscribe): drop it.
  }

  #applyToView(view: ChannelViewImpl<unknown>, envelope: ActionEnvelope, replayed: boolean): void {
    // A rejection's serverSeq is only the hub's current head, not a log position we have seen.
    if (envelope.rejectionReason === undefined) this.#noteServerSeq(envelope.serverSeq);
    const outcome = view.applyEnvelope(envelope, this.clientId, replayed);
    if (outcome.kind === 'confirmed') {
      for (const skipped of outcome.skipped) {
        this.#settleDispatch(skipped.clientSeq, { accepted: false, reason: 'the server never acknowledged this action' });
      }
      this.#settleDispatch(outcome.pending.clientSeq, { accepted: true, envelope });
    } else if (outcome.kind === 'rejected') {
      this.#settleDispatch(outcome.pending.clientSeq, { accepted: false, reason: envelope.rejectionReason ?? 'rejected', envelope });
    }
  }

  #dispatch(view: ChannelViewImpl<unknown>, action: WireAction): Promise<DispatchResult> {
    if (this.#closedError) return Promise.reject(this.#closedError);
    if (view.status !== 'active' || this.#views.get(view.channel) !== view) {
      return Promise.resolve({ accepted: false, reason: `not subscribed to ${view.channel}` });
    }
    if (this.#dispatchWaiters.size >= this.#maxPending) {
      return Promise.resolve({ accepted: false, reason: 'too many pending actions' });
    }
    const clientSeq = this.#nextClientSeq++;
    const result = new Promise<DispatchResult>((resolve, reject) => {
      this.#dispatchWaiters.set(clientSeq, { channel: view.channel, resolve, reject });
    });
    view.addPending({ clientSeq, action });
    // While not ready the action only waits in pending; #resendPending sends it after recovery.
    if (this.#ready) this.#sendDispatch(view.channel, clientSeq, action);
    return result;
  }

  #sendDispatch(channel: string, clientSeq: number, action: WireAction): void {
    this.#sendFrame(JSON.stringify({ jsonrpc: JSONRPC, method: Method.DispatchAction, params: { channel, clientSeq, action } }));
  }

  /**
   * After recovery: everything still pending was neither echoed nor rejected in the replay, so
   * the server has not applied it. Resend in clientSeq order (across channels, so a server that
   * checks per-client clientSeq order sees them in order) with the original clientSeq.
   */
  #resendPending(): void {
    const all: Array<{ channel: string; clientSeq: number; action: WireAction }> = [];
    for (const view of this.#views.values()) {
      for (const p of view.pendingActions) all.push({ channel: view.channel, clientSeq: p.clientSeq, action: p.action });
    }
    all.sort((a, b) => a.clientSeq - b.clientSeq);
    for (const p of all) this.#sendDispatch(p.channel, p.clientSeq, p.action);
  }

  #settleDispatch(clientSeq: number, result: DispatchResult): void {
    const waiter = this.#dispatchWaiters.get(clientSeq);
    if (!waiter) return;
    this.#dispatchWaiters.delete(clientSeq);
    waiter.resolve(result);
  }

  #endView(view: ChannelViewImpl<unknown>, status: 'gone' | 'closed', reason: string): void {
    const dropped = view.end(status, reason);
    for (const p of dropped) {
      const waiter = this.#dispatchWaiters.get(p.clientSeq);
      if (!waiter) continue;
      this.#dispatchWaiters.delete(p.clientSeq);
      // Closed for good → reject (the documented "connection closed" case); otherwise resolve.
      if (this.#closedError) waiter.reject(this.#closedError);
      else waiter.resolve({ accepted: false, reason: `${view.channel} ${status === 'gone' ? 'is gone' : 'was unsubscribed'} (${reason}); the outcome of this action is unknown` });
    }
  }

  #noteServerSeq(seq: number): void {
    if (seq > this.#lastSeenServerSeq) this.#lastSeenServerSeq = seq;
  }

  // ─── Internals: subscribe and recovery ───────────────────────────────────

  async #subscribeOnce(channel: string, params: Record<string, unknown>): Promise<WireSnapshot> {
    const raw = await this.#request(Method.Subscribe, params, { handshake: false });
    return this.#snapshotFrom(channel, raw);
  }

  #snapshotFrom(channel: string, raw: unknown): WireSnapshot {
    const parsed = subscribeResultSchema.safeParse(raw);
    if (!parsed.success || !parsed.data.snapshot) throw new AhpProtocolError(`subscribe ${channel}: no snapshot in result`);
    const { state, fromSeq, _meta } = parsed.data.snapshot;
    return { state, fromSeq, meta: _meta };
  }

  #reducerFor(kind: 'root' | 'session' | 'chat'): WireReducer<unknown> {
    switch (kind) {
      case 'root':
        return eraseReducer(this.#reducers.root);
      case 'session':
        return eraseReducer(this.#reducers.session);
      case 'chat':
        return eraseReducer(this.#reducers.chat);
    }
  }

  /**
   * §1.7 legacy reconnect. Live envelopes arriving while the result is applied are held back and
   * routed afterwards, so that a live action can never overtake (and, via the per-channel seq
   * guard, suppress) an older replayed one.
   */
  async #recover(generation: number, serverSeqAtInitialize: number): Promise<void> {
    const channels = [...this.#views.keys()];
    if (channels.length > 0) {
      const baseline = this.#lastSeenServerSeq;
      this.#heldEnvelopes = [];
      try {
        for (const batch of chunk(channels, Limits.maxSubscriptionsPerRequest)) {
          await this.#recoverBatch(generation, baseline, batch);
        }
      } catch (error) {
        // Retry from the same watermark; the per-channel guard skips what was already applied.
        this.#lastSeenServerSeq = baseline;
        throw error;
      }
      const held = this.#heldEnvelopes;
      this.#heldEnvelopes = undefined;
      for (const envelope of held) this.#routeEnvelope(envelope, false);
    }
    // Every action on our channels up to the initialize-time head is now reflected (replayed or
    // inside a snapshot), so the next reconnect can start from there.
    this.#noteServerSeq(serverSeqAtInitialize);
  }

  async #recoverBatch(generation: number, lastSeenServerSeq: number, channels: string[]): Promise<void> {
    let raw: unknown;
    try {
      raw = await this.#request(Method.Reconnect, { channel: ROOT_URI, clientId: this.clientId, lastSeenServerSeq, subscriptions: channels }, { handshake: true });
    } catch (error) {
      if (!(error instanceof AhpRequestError)) throw error;
      // The server refused to resume us (e.g. does not implement reconnect): start over cleanly.
      this.#logger.warn('reconnect refused; re-subscribing', error);
      await this.#resubscribe(generation, channels);
      return;
    }
    this.#assertCurrent(generation);
    const parsed = reconnectResultSchema.safeParse(raw);
    if (!parsed.success) {
      this.#logger.warn('reconnect: unexpected result shape; re-subscribing', parsed.error);
      await this.#resubscribe(generation, channels);
      return;
    }
    await this.#applyRecovery(generation, parsed.data, channels);
  }

  async #applyRecovery(generation: number, result: ParsedReconnectResult, channels: string[]): Promise<void> {
    const missing = new Set(result.missing);
    if (result.type === 'replay') {
      for (const envelope of result.actions) this.#routeEnvelope(envelope, true);
    } else {
      const covered = new Set<string>();
      for (const snapshot of result.snapshots) {
        const view = this.#views.get(snapshot.resource);
        if (!view) continue;
        covered.add(snapshot.resource);
        view.resetFromSnapshot(snapshot.state, snapshot.fromSeq, snapshot._meta);
        this.#noteServerSeq(snapshot.fromSeq);
      }
      // A snapshot result should cover every channel; fetch any it left out one by one.
      const uncovered = channels.filter((c) => !covered.has(c) && !missing.has(c) && this.#views.has(c));
      if (uncovered.length > 0) await this.#resubscribe(generation, uncovered);
    }
    for (const channel of missing) {
      const view = this.#views.get(channel);
      if (!view) continue;
      this.#views.delete(channel);
      this.#endView(view, 'gone', 'the server can no longer resume this channel');
    }
  }

  async #resubscribe(generation: number, channels: string[]): Promise<void> {
    for (const channel of channels) {
      const view = this.#views.get(channel);
      if (!view) continue;
      let snapshot: WireSnapshot;
      try {
        snapshot = this.#snapshotFrom(channel, await this.#request(Method.Subscribe, { ...view.subscribeParams }, { handshake: true }));
      } catch (error) {
        if (!(error instanceof AhpRequestError) && !(error instanceof AhpProtocolError)) throw error;
        this.#views.delete(channel);
        this.#endView(view, 'gone', `re-subscribe failed: ${error.message}`);
        continue;
      }
      this.#assertCurrent(generation);
      view.resetFromSnapshot(snapshot.state, snapshot.fromSeq, snapshot.meta);
      this.#noteServerSeq(snapshot.fromSeq);
    }
  }
}

/**
 * Stores a typed reducer behind the `unknown` state type the client keeps internally. Safe for the
 * same reason as `erase` in channel-view.ts: a view only ever feeds its reducer states produced
 * by that reducer or by a snapshot of its own channel.
 */
function eraseReducer<S>(reducer: WireReducer<S>): WireReducer<unknown> {
  return reducer as unknown as WireReducer<unknown>;
}
