/**
 * The client SDK's public option and result types, in a module of their own so that the pieces
 * built on the client (session-inputs, the connection, the facade) share them without importing
 * each other.
 */
import type { SessionSummary } from '../protocol/state.js';
import type { BackoffOptions, Scheduler } from './backoff.js';
import type { ReducerRegistry } from './default-reducers.js';
import type { WireReducer } from './reconciler.js';
import type { TransportFactory } from './transport.js';
import type { CreateSocket } from './websocket-like.js';

export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface ReconnectOptions extends BackoffOptions {
  /** Give up (client closes for good) after this many consecutive failed attempts. Default: never. */
  readonly maxAttempts?: number;
}

export interface AhpClientLogger {
  warn(message: string, detail?: unknown): void;
}

/**
 * Where the client connects: a WebSocket `url` (opened with `createSocket`, else the runtime's
 * own `WebSocket`), or any `transport` (transport.ts), e.g. `memoryTransport` in tests.
 */
export type AhpClientOptions = AhpClientSettings & (WebSocketEndpoint | GivenTransport);

export interface WebSocketEndpoint {
  /** e.g. `ws://localhost:8080/ahp`. */
  readonly url: string;
  /** Builds a socket; called for the first connection and for every reconnect attempt. Default: `new WebSocket(url)` of the runtime (browsers, Node ≥ 22). */
  readonly createSocket?: CreateSocket;
  /** Given too, it wins: `createSocket` is then unused. */
  readonly transport?: TransportFactory;
}

export interface GivenTransport {
  /** Builds the link of each connection attempt (the first and every reconnect); gets `url` with the token appended. */
  readonly transport: TransportFactory;
  /** Handed to `transport` (and asked about by the refusal probe when it is ws: or wss:). Default ''. */
  readonly url?: string;
}

export interface AhpClientSettings {
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
export type RefusalProbe = (url: string) => Promise<{ readonly status: number; readonly code?: string; readonly message?: string }>;

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

/** What needs only JSON-RPC requests of a client (SessionInputs); `AhpClient` is one. */
export interface RpcRequester {
  request(method: string, params: RequestParams, options?: RequestOptions): Promise<unknown>;
}
