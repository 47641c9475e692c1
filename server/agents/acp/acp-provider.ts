/**
 * Hosts a real ACP agent (Qwen Code, Gemini CLI, an adapter for Claude Code…) behind the hub.
 *
 * One agent process per hub session, started on the session's first turn and kept while the
 * session lives. The hub is the ACP *client*: it answers `initialize` without file system or
 * terminal capabilities (the hub grants agents neither), opens one ACP session with the configured
 * cwd, and sends one `session/prompt` per AHP turn. What the agent streams becomes AHP actions
 * through `TurnTranslator`; its permission and elicitation requests become AHP pending tool
 * confirmations and input requests that any surface may answer (first answer wins, decided by
 * the hub). A cancelled AHP turn sends `session/cancel` and answers open requests `cancelled`.
 * An agent process that dies ends the running turn with `chat/error`; the next turn starts a new one.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../log.js';
import { errorFields } from '../../log.js';
import { TurnFailure, type AgentInfo, type AgentProvider, type TurnContext, type TurnResult } from '../agent.js';
import type { NamedAcpAgent } from './agents-config.js';
import { AGENT_LIMIT_ERROR, AgentProcessBudget, agentLimitMessage } from '../agent-budget.js';
import { agentEnvironment, AgentWorkspaces, tenantSegment } from '../agent-workspace.js';
import { type AcpProviderOptions, AgentProcess } from './agent-process.js';
import { AGENT_UNREACHABLE_ERROR, agentReachability, type AgentIdentity, type LaunchPlan, launchPlan, namespaceLauncher, TenantUids } from '../agent-confinement.js';

export type { AcpProviderOptions } from './agent-process.js';

let processUids: TenantUids | undefined;
/** The tenants' uids of a hub built without one (tests, embedders): shared by the whole process. */
function processTenantUids(): TenantUids {
  processUids ??= new TenantUids(undefined);
  return processUids;
}

/** Most remembered ACP session ids (one per hub session; the oldest are forgotten first). */
const MAX_REMEMBERED_SESSIONS = 10_000;

export class AcpAgentProvider implements AgentProvider {
  readonly info: AgentInfo;
  readonly #sessions = new Map<string, AgentProcess>();
  /** hub session URI → the ACP session id its agent last used (persisted in `stateFile`). */
  readonly #acpSessions = new Map<string, string>();
  readonly #budget: AgentProcessBudget;
  readonly #workspaces: AgentWorkspaces;
  /** Who the agent runs as, when not the hub's own user (its reachability is checked before each start). */
  readonly #identity: AgentIdentity | undefined = undefined;
  #launch: LaunchPlan;
  #refusals = 0;
  #startFailures = 0;

  constructor(private readonly options: AcpProviderOptions) {
    this.#budget = options.budget ?? new AgentProcessBudget();
    const { config } = options;
    // A named user as configured; else, confined, the tenant's own uid (with a named group, if
    // any); else the hub's own user (with a named group, if any).
    if (config.uid !== undefined) this.#identity = { uid: config.uid, gid: config.gid ?? config.uid };
    else if (config.confinement === 'tenant') {
      const own = (options.tenantUids ?? processTenantUids()).of(options.tenant ?? '');
      this.#identity = { uid: own.uid, gid: config.gid ?? own.gid };
    }
    const unshare = config.confinement === 'tenant' ? namespaceLauncher() : undefined;
    this.#launch = launchPlan(config.command, config.args, this.#identity, unshare);
    if (!this.#identity && config.gid !== undefined) this.#launch = { ...this.#launch, gid: config.gid };
    this.#workspaces = new AgentWorkspaces(options.workspaceRoot ?? config.cwd, this.#identity ?? { gid: config.gid });
    this.#loadState();
    this.info = {
      provider: options.provider,
      displayName: options.config.displayName ?? options.provider,
      description: options.config.description ?? `ACP agent: ${[options.config.command, ...options.config.args].join(' ')}`,
    };
  }

  async runTurn(ctx: TurnContext): Promise<TurnResult> {
    let agent = this.#sessions.get(ctx.session);
    // An agent evicted for room may still be exiting: its session's next turn gets a new one.
    if (!agent || agent.retired) {
      const previous = agent?.acpSessionId ?? this.#acpSessions.get(ctx.session);
      agent = this.#start(ctx);
      agent.connect(previous, (id) => this.#rememberAcpSession(ctx.session, id));
    }
    return agent.runTurn(ctx);
  }

  /** A new agent process for the session, within the budget; a refusal or a failed start is a TurnFailure. */
  #start(ctx: TurnContext): AgentProcess {
    const owner = { tenant: this.options.tenant ?? '', user: ctx.owner ?? '' };
    let cwd: string;
    if (this.#identity && this.#identity.uid !== process.getuid?.() && process.getuid?.() !== 0) {
      this.#startFailures++;
      throw new TurnFailure(
        `The agent could not be started: it runs as uid ${this.#identity.uid} ("confinement": "tenant" or its "user"), and only a hub running as root can switch to it. Run the hub as root, or set "confinement": "none".`,
        'agentStartFailed',
      );
    }
    try {
      cwd = this.#workspaces.prepare(ctx.session);
    } catch (err) {
      this.#startFailures++;
      this.options.logger.warn('could not prepare the agent working directory', { session: ctx.session, ...errorFields(err) });
      throw new TurnFailure(`The agent could not be started: its working directory could not be prepared (${(err as Error).message}).`, 'agentStartFailed');
    }
    const env = agentEnvironment(this.options.config, cwd);
    const unreachable = this.#identity ? agentReachability(this.options.config.command, this.options.config.args, cwd, this.#identity, env.PATH ?? '') : undefined;
    if (unreachable !== undefined) {
      this.#startFailures++;
      const who = `uid ${this.#identity!.uid}`;
      this.options.logger.warn('agent cannot be started as its user', { session: ctx.session, uid: this.#identity!.uid, reason: unreachable });
      throw new TurnFailure(`The agent could not be started: its user (${who}) cannot reach ${unreachable}. Install the agent where that user can read it, or give that user passage.`, AGENT_UNREACHABLE_ERROR);
    }
    const agent = new AgentProcess(this.options, ctx.session, cwd, owner, () => this.#budget.release(agent));
    const answer = this.#budget.acquire(agent);
    if (!answer.ok) {
      this.#refusals++;
      this.options.logger.warn('agent start refused: process cap reached', { session: ctx.session, scope: answer.scope, limit: answer.limit });
      throw new TurnFailure(agentLimitMessage(answer.scope, answer.limit), AGENT_LIMIT_ERROR);
    }
    this.#sessions.set(ctx.session, agent);
    if (!agent.spawn(env, this.#launch)) this.#startFailures++;
    return agent;
  }

  /** The working directory a session's agent runs (or will run) in. */
  workspaceOf(session: string): string {
    return this.#workspaces.pathOf(session);
  }

  /** Gauges: live processes, starts refused at a cap, starts that failed (spawn errors). */
  stats(): { processes: number; refusals: number; startFailures: number } {
    return { processes: this.processes, refusals: this.#refusals, startFailures: this.#startFailures };
  }

  #loadState(): void {
    const file = this.options.stateFile;
    if (!file || !existsSync(file)) return;
    try {
      const data = JSON.parse(readFileSync(file, 'utf8')) as unknown;
      if (typeof data !== 'object' || data === null) return;
      for (const [hub, acpId] of Object.entries(data).slice(-MAX_REMEMBERED_SESSIONS)) {
        if (typeof acpId === 'string' && acpId.length <= 1024) this.#acpSessions.set(hub, acpId);
      }
    } catch (err) {
      this.options.logger.warn('could not read the ACP session file; sessions start fresh', { file, ...errorFields(err) });
    }
  }

  #rememberAcpSession(session: string, acpSessionId: string | undefined): void {
    if (acpSessionId === undefined) this.#acpSessions.delete(session);
    else {
      if (this.#acpSessions.get(session) === acpSessionId) return;
      this.#acpSessions.delete(session);
      this.#acpSessions.set(session, acpSessionId);
      while (this.#acpSessions.size > MAX_REMEMBERED_SESSIONS) this.#acpSessions.delete(this.#acpSessions.keys().next().value!);
    }
    const file = this.options.stateFile;
    if (!file) return;
    try {
      const tmp = `${file}.tmp`;
      writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.#acpSessions)));
      renameSync(tmp, file);
    } catch (err) {
      this.options.logger.warn('could not write the ACP session file', { file, ...errorFields(err) });
    }
  }

  /** Number of live agent processes (for tests and diagnostics). */
  get processes(): number {
    let n = 0;
    for (const a of this.#sessions.values()) if (!a.exited) n++;
    return n;
  }

  /** The live agent process of a hub session, if any. */
  processOf(session: string): { pid: number | undefined; acpSessionId: string | undefined } | undefined {
    const a = this.#sessions.get(session);
    return a && !a.exited ? { pid: a.pid, acpSessionId: a.acpSessionId } : undefined;
  }

  /**
   * ACP has no standard way to add input to a running prompt: only an agent whose live process
   * advertised the seed-003 mid-turn input extension (relayed, with its receipts) or pulls input
   * with `craft/drainMidTurnQueue` (Qwen Code, between tool batches) takes steering.
   */
  steeringUnavailable(session: string): { code: string; message: string } | undefined {
    const agent = this.#sessions.get(session);
    if (agent && !agent.exited && (agent.midTurnInput || agent.drainsMidTurnQueue)) return undefined;
    return {
      code: 'agent_has_no_input_channel',
      message: `${this.info.displayName} is an ACP agent without a mid-turn input channel: additions cannot reach a running turn. Wait for the turn to end or stop it, then send a new message.`,
    };
  }

  disposeSession(session: string): void {
    const agent = this.#sessions.get(session);
    this.#sessions.delete(session);
    if (this.#acpSessions.has(session)) this.#rememberAcpSession(session, undefined);
    void agent?.stop('session disposed');
  }

  async close(): Promise<void> {
    const all = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(all.map((a) => a.stop('hub shutting down')));
  }
}

export interface AcpProvidersOptions {
  readonly tenant?: string | undefined;
  /** The tenant's directory under the data directory (ACP session ids are kept there). */
  readonly stateDir?: string | undefined;
  /** `<data>/agents/<tenant>`: the default root of the sessions' working directories. */
  readonly workspaceRoot?: string | undefined;
  /** One for the whole hub, shared by every tenant's providers. */
  readonly budget?: AgentProcessBudget | undefined;
  /** One for the whole hub: each tenant's uid under `"confinement": "tenant"`. */
  readonly tenantUids?: TenantUids | undefined;
  readonly newId?: () => string;
}

/** One provider per configured ACP agent. */
export function createAcpProviders(agents: readonly NamedAcpAgent[], logger: Logger, options: AcpProvidersOptions = {}): AcpAgentProvider[] {
  const { stateDir, tenant } = options;
  return agents.map(
    (a) =>
      new AcpAgentProvider({
        provider: a.provider,
        config: a.config,
        logger: logger.child({ component: 'acp' }),
        newId: options.newId ?? randomUUID,
        tenant,
        budget: options.budget,
        tenantUids: options.tenantUids,
        // An agent's own `cwd` is a root shared by tenants: each gets a directory of its own in it.
        workspaceRoot: a.config.cwd !== undefined && tenant !== undefined ? join(a.config.cwd, tenantSegment(tenant)) : options.workspaceRoot,
        stateFile: stateDir === undefined ? undefined : join(stateDir, `acp-sessions.${a.provider}.json`),
      }),
  );
}
