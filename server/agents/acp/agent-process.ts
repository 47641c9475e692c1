/**
 * One ACP agent process serving one hub session: spawning it, the ACP client side of its
 * connection, its turns, idle timeout and shutdown. Split out of `acp-provider.ts` (which keeps
 * the per-session bookkeeping, budget and remembered ACP sessions) so each stays readable.
 */
import { LoopShare } from '../../loop-share.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import type { Logger } from '../../log.js';
import { errorFields } from '../../log.js';
import { TurnFailure, type TurnContext, type TurnResult } from '../agent.js';
import type { ResolvedAcpAgentConfig } from './agents-config.js';
import { type AgentProcessBudget, type BudgetHolder, DEFAULT_AGENT_LIMITS } from '../agent-budget.js';
import { STOP_REASON_MESSAGES } from '../../acp-mapping/index.js';
import { offersMidTurnInput, SteeringRelay } from './steering-relay.js';
import { drainForAgent, drainParams, drainsMidTurnQueue, MID_TURN_QUEUE_DRAIN, NOTHING_TO_DRAIN } from './mid-turn-drain.js';
import { TurnTranslator } from './turn-translator.js';
import type { LaunchPlan, TenantUids } from '../agent-confinement.js';
import { failureFromAgentError, isAgentErrorAnswer, modelEndpointOf } from './agent-errors.js';
import { probeModelEndpoint, unreachableNotice } from './model-probe.js';

/**
 * Permission requests of every agent share each event-loop turn: an agent that asks 1,500 at once
 * (read from its stdout in one go) must not hold the loop for the whole burst.
 */
const permissionRequests = new LoopShare(32);

/** Longest stderr line copied to the hub log; longer ones are cut. */
const STDERR_LINE_MAX = 4_096;
/** At most this many stderr lines per window reach the log; the rest are counted, not kept. */
const STDERR_LINES_PER_WINDOW = 500;
const STDERR_WINDOW_MS = 10_000;
/** Largest NDJSON message accepted from an agent. */
const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;
/** How long a new turn waits for the agent to finish a cancelled one before giving up. */
const CANCEL_GRACE_MS = 30_000;
const HUB_CLIENT_INFO = { name: 'ahp-hub', title: 'AHP hub', version: '0.1.0' };
const DEFAULT_IDLE_TIMEOUT_MS = DEFAULT_AGENT_LIMITS.idleTimeoutMs;
/** Longest stderr line quoted in the error of an agent that died before it answered `initialize`. */
const LAST_WORDS_MAX = 300;
/** How long an agent that exited at start may take to flush its stderr before the turn is told. */
const STDERR_FLUSH_MS = 500;

export interface AcpProviderOptions {
  readonly provider: string;
  readonly config: ResolvedAcpAgentConfig;
  /** The tenant whose sessions this provider runs (budget scope, working directories). */
  readonly tenant?: string | undefined;
  /** Shared by every tenant's providers; absent: a budget of this provider's own, default caps. */
  readonly budget?: AgentProcessBudget | undefined;
  /**
   * Where this tenant's sessions get their working directories (`<root>/<session-hash>/`).
   * Absent: `config.cwd`, or a temporary directory.
   */
  readonly workspaceRoot?: string | undefined;
  readonly logger: Logger;
  readonly newId: () => string;
  /**
   * Where the hub session → ACP session ids are kept across hub restarts (a small JSON file), so
   * a restarted hub resumes each conversation with `session/load` when the agent supports it.
   */
  readonly stateFile?: string | undefined;
  /** The tenants' uids under `"confinement": "tenant"` (one for the whole hub; absent: one per process). */
  readonly tenantUids?: TenantUids | undefined;
}

/** One agent process serving one hub session. */
export class AgentProcess implements BudgetHolder {
  #child: ChildProcess | undefined;
  #connection: acp.ClientConnection | undefined;
  readonly #logger: Logger;
  #ready: Promise<void> = Promise.resolve();
  readonly #exit: Promise<never>;
  #fail!: (reason: string, errorType?: string) => void;
  #exitReason: string | undefined;
  /** What the running or next turn is told once the process has ended. */
  #exitFailure: TurnFailure | undefined;
  #turn: TurnTranslator | undefined;
  /** The running turn's context, for the agent's drain calls. */
  #turnCtx: TurnContext | undefined;
  #busy: { signal: AbortSignal; done: Promise<void> } | undefined;
  #loadSupported = false;
  /** When the last turn ended; undefined while starting or running a turn. */
  #idleSince: number | undefined;
  #stopping = false;
  #idleTimer: NodeJS.Timeout | undefined;
  /** The model endpoint its environment names (quoted when it could not reach it). */
  #modelEndpoint: string | undefined;
  /** The environment it was started with (the model probe reads its proxy settings). */
  #env: NodeJS.ProcessEnv = {};
  /** The step of the start the agent has not answered yet; undefined once its session is open. */
  #starting: string | undefined = 'initialize';
  /** Its last stderr line: an agent that dies at start usually says why there. */
  #lastStderr: string | undefined;
  #stderrClosed: Promise<void> = Promise.resolve();
  acpSessionId: string | undefined;
  /** The agent advertised the seed-003 mid-turn input extension. */
  midTurnInput = false;
  /** The agent pulls steering input with `craft/drainMidTurnQueue` (Qwen Code; mid-turn-drain.ts). */
  drainsMidTurnQueue = false;
  readonly tenant: string;
  readonly user: string;

  constructor(
    private readonly options: AcpProviderOptions,
    hubSession: string,
    private readonly cwd: string,
    owner: { tenant: string; user: string },
    private readonly onExit: () => void,
  ) {
    this.tenant = owner.tenant;
    this.user = owner.user;
    this.#logger = options.logger.child({ provider: options.provider, session: hubSession });
    this.#exit = new Promise<never>((_resolve, reject) => {
      this.#fail = (reason, errorType = 'agentExited') => {
        if (this.#exitReason !== undefined) return;
        this.#exitReason = reason;
        this.#clearIdle();
        this.onExit();
        this.#logger.warn('agent process ended', { reason });
        this.#exitFailure = new TurnFailure(errorType === 'agentStartFailed' ? `The agent could not be started: ${reason}.` : `The agent process ended: ${reason}.`, errorType);
        reject(this.#exitFailure);
      };
    });
    this.#exit.catch(() => undefined);
  }

  /**
   * Starts the process. False when it could not be (EMFILE, ENFILE, EAGAIN, ENOENT, a bad uid…):
   * the agent is then exited and its turn fails with `agentStartFailed`; the hub carries on.
   */
  spawn(env: NodeJS.ProcessEnv, plan: LaunchPlan): boolean {
    const { config } = this.options;
    this.#modelEndpoint = modelEndpointOf(env);
    this.#env = env;
    let child: ChildProcess;
    try {
      child = spawn(plan.command, plan.args, {
        cwd: this.cwd,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
        // Its own process group: agents relaunch themselves or start tools as children (Qwen Code
        // re-executes itself), and stopping the agent must stop all of them.
        detached: true,
        ...(plan.uid === undefined ? {} : { uid: plan.uid }),
        ...(plan.gid === undefined ? {} : { gid: plan.gid }),
      });
    } catch (err) {
      this.#fail(`spawn failed (${(err as Error).message})`, 'agentStartFailed');
      this.#ready = this.#exit;
      return false;
    }
    this.#child = child;
    // Registered before anything else: Node reports EMFILE/ENFILE/EAGAIN/ENOENT as an 'error' event
    // on the next tick, and an 'error' nobody listens to would end the hub.
    child.once('error', (err) => this.#fail(`it could not be started (${err.message})`, child.pid === undefined ? 'agentStartFailed' : 'agentExited'));
    if (child.pid === undefined || !child.stdin || !child.stdout || !child.stderr) {
      this.#ready = this.#exit;
      return false;
    }
    this.#logger.info('agent process started', { pid: child.pid, command: config.command, cwd: this.cwd });
    this.#stderrClosed = new Promise<void>((resolve) => child.stderr!.once('close', () => resolve()));
    child.once('exit', (code, signal) => {
      // Whatever the agent left running in its group goes with it.
      this.#signalGroup('SIGKILL');
      const how = signal ? `killed by ${signal}` : `exited with code ${code}`;
      const step = this.#starting;
      if (step === undefined) return this.#fail(how);
      // Gone before its session was open: a start failure, and its last stderr line is usually why.
      void Promise.race([this.#stderrClosed, new Promise((r) => setTimeout(r, STDERR_FLUSH_MS).unref())]).then(() => {
        const words = this.#lastStderr ? `; its last line on stderr: “${this.#lastStderr}”` : '';
        this.#fail(`it ${how} before it answered ${step}${words}`, 'agentStartFailed');
      });
    });
    this.#pipeStderr(child);
    // Writes to a dead agent must not crash the hub.
    child.stdin.on('error', (err) => this.#logger.debug('agent stdin closed', errorFields(err)));
    return true;
  }

  /** Opens the ACP connection and the session (loading `previousAcpSession` when the agent can). */
  connect(previousAcpSession: string | undefined, onSession: (acpSessionId: string) => void): void {
    const child = this.#child;
    if (child?.pid === undefined || !child.stdin || !child.stdout || this.exited) return;
    const stream = acp.ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>, { maxMessageBytes: MAX_MESSAGE_BYTES });
    const app = acp
      .client({ name: 'ahp-hub' })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        if (params.sessionId === this.acpSessionId) this.#turn?.onUpdate(params.update);
      })
      .onNotification(acp.methods.client.elicitation.complete, ({ params }) => {
        this.#turn?.onElicitationComplete(params.elicitationId);
      })
      .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
        const wait = permissionRequests.turn();
        if (wait) await wait;
        if (!this.#turn || params.sessionId !== this.acpSessionId) return { outcome: { outcome: 'cancelled' as const } };
        return { outcome: await this.#turn.requestPermission(params) };
      })
      .onRequest(acp.methods.client.elicitation.create, async ({ params }) => {
        if (!this.#turn) return { action: 'cancel' as const };
        return this.#turn.elicit(params);
      })
      .onRequest(MID_TURN_QUEUE_DRAIN, drainParams, ({ params }) => {
        this.drainsMidTurnQueue = true;
        // An agent with the push extension gets its inputs from the relay; never hand one out twice.
        if (params.sessionId !== this.acpSessionId || this.midTurnInput) return NOTHING_TO_DRAIN;
        return drainForAgent(this.#turnCtx, this.#logger);
      })
      .onRequest('*', ({ method }) => {
        throw acp.RequestError.methodNotFound(method);
      })
      .onNotification('*', () => undefined);
    const connection = app.connect(stream);
    this.#connection = connection;
    // A connection that breaks (bad output, a message over the limit) leaves the process useless.
    void connection.closed.then(() => {
      if (!this.exited) void this.stop('its ACP connection closed');
    });
    this.#ready = this.#handshake(connection, previousAcpSession, onSession);
    // An agent that cannot start its session is replaced on the next turn.
    this.#ready.catch(() => void this.stop('the handshake failed'));
  }

  idleSince(): number | undefined {
    return this.exited ? 0 : this.#idleSince;
  }

  /** Stopped by the budget to make room for another session's agent. */
  evict(): void {
    void this.stop('making room for another agent (process cap)');
  }

  #markIdle(): void {
    this.#idleSince = Date.now();
    this.#clearIdle();
    this.#idleTimer = setTimeout(() => void this.stop('idle'), this.options.budget?.limits.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS);
    this.#idleTimer.unref();
  }

  #clearIdle(): void {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  #signalGroup(signal: NodeJS.Signals): void {
    const pid = this.#child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  }

  get exited(): boolean {
    return this.#exitReason !== undefined;
  }

  /**
   * Exited, or asked to stop (evicted to make room, disposed): such a process must not be given
   * another turn, although it may not have exited yet (it has up to 3 s to do so).
   */
  get retired(): boolean {
    return this.#stopping || this.exited;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  #pipeStderr(child: ChildProcess): void {
    let pending = '';
    let windowStart = Date.now();
    let inWindow = 0;
    let dropped = 0;
    const emit = (line: string): void => {
      const now = Date.now();
      if (now - windowStart >= STDERR_WINDOW_MS) {
        if (dropped > 0) this.#logger.warn('agent stderr lines dropped (too many)', { dropped });
        windowStart = now;
        inWindow = 0;
        dropped = 0;
      }
      if (this.#starting !== undefined) this.#lastStderr = line.trim().slice(0, LAST_WORDS_MAX);
      if (++inWindow > STDERR_LINES_PER_WINDOW) dropped++;
      else this.#logger.info('agent stderr', { line: line.slice(0, STDERR_LINE_MAX) });
    };
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      pending += chunk;
      let nl: number;
      while ((nl = pending.indexOf('\n')) !== -1) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (line.trim()) emit(line);
      }
      if (pending.length > STDERR_LINE_MAX) {
        emit(pending);
        pending = '';
      }
    });
  }

  /** Races an agent request against the process ending and a deadline. */
  async #guard<T>(what: string, request: Promise<T>, timeoutMs?: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline =
      timeoutMs === undefined
        ? new Promise<never>(() => undefined)
        : new Promise<never>((_r, reject) => {
            timer = setTimeout(() => reject(new TurnFailure(`The agent did not answer ${what} within ${timeoutMs} ms.`, 'agentTimeout')), timeoutMs);
          });
    try {
      return await Promise.race([request, this.#exit, deadline]);
    } catch (err) {
      if (err instanceof TurnFailure) throw err;
      // The agent answered with an error: say what it gave as the cause (agent-errors.ts).
      if (isAgentErrorAnswer(err)) throw failureFromAgentError(what, err, this.#modelEndpoint, this.#starting !== undefined);
      // A dying agent closes its pipe just before the exit event: give the exit a moment to tell.
      await Promise.race([this.#exit.catch(() => undefined), new Promise((r) => setTimeout(r, 2_000).unref())]);
      if (this.#exitFailure) throw this.#exitFailure;
      const message = err instanceof Error ? err.message : String(err);
      throw new TurnFailure(`The agent failed on ${what}: ${message}`, 'agentError');
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  async #handshake(connection: acp.ClientConnection, previousAcpSession: string | undefined, onSession: (acpSessionId: string) => void): Promise<void> {
    const timeout = this.options.config.startupTimeoutMs;
    const agent = connection.agent;
    const initialize: acp.InitializeRequest = {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientInfo: HUB_CLIENT_INFO,
      clientCapabilities: {
        fs: { readTextFile: false, writeTextFile: false },
        terminal: false,
        elicitation: { form: {}, url: {} },
      },
    };
    this.#starting = 'initialize';
    const init = await this.#guard('initialize', agent.request(acp.methods.agent.initialize, initialize), timeout);
    this.#loadSupported = init.agentCapabilities?.loadSession === true;
    this.midTurnInput = offersMidTurnInput(init.agentCapabilities);
    this.drainsMidTurnQueue ||= drainsMidTurnQueue(init.agentInfo);
    const cwd = this.cwd;
    if (previousAcpSession && this.#loadSupported) {
      this.#starting = 'session/load';
      try {
        // History replayed by the agent arrives while no turn is active and is not re-sent to the hub.
        await this.#guard('session/load', agent.request(acp.methods.agent.session.load, { sessionId: previousAcpSession, cwd, mcpServers: [] }), timeout);
        this.acpSessionId = previousAcpSession;
        this.#starting = undefined;
        onSession(previousAcpSession);
        this.#logger.info('agent session loaded', { acpSessionId: previousAcpSession });
        return;
      } catch (err) {
        if (this.exited) throw err;
        this.#logger.warn('agent could not load its earlier session; starting a new one', errorFields(err));
      }
    }
    this.#starting = 'session/new';
    const created = await this.#guard('session/new', agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }), timeout);
    this.acpSessionId = created.sessionId;
    this.#starting = undefined;
    onSession(created.sessionId);
    this.#logger.info('agent session created', { acpSessionId: created.sessionId });
  }

  async runTurn(ctx: TurnContext): Promise<TurnResult> {
    await this.#ready;
    // One prompt at a time per ACP session. A turn that ended in the hub (cancelled) may still be
    // winding down in the agent: wait for it. A turn still running in another chat: refuse.
    while (this.#busy) {
      const previous = this.#busy;
      if (!previous.signal.aborted) {
        throw new TurnFailure('The agent is busy with a turn in another chat of this session; try again when it has finished.', 'agentBusy');
      }
      try {
        await this.#guard('the end of its cancelled turn', previous.done, CANCEL_GRACE_MS);
      } catch (err) {
        void this.stop('it did not finish a cancelled turn');
        throw err;
      }
    }
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    this.#busy = { signal: ctx.signal, done };
    this.#idleSince = undefined;
    this.#clearIdle();
    const connection = this.#connection!;
    const sessionId = this.acpSessionId!;
    const turn = new TurnTranslator(ctx, this.options.newId, this.#logger);
    this.#turn = turn;
    this.#turnCtx = ctx;
    const onAbort = (): void => {
      turn.cancelPending();
      void connection.agent.notify(acp.methods.agent.session.cancel, { sessionId }).catch((err: unknown) => this.#logger.debug('session/cancel not delivered', errorFields(err)));
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    let ended = false;
    this.#warnIfModelUnreachable(ctx, () => ended);
    let relay: SteeringRelay | undefined;
    if (this.midTurnInput) {
      const agent = connection.agent;
      relay = new SteeringRelay(ctx, { request: (method, params) => agent.request(method, params) }, sessionId, this.#logger);
      void relay.run();
    }
    try {
      const response = await this.#guard('session/prompt', connection.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: ctx.message.text }] }));
      await turn.flush();
      await relay?.settle();
      if (ctx.signal.aborted) return 'external';
      switch (response.stopReason) {
        case 'end_turn':
          return 'complete';
        case 'cancelled':
          // The agent stopped on its own: the turn ends cancelled, as the agent said (no session/cancel back).
          ctx.signal.removeEventListener('abort', onAbort);
          await turn.endCancelled();
          return 'external';
        default:
          throw new TurnFailure(STOP_REASON_MESSAGES[response.stopReason] ?? `The agent stopped: ${String(response.stopReason)}.`, String(response.stopReason));
      }
    } finally {
      ended = true;
      ctx.signal.removeEventListener('abort', onAbort);
      turn.cancelPending();
      if (this.#turn === turn) {
        this.#turn = undefined;
        this.#turnCtx = undefined;
      }
      if (this.#busy?.done === done) this.#busy = undefined;
      if (!this.#busy && !this.exited) this.#markIdle();
      finished();
    }
  }

  /** While the agent works, checks its model endpoint once and shows a notice in the turn if it does not answer (model-probe.ts). */
  #warnIfModelUnreachable(ctx: TurnContext, ended: () => boolean): void {
    const endpoint = this.#modelEndpoint;
    if (!endpoint) return;
    void probeModelEndpoint(endpoint, this.#env, ctx.signal)
      .then((result) => {
        this.#logger.debug('agent model endpoint probed', { endpoint, ...result });
        if (result.kind !== 'unreachable' || ended()) return;
        this.#logger.warn('agent model endpoint unreachable', { endpoint, problem: result.problem });
        return ctx.dispatch({ type: 'chat/responsePart', turnId: ctx.turnId, part: { kind: 'systemNotification', content: unreachableNotice(endpoint, result.problem) } });
      })
      .catch((err: unknown) => this.#logger.debug('model endpoint notice not shown', errorFields(err)));
  }

  async stop(reason: string): Promise<void> {
    if (this.exited) return;
    this.#stopping = true;
    this.#logger.info('stopping agent process', { reason });
    this.#clearIdle();
    this.#connection?.close();
    this.#child?.stdin?.end();
    this.#signalGroup('SIGTERM');
    const killer = setTimeout(() => this.#signalGroup('SIGKILL'), 3_000);
    await this.#exit.catch(() => undefined);
    clearTimeout(killer);
  }
}
