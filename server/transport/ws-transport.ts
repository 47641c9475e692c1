/**
 * The WebSocket transport at `/ahp`: authenticates the upgrade (401 before any frame), adapts each
 * `ws` socket to the hub's `Connection`, feeds text frames to the JSON-RPC router, and keeps
 * connections honest with a ping/pong heartbeat. It knows nothing about channels or storage.
 */
import { LoopShare } from '../loop-share.js';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import type { Authenticator, Principal } from '../auth/auth.js';
import { stillValid, tokenFromRequest } from '../auth/auth.js';
import { ProtocolError } from '../../shared/protocol/errors.js';
import { RECONNECT_NOW_CLOSE_CODE, TOKEN_EXPIRED_CLOSE_CODE } from '../../shared/protocol/close-codes.js';
import type { EdgeAuth } from '../auth/oidc/oidc-auth.js';
import { atTime } from '../auth/oidc/at-time.js';
import type { Connection } from '../hub/connection.js';
import { CloseCode } from '../hub/connection.js';
import { unsentOf } from '../hub/lag-queue.js';
import { DEFAULT_MAX_UNSENT_PER_PRINCIPAL, DEFAULT_MAX_UNSENT_PER_TENANT, UnsentBudget } from '../hub/unsent-budget.js';
import type { Admission, RpcRouter, RpcContext } from '../ahp/rpc.js';
import { encodeError } from '../ahp/rpc.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import type { GuardRefusal } from './loopback-guard.js';
import { upgradeRefusalOf } from './http-reply.js';
import { holdUntilTickEnd, textFrameOf } from './ws-frames.js';
import { FrameInbox } from './frame-inbox.js';

/** Close codes the transport itself uses (the hub's are in `CloseCode`). */
export const TransportCloseCode = {
  /** The client did not complete `initialize` in time after the upgrade. */
  InitializeTimeout: 4408,
  /** The tenant's hub was reloaded from its log (storage failure): reconnect and resume. */
  TenantReloaded: 4503,
  /** The token the connection was opened with was removed or changed (the token file was reloaded). */
  TokenRevoked: 4401,
  /** This node is draining (cluster, SIGTERM): reconnect at once, the load balancer picks another node. */
  Draining: RECONNECT_NOW_CLOSE_CODE,
} as const;

export interface WsTransportOptions {
  readonly path: string;
  readonly auth: Authenticator;
  /** The JSON-RPC router of the principal's tenant (each tenant has its own hub and methods). */
  readonly routerFor: (principal: Principal) => RpcRouter;
  readonly logger: Logger;
  /** Largest accepted frame; bigger frames close the socket with 1009 (ws does this). */
  readonly maxPayloadBytes: number;
  readonly heartbeatMs: number;
  readonly maxConnections: number;
  /**
   * Unsent bytes after which a connection that does not read is closed with 4008 instead of being
   * sent more, whatever sends it (the hub applies the same rule; this catches every other sender).
   */
  readonly maxBufferedBytes: number;
  /** Open connections one principal (tenant + user) may hold, so one token cannot take every slot. */
  readonly maxConnectionsPerPrincipal: number;
  /** Open connections one tenant may hold together. */
  readonly maxConnectionsPerTenant: number;
  /** Unsent bytes one principal's / one tenant's connections may hold together (unsent-budget.ts). */
  readonly maxUnsentBytesPerPrincipal?: number | undefined;
  readonly maxUnsentBytesPerTenant?: number | undefined;
  /** A connection that has not completed `initialize` this long after the upgrade is closed (4408). */
  readonly initializeTimeoutMs: number;
  /** Checks an upgrade before authentication (dev mode: loopback Host and Origin only). */
  readonly guard?: ((req: IncomingMessage) => GuardRefusal | undefined) | undefined;
  /** Who an upgrade the token file does not know is: a bearer JWT or a sign-in cookie (docs/sign-in.md). */
  readonly resolve?: ((req: IncomingMessage, token: string | undefined) => Promise<EdgeAuth>) | undefined;
  /** Told of sockets opened and closed with a sign-in session's cookie. */
  readonly sessionSockets?: { socketOpened(session: string): void; socketClosed(session: string): void } | undefined;
  /** Checks an authenticated upgrade (a tenant whose log cannot be opened: 503). */
  readonly refuse?: ((principal: Principal) => GuardRefusal | undefined) | undefined;
  /** Told the close code of every connection the server closes (slow-consumer counts). */
  readonly onServerClose?: ((code: number) => void) | undefined;
  /** Called when a connection closes so the hub can drop its subscriptions. */
  readonly onClose: (conn: Connection, principal: Principal) => void;
}

/** A `ws` socket as the hub's `Connection` (exported for tests). */
export class WsConnection implements Connection {
  readonly id = randomUUID();
  alive = true;
  constructor(
    readonly socket: WebSocket,
    /** The TCP socket under the WebSocket (the one the upgrade handed us). */
    private readonly raw: Duplex,
    private readonly maxBufferedBytes: number,
    private readonly onServerClose: ((code: number) => void) | undefined,
    readonly unsentBudget: UnsentBudget,
  ) {}
  /** Frames of this tick not yet written (written by `endTick`), and their bytes. */
  #held: Buffer | Buffer[] | undefined;
  #heldBytes = 0;
  send(text: string): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    if (this.bufferedAmount > this.maxBufferedBytes) {
      this.close(CloseCode.SlowConsumer, 'slow consumer: reconnect and resume');
      return;
    }
    const frame = textFrameOf(text);
    const held = this.#held;
    if (held === undefined) {
      this.#held = frame;
      holdUntilTickEnd(this);
    } else if (Array.isArray(held)) held.push(frame);
    else this.#held = [held, frame];
    this.#heldBytes += frame.length;
  }
  /**
   * Writes the held frames straight to the TCP socket: ws's sender queues only while compressing
   * (off here) or reading a Blob (never sent), so frames it writes itself (pings, close) keep
   * their order with these (`close` writes the held frames first).
   */
  flush(): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    const bytes = this.#heldBytes;
    this.#heldBytes = 0;
    // Closed since (the peer's close, a terminate): nothing more may follow the close frame.
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.raw.write(Array.isArray(held) ? Buffer.concat(held, bytes) : held);
  }
  close(code: number, reason: string): void {
    this.flush();
    // A socket paused by flow control must be read again, or the closing handshake never completes.
    if (this.socket.isPaused) this.socket.resume();
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) {
      this.onServerClose?.(code);
      this.socket.close(code, reason);
    }
  }
  /** Bytes not yet written out: what the socket holds plus this tick's held frames. */
  get bufferedAmount(): number {
    return this.socket.bufferedAmount + this.#heldBytes;
  }
  terminate(): void {
    this.#held = undefined;
    this.#heldBytes = 0;
    this.socket.terminate();
  }
  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }
  whenDrained(fn: () => void): void {
    this.raw.once('drain', fn);
  }
}

/** Frames handled per event-loop turn, over all connections (a frame's action takes well under a millisecond). */
const FRAMES_PER_TURN = 32;

export class WsTransport {
  readonly #wss: WebSocketServer;
  readonly #connections = new Set<WsConnection>();
  /** Set by `drain`: no new connections. */
  #draining = false;
  /** What each open connection authenticated with: to close it when its token is revoked or its tenant reloads. */
  readonly #credentials = new Map<WsConnection, { token: string | undefined; principal: Principal; session?: string | undefined; expiresAt?: number | undefined }>();
  /** Open connections per principal key and per tenant (entries removed at zero). */
  readonly #perPrincipal = new Map<string, number>();
  /** Unsent-data budgets of the principals and tenants with open connections. */
  readonly #principalBudgets = new Map<string, UnsentBudget>();
  readonly #tenantBudgets = new Map<string, UnsentBudget>();
  readonly #perTenant = new Map<string, number>();
  readonly #heartbeat: NodeJS.Timeout;
  /** Frames of every connection share each event-loop turn: a burst of frames never holds the loop (`/healthz`, other clients). */
  readonly #frames = new LoopShare(FRAMES_PER_TURN);

  constructor(private readonly options: WsTransportOptions) {
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayloadBytes, perMessageDeflate: false });
    this.#heartbeat = setInterval(() => this.#beat(), options.heartbeatMs);
    this.#heartbeat.unref();
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Bytes queued in every connection's socket, plus what the hub's lag queues hold for them (fan-out backlog). */
  bufferedBytes(): number {
    let total = 0;
    for (const conn of this.#connections) total += unsentOf(conn);
    return total;
  }

  /** Handles an HTTP upgrade; returns false when the path is not ours. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== this.options.path) return false;
    if (this.#draining) {
      // 503 so a load balancer sends the upgrade to another node (HAProxy: retry-on 503).
      refuse(socket, new ProtocolError('draining', 'this hub node is shutting down; connect again to reach another node'));
      return true;
    }
    const refusal = this.options.guard?.(req);
    if (refusal) {
      refuse(socket, refusal);
      return true;
    }
    const token = tokenFromRequest(req.headers, url);
    const principal = this.options.auth.authenticate(token);
    if (!principal && this.options.resolve) {
      this.options.resolve(req, token).then(
        (edge) => {
          if (socket.destroyed) return;
          if (edge.kind === 'ok') return void this.#admit(req, socket, head, edge.principal, token, edge);
          if (edge.kind === 'refused') return refuse(socket, new ProtocolError(edge.error, edge.message));
          refuse(socket, new ProtocolError('unauthorized', 'a valid token is required (Authorization: Bearer <token> or ?token=)'));
        },
        (err: unknown) => {
          this.options.logger.error('resolving a sign-in failed', errorFields(err));
          refuse(socket, new ProtocolError('internal_error', 'internal error'));
        },
      );
      return true;
    }
    if (!principal) {
      refuse(socket, new ProtocolError('unauthorized', 'a valid token is required (Authorization: Bearer <token> or ?token=)'));
      return true;
    }
    this.#admit(req, socket, head, principal, token, undefined);
    return true;
  }

  /** The upgrade of an authenticated caller: tenant, caps, then the WebSocket (`edge`: how sign-in named it). */
  #admit(req: IncomingMessage, socket: Duplex, head: Buffer, principal: Principal, token: string | undefined, edge: (EdgeAuth & { kind: 'ok' }) | undefined): void {
    if (this.#draining) return refuse(socket, new ProtocolError('draining', 'this hub node is shutting down; connect again to reach another node'));
    const tenantRefusal = this.options.refuse?.(principal);
    if (tenantRefusal) {
      return refuse(socket, tenantRefusal);
    }
    if (this.#connections.size >= this.options.maxConnections) {
      refuse(socket, new ProtocolError('hub_connections_full', `the hub holds its maximum of ${this.options.maxConnections} connections; try again later`));
      return;
    }
    const principalKey = keyOf(principal);
    if ((this.#perPrincipal.get(principalKey) ?? 0) >= this.options.maxConnectionsPerPrincipal) {
      refuse(socket, new ProtocolError('too_many_connections', `at most ${this.options.maxConnectionsPerPrincipal} open connections per user; close one first`));
      return;
    }
    if ((this.#perTenant.get(principal.tenant) ?? 0) >= this.options.maxConnectionsPerTenant) {
      refuse(socket, new ProtocolError('too_many_connections', `at most ${this.options.maxConnectionsPerTenant} open connections per tenant; close one first`));
      return;
    }
    // Counted from the upgrade on, so a burst of upgrades cannot overshoot the caps.
    increment(this.#perPrincipal, principalKey);
    increment(this.#perTenant, principal.tenant);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      decrement(this.#perPrincipal, principalKey);
      decrement(this.#perTenant, principal.tenant);
    };
    socket.once('close', release);
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, socket, principal, release, token, edge));
  }

  #accept(ws: WebSocket, raw: Duplex, principal: Principal, release: () => void, token: string | undefined, edge: (EdgeAuth & { kind: 'ok' }) | undefined): void {
    const budget = this.#budgetOf(principal);
    const conn = new WsConnection(ws, raw, this.options.maxBufferedBytes, this.options.onServerClose, budget);
    this.#connections.add(conn);
    this.#credentials.set(conn, { token, principal, session: edge?.session, expiresAt: edge?.expiresAt });
    // A bearer JWT's socket lives until the token expires; a session's until the session ends (`closeSession`).
    const expiry = edge?.expiresAt === undefined ? undefined : atTime(edge.expiresAt, () => conn.close(TOKEN_EXPIRED_CLOSE_CODE, 'the access token expired: get a new one and reconnect'));
    if (edge?.session) this.options.sessionSockets?.socketOpened(edge.session);
    const router = this.options.routerFor(principal);
    const ctx: RpcContext = { conn, principal, state: router.newConnectionState() };
    // A socket that never initializes holds a slot and memory for nothing: close it after a while.
    const initializeTimer = setTimeout(() => {
      if (ctx.state.protocolVersion === undefined) conn.close(TransportCloseCode.InitializeTimeout, 'initialize was not completed in time');
    }, this.options.initializeTimeoutMs);
    initializeTimer.unref();
    const flow = new InboundFlowControl(ws, router, ctx);
    const inbox = new FrameInbox(router, ctx, this.#frames, flow, (err) => this.options.logger.error('frame handling failed', errorFields(err)));
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (isBinary) {
        conn.send(encodeError(null, new ProtocolError('invalid_request', 'binary frames are not supported: send JSON-RPC as text frames')));
        return;
      }
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      const admission = flow.received(bytes.length);
      inbox.push(bytes.toString('utf8'), admission);
    });
    ws.on('pong', () => {
      conn.alive = true;
    });
    ws.on('error', (err) => this.options.logger.warn('websocket error', { connection: conn.id, ...errorFields(err) }));
    ws.on('close', () => {
      flow.stop();
      clearTimeout(initializeTimer);
      expiry?.cancel();
      if (edge?.session) this.options.sessionSockets?.socketClosed(edge.session);
      release();
      this.#connections.delete(conn);
      this.#credentials.delete(conn);
      budget.forget(conn);
      this.#forgetIdleBudgets(principal);
      this.options.onClose(conn, principal);
    });
  }

  /** The principal's budget (created with its tenant's on its first connection). */
  #budgetOf(principal: Principal): UnsentBudget {
    const key = keyOf(principal);
    let budget = this.#principalBudgets.get(key);
    if (budget) return budget;
    let tenant = this.#tenantBudgets.get(principal.tenant);
    if (!tenant) {
      tenant = new UnsentBudget(this.options.maxUnsentBytesPerTenant ?? DEFAULT_MAX_UNSENT_PER_TENANT, unsentOf);
      this.#tenantBudgets.set(principal.tenant, tenant);
    }
    budget = new UnsentBudget(this.options.maxUnsentBytesPerPrincipal ?? DEFAULT_MAX_UNSENT_PER_PRINCIPAL, unsentOf, tenant);
    this.#principalBudgets.set(key, budget);
    return budget;
  }

  #forgetIdleBudgets(principal: Principal): void {
    const key = keyOf(principal);
    if ((this.#perPrincipal.get(key) ?? 0) === 0) this.#principalBudgets.delete(key);
    if ((this.#perTenant.get(principal.tenant) ?? 0) === 0) this.#tenantBudgets.delete(principal.tenant);
  }

  #beat(): void {
    for (const conn of this.#connections) {
      if (!conn.alive) {
        conn.socket.terminate();
        continue;
      }
      conn.alive = false;
      conn.socket.ping();
    }
  }

  /** Closes every connection of one tenant (its hub was replaced: they must reconnect to the new one). */
  closeTenant(tenant: string, code: number, reason: string): void {
    for (const [conn, { principal }] of this.#credentials) if (principal.tenant === tenant) conn.close(code, reason);
  }

  /** After a token reload: closes (4401) every connection whose token no longer names its principal; returns how many. */
  closeRevoked(): number {
    let closed = 0;
    for (const [conn, { token, principal, session, expiresAt }] of this.#credentials) {
      // Sign-in sockets are not the token file's: they close at their token's expiry or session's end.
      if (session !== undefined || expiresAt !== undefined || stillValid(this.options.auth, token, principal)) continue;
      conn.close(TransportCloseCode.TokenRevoked, 'token revoked');
      closed++;
    }
    return closed;
  }

  /** Closes the sockets opened with a sign-in session that ended (logout, refresh refused, role changed). */
  closeSession(session: string, reason: string): void {
    for (const [conn, cred] of this.#credentials) if (cred.session === session) conn.close(TOKEN_EXPIRED_CLOSE_CODE, reason.slice(0, 120));
  }

  /**
   * Drain: refuses new upgrades (503) and closes every connection with `Draining` (4012), which
   * tells clients to reconnect at once; the load balancer sends them to another node.
   */
  drain(): void {
    this.#draining = true;
    for (const conn of this.#connections) conn.close(TransportCloseCode.Draining, 'this hub node is draining: reconnect now');
  }

  /** Closes every connection with 1001 (going away). */
  close(): void {
    clearInterval(this.#heartbeat);
    for (const conn of this.#connections) conn.close(CloseCode.GoingAway, 'server shutting down');
    this.#wss.close();
  }
}

/**
 * Flow control instead of loss: when a connection sends faster than its budget (or its frames
 * queue up faster than they are handled), stop reading its socket until it is back under budget.
 * TCP then slows the sender; nothing it sent is dropped. Only frames beyond the router's overdraft
 * are refused (see `RpcRouter.admit`).
 */
class InboundFlowControl {
  /** Frames read but not yet handled; past this many, reading pauses until they are. */
  static readonly maxQueuedFrames = 256;
  /** Longest wait between budget checks while paused. */
  static readonly maxPauseStepMs = 250;
  #queued = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ws: WebSocket,
    private readonly router: RpcRouter,
    private readonly ctx: RpcContext,
  ) {}

  received(bytes: number): Admission {
    this.#queued++;
    const admission = this.router.admit(this.ctx, bytes);
    if (!this.#timer) this.#check();
    return admission;
  }

  handled(): void {
    this.#queued--;
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #check(): void {
    this.#timer = undefined;
    if (this.ws.readyState !== WebSocket.OPEN) return;
    const wait = Math.max(this.router.resumeDelayMs(this.ctx.state), this.#queued > InboundFlowControl.maxQueuedFrames ? 1 : 0);
    if (wait <= 0) {
      if (this.ws.isPaused) this.ws.resume();
      return;
    }
    if (!this.ws.isPaused) this.ws.pause();
    this.#timer = setTimeout(() => this.#check(), Math.min(wait, InboundFlowControl.maxPauseStepMs));
  }
}

function keyOf(principal: Principal): string {
  return `${principal.tenant}\u0000${principal.user}`;
}

function increment(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 0) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

function refuse(socket: Duplex, err: ProtocolError): void {
  socket.end(upgradeRefusalOf(err, (status) => STATUS_CODES[status] ?? 'Error'));
}
