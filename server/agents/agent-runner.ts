/**
 * Runs agent providers for turns. Listens to the hub's committed actions: a `chat/turnStarted`
 * on a chat whose session has an in-process provider starts one run; a cancel, an end of the
 * turn by someone else, a truncation or a disposal aborts it. Each run talks to the hub only
 * through `TurnContext`, whose calls become validated, sequenced AHP actions.
 *
 * An agent hears only what is durable: runs start and abort in the hooks' delivered phase, and
 * what a run waits for (an answer, a decision) is found in the commit phase but handed to the
 * run only once that commit is in the log (registered on it, `e.afterAppend`) — an agent is never told about an answer a crash could
 * take back.
 */
import type { KnownAction } from '../../shared/protocol/actions.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatInputRequest, ChatState, Message, ToolCallState } from '../../shared/protocol/state.js';
import { findActiveToolCall, findAnsweredInputRequest, findDecidedToolCall, findOpenInputRequest, turnDuration } from '../../shared/state/selectors.js';
import { interactionIdOf } from '../../shared/state/status.js';
import { canActAsAgent } from '../auth/auth.js';
import type { CommitEvent, HubPort } from '../hub/hub-port.js';
import type { InterruptedTurn } from '../hub/recovery.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import { TurnFailure, type AgentProvider, type InputOutcome, type SteeringInput, type ToolCallRequest, type ToolOutcome, type TurnContext } from './agent.js';
import { resumedTurnOf, TurnReplay, withCarriedAnswers } from './turn-replay.js';
import { AS_HUB, dispatchAsHub, sequenced } from '../hub/entry.js';

/** Where accepted steering inputs come from; the steering engine implements it. */
export interface SteeringPort {
  /** Marks inputs accepted for this turn as consumed (visible in the transcript) and returns them. */
  consumeAtBarrier(target: { session: string; chat: string; turnId: string }, only?: readonly string[]): Promise<readonly SteeringInput[]>;
}

/** What the steering feature needs of the agent runner. */
export interface SteeringHost {
  setSteering(port: SteeringPort): void;
  steeringUnavailable(session: string): { code: string; message: string } | undefined;
  /** The directory the session's agent really runs in; undefined when its agent runs no process here. */
  workspaceOf?(session: string): string | undefined;
}

export const noSteering: SteeringPort = { consumeAtBarrier: async () => [] };

class AbortedError extends Error {
  constructor() {
    super('turn aborted');
    this.name = 'AbortError';
  }
}

interface Waiter {
  /** The tool call or input request it waits on, if it named one (see `Run.byKey`). */
  readonly key: string | undefined;
  /** What to do once the commit that satisfied it is durable, or undefined when not satisfied. */
  check(state: ChatState): (() => void) | undefined;
  fail(err: Error): void;
}

interface Run {
  readonly chat: string;
  readonly turnId: string;
  readonly controller: AbortController;
  readonly waiters: Set<Waiter>;
  /**
   * The waiters that named a tool call or input request, by its id. A commit that changes one
   * tool call or request (`interactionIdOf`) checks only its waiters and the unnamed ones, so a
   * burst of permission requests costs linear time instead of every waiter after every commit.
   */
  readonly byKey: Map<string, Set<Waiter>>;
  readonly unkeyed: Set<Waiter>;
}

/** True once a tool call's result is reported: it was approved and ran (completed, or its result awaits confirmation). */
function hasRun(toolCall: ToolCallState): boolean {
  return toolCall.status === 'completed' || toolCall.status === 'pending-result-confirmation';
}

/** Markdown is streamed in chunks of about this many characters (whole words). */
const DELTA_CHUNK = 24;

export function chunkText(text: string, size = DELTA_CHUNK): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const piece of text.split(/(?<=\s)/)) {
    if (current.length > 0 && current.length + piece.length > size) {
      chunks.push(current);
      current = '';
    }
    current += piece;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

export interface AgentRunnerOptions {
  /** How long a remote agent's turn interrupted by a hub restart waits for the agent to come back. */
  readonly remoteAgentGraceMs: number;
}

export const DEFAULT_REMOTE_AGENT_GRACE_MS = 120_000;

function addWaiter(run: Run, w: Waiter): void {
  run.waiters.add(w);
  if (w.key === undefined) run.unkeyed.add(w);
  else {
    let set = run.byKey.get(w.key);
    if (!set) run.byKey.set(w.key, (set = new Set()));
    set.add(w);
  }
}

function removeWaiter(run: Run, w: Waiter): void {
  run.waiters.delete(w);
  if (w.key === undefined) run.unkeyed.delete(w);
  else {
    const set = run.byKey.get(w.key);
    set?.delete(w);
    if (set?.size === 0) run.byKey.delete(w.key);
  }
}

function failWaiters(run: Run): void {
  for (const w of run.waiters) w.fail(new AbortedError());
  run.waiters.clear();
  run.unkeyed.clear();
  run.byKey.clear();
}

export class AgentRunner implements SteeringHost {
  readonly #runs = new Map<string, Run>();
  /** chat → the timer that ends its interrupted remote-agent turn unless the agent comes back. */
  readonly #graces = new Map<string, NodeJS.Timeout>();
  #unsubscribe: (() => void) | undefined;

  constructor(
    private readonly hub: HubPort,
    private readonly providers: ReadonlyMap<string, AgentProvider>,
    private readonly logger: Logger,
    private readonly now: () => number,
    private readonly newId: () => string,
    private steering: SteeringPort = noSteering,
    private readonly options: AgentRunnerOptions = { remoteAgentGraceMs: DEFAULT_REMOTE_AGENT_GRACE_MS },
  ) {}

  /** Installed by the steering feature: where barrier() takes accepted inputs from. */
  setSteering(port: SteeringPort): void {
    this.steering = port;
  }

  /** Why the session's agent cannot take steering input mid-turn, or undefined when it can. */
  steeringUnavailable(session: string): { code: string; message: string } | undefined {
    return this.#providerOf(session)?.steeringUnavailable?.(session);
  }

  workspaceOf(session: string): string | undefined {
    return this.#providerOf(session)?.workspaceOf?.(session);
  }

  start(): void {
    this.#unsubscribe = this.hub.hook('agents', {
      subscribed: (e) => {
        if (canActAsAgent(e.principal)) this.#agentCameBack(e.channel);
      },
      sessionDisposed: (e) => {
        for (const run of this.#runs.values()) if (!this.hub.chatEntry(run.chat)) this.#abort(run);
        for (const provider of new Set(this.providers.values())) provider.disposeSession?.(e.session);
      },
      chatDisposed: (e) => {
        const run = this.#runs.get(e.chat);
        if (run) this.#abort(run);
      },
      afterCommit: (e) => this.#onCommit(e),
      afterDurable: (e) => {
        // A remote agent dispatching on its interrupted turn is back, whatever it subscribed to
        // (a timer is a side effect: delivered phase).
        if (e.origin && this.#graces.has(e.channel)) this.#agentCameBack(e.channel);
        this.#onDurable(e);
      },
      turnEndedDurable: (e) => {
        this.#clearGrace(e.chat);
        // Cancelled, completed by someone else, truncated, or errored: this run may not write any more.
        const run = this.#runs.get(e.chat);
        if (run && run.turnId === e.turnId) this.#abort(run);
      },
    });
  }

  /** Aborts every run (shutdown) and lets providers release what they hold (agent processes). */
  async stop(): Promise<void> {
    this.#unsubscribe?.();
    for (const timer of this.#graces.values()) clearTimeout(timer);
    this.#graces.clear();
    for (const run of this.#runs.values()) this.#abort(run);
    for (const provider of new Set(this.providers.values())) {
      await provider.close?.().catch((err: unknown) => this.logger.warn('agent provider did not close cleanly', errorFields(err)));
    }
  }

  get activeRuns(): number {
    return this.#runs.size;
  }

  /** The chats whose turn an agent of this process is running, with the turn. */
  runningTurns(): Array<{ readonly chat: string; readonly turnId: string }> {
    return [...this.#runs.values()].map((run) => ({ chat: run.chat, turnId: run.turnId }));
  }

  /** Commit phase: which waiters this commit satisfies (their runs are told once it is durable). */
  #onCommit(e: CommitEvent): void {
    const run = this.#runs.get(e.channel);
    if (!run || run.waiters.size === 0) return;
    const state = this.hub.chatEntry(e.channel)?.state;
    // A run whose turn is no longer active is aborted in the delivered phase of the turn's end.
    if (!state || state.activeTurn?.id !== run.turnId) return;
    const only = interactionIdOf(e.known);
    const candidates = only === undefined ? [...run.waiters] : [...run.unkeyed, ...(run.byKey.get(only) ?? [])];
    for (const w of candidates) {
      const wake = w.check(state);
      if (!wake) continue;
      removeWaiter(run, w);
      e.afterAppend(wake);
    }
  }

  /** Delivered phase: wake the waiters this commit satisfied; start a run for a turn start. */
  #onDurable(e: CommitEvent): void {
    const action = e.known;
    if (action?.type !== 'chat/turnStarted' || e.remote) return;
    // In a cluster the process that sequenced the turn start runs the agent: at most once. The
    // turn may have ended already (a later commit): the run then stops at its end's delivery.
    const chat = this.hub.chatEntry(e.channel);
    if (chat) this.#maybeStart(e.channel, chat.session, action);
  }

  /** The provider running the session's agent, if the session exists and its provider is installed. */
  #providerOf(session: string): AgentProvider | undefined {
    const entry = this.hub.sessionEntry(session);
    return entry ? this.providers.get(entry.provider) : undefined;
  }

  #maybeStart(chat: string, sessionUri: string, action: Extract<KnownAction, { type: 'chat/turnStarted' }>): void {
    const provider = this.#providerOf(sessionUri);
    if (provider) this.#run(provider, chat, sessionUri, action.turnId, action.message, action.startedAt, undefined);
  }

  #run(provider: AgentProvider, chat: string, session: string, turnId: string, message: Message, startedAtIso: string, replay: TurnReplay | undefined): void {
    const existing = this.#runs.get(chat);
    if (existing) this.#abort(existing);
    const run: Run = { chat, turnId, controller: new AbortController(), waiters: new Set(), byKey: new Map(), unkeyed: new Set() };
    this.#runs.set(chat, run);
    const startedAt = Date.parse(startedAtIso);
    void this.#execute(run, provider, session, message, Number.isFinite(startedAt) ? startedAt : this.now(), replay);
  }

  /**
   * Turns that were running when the previous hub process stopped (`Hub.interruptedTurns`). A
   * provider whose agent can carry on keeps its turn (see `AgentProvider.afterHubRestart`); every
   * other turn ends with a `chat/error` that says why and that the answers given are kept.
   */
  resumeInterrupted(turns: readonly InterruptedTurn[]): void {
    for (const { chat, turnId } of turns) {
      const entry = this.hub.chatEntry(chat);
      const turn = entry?.state.activeTurn;
      if (!entry || turn?.id !== turnId) continue;
      const provider = this.#providerOf(entry.session);
      if (provider?.afterHubRestart === 'replay') {
        this.logger.info('resuming a turn interrupted by the restart', { chat, turnId, provider: provider.info.provider });
        this.#run(provider, chat, entry.session, turnId, turn.message, turn.startedAt, new TurnReplay(turn.responseParts));
      } else if (provider?.afterHubRestart === 'reconnect') {
        this.#awaitAgent(chat, turnId, turn.startedAt);
      } else {
        void this.#endInterrupted(
          chat,
          turnId,
          turn.startedAt,
          provider ? `The hub restarted and ${provider.info.displayName} with it, so this turn was stopped. Resume runs it again with the answers already given.` : 'The hub restarted while this turn was running; the turn was ended.',
        );
      }
    }
  }

  /**
   * A remote agent's turn stays open for `remoteAgentGraceMs` after a restart; it carries on once
   * a principal that may act as the agent subscribes to the chat again (or dispatches on it).
   */
  #awaitAgent(chat: string, turnId: string, startedAt: string): void {
    const timer = setTimeout(() => {
      this.#graces.delete(chat);
      const turn = this.hub.chatEntry(chat)?.state.activeTurn;
      if (turn?.id !== turnId) return;
      void this.#endInterrupted(chat, turnId, startedAt, `The hub restarted and the remote agent did not come back within ${Math.round(this.options.remoteAgentGraceMs / 1000)} s; the turn was ended.`);
    }, this.options.remoteAgentGraceMs);
    timer.unref();
    this.#graces.set(chat, timer);
  }

  #agentCameBack(chat: string): void {
    if (this.#clearGrace(chat)) this.logger.info('the remote agent is back for an interrupted turn', { chat });
  }

  #clearGrace(chat: string): boolean {
    const timer = this.#graces.get(chat);
    if (!timer) return false;
    clearTimeout(timer);
    return this.#graces.delete(chat);
  }

  async #endInterrupted(chat: string, turnId: string, startedAt: string, message: string): Promise<void> {
    await dispatchAsHub(this.hub, chat, {
      type: 'chat/error',
      turnId,
      duration: turnDuration(startedAt, this.now()),
      error: { errorType: 'hubRestarted', message },
    }).catch((err: unknown) => this.logger.debug('interrupted turn already ended', { chat, ...errorFields(err) }));
  }

  async #execute(run: Run, provider: AgentProvider, session: string, message: Message, startedAt: number, replay: TurnReplay | undefined): Promise<void> {
    const ctx = this.#context(run, session, message, replay);
    const duration = (): number => Math.max(0, this.now() - startedAt);
    try {
      const result = await provider.runTurn(ctx);
      if (run.controller.signal.aborted) return;
      if (result === 'complete') await dispatchAsHub(this.hub, run.chat, { type: 'chat/turnComplete', turnId: run.turnId, duration: duration() });
    } catch (err) {
      if (run.controller.signal.aborted) return;
      const failure = err instanceof TurnFailure ? err : undefined;
      if (!failure) this.logger.warn('agent run failed', { chat: run.chat, turnId: run.turnId, ...errorFields(err) });
      await dispatchAsHub(this.hub, run.chat, {
        type: 'chat/error',
        turnId: run.turnId,
        duration: duration(),
        error: { errorType: failure?.errorType ?? 'agentError', message: failure?.message ?? 'The agent failed unexpectedly.' },
      }).catch((e: unknown) => this.logger.debug('could not end failed turn', errorFields(e)));
    } finally {
      if (this.#runs.get(run.chat) === run) this.#runs.delete(run.chat);
      failWaiters(run);
    }
  }

  #abort(run: Run): void {
    run.controller.abort();
    failWaiters(run);
    if (this.#runs.get(run.chat) === run) this.#runs.delete(run.chat);
  }

  /**
   * Resolves with the first non-undefined value of `pick` on the chat's state (now or after a
   * commit), once the state it was read from is durable.
   */
  #waitFor<T>(run: Run, pick: (state: ChatState) => T | undefined, key?: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (run.controller.signal.aborted) return reject(new AbortedError());
      const state = this.hub.chatEntry(run.chat)?.state;
      const now = state ? pick(state) : undefined;
      // The state may hold commits not appended yet: answer once everything so far is durable.
      if (now !== undefined) return void this.hub.drain().then(() => resolve(now), reject);
      addWaiter(run, {
        key,
        check: (s) => {
          const v = pick(s);
          return v === undefined ? undefined : () => resolve(v);
        },
        fail: reject,
      });
    });
  }

  #stateOf(run: Run): ChatState {
    const state = this.hub.chatEntry(run.chat)?.state;
    if (!state || run.controller.signal.aborted) throw new AbortedError();
    return state;
  }

  /** A tool call past `toolCallReady`: waits for its decision, runs it once approved, reports the result. */
  async #continueTool(run: Run, call: ToolCallRequest, displayName: string, dispatch: (action: WireAction) => Promise<number>): Promise<ToolOutcome> {
    const decided = await this.#waitFor(run, (state) => findDecidedToolCall(state, call.id), call.id);
    // Replaying after a restart: a call whose result is in the log ran already; running it again
    // (or reporting it as not run) would rewrite the transcript.
    if (hasRun(decided)) return { approved: true, state: decided };
    if (decided.status !== 'running') return { approved: false, state: decided };
    const output = call.execute ? await call.execute(call.input) : `${displayName} finished.`;
    await dispatch({
      type: 'chat/toolCallComplete',
      turnId: run.turnId,
      toolCallId: call.id,
      result: { success: true, pastTenseMessage: `Ran ${displayName}`, content: [{ type: 'text', text: output }] },
    });
    const final = await this.#waitFor(run, (state) => findActiveToolCall(state, call.id), call.id);
    return { approved: true, state: final };
  }

  #context(run: Run, session: string, message: Message, replay: TurnReplay | undefined): TurnContext {
    const { chat, turnId } = run;
    const signal = run.controller.signal;
    const dispatch = (action: WireAction): Promise<number> => {
      if (signal.aborted) return Promise.reject(new AbortedError());
      // Straight into the door (an agent's stream goes forward, no relay); `sequenced` renders the outcome.
      return Promise.resolve(this.hub.enter({ op: 'dispatch', by: AS_HUB, channel: chat, action })).then(sequenced);
    };
    return {
      session,
      owner: this.hub.sessionEntry(session)?.owner,
      chat,
      turnId,
      message,
      signal,
      say: async (text) => {
        const replayed = replay?.say(text) ?? { kind: 'new' };
        if (replayed.kind === 'said') return;
        const partId = replayed.kind === 'partial' ? replayed.partId : this.newId();
        const pending = replayed.kind === 'partial' ? [] : [dispatch({ type: 'chat/responsePart', turnId, part: { kind: 'markdown', id: partId, content: '' } })];
        for (const chunk of chunkText(replayed.kind === 'partial' ? replayed.rest : text)) pending.push(dispatch({ type: 'chat/delta', turnId, partId, content: chunk }));
        await Promise.all(pending);
      },
      requestInput: async (request: ChatInputRequest): Promise<InputOutcome> => {
        // One read of the chat (an aborted run throws here, as its dispatch would).
        const state = this.#stateOf(run);
        // Replaying: a question already asked is waited on (drafts and all), not asked again.
        const asked = replay && (findOpenInputRequest(state, request.id) ?? findAnsweredInputRequest(state, request.id));
        const resumed = resumedTurnOf(message);
        const carried = resumed ? withCarriedAnswers(state, resumed, request) : request;
        if (!asked) await dispatch({ type: 'chat/inputRequested', request: carried });
        return this.#waitFor(
          run,
          (state) => {
            const answered = findAnsweredInputRequest(state, request.id);
            return answered?.response ? { response: answered.response, answers: answered.request.answers ?? {} } : undefined;
          },
          request.id,
        );
      },
      runTool: async (call: ToolCallRequest): Promise<ToolOutcome> => {
        const displayName = call.displayName ?? call.name;
        // Replaying: a tool call already started continues from the status the log holds.
        const started = replay ? findActiveToolCall(this.#stateOf(run), call.id) : undefined;
        if (started && started.status !== 'streaming') return this.#continueTool(run, call, displayName, dispatch);
        if (!started) await dispatch({ type: 'chat/toolCallStart', turnId, toolCallId: call.id, toolName: call.name, displayName });
        const ready: WireAction = {
          type: 'chat/toolCallReady',
          turnId,
          toolCallId: call.id,
          invocationMessage: `Run ${displayName}`,
        };
        if (call.input !== undefined) ready['toolInput'] = JSON.stringify(call.input);
        if (call.confirm) {
          ready['confirmationTitle'] = `Allow ${displayName}?`;
          if (call.options) ready['options'] = call.options;
        } else {
          ready['confirmed'] = 'not-needed';
        }
        await dispatch(ready);
        return this.#continueTool(run, call, displayName, dispatch);
      },
      sleep: (ms) =>
        new Promise<void>((resolve, reject) => {
          if (signal.aborted) return reject(new AbortedError());
          // Replaying: a pause before text the turn already holds was taken the first time.
          if (replay?.replaying) return resolve();
          const t = setTimeout(() => {
            signal.removeEventListener('abort', onAbort);
            resolve();
          }, ms);
          const onAbort = (): void => {
            clearTimeout(t);
            reject(new AbortedError());
          };
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      barrier: async (only) => {
        if (signal.aborted) throw new AbortedError();
        return this.steering.consumeAtBarrier({ session, chat, turnId }, only);
      },
      dispatch,
      waitFor: (pick, about) => this.#waitFor(run, pick, about),
    };
  }
}
