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
 */
import { turnDuration } from '../../shared/state/selectors.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import type { AgentLeaseStore } from '../storage/postgres-agent-leases.js';
import type { Hub } from './hub.js';

export interface AgentLeaseKeeperOptions {
  /** How often leases are renewed and expired ones claimed. */
  readonly tickMs: number;
}

export class AgentLeaseKeeper {
  readonly #hub: Hub;
  readonly #leases: AgentLeaseStore;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #timer: NodeJS.Timeout;
  readonly #off: () => void;
  #ticking = false;

  constructor(hub: Hub, leases: AgentLeaseStore, logger: Logger, now: () => number, options: AgentLeaseKeeperOptions) {
    this.#hub = hub;
    this.#leases = leases;
    this.#logger = logger;
    this.#now = now;
    this.#off = hub.hook('leases', {
      // Delivered phase: the lease is taken (a database write) for a turn start that is durable.
      afterDurable: (e) => {
        if (e.remote || e.action.type !== 'chat/turnStarted') return;
        const session = hub.chatEntry(e.channel)?.session;
        if (session === undefined) return;
        leases.hold(session).catch((err: unknown) => logger.warn('could not take the agent lease', { session, ...errorFields(err) }));
      },
    });
    this.#timer = setInterval(() => void this.#tick(), options.tickMs);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      await this.#leases.renew();
      for (const session of await this.#leases.claimExpired()) await this.#endOrphanedTurns(session);
    } catch (err) {
      this.#logger.warn('agent lease tick failed; retrying', errorFields(err));
    } finally {
      this.#ticking = false;
    }
  }

  async #endOrphanedTurns(session: string): Promise<void> {
    for (const chat of this.#hub.sessionEntry(session)?.chats ?? []) {
      const turn = this.#hub.chatEntry(chat)?.state.activeTurn;
      if (!turn) continue;
      try {
        await this.#hub.dispatchServer(chat, {
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

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#off();
    await this.#leases.close();
  }
}
