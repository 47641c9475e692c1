/**
 * How many agent processes may live at once: per user, per tenant and per hub (one budget is
 * shared by every tenant's providers, docs/limits.md#agents). A process that would go over a cap
 * first makes room by stopping the least recently used idle process in that scope (it starts again,
 * resuming its ACP session where the agent supports it, on its session's next turn); when every
 * process in the scope is busy the start is refused with a named reason, never queued.
 */

export interface AgentLimits {
  /** Agent processes in the whole hub (every tenant together). */
  readonly maxProcesses: number;
  readonly maxProcessesPerTenant: number;
  /** Per session owner (tenant + user). */
  readonly maxProcessesPerUser: number;
  /** An agent with no turn for this long is stopped (ms); its session's next turn starts it again. */
  readonly idleTimeoutMs: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = {
  maxProcesses: 64,
  maxProcessesPerTenant: 32,
  maxProcessesPerUser: 8,
  idleTimeoutMs: 10 * 60_000,
};

/** One live agent process as the budget sees it. */
export interface BudgetHolder {
  readonly tenant: string;
  readonly user: string;
  /** When its last turn ended (ms), or undefined while it starts or runs a turn. */
  idleSince(): number | undefined;
  /** Stop it to make room (its slot is released at once). */
  evict(): void;
}

export type AgentCapScope = 'user' | 'tenant' | 'hub';

/** The stable error type a refused start ends the turn with (`chat/error`). */
export const AGENT_LIMIT_ERROR = 'agentLimitReached';

export type BudgetAnswer = { readonly ok: true } | { readonly ok: false; readonly scope: AgentCapScope; readonly limit: number };

export class AgentProcessBudget {
  readonly limits: AgentLimits;
  readonly #holders = new Set<BudgetHolder>();
  #refusals = 0;

  constructor(limits: Partial<AgentLimits> = {}) {
    this.limits = { ...DEFAULT_AGENT_LIMITS, ...limits };
  }

  /** Takes a slot for `holder`, stopping idle processes to make room; refused when the scope is all busy. */
  acquire(holder: BudgetHolder): BudgetAnswer {
    const scopes: Array<{ scope: AgentCapScope; limit: number; within: (h: BudgetHolder) => boolean }> = [
      { scope: 'user', limit: this.limits.maxProcessesPerUser, within: (h) => h.tenant === holder.tenant && h.user === holder.user },
      { scope: 'tenant', limit: this.limits.maxProcessesPerTenant, within: (h) => h.tenant === holder.tenant },
      { scope: 'hub', limit: this.limits.maxProcesses, within: () => true },
    ];
    for (const { scope, limit, within } of scopes) {
      let inScope = [...this.#holders].filter(within);
      while (inScope.length >= limit) {
        const victim = leastRecentlyIdle(inScope);
        if (!victim) {
          this.#refusals++;
          return { ok: false, scope, limit };
        }
        this.release(victim);
        victim.evict();
        inScope = inScope.filter((h) => h !== victim);
      }
    }
    this.#holders.add(holder);
    return { ok: true };
  }

  release(holder: BudgetHolder): void {
    this.#holders.delete(holder);
  }

  /** Processes holding a slot (live or stopping), of one tenant or of all. */
  count(tenant?: string): number {
    if (tenant === undefined) return this.#holders.size;
    let n = 0;
    for (const h of this.#holders) if (h.tenant === tenant) n++;
    return n;
  }

  /** Starts refused since this budget was made. */
  get refusals(): number {
    return this.#refusals;
  }
}

function leastRecentlyIdle(holders: readonly BudgetHolder[]): BudgetHolder | undefined {
  let best: BudgetHolder | undefined;
  let bestSince = Infinity;
  for (const h of holders) {
    const since = h.idleSince();
    if (since !== undefined && since < bestSince) {
      best = h;
      bestSince = since;
    }
  }
  return best;
}

export function agentLimitMessage(scope: AgentCapScope, limit: number): string {
  const who = scope === 'user' ? 'this user' : scope === 'tenant' ? 'this tenant' : 'the hub';
  return `No agent process can start: ${who} already runs ${limit} agent processes (the cap), all of them busy with a turn. Try again when one has finished, or stop one.`;
}
