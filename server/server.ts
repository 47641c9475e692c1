/**
 * The composition root: picks the storage (SQLite files with `dataDir`, a PostgreSQL store with
 * `storeUrl`, memory without either), opens one `TenantStack` per tenant the authenticator names
 * (hub, agent runner, JSON-RPC methods, HTTP routes and features on that tenant's own log), and
 * routes every WebSocket connection and HTTP request to its caller's stack. The WebSocket
 * transport, the HTTP server, connection caps, `/healthz` and `/metrics` are the server's own.
 * Its caller chooses the rest from configuration: `server/main.ts` (the CLI) passes the
 * authenticator, the feature list and the app directory; tests pass their own. Only this module
 * and `tenant-stack.ts` see the concrete hub, routers and runner next to each other: features get
 * `FeatureContext` (the `HubPort` and the registration side of the routers), the hub gets its
 * log through the `ActionLog` port and its connections through `Connection`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Role, tokenFromRequest, type Authenticator, type Principal } from './auth/auth.js';
import type { AgentProvider } from './agents/agent.js';
import { demoAgent, remoteAgent } from './agents/demo-agent.js';
import type { Hub, HubLimits } from './hub/hub.js';
import { DEFAULT_FANOUT_LIMITS } from './hub/fanout.js';
import type { RateLimit } from './ahp/rpc.js';
import type { Logger } from './log.js';
import { errorFields, errorMessage } from './log.js';
import { isStorageIoError, stateTooLargeToLoad, tenantTooLargeToLoad, tenantUnavailable } from './tenant-refusals.js';
import type { AgentLeaseStore } from './storage/postgres-agent-leases.js';
import { PostgresStore } from './storage/postgres-store.js';
import type { CollabLog } from './collab/collab-log.js';
import { PostgresClusterBus } from './cluster-bus/postgres-bus.js';
import { memoryTenantLogs, sqliteTenantLogs, tenantDir, tenantLogsOf, type TenantLogs } from './storage/tenant-logs.js';
import { migrateSingleLogDataDir } from './migrate-data-dir.js';
import { TenantStack } from './tenant-stack.js';
import { drainNode } from './drain.js';
import { HttpRouter, ProtocolError, sendError, sendJson, sendJsonAs, sendNoRoute, startOk } from './transport/http-router.js';
import { serveStatic } from './transport/static-files.js';
import { TransportCloseCode, WsTransport } from './transport/ws-transport.js';
import { capHttpConnections } from './transport/http-connection-cap.js';
import { StreamSlots, streamSlotLimitsFor, type StreamSlotLimits } from './transport/stream-slots.js';
import { loopbackRefusal } from './transport/loopback-guard.js';
import { lockDataDir, type DataDirLock } from './storage/data-dir-lock.js';
import { HubMetrics } from './metrics.js';
import { secureDataDir } from './agents/agent-workspace.js';
import type { Feature } from './feature-contract.js';
import { retryWithBackoff } from './retry-backoff.js';
import type { OidcAuth } from './auth/oidc/oidc-auth.js';
import { registerSignInRoutes } from './auth/oidc/sign-in-routes.js';
import { edgeCaller } from './auth/oidc/edge.js';

export type { Feature, FeatureContext } from './feature-contract.js';

export interface HubServerConfig {
  readonly host: string;
  /** 0 picks any free port. */
  readonly port: number;
  /** Directory for the SQLite log; undefined keeps everything in memory (tests, demos). */
  readonly dataDir: string | undefined;
  readonly sqliteSynchronous?: 'normal' | 'full';
  /** A postgres:// URL: the log lives in PostgreSQL, shared by every hub given the same URL (cluster). */
  readonly storeUrl?: string | undefined;
  /** Cluster mode: a session's agent lease expires this long after its process stops renewing it. */
  readonly agentLeaseTtlMs?: number;
  /** Cluster drain: /healthz answers 503 at least this long before the node closes (docs/cluster.md). */
  readonly drainGraceMs?: number;
  /** Cluster mode: time between compaction rounds of each tenant's shared log (default 60 s). */
  readonly compactIntervalMs?: number;
  /** A remote agent's turn interrupted by a restart stays open this long for the agent to come back (docs/continuity.md). */
  readonly remoteAgentGraceMs?: number;
  readonly auth: Authenticator;
  /** Sign-in with OpenID Connect (docs/sign-in.md): its `authenticator` is then the one used, not `auth`. */
  readonly signIn?: OidcAuth | undefined;
  readonly logger: Logger;
  /** Built browser app to serve at `/`; absent → `/` answers 404. */
  readonly staticDir?: string | undefined;
  /**
   * The agent providers of one tenant (called once per tenant: providers keep per-session state,
   * and two tenants may use the same session id). `stateDir` is the tenant's directory under the
   * data directory (undefined in memory). Default: the demo and remote agents.
   */
  readonly providers?: (tenant: string, stateDir: string | undefined) => readonly AgentProvider[];
  readonly defaultProvider?: string;
  readonly limits?: Partial<HubLimits>;
  readonly rateLimit?: RateLimit;
  readonly maxPayloadBytes?: number;
  /** WebSocket connections in total, per principal (tenant + user) and per tenant. */
  readonly maxConnections?: number;
  readonly maxConnectionsPerPrincipal?: number;
  readonly maxConnectionsPerTenant?: number;
  /** Unsent bytes all connections of one user / one tenant may hold together (default 32 MiB / 256 MiB; docs/limits.md). */
  readonly maxUnsentBytesPerPrincipal?: number;
  readonly maxUnsentBytesPerTenant?: number;
  /** A WebSocket that has not completed `initialize` this long after connecting is closed (4408). */
  readonly initializeTimeoutMs?: number;
  /** Plain HTTP connections (not upgraded); at the cap the oldest idle or half-open one is dropped. */
  readonly maxHttpConnections?: number;
  /** Caps on SSE/prompt streams (default: from `maxHttpConnections`, see `streamSlotLimitsFor`). */
  readonly streamSlots?: Partial<StreamSlotLimits>;
  /** At the HTTP cap, a connection idle for less than this is not dropped for a newcomer (ms). */
  readonly httpIdleGraceMs?: number;
  /** How long a client may take to send request headers, and a whole request (ms). */
  readonly headersTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  readonly heartbeatMs?: number;
  readonly features?: readonly Feature[];
  readonly now?: () => number;
}

export interface HubServer {
  readonly url: string;
  readonly wsUrl: string;
  readonly port: number;
  /** The first tenant's hub (dev mode: the only one). */
  readonly hub: Hub;
  /** A tenant's hub; undefined for a tenant the authenticator does not name. */
  hubOf(tenant: string): Hub | undefined;
  readonly http: Server;
  /** Drains and stops: closes sockets, flushes the log, writes a snapshot. Idempotent. */
  close(): Promise<void>;
  /**
   * Cluster drain (SIGTERM with a shared log, docs/cluster.md): /healthz answers 503, new
   * connections and requests are refused (503), sockets close with 4012 (reconnect now), the
   * agents stop and their running turns' leases go to another node; then `close`. Idempotent.
   */
  drain(): Promise<void>;
  /**
   * After the authenticator's tokens changed (SIGHUP): closes WebSockets (4401) and ends streams
   * whose token no longer names the same principal. New requests are checked by the new tokens already.
   */
  closeRevoked(): { sockets: number; streams: number };
}

export async function startHubServer(config: HubServerConfig): Promise<HubServer> {
  const logger = config.logger;
  const signIn = config.signIn;
  const auth = signIn?.authenticator ?? config.auth;
  const now = config.now ?? Date.now;
  const newId = (): string => randomUUID();
  const providersFor = config.providers ?? (() => [demoAgent, remoteAgent]);
  const metrics = new HubMetrics();
  // The lock comes first: a second process must not even read a log another one is writing.
  const lock: DataDirLock | undefined = config.dataDir && !config.storeUrl ? lockDataDir(config.dataDir) : undefined;
  // Logs and snapshots unreadable to anything but the hub's user (agents may run as another one).
  if (lock) secureDataDir(config.dataDir!);
  let storage: Storage;
  try {
    storage = await openStorage(config, logger);
  } catch (err) {
    lock?.release();
    throw err;
  }
  // Dev mode makes every caller the admin: only this machine's programs and pages may call.
  const devGuard = auth.enforced ? undefined : (req: IncomingMessage) => loopbackRefusal(req.headers);
  // Cluster mode: the ephemeral channel between processes (presence), never the durable log.
  const bus = config.storeUrl ? new PostgresClusterBus({ url: config.storeUrl, onConnectionError: (err) => logger.warn('cluster bus connection lost; reconnecting', errorFields(err)) }) : undefined;

  // One stack per tenant, opened now: every tenant's interrupted turns are ended at start, and no
  // request ever waits for a stack to open.
  const stacks = new Map<string, TenantStack>();
  /** Set once `close` has begun: tenants being opened or reloaded in the background give up. */
  let closing: Promise<void> | undefined;
  // This process's name on the cluster's agent leases (every tenant's keeper holds leases as it).
  const node = newId();
  const openStack = async (tenant: string, leaseNode: string): Promise<TenantStack> =>
    TenantStack.open({
      tenant,
      log: await storage.logs.open(tenant),
      leases: storage.leasesFor?.(tenant, leaseNode),
      collabLog: storage.collabLogFor?.(tenant),
      compactIntervalMs: config.compactIntervalMs,
      remoteAgentGraceMs: config.remoteAgentGraceMs,
      providers: providersFor(tenant, config.dataDir === undefined ? undefined : tenantDir(config.dataDir, tenant)),
      defaultProvider: config.defaultProvider,
      limits: config.limits,
      rateLimit: config.rateLimit,
      auth: auth,
      features: config.features ?? [],
      metrics,
      bus,
      logger,
      now,
      newId,
    });
  // Tenants whose log cannot be opened for a storage reason (full disk, read-only data dir): the
  // hub starts without them, refuses their requests with 503 storage_unavailable and keeps trying.
  const unavailable = new Map<string, string>();
  // Tenants whose log holds more state than this hub may load: refused until a restart (tenant-refusals.ts).
  const refusedAtStart = new Map<string, ProtocolError>();
  const openWhenPossible = (tenant: string): Promise<void> =>
    retryWithBackoff(
      async () => {
        const stack = await openStack(tenant, node);
        if (closing !== undefined) return void (await closeStack(stack));
        stacks.set(tenant, stack);
        unavailable.delete(tenant);
        watch(stack);
        logger.warn('tenant storage is back; the tenant is served again', { tenant });
      },
      { firstWaitMs: 500, maxWaitMs: 5_000, waitFirst: true, stopped: () => closing !== undefined, failed: (err) => unavailable.set(tenant, errorMessage(err)) },
    );
  try {
    for (const tenant of auth.tenants) {
      try {
        stacks.set(tenant, await openStack(tenant, node));
      } catch (err) {
        const tooLarge = stateTooLargeToLoad(err);
        if ((!isStorageIoError(err) && !tooLarge) || (stacks.size === 0 && tenant === auth.tenants[auth.tenants.length - 1])) throw err;
        if (tooLarge) {
          logger.error('a tenant is refused: its log holds more state than this hub can load; the other tenants start', { tenant, heldChars: tooLarge.heldChars, maxChars: tooLarge.maxChars, err: tooLarge.message });
          refusedAtStart.set(tenant, tenantTooLargeToLoad(tenant));
          continue;
        }
        logger.error("cannot open a tenant's log; starting without it and retrying", { tenant, ...errorFields(err) });
        unavailable.set(tenant, errorMessage(err));
      }
    }
    if (stacks.size === 0) throw new Error("no tenant's log could be opened");
  } catch (err) {
    for (const stack of stacks.values()) {
      await stack.stopAgents().catch(() => undefined);
      await stack.close().catch(() => undefined);
    }
    await bus?.close();
    await storage.close();
    lock?.release();
    throw err;
  }
  const defaultStack = stacks.get(auth.tenants.find((t) => stacks.has(t))!)!;
  /**
   * The caller's stack. No principal (no valid token) gets the first tenant's routes, which only
   * answer 401 or public routes. A principal always has a stack, or its tenant's storage is
   * unavailable (503): the authenticator names every tenant up front, and a stack of another
   * tenant must never stand in for a missing one.
   */
  const stackOf = (principal: Principal | undefined): TenantStack => {
    if (!principal) return defaultStack;
    const stack = stacks.get(principal.tenant);
    if (stack) return stack;
    if (unavailable.has(principal.tenant) || refusedAtStart.has(principal.tenant)) throw refusedAtStart.get(principal.tenant) ?? tenantUnavailable();
    throw new Error(`internal: no stack for tenant ${JSON.stringify(principal.tenant)}; the authenticator must list every tenant`);
  };

  // Routes of the server itself, not of a tenant. No hub-wide counters here: /healthz is public,
  // and a sequence number would tell every caller how busy some tenant is. 503 only while draining;
  // storage failing is `degraded` (see below).
  const serverRoutes = new HttpRouter(auth, logger.child({ component: 'http' }));
  if (signIn) registerSignInRoutes(serverRoutes, signIn, () => signIn.options.publicUrl ?? `http://${hostForUrl}:${port}`, logger.child({ component: 'sign-in' }));
  /** Set once `drain` began: the load balancer takes this node out, nothing new is taken. */
  let draining = false;
  serverRoutes.add(
    'GET',
    '/healthz',
    (_req, res) => {
      if (draining) return sendJsonAs(res, 'draining', { status: 'draining', message: 'this hub node is shutting down; its clients move to the other nodes' });
      // The reason names the database and the tenant's partition: it goes to the process log, while
      // this public answer stays generic.
      const problem = [...unavailable.values()][0] ?? [...stacks.values()].map((s) => s.hub.storageProblem).find((p) => p !== undefined);
      // Up, with storage failing (issue 33.6): still 200, since the node answers every request (with
      // named refusals) and a load balancer must not take every node out when the database is
      // away for all of them; one that prefers healthy nodes checks `status` (docs/operations.md).
      if (problem !== undefined) sendJson(res, { status: 'degraded', storage: 'failing', message: 'an action log cannot take writes: writes are refused by name; the hub log says why' });
      else sendJson(res, { status: 'ok' });
    },
    { public: true },
  );
  serverRoutes.add('GET', '/metrics', async (_req, res, { principal }) => {
    if (auth.enforced && principal.role !== Role.Admin) throw new ProtocolError('permission_denied', 'metrics are for admin tokens only');
    const { contentType, text } = await metrics.render();
    startOk(res, { 'content-type': contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' }).end(text);
  });

  // A plain GET of the WebSocket endpoint answers what its upgrade would for the same token: 401
  // when it is missing or invalid (a browser never sees a refused upgrade's status, so clients ask
  // here; see AhpClientOptions.refusalProbe), 426 when the token is fine.
  serverRoutes.add('GET', '/ahp', () => {
    throw new ProtocolError('upgrade_required', 'this is the AHP WebSocket endpoint: connect with a WebSocket upgrade');
  });

  // Known once listening (the sign-in routes' default public address uses them).
  let port = 0;
  const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
  const maxWsConnections = config.maxConnections ?? 10_000;
  const ws = new WsTransport({
    path: '/ahp',
    auth: auth,
    routerFor: (principal) => stackOf(principal).rpc,
    logger: logger.child({ component: 'ws' }),
    maxPayloadBytes: config.maxPayloadBytes ?? 1024 * 1024,
    // The hubs' bound on unsent data, applied to whatever else sends on a socket too.
    maxBufferedBytes: (config.limits?.fanout ?? DEFAULT_FANOUT_LIMITS).maxBufferedBytes,
    heartbeatMs: config.heartbeatMs ?? 30_000,
    maxConnections: maxWsConnections,
    // One user may hold a tenth of the hub's connections and one tenant half, so neither can fill
    // it (1,000 and 5,000 of the default 10,000). Dev mode has one principal: its cap is the hub's.
    maxConnectionsPerPrincipal: config.maxConnectionsPerPrincipal ?? (auth.enforced ? Math.max(1, Math.floor(maxWsConnections / 10)) : maxWsConnections),
    maxConnectionsPerTenant: config.maxConnectionsPerTenant ?? (auth.enforced ? Math.max(1, Math.floor(maxWsConnections / 2)) : maxWsConnections),
    maxUnsentBytesPerPrincipal: config.maxUnsentBytesPerPrincipal,
    maxUnsentBytesPerTenant: config.maxUnsentBytesPerTenant,
    initializeTimeoutMs: config.initializeTimeoutMs ?? 10_000,
    guard: devGuard,
    resolve: signIn && ((req, token) => signIn.resolve(token, req.headers)),
    sessionSockets: signIn,
    refuse: (principal) => (stacks.has(principal.tenant) ? undefined : (refusedAtStart.get(principal.tenant) ?? tenantUnavailable())),
    onServerClose: (code) => metrics.connectionClosedByServer(code),
    onClose: (conn, principal) => stacks.get(principal.tenant)?.hub.disconnect(conn),
  });
  signIn?.onSessionEnded((session, reason) => ws.closeSession(session.id, reason));
  metrics.gauge('ahp_hub_connections', 'Open WebSocket connections.', () => ws.connectionCount);
  if (signIn) metrics.gauge('ahp_hub_sign_in_sessions', 'App sign-in sessions (OpenID Connect) held in memory.', () => signIn.sessions.size);
  metrics.gauge('ahp_hub_fanout_queue_bytes', 'Bytes queued to WebSocket clients and not yet written to their sockets.', () => ws.bufferedBytes());

  const maxHttpConnections = config.maxHttpConnections ?? 1_000;
  // Streams hold HTTP slots for their lifetime: bounded per principal and tenant, below the HTTP cap.
  const streams = new StreamSlots({ ...streamSlotLimitsFor(maxHttpConnections, auth.enforced), ...config.streamSlots });
  metrics.gauge('ahp_hub_sse_streams', 'Open long-lived HTTP streams (SSE events and prompts) of clients.', () => streams.open);
  metrics.gauge('ahp_hub_sse_streams_refused', 'Streams refused at a per-principal, per-tenant or hub cap (too_many_streams), since start.', () => streams.refused);
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    void (async () => {
      try {
        const refusal = devGuard?.(req);
        if (refusal) return sendError(res, refusal);
        if (!hasDecodablePath(req.url)) {
          return sendError(res, new ProtocolError('invalid_url', 'the request path is not valid percent-encoding'));
        }
        // Authenticated once, here: the tenant picks the routes, and the routers reuse the answer.
        // A request without a valid token goes to the first tenant's routes, which answer 401
        // wherever a token is needed: the same answer every tenant's routes would give.
        const token = tokenFromRequest(req.headers, new URL(req.url ?? '/', 'http://localhost'));
        const caller = await edgeCaller(auth, signIn, req, token, (p: Principal, r: ServerResponse) => streams.claim(p, r, token));
        if (await serverRoutes.handle(req, res, caller)) return;
        if (draining) return sendError(res, new ProtocolError('draining', 'this hub node is shutting down; send the request again to reach another node'));
        if (await stackOf(caller.principal).http.handle(req, res, caller)) return;
        if (config.staticDir && req.method === 'GET' && (await serveStatic(config.staticDir, req, res))) return;
        sendNoRoute(res, req.method, new URL(req.url ?? '/', 'http://x').pathname);
      } catch (err) {
        if (err instanceof ProtocolError && !res.headersSent) return sendError(res, err);
        logger.error('request failed', errorFields(err));
        if (!res.headersSent) sendError(res, new ProtocolError('internal_error', 'internal error'));
        else res.destroy();
      }
    })();
  };
  const headersTimeout = config.headersTimeoutMs ?? 15_000;
  const server = createServer(
    {
      headersTimeout,
      requestTimeout: config.requestTimeoutMs ?? 60_000,
      // How often Node enforces the two timeouts (its default, 30 s, lets them overshoot a lot).
      connectionsCheckingInterval: Math.min(5_000, headersTimeout),
    },
    onRequest,
  );
  // Hard ceiling for every socket (WebSockets included); the HTTP cap below is the finer one.
  server.maxConnections = maxWsConnections + maxHttpConnections;
  capHttpConnections(server, maxHttpConnections, config.httpIdleGraceMs ?? 1_000);
  server.on('upgrade', (req, socket, head) => {
    if (!ws.handleUpgrade(req, socket, head)) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
  });
  /**
   * A tenant's memory no longer matches its log (a batch in doubt was overtaken by another
   * process's records): that tenant alone is reloaded from the log, as a restart would, while the
   * process and every other tenant keep running. Its connections are closed (4503) so clients
   * reconnect and resume on the new hub; its agents stop, and in cluster mode the new stack holds
   * leases under a new name, so the turns the old one ran expire and are ended like a lost node's.
   */
  const reload = async (old: TenantStack, cause: Error): Promise<void> => {
    logger.error('reloading a tenant from its log', { tenant: old.tenant });
    // A batch abandoned on a failing disk: a reload now would meet the same disk and abandon the
    // next batch again. The failed hub refuses every request by name meanwhile (issue 33.6).
    if (isStorageIoError(cause) && old.log.probeWrite) {
      await retryWithBackoff(() => old.log.probeWrite!(), { firstWaitMs: 250, maxWaitMs: 2_000, waitFirst: true, stopped: () => closing !== undefined, failed: () => undefined });
    }
    await old.stopAgents().catch((err: unknown) => logger.warn('stopping agents of a reloaded tenant failed', errorFields(err)));
    ws.closeTenant(old.tenant, TransportCloseCode.TenantReloaded, 'the hub reloaded this tenant from its log: reconnect');
    await old.close().catch((err: unknown) => logger.warn('closing a reloaded tenant failed', errorFields(err)));
    await retryWithBackoff(
      async () => {
        const fresh = await openStack(old.tenant, newId());
        if (closing !== undefined) return void (await closeStack(fresh));
        stacks.set(old.tenant, fresh);
        watch(fresh);
        ws.closeTenant(old.tenant, TransportCloseCode.TenantReloaded, 'the hub reloaded this tenant from its log: reconnect');
        logger.warn('tenant reloaded from its log', { tenant: old.tenant });
      },
      { firstWaitMs: 250, maxWaitMs: 5_000, waitFirst: false, stopped: () => closing !== undefined, failed: (err) => logger.warn('reloading a tenant failed; retrying', { tenant: old.tenant, ...errorFields(err) }) },
    );
  };
  const watch = (stack: TenantStack): void => stack.hub.onFatal((err) => void reload(stack, err));
  for (const stack of stacks.values()) watch(stack);
  for (const tenant of unavailable.keys()) void openWhenPossible(tenant);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;

  const close = (): Promise<void> => {
    closing ??= (async () => {
      for (const stack of stacks.values()) await stack.stopAgents();
      ws.close();
      signIn?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      });
      for (const stack of stacks.values()) await stack.close();
      await bus?.close();
      await storage.close();
      lock?.release();
    })();
    return closing;
  };

  let drained: Promise<void> | undefined;
  const drain = (): Promise<void> =>
    (drained ??= drainNode({
      refuseNew: () => void (draining = true),
      closeSockets: () => ws.drain(),
      stacks: stacks.values(),
      leaseTtlMs: config.agentLeaseTtlMs ?? 5_000,
      graceMs: config.drainGraceMs ?? 2_000,
      logger,
      close,
    }));

  return {
    url: `http://${hostForUrl}:${port}`,
    wsUrl: `ws://${hostForUrl}:${port}/ahp`,
    port,
    hub: defaultStack.hub,
    hubOf: (tenant) => stacks.get(tenant)?.hub,
    http: server,
    close,
    drain,
    closeRevoked: () => {
      // Turns an agent runs for an owner who lost every token are ended too (issue 33.5e).
      for (const stack of stacks.values()) void stack.endTurnsOfRevokedOwners(auth);
      return { sockets: ws.closeRevoked(), streams: streams.endRevoked(auth) };
    },
  };
}

async function closeStack(stack: TenantStack): Promise<void> {
  await stack.stopAgents();
  await stack.close();
}

/** False for paths like `/%` or `/%zz` that no route or file can be named by. */
function hasDecodablePath(url: string | undefined): boolean {
  try {
    decodeURIComponent(new URL(url ?? '/', 'http://localhost').pathname);
    return true;
  } catch {
    return false;
  }
}

/** Where every tenant's log lives, and (cluster mode) its agent leases. */
interface Storage {
  readonly logs: TenantLogs;
  leasesFor?(tenant: string, node: string): AgentLeaseStore;
  collabLogFor?(tenant: string): CollabLog;
  close(): Promise<void>;
}

async function openStorage(config: HubServerConfig, logger: Logger): Promise<Storage> {
  const onConnectionError = (err: Error): void => logger.warn('PostgreSQL connection lost; it is replaced on next use', errorFields(err));
  if (config.storeUrl) {
    // One pool and one LISTEN connection for every tenant's partition; the store closes them.
    const store = await PostgresStore.open({ url: config.storeUrl, onConnectionError });
    const logs = tenantLogsOf((tenant) => store.actionLog(tenant));
    return {
      logs,
      leasesFor: (tenant, node) => store.agentLeases(tenant, { node, ttlMs: config.agentLeaseTtlMs ?? 5_000 }),
      collabLogFor: (tenant) => store.collabLog(tenant),
      close: async () => {
        await logs.close();
        await store.close();
      },
    };
  }
  if (config.dataDir) {
    const logs = sqliteTenantLogs(config.dataDir, config.sqliteSynchronous ?? 'normal');
    try {
      await migrateSingleLogDataDir(config.dataDir, logs, logger);
    } catch (err) {
      await logs.close();
      throw err;
    }
    return { logs, close: () => logs.close() };
  }
  const logs = memoryTenantLogs();
  return { logs, close: () => logs.close() };
}
