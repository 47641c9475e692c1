/**
 * Draining a cluster node (SIGTERM with a shared log; docs/cluster.md, "Drain"). In order:
 * 1. `/healthz` answers 503 and new WebSocket upgrades and requests are refused with 503, so the
 *    load balancer takes the node out (HAProxy also retries a refused request on another node);
 * 2. every WebSocket closes with 4012 (`RECONNECT_NOW_CLOSE_CODE`): clients reconnect at once,
 *    through the load balancer, to another node, and resume from their last serverSeq;
 * 3. per tenant, the agents stop, everything they wrote is made durable, and the leases of
 *    sessions with a running turn are handed over: another node claims them and resumes those
 *    turns as after a restart (the agent is started there with its session);
 * 4. once every lease is claimed (or the lease time passed) and the node answered 503 for at
 *    least `graceMs` (so health checks saw it, rather than a refused connection), it closes.
 */
import type { Logger } from './log.js';
import { errorFields } from './log.js';
import type { TenantStack } from './tenant-stack.js';

export interface DrainSteps {
  /** Step 1: flips /healthz and the request and upgrade refusals to 503. */
  refuseNew(): void;
  /** Step 2: closes every WebSocket with 4012. */
  closeSockets(): void;
  readonly stacks: Iterable<TenantStack>;
  /** How long step 3 waits for another node to claim the leases. */
  readonly leaseTtlMs: number;
  readonly graceMs: number;
  readonly logger: Logger;
  /** The ordinary shutdown (flush, final snapshot, close storage). */
  close(): Promise<void>;
}

export async function drainNode(steps: DrainSteps): Promise<void> {
  const started = Date.now();
  steps.refuseNew();
  steps.closeSockets();
  for (const stack of steps.stacks) {
    try {
      const { handedOver, unclaimed } = await stack.handOver(steps.leaseTtlMs);
      if (handedOver > 0) steps.logger.info('handed agent leases over', { tenant: stack.tenant, handedOver, unclaimed });
      if (unclaimed > 0) steps.logger.warn('no other node took some agent leases yet; the next node to run will', { tenant: stack.tenant, unclaimed });
    } catch (err) {
      // PostgreSQL unreachable: the leases expire instead, and another node ends those turns (hubNodeLost).
      steps.logger.warn('could not hand agent leases over; they expire instead', { tenant: stack.tenant, ...errorFields(err) });
    }
  }
  const rest = started + steps.graceMs - Date.now();
  if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  await steps.close();
}
