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
import { EPOCH_META_KEY, Method, ServerNotification, createChatResultSchema, createSessionResultSchema, initializeResultSchema, listSessionsResultSchema, type InitializeResult } from '../protocol/messages.js';
import { ROOT_URI, channelKind, sessionUri } from '../protocol/uris.js';
import { SUPPORTED_VERSIONS } from '../protocol/version.js';
import { DEFAULT_BACKOFF, defaultScheduler, type Scheduler } from './backoff.js';
import type { ChannelView, ChannelViewHost } from './channel-view.js';
import type {
  AhpClientLogger,
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
import { AhpConnection } from './connection.js';
import { defaultReducers, type ChatState, type ReducerRegistry, type RootState, type SessionState } from './default-reducers.js';
import { AhpConnectionError, AhpProtocolError } from './errors.js';
import { randomUuid } from './random-id.js';
import { ReconnectLoop, toError } from './reconnect-loop.js';
import { recover, type RecoveryContext } from './recovery.js';
import { ChannelReplicas } from './replicas.js';
import type { WireReducer } from './reconciler.js';
import { SessionInputs } from './session-inputs.js';

export { AhpAuthError, AhpConnectionError, AhpError, AhpProtocolError, AhpRequestError, AhpTimeoutError } from './errors.js';
export type { ChannelChange, ChannelChangeListener, ChannelView, ChannelViewStatus, DispatchResult } from './channel-view.js';
export type { PendingAction, WireReducer } from './reconciler.js';
export type { ChatState, ReducerRegistry, RootState, SessionState } from './default-reducers.js';
export type { BackoffOptions, Scheduler } from './backoff.js';
export type { CreateSocket, WebSocketLike } from './websocket-like.js';
export type * from './client-types.js';

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Bounds memory for optimistic work a disconnected client can pile up (brief: "e.g. 1000"). */
const DEFAULT_MAX_PENDING_ACTIONS = 1000;

// ─── Client ──────────────────────────────────────────────────────────────────

/**
 * The facade: connection state and its listeners, the handshake (initialize, then recovery on a
 * reconnect), the reconnect loop, typed helpers and subscriptions. The socket and JSON-RPC live in
 * connection.ts, the views and dispatch bookkeeping in replicas.ts, §1.7 recovery in recovery.ts.
 */
export class AhpClient implements RpcRequester {
  readonly clientId: string;

  readonly #options: AhpClientOptions;
  readonly #scheduler: Scheduler;
  readonly #logger: AhpClientLogger;
  readonly #reducers: ReducerRegistry;
  readonly #reconnectLoop: ReconnectLoop;
  readonly #protocolVersions: readonly string[];
  readonly #connection: AhpConnection;
  readonly #replicas: ChannelReplicas;
  readonly #recovery: RecoveryContext;

  #state: ConnectionState = 'closed';
  /** Set by close() or a fatal error: nothing reopens the client afterwards. */
  #closedError: AhpConnectionError | undefined;
  #connectPromise: Promise<InitializeResult> | undefined;
  #initializeResult: InitializeResult | undefined;
  /** The hub history epoch the replicas' cursor belongs to (docs/continuity.md#epoch); sent with `reconnect`. */
  #epoch: string | undefined;

  readonly #notificationListeners = new Map<string, Set<NotificationListener>>();
  readonly #stateListeners = new Set<ConnectionStateListener>();

  readonly #viewHost: ChannelViewHost = {
    dispatch: (view, action) => this.#replicas.dispatch(view, action),
    unsubscribe: (channel) => this.unsubscribe(channel),
    reportError: (message, error) => this.#logger.warn(message, error),
  };

  constructor(options: AhpClientOptions) {
    this.#options = options;
    this.clientId = options.clientId ?? randomUuid();
    this.#scheduler = options.scheduler ?? defaultScheduler;
    this.#logger = options.logger ?? { warn: () => {} };
    this.#reducers = { ...defaultReducers, ...options.reducers };
    this.#protocolVersions = options.protocolVersions ?? SUPPORTED_VERSIONS;
    const client = this;
    this.#connection = new AhpConnection({
      client: options,
      scheduler: this.#scheduler,
      logger: this.#logger,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      host: {
        get closedError() {
          return client.#closedError;
        },
        get connectionState() {
          return client.#state;
        },
        onNotification: (method, params) => this.#onNotification(method, params),
        onSocketLost: (error, closeCode) => this.#onSocketLost(error, closeCode),
      },
    });
    this.#replicas = new ChannelReplicas({
      clientId: this.clientId,
      maxPending: options.maxPendingActions ?? DEFAULT_MAX_PENDING_ACTIONS,
      logger: this.#logger,
      closedError: () => this.#closedError,
      isReady: () => this.#connection.ready,
      sendFrame: (frame) => this.#connection.sendFrame(frame),
      subscribeRequest: (params) => this.#connection.request(Method.Subscribe, params, { handshake: false }),
      viewHost: this.#viewHost,
    });
    this.#reconnectLoop = new ReconnectLoop({
      backoff: options.reconnect === false ? undefined : { ...DEFAULT_BACKOFF, ...options.reconnect },
      scheduler: this.#scheduler,
      random: options.random ?? Math.random,
      logger: this.#logger,
      host: {
        get closedError() {
          return client.#closedError;
        },
        establish: () => this.#establish('reconnect'),
        shutdown: (error) => this.#shutdown(error),
        abandonSocket: (error) => this.#abandonSocket(error),
        onReconnecting: () => this.#setState('reconnecting'),
      },
    });
    this.#recovery = {
      clientId: this.clientId,
      replicas: this.#replicas,
      logger: this.#logger,
      handshakeRequest: (method, params) => this.#connection.request(method, params, { handshake: true }),
      assertCurrent: (generation) => this.#connection.assertCurrent(generation),
      cursorEpoch: () => this.#epoch,
    };
  }

  // ─── Introspection ───────────────────────────────────────────────────────

  /** 'closed' before the first connect(), after close(), and after a fatal error. */
  get connectionState(): ConnectionState {
    return this.#state;
  }

  /** The hub history epoch the client's cursor belongs to (`initialize`'s `_meta["hub/epoch"]`), if the hub keeps one. */
  get epoch(): string | undefined {
    return this.#epoch;
  }

  /** Result of the latest successful `initialize` (refreshed on every reconnect). */
  get initializeResult(): InitializeResult | undefined {
    return this.#initializeResult;
  }

  /** Highest serverSeq known to be reflected locally; sent in `reconnect`. */
  get lastSeenServerSeq(): number {
    return this.#replicas.lastSeenServerSeq;
  }

  /** Own actions awaiting their echo, across all channels. */
  get pendingActionCount(): number {
    return this.#replicas.pendingActionCount;
  }

  /** The live view of a subscribed channel, if any. */
  view(channel: string): ChannelView<unknown> | undefined {
    return this.#replicas.views.get(channel);
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
      const err = await this.#connection.explainRefusal(toError(error));
      this.#abandonSocket(err);
      this.#connectPromise = undefined;
      if (!this.#closedError) {
        // Nothing will ever send the queued requests: fail them now rather than at their timeout.
        this.#connection.failAllRequests(new AhpConnectionError(`connect failed: ${err.message}`, false, { cause: err }));
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
    if (this.#closedError) throw this.#closedError;
    if (this.#state === 'closed') throw new AhpConnectionError('not connected: call connect() first', false);
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
    const existing = this.#replicas.views.get(channel);
    if (existing) return Promise.resolve(existing);
    const inFlight = this.#replicas.subscribing.get(channel);
    if (inFlight) return inFlight.promise;

    const kind = channelKind(channel);
    const reducer = options.reducer ? eraseReducer(options.reducer) : kind ? this.#reducerFor(kind) : undefined;
    if (!reducer) return Promise.reject(new TypeError(`subscribe: no reducer for channel ${channel}`));

    const subscribeParams: Record<string, unknown> = {
      channel,
      ...(options.view && { view: options.view }),
      ...(options.delivery && { delivery: options.delivery }),
    };
    return this.#replicas.open(channel, kind, reducer, subscribeParams);
  }

  /** Stops following a channel; its view ends ('closed'), unconfirmed dispatches resolve accepted:false. */
  unsubscribe(channel: string): void {
    this.#replicas.close(channel);
  }

  // ─── Internals: handshake and reconnect ──────────────────────────────────

  async #establish(mode: 'connect' | 'reconnect'): Promise<InitializeResult> {
    const connection = this.#connection;
    const generation = await connection.open();

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
    this.#initializeResult = init;

    if (mode === 'reconnect') await recover(this.#recovery, generation, init.serverSeq, init.protocolVersion);
    else this.#replicas.noteServerSeq(init.serverSeq); // nothing subscribed yet, so nothing older can be missed
    connection.assertCurrent(generation);
    // Every replica now reflects this history up to init.serverSeq: the cursor is of its epoch.
    const epoch = init._meta?.[EPOCH_META_KEY];
    this.#epoch = typeof epoch === 'string' ? epoch : undefined;

    connection.markReady();
    this.#reconnectLoop.reset();
    this.#replicas.resendPending();
    connection.flushOutbox();
    this.#setState('open');
    return init;
  }

  #onNotification(method: string, params: unknown): void {
    if (method === ServerNotification.Action) {
      this.#replicas.onActionNotification(params);
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

  /** The current socket closed on its own. */
  #onSocketLost(error: AhpConnectionError, closeCode: number | undefined): void {
    const wasReady = this.#connection.ready;
    this.#abandonSocket(error);
    // If the handshake was still running, its own failure path decides what happens next
    // (connect() rejects, or the reconnect loop schedules another attempt).
    if (wasReady && !this.#closedError) this.#reconnectLoop.schedule(closeCode);
  }

  /** Forgets the current socket: later events from it are ignored and its requests fail. */
  #abandonSocket(error: Error): void {
    this.#replicas.heldEnvelopes = undefined;
    this.#connection.abandon(error);
  }

  #shutdown(error: AhpConnectionError): void {
    if (this.#closedError) return;
    this.#closedError = error;
    this.#reconnectLoop.cancel();
    this.#abandonSocket(error);
    this.#connection.failAllRequests(error);
    this.#replicas.endAll(error);
    this.#setState('closed');
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
