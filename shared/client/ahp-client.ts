/**
 * AHP client SDK: one JSON-RPC connection to the hub over a transport it is given, usable from
 * Node and browsers. The transport is a constructor argument (`options.transport`, transport.ts);
 * without one the client opens a WebSocket to `url` (the runtime's, or `createSocket`'s).
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
 * - Traffic goes one way: transport → connection (connection.ts) → the one client state
 *   (client-state.ts: status, views, pending dispatches) → listeners; a dispatch goes from the
 *   state out on the connection whose handshake finished.
 * - When the link drops (not after close()), the client reconnects with backoff, sends
 *   `initialize` with the same clientId, then `reconnect` (§1.7), applies the replay or
 *   snapshots through the same path as live traffic, and resends still-pending actions with
 *   their original clientSeq.
 *
 * Extensions (x-input/*, x-collab/*, …) build on the public `request`, `notify` and
 * `onNotification`; nothing here needs to change for a new method.
 */
import { EPOCH_META_KEY, Method, createChatResultSchema, createSessionResultSchema, initializeResultSchema, listSessionsResultSchema, type InitializeResult } from '../protocol/messages.js';
import { ROOT_URI, channelKind, sessionUri } from '../protocol/uris.js';
import { SUPPORTED_VERSIONS } from '../protocol/version.js';
import { DEFAULT_BACKOFF, defaultScheduler, type Scheduler } from './backoff.js';
import type { ChannelView } from './channel-view.js';
import { ClientState } from './client-state.js';
import type {
  AhpClientOptions,
  ConnectionState,
  ConnectionStateListener,
  CreateSessionOptions,
  CreateSessionResult,
  ListSessionsOptions,
  ListSessionsResult,
  NotificationListener,
  RequestOptions,
  RequestParams,
  ResultSchema,
  RpcRequester,
  SubscribeOptions,
} from './client-types.js';
import { AhpConnection, type LinkLost } from './connection.js';
import { defaultReducers, type ChatState, type ReducerRegistry, type RootState, type SessionState } from './default-reducers.js';
import { AhpConnectionError, AhpProtocolError } from './errors.js';
import { randomUuid } from './random-id.js';
import { ReconnectPolicy, isFatalHandshakeError, toError } from './reconnect-policy.js';
import { recover } from './recovery.js';
import type { WireReducer } from './reconciler.js';
import { SessionInputs } from './session-inputs.js';
import { webSocketTransport } from './transport.js';

export { AhpAuthError, AhpConnectionError, AhpError, AhpProtocolError, AhpRequestError, AhpTimeoutError } from './errors.js';
export type { AhpErrorKind, ClientErrorKind } from './errors.js';
export type { ChannelChange, ChannelChangeListener, ChannelView, ChannelViewStatus, DispatchResult } from './channel-view.js';
export type { PendingAction, WireReducer } from './reconciler.js';
export type { ChatState, ReducerRegistry, RootState, SessionState } from './default-reducers.js';
export type { BackoffOptions, Scheduler } from './backoff.js';
export type { CreateSocket, WebSocketLike } from './websocket-like.js';
export type { ClientTransport, TransportEvents, TransportFactory } from './transport.js';
export { webSocketTransport } from './transport.js';
export { memoryTransport, type MemoryLink, type MemoryLinkHandler } from './memory-transport.js';
export type * from './client-types.js';

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Bounds memory for optimistic work a disconnected client can pile up (brief: "e.g. 1000"). */
const DEFAULT_MAX_PENDING_ACTIONS = 1000;

// ─── Client ──────────────────────────────────────────────────────────────────

/**
 * The client: builds the one client state (client-state.ts) and the connection that feeds it,
 * runs the handshake (initialize, then recovery on a reconnect) and the reconnect timer, and
 * offers typed helpers and subscriptions. Views and listeners read the state; nothing below
 * calls back up into this class.
 */
export class AhpClient implements RpcRequester {
  readonly clientId: string;

  readonly #options: AhpClientOptions;
  readonly #scheduler: Scheduler;
  readonly #reducers: ReducerRegistry;
  readonly #protocolVersions: readonly string[];
  readonly #state: ClientState;
  readonly #connection: AhpConnection;
  readonly #reconnect: ReconnectPolicy;
  #reconnectTimer: unknown;
  #connectPromise: Promise<InitializeResult> | undefined;

  constructor(options: AhpClientOptions) {
    this.#options = options;
    this.clientId = options.clientId ?? randomUuid();
    this.#scheduler = options.scheduler ?? defaultScheduler;
    const logger = options.logger ?? { warn: () => {} };
    this.#reducers = { ...defaultReducers, ...options.reducers };
    this.#protocolVersions = options.protocolVersions ?? SUPPORTED_VERSIONS;
    this.#state = new ClientState({ clientId: this.clientId, maxPending: options.maxPendingActions ?? DEFAULT_MAX_PENDING_ACTIONS, logger });
    this.#connection = new AhpConnection(this.#state, {
      url: options.url ?? '',
      token: options.token,
      tokenQueryParam: options.tokenQueryParam,
      refusalProbe: options.refusalProbe,
      transport: options.transport ?? webSocketTransport('createSocket' in options ? options.createSocket : undefined),
      scheduler: this.#scheduler,
      logger,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    });
    this.#reconnect = new ReconnectPolicy(options.reconnect === false ? undefined : { ...DEFAULT_BACKOFF, ...options.reconnect }, options.random ?? Math.random);
  }

  // ─── Introspection ───────────────────────────────────────────────────────

  /** 'closed' before the first connect(), after close(), and after a fatal error. */
  get connectionState(): ConnectionState {
    return this.#state.status;
  }

  /** The hub history epoch the client's cursor belongs to (`initialize`'s `_meta["hub/epoch"]`), if the hub keeps one. */
  get epoch(): string | undefined {
    return this.#state.epoch;
  }

  /** Result of the latest successful `initialize` (refreshed on every reconnect). */
  get initializeResult(): InitializeResult | undefined {
    return this.#state.initializeResult;
  }

  /** Highest serverSeq known to be reflected locally; sent in `reconnect`. */
  get lastSeenServerSeq(): number {
    return this.#state.lastSeenServerSeq;
  }

  /** Own actions awaiting their echo, across all channels. */
  get pendingActionCount(): number {
    return this.#state.pendingActionCount;
  }

  /** The live view of a subscribed channel, if any. */
  view(channel: string): ChannelView<unknown> | undefined {
    return this.#state.views.get(channel);
  }

  onConnectionState(listener: ConnectionStateListener): () => void {
    return this.#state.onStatus(listener);
  }

  /**
   * Listens to a server notification by method: `root/sessionAdded`, `root/sessionRemoved`,
   * `root/sessionSummaryChanged`, any `x-…` extension method, etc. Params arrive unvalidated —
   * validate with the extension's schema. Notifications are ephemeral (§1.4): they are not
   * replayed after a reconnect, so re-list what you cache from them when the state returns to
   * 'open'. `action` envelopes are not delivered here; use channel views.
   */
  onNotification(method: string, listener: NotificationListener): () => void {
    return this.#state.onNotification(method, listener);
  }

  // ─── Lifecycle ───────────────────────────────────────────────────────────

  /**
   * Opens the socket and performs `initialize`. Idempotent while connecting or connected.
   * If the first attempt fails the promise rejects and the client returns to 'closed' (call
   * connect() again to retry); automatic reconnects only start once a connection was established.
   */
  connect(): Promise<InitializeResult> {
    const closedError = this.#state.closedError;
    if (closedError) return Promise.reject(closedError);
    if (this.#connectPromise) return this.#connectPromise;
    this.#state.setStatus('connecting');
    const attempt = this.#establish('connect').catch(async (error: unknown) => {
      const err = await this.#connection.explainRefusal(toError(error));
      this.#connection.abandon(err);
      this.#connectPromise = undefined;
      if (!this.#state.closedError) {
        // Nothing will ever send the queued requests: fail them now rather than at their timeout.
        this.#connection.failAllRequests(new AhpConnectionError(`connect failed: ${err.message}`, false, { cause: err }));
        this.#state.setStatus('closed');
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
    const result = await this.#connection.request(method, params, { handshake: false, timeoutMs: options?.timeoutMs });
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
    if (this.#state.closedError) throw this.#state.closedError;
    if (this.#state.status === 'closed') throw new AhpConnectionError('not connected: call connect() first', false);
    this.#connection.notify(method, params);
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
    const existing = this.#state.views.get(channel);
    if (existing) return Promise.resolve(existing);
    const inFlight = this.#state.subscribing.get(channel);
    if (inFlight) return inFlight.promise;

    const kind = channelKind(channel);
    const reducer = options.reducer ? eraseReducer(options.reducer) : kind ? this.#reducerFor(kind) : undefined;
    if (!reducer) return Promise.reject(new TypeError(`subscribe: no reducer for channel ${channel}`));

    const subscribeParams: Record<string, unknown> = {
      channel,
      ...(options.view && { view: options.view }),
      ...(options.delivery && { delivery: options.delivery }),
    };
    const response = this.#connection.request(Method.Subscribe, subscribeParams, { handshake: false });
    return this.#state.open(channel, kind, reducer, subscribeParams, response);
  }

  /** Stops following a channel; its view ends ('closed'), unconfirmed dispatches resolve accepted:false. */
  unsubscribe(channel: string): void {
    this.#state.unsubscribe(channel);
  }

  // ─── Internals: handshake and reconnect ──────────────────────────────────

  async #establish(mode: 'connect' | 'reconnect'): Promise<InitializeResult> {
    const connection = this.#connection;
    const state = this.#state;
    const { generation, lost } = await connection.open();
    void lost.then((why) => this.#onLinkLost(why));

    const raw = await connection.request(
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
    connection.assertCurrent(generation);
    const parsed = initializeResultSchema.safeParse(raw);
    if (!parsed.success) throw new AhpProtocolError('initialize: unexpected result shape', { cause: parsed.error });
    if (!this.#protocolVersions.includes(parsed.data.protocolVersion)) {
      throw new AhpProtocolError(`initialize: server chose ${parsed.data.protocolVersion}, which was not offered`);
    }
    const init: InitializeResult = parsed.data;
    state.initializeResult = init;

    if (mode === 'reconnect') await recover(state, connection, generation, init.serverSeq, init.protocolVersion);
    else state.noteServerSeq(init.serverSeq); // nothing subscribed yet, so nothing older can be missed
    connection.assertCurrent(generation);
    // Every replica now reflects this history up to init.serverSeq: the cursor is of its epoch.
    const epoch = init._meta?.[EPOCH_META_KEY];
    state.epoch = typeof epoch === 'string' ? epoch : undefined;

    connection.markReady();
    this.#reconnect.reset();
    state.resendPending();
    connection.flushOutbox();
    state.setStatus('open');
    return init;
  }

  /**
   * The current link closed on its own. If the handshake was still running, its own failure path
   * decides what happens next (connect() rejects, or another attempt is scheduled).
   */
  #onLinkLost({ wasReady, closeCode }: LinkLost): void {
    if (wasReady && !this.#state.closedError) this.#scheduleReconnect(closeCode);
  }

  #scheduleReconnect(closeCode?: number): void {
    const step = this.#reconnect.next(closeCode);
    if ('giveUp' in step) {
      this.#shutdown(step.giveUp);
      return;
    }
    this.#state.setStatus('reconnecting');
    this.#reconnectTimer = this.#scheduler.setTimeout(() => {
      this.#reconnectTimer = undefined;
      void this.#attemptReconnect();
    }, step.delayMs);
  }

  async #attemptReconnect(): Promise<void> {
    if (this.#state.closedError) return;
    try {
      await this.#establish('reconnect');
    } catch (error) {
      if (this.#state.closedError) return;
      if (isFatalHandshakeError(error)) {
        this.#shutdown(new AhpConnectionError(`reconnect failed: ${toError(error).message}`, true, { cause: error }));
        return;
      }
      this.#state.logger.warn('reconnect attempt failed', error);
      this.#connection.abandon(new AhpConnectionError('reconnect attempt failed', false, { cause: error }));
      this.#scheduleReconnect();
    }
  }

  #shutdown(error: AhpConnectionError): void {
    const state = this.#state;
    if (state.closedError) return;
    state.closedError = error;
    if (this.#reconnectTimer !== undefined) {
      this.#scheduler.clearTimeout(this.#reconnectTimer);
      this.#reconnectTimer = undefined;
    }
    this.#connection.abandon(error);
    this.#connection.failAllRequests(error);
    state.close(error);
  }

  // ─── Internals: subscriptions ────────────────────────────────────────────

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
}

/**
 * Stores a typed reducer behind the `unknown` state type the client keeps internally. Safe for the
 * same reason as `erase` in channel-view.ts: a view only ever feeds its reducer states produced
 * by that reducer or by a snapshot of its own channel.
 */
function eraseReducer<S>(reducer: WireReducer<S>): WireReducer<unknown> {
  return reducer as unknown as WireReducer<unknown>;
}
