/**
 * JSON-RPC 2.0 over one connection: decode, validate, route, answer. Never throws to the
 * transport and never sends a stack trace: bad JSON gets -32700, a bad envelope -32600, an
 * unknown method -32601, bad params -32602 naming the field, and a failing handler -32603 with a
 * generic message (details go to the log). The connection stays open in every case.
 *
 * Methods are registered by feature modules (AHP core, steering, collaboration…), so this file
 * knows nothing about what they do.
 */
import type { z } from 'zod';
import { ProtocolError } from '../../shared/protocol/errors.js';
import { withKind, type ErrorKind } from '../../shared/protocol/error-kinds.js';
import { checkJsonBounds } from '../../shared/protocol/json-bounds.js';
import { describeIssues } from '../../shared/protocol/describe-issues.js';
import { JSONRPC, jsonRpcInboundSchema, Limits, requestIdSchema, type JsonRpcInbound, type RequestId } from '../../shared/protocol/messages.js';
import type { Principal } from '../auth/auth.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import { CloseCode, type Connection } from '../hub/connection.js';

/** Per-connection protocol state. */
export interface ConnectionState {
  clientId: string | undefined;
  protocolVersion: string | undefined;
  /** Token bucket of inbound work units (see `RateLimit`); negative while in overdraft. */
  tokens: number;
  lastRefill: number;
  /** Frames refused in a row because the overdraft was used up (see `RateLimit.overdraft`). */
  refusedInARow: number;
}

export interface RpcContext {
  readonly conn: Connection;
  readonly principal: Principal;
  readonly state: ConnectionState;
}

export interface RequestHandler<S extends z.ZodType> {
  readonly params: S;
  /** Allowed before `initialize` (initialize, ping, and reconnect, which then stands in for it). */
  readonly beforeInitialize?: boolean;
  handle(ctx: RpcContext, params: z.output<S>): unknown;
}

export interface NotificationHandler<S extends z.ZodType> {
  readonly params: S;
  handle(ctx: RpcContext, params: z.output<S>): void;
}

/**
 * The inbound budget of one connection, counted in work units rather than messages: a frame costs
 * one unit per started `bytesPerUnit` bytes (at least one: parsing and routing a frame is work
 * whatever its size). So an agent streaming small `chat/delta` frames is budgeted by the bytes it
 * sends, not held to a message count meant for abusive clients, while a flood of large frames or
 * of tiny ones still runs out.
 *
 * Going over it is not an error: the transport stops reading the socket until the bucket refills
 * (TCP then slows the sender), so valid traffic is delayed, never lost. Frames that were already
 * read when reading stopped are processed on credit (the overdraft); only a connection that
 * exhausts even that is refused (`-32020`, or a rejection echo for dispatches) and, if it keeps
 * going, closed with 4029.
 */
export interface RateLimit {
  /** Sustained work units per second per connection. */
  readonly perSecond: number;
  /** Burst allowance, in units. */
  readonly burst: number;
  /** Units processed on credit while reading is paused; defaults to `burst`. */
  readonly overdraft?: number;
  /** Bytes one unit pays for; default 256 (a typical streamed delta frame costs one unit). */
  readonly bytesPerUnit?: number;
}

/**
 * 16,384 units/s = 4 MiB/s of frames, or 16k small frames/s, per connection; a 4 s burst on top.
 * Far above what a model streams, and above what one hub process handles from one socket, so
 * valid traffic runs at machine speed; sustained floods beyond it are slowed, then refused.
 */
export const DEFAULT_RATE_LIMIT: RateLimit = { perSecond: 16_384, burst: 65_536 };
const DEFAULT_BYTES_PER_UNIT = 256;

/** What one inbound message may do, decided when it is read off the socket. */
export type Admission = 'admitted' | 'refused';

export function encodeResult(id: RequestId | null, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result: result ?? null });
}

/** The JSON-RPC rendering of the one error carrier: its table code, its message, `data` naming its coarse kind. */
export function encodeError(id: RequestId | null, err: ProtocolError): string {
  // Every error names its kind (`error.data.kind`, shared/protocol/error-kinds.ts).
  const error = { code: err.code, message: err.message, data: withKind(err.kind, err.data) };
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/** The side of the router a feature sees: it adds methods, it does not route. */
export type RpcRegistrar = Pick<RpcRouter, 'request' | 'notification'>;

/**
 * The common case of `jsonRpcInboundSchema` without zod's copy: an object with `"jsonrpc": "2.0"`,
 * a method of 1…128 characters and no id or a valid one. Anything else: undefined, and the schema
 * decides (and names what is wrong) as before.
 */
function wellFormedInbound(json: unknown): { success: true; data: JsonRpcInbound } | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const { jsonrpc, id, method, params } = json as Record<string, unknown>;
  if (jsonrpc !== JSONRPC || typeof method !== 'string' || method.length < 1 || method.length > Limits.maxMethodLength) return undefined;
  if (id === undefined) return { success: true, data: { jsonrpc, method, params } };
  if ((typeof id === 'string' && id.length <= Limits.maxIdLength) || (typeof id === 'number' && Number.isFinite(id))) return { success: true, data: { jsonrpc, id, method, params } };
  return undefined;
}

export class RpcRouter {
  readonly #requests = new Map<string, RequestHandler<z.ZodType>>();
  readonly #notifications = new Map<string, NotificationHandler<z.ZodType>>();

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number,
    private readonly rateLimit: RateLimit = DEFAULT_RATE_LIMIT,
    /**
     * Called when a notification is refused before its handler runs (over budget, or its JSON out
     * of bounds), so the hub can echo a rejection for dispatches. Returns true when it answered.
     */
    private readonly onRefusedNotification?: (ctx: RpcContext, method: string, params: unknown, reason?: string, kind?: ErrorKind) => boolean,
    /**
     * How every answer and error is sent. The composition root routes them through the hub so an
     * answer never overtakes (or describes) state that is not yet durable and delivered, and counts
     * against the connection's unsent-data limit like everything else.
     */
    private readonly sendResponse: (conn: Connection, text: string) => void = (conn, text) => conn.send(text),
  ) {}

  request<S extends z.ZodType>(method: string, handler: RequestHandler<S>): void {
    if (this.#requests.has(method)) throw new Error(`request method ${method} registered twice`);
    this.#requests.set(method, handler as unknown as RequestHandler<z.ZodType>);
  }

  notification<S extends z.ZodType>(method: string, handler: NotificationHandler<S>): void {
    if (this.#notifications.has(method)) throw new Error(`notification method ${method} registered twice`);
    this.#notifications.set(method, handler as unknown as NotificationHandler<z.ZodType>);
  }

  newConnectionState(): ConnectionState {
    return { clientId: undefined, protocolVersion: undefined, tokens: this.rateLimit.burst, lastRefill: this.now(), refusedInARow: 0 };
  }

  /**
   * Charges one inbound frame of `bytes` bytes to the connection's budget. Within budget or
   * overdraft it is admitted (the transport pauses reading while `resumeDelayMs` > 0); beyond the
   * overdraft it is refused, and after another overdraft's worth of refusals in a row the
   * connection is closed.
   */
  admit(ctx: RpcContext, bytes = 0): Admission {
    const state = ctx.state;
    this.#refill(state);
    const overdraft = this.rateLimit.overdraft ?? this.rateLimit.burst;
    if (state.tokens > -overdraft) {
      state.tokens -= Math.max(1, Math.ceil(bytes / (this.rateLimit.bytesPerUnit ?? DEFAULT_BYTES_PER_UNIT)));
      state.refusedInARow = 0;
      return 'admitted';
    }
    if (++state.refusedInARow > overdraft) ctx.conn.close(CloseCode.RateLimited, 'rate limited: still over budget after being slowed down');
    return 'refused';
  }

  /** Milliseconds until the connection is back within budget (0 = now): how long to stop reading. */
  resumeDelayMs(state: ConnectionState): number {
    this.#refill(state);
    return state.tokens >= 1 ? 0 : Math.ceil(((1 - state.tokens) / this.rateLimit.perSecond) * 1000);
  }

  /**
   * Handles one inbound text frame. Resolves when the answer (if any) has been sent. `admission`
   * is decided when the frame was read (see `admit`); callers without flow control omit it.
   */
  async handleFrame(ctx: RpcContext, text: string, admission: Admission = this.admit(ctx, text.length)): Promise<void> {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.sendResponse(ctx.conn, encodeError(null, new ProtocolError('invalid_json', 'parse error: the frame is not valid JSON')));
      return;
    }
    // Before anything looks at the message: a value nested thousands deep (or a megabyte-long
    // key) would overflow every encoder later, so it is refused here, never stored or echoed.
    const outOfBounds = checkJsonBounds(json);
    if (outOfBounds) {
      this.#refuseOutOfBounds(ctx, json, `${outOfBounds.message} (${outOfBounds.code})`, outOfBounds.code);
      return;
    }
    const parsed = wellFormedInbound(json) ?? jsonRpcInboundSchema.safeParse(json);
    if (!parsed.success) {
      const id = typeof json === 'object' && json !== null && 'id' in json ? (json as { id: unknown }).id : null;
      // Echo the id only when it is a valid one; an unusable id (object, too long) answers with null.
      const safeId = requestIdSchema.safeParse(id).success ? (id as RequestId) : null;
      const hint = Array.isArray(json) ? 'batches are not supported; send one message per frame' : describeIssues(parsed.error.issues, 'rpc');
      this.sendResponse(ctx.conn, encodeError(safeId, new ProtocolError('invalid_request', `invalid request: ${hint}`)));
      return;
    }
    const msg = parsed.data;
    const throttled = admission === 'refused';
    if (msg.id === undefined) {
      this.#handleNotification(ctx, msg.method, msg.params, throttled);
      return;
    }
    if (throttled) {
      this.sendResponse(
        ctx.conn,
        encodeError(
          msg.id,
          new ProtocolError(
            'limit_exceeded',
            `rate limit exceeded: this connection sent more than its budget (${this.rateLimit.perSecond} units of ${this.rateLimit.bytesPerUnit ?? DEFAULT_BYTES_PER_UNIT} bytes per second) even after being slowed down`,
          ),
        ),
      );
      return;
    }
    this.sendResponse(ctx.conn, await this.#handleRequest(ctx, msg.id, msg.method, msg.params));
  }

  async #handleRequest(ctx: RpcContext, id: RequestId, method: string, rawParams: unknown): Promise<string> {
    const handler = this.#requests.get(method);
    if (!handler) return encodeError(id, new ProtocolError('method_not_found', `method not found: ${method}`));
    if (!handler.beforeInitialize && ctx.state.protocolVersion === undefined) {
      return encodeError(id, new ProtocolError('not_initialized', `${method} before initialize: send initialize first`));
    }
    const params = handler.params.safeParse(rawParams);
    if (!params.success) return encodeError(id, new ProtocolError('invalid_params', `invalid params for ${method}: ${describeIssues(params.error.issues, 'rpc')}`));
    try {
      return encodeResult(id, await handler.handle(ctx, params.data));
    } catch (err) {
      if (err instanceof ProtocolError) return encodeError(id, err);
      this.logger.error('request handler failed', { method, ...errorFields(err) });
      return encodeError(id, new ProtocolError('internal_error', `internal error while handling ${method}`));
    }
  }

  #handleNotification(ctx: RpcContext, method: string, rawParams: unknown, throttled: boolean): void {
    const handler = this.#notifications.get(method);
    // JSON-RPC sends no response to notifications; an error with id null is the one way to tell
    // the client its notification was not taken, rather than dropping it silently.
    if (!handler) {
      this.sendResponse(ctx.conn, encodeError(null, new ProtocolError('method_not_found', `notification method not found: ${method}`)));
      return;
    }
    if (ctx.state.protocolVersion === undefined) {
      this.sendResponse(ctx.conn, encodeError(null, new ProtocolError('not_initialized', `${method} before initialize: send initialize first`)));
      return;
    }
    const params = handler.params.safeParse(rawParams);
    if (!params.success) {
      this.sendResponse(ctx.conn, encodeError(null, new ProtocolError('invalid_params', `invalid params for ${method}: ${describeIssues(params.error.issues, 'rpc')}`)));
      return;
    }
    if (throttled) {
      if (this.onRefusedNotification?.(ctx, method, params.data) !== true) this.sendResponse(ctx.conn, encodeError(null, new ProtocolError('limit_exceeded', `rate limit exceeded: ${method} was not processed`)));
      return;
    }
    try {
      handler.handle(ctx, params.data);
    } catch (err) {
      // A refusal the handler names (e.g. channel/credit past what was sent) goes back as is.
      if (err instanceof ProtocolError) return this.sendResponse(ctx.conn, encodeError(null, err));
      this.logger.error('notification handler failed', { method, ...errorFields(err) });
      this.sendResponse(ctx.conn, encodeError(null, new ProtocolError('internal_error', `internal error while handling ${method}`)));
    }
  }

  #refuseOutOfBounds(ctx: RpcContext, json: unknown, reason: string, code: string): void {
    const message = typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {};
    const id = requestIdSchema.safeParse(message['id']).success ? (message['id'] as RequestId) : null;
    const method = typeof message['method'] === 'string' ? message['method'] : '';
    // A notification (a dispatch) gets its refusal the way its method reports refusals, so the
    // sender's pending action resolves; the hook never echoes the offending value.
    if (id === null && this.onRefusedNotification?.(ctx, method, message['params'], reason, 'invalid_request') === true) return;
    this.sendResponse(ctx.conn, encodeError(id, new ProtocolError('invalid_request', `invalid request: ${reason}`, { code })));
  }

  #refill(state: ConnectionState): void {
    const now = this.now();
    const elapsed = Math.max(0, now - state.lastRefill) / 1000;
    state.tokens = Math.min(this.rateLimit.burst, state.tokens + elapsed * this.rateLimit.perSecond);
    state.lastRefill = now;
  }
}
