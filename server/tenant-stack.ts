/**
 * Everything one tenant owns, wired together: its hub on its own log partition, the agent runner
 * for its sessions, its JSON-RPC methods and HTTP routes, and its instances of the feature
 * modules. Tenants share nothing stateful: each stack's ids, `serverSeq`, replay window,
 * duplicate ledger and feature state are its own, so one tenant can neither see, guess nor
 * squat on another's sessions, nor watch its sequence numbers move.
 *
 * Built only by the composition root (`server.ts`), which routes each connection and request to
 * the stack of the caller's tenant.
 */
import type { Authenticator } from './auth/auth.js';
import type { AgentProvider } from './agents/agent.js';
import { AgentRunner, DEFAULT_REMOTE_AGENT_GRACE_MS, noSteering } from './agents/agent-runner.js';
import { DEFAULT_HUB_LIMITS, Hub, type HubLimits, type HubOptions } from './hub/hub.js';
import { StateTooLargeToLoadError } from './hub/load-guard.js';
import type { InterruptedTurn } from './hub/recovery.js';
import { registerAhpMethods, throttledDispatchHandler } from './ahp/ahp-methods.js';
import { RpcRouter, type RateLimit } from './ahp/rpc.js';
import { AgentLeaseKeeper } from './hub/agent-lease-keeper.js';
import { errorFields, type Logger } from './log.js';
import { turnDuration } from '../shared/state/selectors.js';
import type { ActionLog } from './storage/action-log.js';
import type { AgentLeaseStore } from './storage/postgres-agent-leases.js';
import { CLUSTER_BUS_SERVICE, tenantBus, type ClusterBus } from './cluster-bus/cluster-bus.js';
import { HttpRouter } from './transport/http-router.js';
import { COLLAB_LOG_SERVICE, type CollabLog } from './collab/collab-log.js';
import { DEFAULT_COMPACT_INTERVAL_MS, isCompactingLog, LogCompactor } from './hub/log-compactor.js';
import type { HubMetrics } from './metrics.js';
import type { Feature } from './feature-contract.js';
import { dispatchAsHub } from './hub/entry.js';

export interface TenantStackOptions {
  readonly tenant: string;
  readonly log: ActionLog;
  /** Cluster mode: this tenant's agent leases. */
  readonly leases?: AgentLeaseStore | undefined;
  readonly remoteAgentGraceMs?: number | undefined;
  readonly providers: readonly AgentProvider[];
  readonly defaultProvider: string | undefined;
  readonly limits?: Partial<HubLimits> | undefined;
  readonly rateLimit?: RateLimit | undefined;
  readonly auth: Authenticator;
  readonly features: readonly Feature[];
  readonly metrics: HubMetrics;
  readonly bus?: ClusterBus | undefined;
  /** Cluster mode: time between compaction rounds of the tenant's shared log (log-compactor.ts). */
  readonly compactIntervalMs?: number | undefined;
  /** Cluster mode: this tenant's shared update log of collaborative documents. */
  readonly collabLog?: CollabLog | undefined;
  readonly logger: Logger;
  readonly now: () => number;
  readonly newId: () => string;
}

export class TenantStack {
  readonly tenant: string;
  readonly hub: Hub;
  /** The tenant's log (server.ts probes it before reloading a tenant whose disk failed). */
  readonly log: ActionLog;
  readonly rpc: RpcRouter;
  readonly http: HttpRouter;
  readonly #runner: AgentRunner;
  readonly #leaseKeeper: AgentLeaseKeeper | undefined;
  readonly #compactor: LogCompactor | undefined;
  readonly #closers: Array<() => Promise<void> | void> = [];
  readonly #logger: Logger;
  readonly #now: () => number;

  static async open(options: TenantStackOptions): Promise<TenantStack> {
    const { metrics, providers } = options;
    const logger = options.logger.child({ tenant: options.tenant });
    const hub = await openHub(
      {
        log: metrics.timed(options.log),
        observer: metrics,
        logger: logger.child({ component: 'hub' }),
        now: options.now,
        newId: options.newId,
        agents: providers.map((p) => p.info),
        defaultProvider: options.defaultProvider ?? providers[0]!.info.provider,
        ...(options.limits ? { limits: options.limits } : {}),
      },
      options.tenant,
    );
    return new TenantStack(options, hub, logger);
  }

  private constructor(options: TenantStackOptions, hub: Hub, logger: Logger) {
    const { metrics, now, newId } = options;
    this.tenant = options.tenant;
    this.hub = hub;
    this.#logger = logger;
    this.#now = now;
    this.log = options.log;
    // Cluster mode: one process runs each session's agent; turns of a process that died are ended.
    this.#leaseKeeper = options.leases
      ? new AgentLeaseKeeper(hub, options.leases, logger.child({ component: 'leases' }), now, {
          // Leases a draining node handed over: its running turns carry on here, as after a restart.
          resume: (sessions) => this.#runner.resumeInterrupted(runningTurnsOf(hub, sessions)),
        })
      : undefined;
    // Cluster mode: the shared log is pruned on a schedule, one node at a time.
    this.#compactor = isCompactingLog(options.log)
      ? new LogCompactor(
          options.log,
          options.limits?.replayBufferSize ?? DEFAULT_HUB_LIMITS.replayBufferSize,
          options.compactIntervalMs ?? DEFAULT_COMPACT_INTERVAL_MS,
          (bytes) => metrics.logRetainedBytes(options.tenant, bytes),
          logger.child({ component: 'compactor' }),
          () => hub.serverSeq,
        )
      : undefined;
    this.#runner = new AgentRunner(hub, new Map(options.providers.map((p) => [p.info.provider, p])), logger.child({ component: 'agents' }), now, newId, noSteering, {
      remoteAgentGraceMs: options.remoteAgentGraceMs ?? DEFAULT_REMOTE_AGENT_GRACE_MS,
    });
    this.#runner.start();

    this.rpc = new RpcRouter(logger.child({ component: 'rpc' }), now, options.rateLimit, throttledDispatchHandler(hub), (conn, text) => hub.sendInOrder(conn, text));
    registerAhpMethods(this.rpc, hub);
    this.http = new HttpRouter(options.auth, logger.child({ component: 'http' }));
    metrics.gauge('ahp_hub_subscriptions', 'Channel subscriptions held by all connections.', () => hub.subscriptionCount);
    metrics.gauge('ahp_hub_resident_sessions', 'Sessions whose chat states this node holds in memory (the others are parked: docs/architecture.md, "Parked sessions").', () => hub.parking.residency.resident);
    metrics.gauge('ahp_hub_parked_sessions', 'Sessions this node keeps only a brief of; loaded again when someone subscribes or writes.', () => hub.parking.residency.parked);
    metrics.gauge('ahp_hub_state_chars', 'Upper estimate of the JSON characters all sessions and chats hold (bounded per user and tenant).', () => hub.stateChars);
    const agentStat = (key: 'processes' | 'refusals' | 'startFailures') => (): number => options.providers.reduce((n, p) => n + (p.stats?.()[key] ?? 0), 0);
    metrics.gauge('ahp_hub_agent_processes', 'Live agent processes (ACP providers).', agentStat('processes'));
    metrics.gauge('ahp_hub_agent_start_refusals', 'Agent starts refused at a process cap (agentLimitReached), since start.', agentStat('refusals'));
    metrics.gauge('ahp_hub_agent_start_failures', 'Agent processes that could not be started (spawn errors such as EMFILE), since start.', agentStat('startFailures'));
    hub.hook('metrics', {
      // Records another cluster process sequenced were counted there.
      afterCommit: (e) => {
        if (e.origin && !e.remote) metrics.dispatchAccepted();
      },
    });

    const services = new Map<string, unknown>();
    // Cluster mode: the ephemeral channel between processes (presence), never the durable log.
    if (options.bus) services.set(CLUSTER_BUS_SERVICE, tenantBus(options.bus, options.tenant));
    if (options.collabLog) services.set(COLLAB_LOG_SERVICE, options.collabLog);
    for (const feature of options.features) {
      const installed = feature.install({
        hub,
        tenant: options.tenant,
        rpc: this.rpc,
        http: this.http,
        runner: this.#runner,
        logger: logger.child({ feature: feature.name }),
        now,
        newId,
        auth: options.auth,
        services,
        metrics,
      });
      if (installed?.close) this.#closers.push(() => installed.close!());
    }
    // Turns a restart left open carry on or end (per provider), once every feature is listening.
    this.#runner.resumeInterrupted(hub.interruptedTurns);
  }

  /** First step of shutting down: no new agent work while connections drain. */
  /**
   * After a token reload (issue 33.5e): ends, with `chat/error` `tokenRevoked`, every turn an agent
   * of this process runs in a session whose owner no token names any more. A turn started by
   * another user in a session whose owner still has a token goes on: the agent works for the
   * session's owner. Returns how many turns were ended.
   */
  async endTurnsOfRevokedOwners(auth: Authenticator): Promise<number> {
    let ended = 0;
    for (const { chat, turnId } of this.#runner.runningTurns()) {
      const entry = this.hub.chatEntry(chat);
      const owner = entry ? this.hub.sessionEntry(entry.session)?.owner : undefined;
      const turn = entry?.state.activeTurn;
      if (owner === undefined || turn?.id !== turnId || (auth.knowsUser?.(this.tenant, owner) ?? true)) continue;
      try {
        await dispatchAsHub(this.hub, chat, {
          type: 'chat/error',
          turnId,
          duration: turnDuration(turn.startedAt, this.#now()),
          error: { errorType: 'tokenRevoked', message: "The session owner's token was revoked; the turn was ended." },
        });
        ended++;
      } catch (err) {
        // Ended meanwhile, or the log refuses writes: the log says which.
        this.#logger.warn('could not end the turn of a revoked owner', { chat, turnId, ...errorFields(err) });
      }
    }
    return ended;
  }

  stopAgents(): Promise<void> {
    return this.#runner.stop();
  }

  /**
   * Drain (SIGTERM in a cluster, docs/cluster.md): stops this node's agents, makes everything
   * they wrote durable, then hands their sessions' leases to another node and waits (at most
   * `timeoutMs`) until one took them. Without a cluster there is nothing to hand over.
   */
  async handOver(timeoutMs: number): Promise<{ handedOver: number; unclaimed: number }> {
    await this.#runner.stop();
    // With the log unreachable nothing more becomes durable: hand over what the log holds.
    let timer: NodeJS.Timeout | undefined;
    const unreachable = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([this.hub.drain().catch(() => undefined), unreachable]);
    clearTimeout(timer);
    return (await this.#leaseKeeper?.handOver(timeoutMs)) ?? { handedOver: 0, unclaimed: 0 };
  }

  /** Last step: features, then the hub (flush, final snapshot), then the lease keeper. */
  async close(): Promise<void> {
    for (const c of this.#closers) await c();
    await this.hub.close();
    await this.#compactor?.close();
    await this.#leaseKeeper?.close();
  }
}

/** The running turns of `sessions`, in the form the agent runner resumes after a restart. */
function runningTurnsOf(hub: Hub, sessions: readonly string[]): InterruptedTurn[] {
  const turns: InterruptedTurn[] = [];
  for (const session of sessions) {
    for (const chat of hub.sessionEntry(session)?.chats ?? []) {
      const turn = hub.chatEntry(chat)?.state.activeTurn;
      if (turn) turns.push({ chat, turnId: turn.id });
    }
  }
  return turns;
}

/** Opens the tenant's hub; a log too large to load is refused naming the tenant (load-guard.ts). */
async function openHub(options: HubOptions, tenant: string): Promise<Hub> {
  try {
    return await Hub.open(options);
  } catch (err) {
    if (err instanceof StateTooLargeToLoadError) throw new StateTooLargeToLoadError(err.heldChars, err.maxChars, tenant);
    throw err;
  }
}
