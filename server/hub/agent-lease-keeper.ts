/**
 * Cluster mode: a session's in-process agent runs on exactly one hub process at a time, and a
 * turn whose process died is ended, not left running forever.
 *
 * The process that sequences a `chat/turnStarted` runs the agent (the runner ignores turn starts
 * folded from other processes) and takes the session's lease here. Every process renews its
 * leases and, on the same tick, claims leases that expired — their holder stopped renewing, so it
 * is dead or cut off from PostgreSQL (and then it cannot append either: its agent can write
 * nothing more). The claimer ends every turn still active in those sessions with `chat/error`
 * (`errorType: "hubNodeLost"`), through the normal write path.
 *
 * A node that drains (SIGTERM) instead hands its leases over (`handOver`): its agents are stopped
 * and everything they wrote is durable first, then the leases of sessions with a running turn are
 * marked for another node, which claims them on its next tick, folds the log up to the head and
 * resumes those turns as after a restart (`resume`: the agent runner's `resumeInterrupted`).
 */
import { turnDuration } from '../../shared/state/selectors.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import type { AgentLeaseStore } from '../storage/postgres-agent-leases.js';
import type { LeaseClaims } from '../storage/postgres-lease-sweeper.js';
import type { Hub } from './hub.js';
import { dispatchAsHub } from './entry.js';

export interface AgentLeaseKeeperOptions {
  /** Carries on the running turns of sessions whose lease this node claimed from a draining one. */
  readonly resume: (sessions: readonly string[]) => void;
}

export class AgentLeaseKeeper {
  readonly #hub: Hub;
  readonly #leases: AgentLeaseStore;
  readonly #logger: Logger;
  readonly #now: () => number;
  /** Ends this keeper's part in the store's lease sweep (resolves once a sweep in flight was handled). */
  readonly #offSweep: () => Promise<void>;
  readonly #off: () => void;
  readonly #resume: (sessions: readonly string[]) => void;
  /** Lease takes not finished yet: a hand-over waits for them, or it could miss a lease. */
  readonly #holding = new Set<Promise<void>>();
  /** Sessions whose lease this node took or claimed (the candidates of a hand-over). */
  readonly #held = new Set<string>();

  constructor(hub: Hub, leases: AgentLeaseStore, logger: Logger, now: () => number, options: AgentLeaseKeeperOptions) {
    this.#hub = hub;
    this.#leases = leases;
    this.#logger = logger;
    this.#now = now;
    this.#resume = options.resume;
    this.#off = hub.hook('leases', {
      // Delivered phase: the lease is taken (a database write) for a turn start that is durable.
      afterDurable: (e) => {
        if (e.remote || e.action.type !== 'chat/turnStarted') return;
        const session = hub.chatEntry(e.channel)?.session;
        if (session === undefined) return;
        this.#held.add(session);
        const holding = leases.hold(session).catch((err: unknown) => logger.warn('could not take the agent lease', { session, ...errorFields(err) }));
        this.#holding.add(holding);
        void holding.finally(() => this.#holding.delete(holding));
      },
    });
    this.#offSweep = leases.onSweep((claims) => this.#claimed(claims));
  }

  /** What the store's lease sweep claimed in this tenant (it already renewed this node's leases). */
  async #claimed(claims: LeaseClaims): Promise<void> {
    try {
      for (const session of claims.expired) await this.#endOrphanedTurns(session);
      const handed = claims.handedOver;
      if (handed.length > 0) {
        // The draining node made everything its agents wrote durable before handing over: fold
        // up to the log's head, so each turn resumes from its last record.
        await this.#hub.decisionTurn();
        for (const session of handed) this.#held.add(session);
        this.#logger.info('took over agent leases from a draining node', { sessions: handed.length });
        this.#resume(handed);
      }
    } catch (err) {
      this.#logger.warn('handling claimed agent leases failed', errorFields(err));
    }
  }

  async #endOrphanedTurns(session: string): Promise<void> {
    for (const chat of this.#hub.sessionEntry(session)?.chats ?? []) {
      const turn = this.#hub.chatEntry(chat)?.state.activeTurn;
      if (!turn) continue;
      try {
        await dispatchAsHub(this.#hub, chat, {
          type: 'chat/error',
          turnId: turn.id,
          duration: turnDuration(turn.startedAt, this.#now()),
          error: { errorType: 'hubNodeLost', message: 'The hub process running this turn stopped; the turn was ended.' },
        });
        this.#logger.info('ended a turn whose hub process stopped', { session, chat, turnId: turn.id });
      } catch (err) {
        // Ended meanwhile (completed, cancelled, or another process got there first): nothing to do.
        this.#logger.debug('orphaned turn already ended', { chat, ...errorFields(err) });
      }
    }
  }

  /**
   * Drain: call after the agents stopped and the hub drained. Hands the leases of sessions with a
   * running turn to the other nodes and waits (at most `timeoutMs`) until one claimed them all;
   * the rest are claimed by the next node that runs. Returns how many were handed over.
   */
  async handOver(timeoutMs: number): Promise<{ handedOver: number; unclaimed: number }> {
    this.#off();
    await Promise.all(this.#holding);
    // A sweep in flight may still claim leases for this tenant: handle them before handing over.
    await this.#offSweep();
    const running = [...this.#held].filter((session) => [...(this.#hub.sessionEntry(session)?.chats ?? [])].some((chat) => this.#hub.chatEntry(chat)?.state.activeTurn));
    const handedOver = await this.#leases.handOver(running);
    const deadline = Date.now() + timeoutMs;
    let unclaimed = handedOver;
    while (unclaimed > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      unclaimed = await this.#leases.unclaimedHandOvers();
    }
    return { handedOver, unclaimed };
  }

  async close(): Promise<void> {
    this.#off();
    await this.#offSweep();
    await this.#leases.close();
  }
}
