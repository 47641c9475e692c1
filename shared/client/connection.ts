/**
 * The JSON-RPC half of the client SDK, over one `ClientTransport` at a time (transport.ts):
 * framing, request/response bookkeeping (ids, timeouts, the outbox that holds ordinary traffic
 * until the handshake is done), the token in the URL, and the refusal probe that explains a link
 * that never opened.
 *
 * It feeds the client state (client-state.ts) and reads it, never the other way round: a
 * notification goes to `ClientState.receive`; the state's `closedError` and `status` decide what
 * a request may do; `markReady` attaches this connection to the state as its `Wire` (the way out
 * for dispatches) and `abandon` detaches it. A link that closes on its own settles the `lost`
 * promise `open` returned, which is how the client learns it should reconnect.
 */
import { JSONRPC, jsonRpcErrorSchema } from '../protocol/messages.js';
import { ErrorCode } from '../protocol/errors.js';
import type { Scheduler } from './backoff.js';
import type { AhpClientLogger, RefusalProbe } from './client-types.js';
import type { ClientState, Wire } from './client-state.js';
import { AhpAuthError, AhpConnectionError, AhpRequestError, AhpTimeoutError } from './errors.js';
import type { ClientTransport, TransportEvents, TransportFactory } from './transport.js';

export interface ConnectionOptions {
  /** The endpoint handed to the transport factory (the token is appended). */
  readonly url: string;
  readonly token: string | (() => string | Promise<string>) | undefined;
  readonly tokenQueryParam: string | undefined;
  readonly refusalProbe: RefusalProbe | false | undefined;
  readonly transport: TransportFactory;
  readonly scheduler: Scheduler;
  readonly logger: AhpClientLogger;
  readonly requestTimeoutMs: number;
}

/** How a link that had opened ended on its own. */
export interface LinkLost {
  readonly error: AhpConnectionError;
  readonly closeCode: number | undefined;
  /** Its handshake had finished: the client was open on it. */
  readonly wasReady: boolean;
}

/** An open link: its generation (checked by `assertCurrent`) and the promise settled if it drops. */
export interface OpenLink {
  readonly generation: number;
  readonly lost: Promise<LinkLost>;
}

interface OutstandingRequest {
  readonly method: string;
  readonly resolve: (result: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly timer: unknown;
  /** False while queued behind the (re)connect handshake. Sent requests die with their link. */
  sent: boolean;
}

const NORMAL_CLOSURE = 1000;

/** The global `fetch` as a probe, where there is one (browsers, Node 18+). */
function fetchProbe(): RefusalProbe | undefined {
  const fetchFn = (globalThis as { fetch?: (url: string, init: Record<string, unknown>) => Promise<{ status: number; text(): Promise<string> }> }).fetch;
  if (typeof fetchFn !== 'function') return undefined;
  return async (url) => {
    // Same-origin credentials: a page signed in with the hub's session cookie is asked about as itself.
    const res = await fetchFn(url, { method: 'GET', cache: 'no-store', credentials: 'same-origin' });
    const text = await res.text().catch(() => '');
    let body: { code?: unknown; message?: unknown } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // not the hub's JSON: the status says enough
    }
    return { status: res.status, ...(typeof body.code === 'string' && { code: body.code }), ...(typeof body.message === 'string' && { message: body.message.slice(0, 500) }) };
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class AhpConnection implements Wire {
  readonly #state: ClientState;
  readonly #options: ConnectionOptions;
  readonly #scheduler: Scheduler;
  readonly #logger: AhpClientLogger;
  readonly #requestTimeoutMs: number;

  #link: ClientTransport | undefined;
  /** Bumped whenever a link is abandoned, so late events from it are ignored. */
  #generation = 0;
  /** The latest link's URL and whether it ever opened (what `explainRefusal` asks about). */
  #attempt: { readonly url: string; opened: boolean } | undefined;
  #openWaiter: { resolve: () => void; reject: (error: Error) => void; timer: unknown } | undefined;
  /** Settles the current link's `lost` promise. */
  #reportLost: ((lost: LinkLost) => void) | undefined;

  #nextRequestId = 1;
  readonly #requests = new Map<number, OutstandingRequest>();
  /** Frames written while not ready, flushed in order after the handshake. */
  #outbox: Array<{ readonly frame: string; readonly requestId?: number }> = [];

  constructor(state: ClientState, options: ConnectionOptions) {
    this.#state = state;
    this.#options = options;
    this.#scheduler = options.scheduler;
    this.#logger = options.logger;
    this.#requestTimeoutMs = options.requestTimeoutMs;
  }

  // ─── Link lifecycle ──────────────────────────────────────────────────────

  /** Opens a new link and waits for it to open. */
  async open(): Promise<OpenLink> {
    const generation = ++this.#generation;
    const url = await this.#linkUrl();
    this.assertCurrent(generation);
    this.#attempt = { url, opened: false };
    const link = this.#options.transport(url);
    this.#link = link;
    const lost = new Promise<LinkLost>((resolve) => {
      this.#reportLost = resolve;
    });
    const opened = this.#waitForOpen();
    try {
      link.open(this.#eventsOf(generation));
    } catch (error) {
      this.abandon(error instanceof Error ? error : new Error(String(error)));
    }
    await opened;
    this.assertCurrent(generation);
    return { generation, lost };
  }

  /** Handshake done: this connection is the state's way out (call `flushOutbox` after resending dispatches). */
  markReady(): void {
    this.#state.attachWire(this);
  }

  assertCurrent(generation: number): void {
    const closedError = this.#state.closedError;
    if (closedError) throw closedError;
    if (generation !== this.#generation) throw new AhpConnectionError('connection lost during handshake', false);
  }

  async #linkUrl(): Promise<string> {
    const { url, token } = this.#options;
    if (token === undefined) return url;
    const value = typeof token === 'function' ? await token() : token;
    const param = this.#options.tokenQueryParam ?? 'token';
    return `${url}${url.includes('?') ? '&' : '?'}${encodeURIComponent(param)}=${encodeURIComponent(value)}`;
  }

  #eventsOf(generation: number): TransportEvents {
    return {
      opened: () => {
        if (generation !== this.#generation) return;
        if (this.#attempt) this.#attempt.opened = true;
        const waiter = this.#openWaiter;
        this.#openWaiter = undefined;
        if (waiter) {
          this.#scheduler.clearTimeout(waiter.timer);
          waiter.resolve();
        }
      },
      message: (data) => {
        if (generation === this.#generation) this.#onFrame(data);
      },
      closed: (code, reason) => {
        if (generation !== this.#generation) return;
        const error = new AhpConnectionError(`connection lost (code ${code ?? 'unknown'}${reason ? `: ${reason}` : ''})`, false);
        const wasReady = this.#state.ready;
        const report = this.#reportLost;
        this.abandon(error);
        report?.({ error, closeCode: code, wasReady });
      },
    };
  }

  #waitForOpen(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = this.#scheduler.setTimeout(() => {
        if (this.#openWaiter?.timer !== timer) return;
        this.#openWaiter = undefined;
        reject(new AhpTimeoutError('open', this.#requestTimeoutMs));
      }, this.#requestTimeoutMs);
      this.#openWaiter = { resolve, reject, timer };
    });
  }

  /**
   * Why the first connection failed, in words a person can act on: a link that closed before
   * opening is asked about once over plain HTTP (see `refusalProbe`). Anything else, or a probe
   * that answers something other than 401, leaves the error as it was.
   */
  async explainRefusal(error: Error): Promise<Error> {
    const attempt = this.#attempt;
    if (!attempt || attempt.opened || !(error instanceof AhpConnectionError) || this.#state.closedError) return error;
    const probe = this.#options.refusalProbe === false ? undefined : (this.#options.refusalProbe ?? fetchProbe());
    const probeUrl = httpUrlOf(attempt.url);
    if (!probe || !probeUrl) return error;
    try {
      const { status, code, message } = await probe(probeUrl);
      return status === 401 ? new AhpAuthError(status, { cause: error, ...(code !== undefined && { code }), ...(message !== undefined && { reason: message }) }) : error;
    } catch (cause) {
      return new AhpConnectionError(`cannot reach the hub at ${hostOf(attempt.url)}`, false, { cause });
    }
  }

  /** Forgets the current link: later events from it are ignored and its sent requests fail. */
  abandon(error: Error): void {
    const link = this.#link;
    this.#link = undefined;
    this.#reportLost = undefined;
    this.#generation++;
    this.#state.detachWire();
    link?.close(NORMAL_CLOSURE);
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

  /** Fails every request, sent or queued, and drops the outbox. */
  failAllRequests(error: Error): void {
    for (const request of this.#requests.values()) {
      this.#scheduler.clearTimeout(request.timer);
      request.reject(error);
    }
    this.#requests.clear();
    this.#outbox = [];
  }

  // ─── Requests and frames ─────────────────────────────────────────────────

  /**
   * `handshake` requests (initialize, reconnect, re-subscribe) go out on the socket being set up;
   * everything else waits in the outbox until the handshake is done, so that nothing the
   * application sends can overtake recovery.
   */
  request(method: string, params: Record<string, unknown>, opts: { handshake: boolean; timeoutMs?: number | undefined }): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const closedError = this.#state.closedError;
      if (closedError) {
        reject(closedError);
        return;
      }
      if (!opts.handshake && this.#state.status === 'closed') {
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
      if (opts.handshake || this.#state.ready) {
        request.sent = true;
        this.sendFrame(frame);
      } else {
        this.#outbox.push({ frame, requestId: id });
      }
    });
  }

  /** A JSON-RPC notification: sent now when ready, else queued behind the handshake. */
  notify(method: string, params: Record<string, unknown>): void {
    const frame = JSON.stringify({ jsonrpc: JSONRPC, method, params });
    if (this.#state.ready) this.sendFrame(frame);
    else this.#outbox.push({ frame });
  }

  flushOutbox(): void {
    const outbox = this.#outbox;
    this.#outbox = [];
    for (const item of outbox) {
      if (item.requestId !== undefined) {
        const request = this.#requests.get(item.requestId);
        if (!request) continue; // timed out while queued
        request.sent = true;
      }
      this.sendFrame(item.frame);
    }
  }

  sendFrame(frame: string): void {
    const link = this.#link;
    if (!link) return;
    try {
      link.send(frame);
    } catch (error) {
      // The link is going away; its close event drives recovery (and fails sent requests).
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
      if (id === undefined || id === null) this.#state.receive(method, message.params);
      // AHP defines no server → client requests; answer as a well-behaved JSON-RPC peer would.
      else this.sendFrame(JSON.stringify({ jsonrpc: JSONRPC, id, error: { code: ErrorCode.MethodNotFound, message: `unknown method ${method}` } }));
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
}
