/**
 * The composition root: wires hub, agent runner, JSON-RPC, HTTP routes, WebSocket and feature
 * modules together, and picks the log (SQLite with `dataDir`, memory without) and the agents.
 * Its caller chooses the rest from configuration: `server/main.ts` (the CLI) passes the
 * authenticator, the feature list and the app directory; tests pass their own. Everything else
 * depends on interfaces.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Authenticator } from './auth/auth.js';
import type { AgentProvider } from './agents/agent.js';
import { AgentRunner } from './agents/agent-runner.js';
import { demoAgent, remoteAgent } from './agents/demo-agent.js';
import { Hub, type HubLimits } from './hub/hub.js';
import { registerAhpMethods, throttledDispatchHandler } from './hub/ahp-methods.js';
import { RpcRouter, type RateLimit } from './hub/rpc.js';
import type { Logger } from './log.js';
import { errorFields } from './log.js';
import type { ActionLog } from './storage/action-log.js';
import { MemoryActionLog } from './storage/memory-action-log.js';
import { PostgresActionLog } from './storage/postgres-action-log.js';
import { PostgresAgentLeases } from './storage/postgres-agent-leases.js';
import { AgentLeaseKeeper } from './hub/agent-lease-keeper.js';
import { SqliteActionLog } from './storage/sqlite-action-log.js';
import { HttpRouter, sendJson } from './transport/http-router.js';
import { serveStatic } from './transport/static-files.js';
import { WsTransport } from './transport/ws-transport.js';

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
  readonly auth: Authenticator;
  readonly logger: Logger;
  /** Built browser app to serve at `/`; absent → `/` answers 404. */
  readonly staticDir?: string | undefined;
  readonly providers?: readonly AgentProvider[];
  readonly defaultProvider?: string;
  readonly limits?: Partial<HubLimits>;
  readonly rateLimit?: RateLimit;
  readonly maxPayloadBytes?: number;
  readonly maxConnections?: number;
  readonly heartbeatMs?: number;
  readonly features?: readonly Feature[];
  readonly now?: () => number;
}

/** What a feature module (steering, permission replies, collaboration) gets to plug into. */
export interface FeatureContext {
  readonly hub: Hub;
  readonly rpc: RpcRouter;
  readonly http: HttpRouter;
  readonly runner: AgentRunner;
  readonly logger: Logger;
  readonly now: () => number;
  readonly newId: () => string;
  readonly auth: Authenticator;
  /**
   * Services features offer each other, per server instance (e.g. the interactions registry the
   * qwen-serve surface answers through). Features install in list order, so a feature finds
   * what the ones before it provided.
   */
  readonly services: Map<string, unknown>;
}

export interface Feature {
  readonly name: string;
  install(ctx: FeatureContext): { close?(): Promise<void> | void } | void;
}

export interface HubServer {
  readonly url: string;
  readonly wsUrl: string;
  readonly port: number;
  readonly hub: Hub;
  readonly http: Server;
  /** Drains and stops: closes sockets, flushes the log, writes a snapshot. Idempotent. */
  close(): Promise<void>;
}

export async function startHubServer(config: HubServerConfig): Promise<HubServer> {
  const logger = config.logger;
  const now = config.now ?? Date.now;
  const newId = (): string => randomUUID();
  const providers = config.providers ?? [demoAgent, remoteAgent];
  const log: ActionLog = config.storeUrl
    ? await PostgresActionLog.open({
        url: config.storeUrl,
        onConnectionError: (err) => logger.warn('PostgreSQL connection lost; it is replaced on next use', errorFields(err)),
      })
    : config.dataDir
      ? SqliteActionLog.open({ file: join(config.dataDir, 'hub.db'), synchronous: config.sqliteSynchronous ?? 'normal' })
      : new MemoryActionLog();
  const hub = await Hub.open({
    log,
    logger: logger.child({ component: 'hub' }),
    now,
    newId,
    agents: providers.map((p) => p.info),
    defaultProvider: config.defaultProvider ?? providers[0]!.info.provider,
    ...(config.limits ? { limits: config.limits } : {}),
  });
  // Cluster mode: one process runs each session's agent; turns of a process that died are ended.
  const leaseKeeper = config.storeUrl
    ? new AgentLeaseKeeper(
        hub,
        PostgresAgentLeases.open({
          url: config.storeUrl,
          node: newId(),
          ttlMs: config.agentLeaseTtlMs ?? 5_000,
          onConnectionError: (err) => logger.warn('PostgreSQL connection lost; it is replaced on next use', errorFields(err)),
        }),
        logger.child({ component: 'leases' }),
        now,
        { tickMs: Math.max(50, Math.floor((config.agentLeaseTtlMs ?? 5_000) / 4)) },
      )
    : undefined;
  const runner = new AgentRunner(hub, new Map(providers.map((p) => [p.info.provider, p])), logger.child({ component: 'agents' }), now, newId);
  runner.start();

  const rpc = new RpcRouter(logger.child({ component: 'rpc' }), now, config.rateLimit, throttledDispatchHandler(hub), (conn, text) => hub.sendInOrder(conn, text));
  registerAhpMethods(rpc, hub);
  const http = new HttpRouter(config.auth, logger.child({ component: 'http' }));
  http.add('GET', '/healthz', (_req, res) => {
    // 503 while a shared (cluster) log is unreachable, so a load balancer sends clients elsewhere.
    const problem = hub.storageProblem;
    if (problem !== undefined) sendJson(res, 503, { status: 'storage_unavailable', message: problem, serverSeq: hub.serverSeq });
    else sendJson(res, 200, { status: 'ok', serverSeq: hub.serverSeq });
  }, { public: true });

  const closers: Array<() => Promise<void> | void> = [];
  const services = new Map<string, unknown>();
  for (const feature of config.features ?? []) {
    const installed = feature.install({ hub, rpc, http, runner, logger: logger.child({ feature: feature.name }), now, newId, auth: config.auth, services });
    if (installed?.close) closers.push(() => installed.close!());
  }

  const ws = new WsTransport({
    path: '/ahp',
    auth: config.auth,
    router: rpc,
    logger: logger.child({ component: 'ws' }),
    maxPayloadBytes: config.maxPayloadBytes ?? 1024 * 1024,
    heartbeatMs: config.heartbeatMs ?? 30_000,
    maxConnections: config.maxConnections ?? 10_000,
    onClose: (conn) => hub.disconnect(conn),
  });

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      try {
        if (await http.handle(req, res)) return;
        if (config.staticDir && req.method === 'GET' && (await serveStatic(config.staticDir, req, res))) return;
        sendJson(res, 404, { code: 'not_found', message: `no route for ${req.method} ${new URL(req.url ?? '/', 'http://x').pathname}` });
      } catch (err) {
        logger.error('request failed', errorFields(err));
        if (!res.headersSent) sendJson(res, 500, { code: 'internal_error', message: 'internal error' });
        else res.destroy();
      }
    })();
  });
  server.on('upgrade', (req, socket, head) => {
    if (!ws.handleUpgrade(req, socket, head)) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
  });
  hub.onFatal(() => {
    // The log refused an append: state in memory can no longer be made durable. Stop serving so a
    // supervisor restarts the process, which recovers from what the log holds.
    logger.error('fatal storage failure; exiting');
    process.exitCode = 1;
    void close();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await runner.stop();
      ws.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      });
      for (const c of closers) await c();
      await hub.close();
      await leaseKeeper?.close();
      await log.close();
    })();
    return closing;
  };

  return { url: `http://${hostForUrl}:${port}`, wsUrl: `ws://${hostForUrl}:${port}/ahp`, port, hub, http: server, close };
}
