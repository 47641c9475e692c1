/**
 * Runs agent providers for turns. Listens to the hub's committed actions: a `chat/turnStarted`
 * on a chat whose session has an in-process provider starts one run; a cancel, an end of the
 * turn by someone else, a truncation or a disposal aborts it. Each run talks to the hub only
 * through `TurnContext`, whose calls become validated, sequenced AHP actions.
 */
import type { KnownAction } from '../../shared/protocol/actions.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatInputRequest, ChatState, Message } from '../../shared/protocol/state.js';
import { findActiveToolCall, findAnsweredInputRequest, findDecidedToolCall } from '../../shared/state/selectors.js';
import type { CommitEvent, HubPort } from '../hub/hub-port.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import {
  TurnFailure,
  type AgentProvider,
  type InputOutcome,
  type SteeringInput,
  type ToolCallRequest,
  type ToolOutcome,
  type TurnContext,
} from './agent.js';

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
  check(state: ChatState): boolean;
  fail(err: Error): void;
}

interface Run {
  readonly chat: string;
  readonly turnId: string;
  readonly controller: AbortController;
  readonly waiters: Set<Waiter>;
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

export class AgentRunner implements SteeringHost {
  readonly #runs = new Map<string, Run>();
  #unsubscribe: (() => void) | undefined;

  constructor(
    private readonly hub: HubPort,
    private readonly providers: ReadonlyMap<string, AgentProvider>,
    private readonly logger: Logger,
    private readonly now: () => number,
    private readonly newId: () => string,
    private steering: SteeringPort = noSteering,
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
      sessionDisposed: (e) => {
        for (const run of this.#runs.values()) if (!this.hub.chatEntry(run.chat)) this.#abort(run);
        for (const provider of new Set(this.providers.values())) provider.disposeSession?.(e.session);
      },
      chatDisposed: (e) => {
        const run = this.#runs.get(e.chat);
        if (run) this.#abort(run);
      },
      afterCommit: (e) => this.#onCommit(e),
      turnEnded: (e) => {
        // Cancelled, completed by someone else, truncated, or errored: this run may not write any more.
        const run = this.#runs.get(e.chat);
        if (run && run.turnId === e.turnId) this.#abort(run);
      },
    });
  }

  /** Aborts every run (shutdown) and lets providers release what they hold (agent processes). */
  async stop(): Promise<void> {
    this.#unsubscribe?.();
    for (const run of this.#runs.values()) this.#abort(run);
    for (const provider of new Set(this.providers.values())) {
      await provider.close?.().catch((err: unknown) => this.logger.warn('agent provider did not close cleanly', errorFields(err)));
    }
  }

  get activeRuns(): number {
    return this.#runs.size;
  }

  #onCommit(e: CommitEvent): void {
    const { channel, known: action } = e;
    const chat = this.hub.chatEntry(channel);
    if (!chat) return;
    const run = this.#runs.get(channel);
    if (action?.type === 'chat/turnStarted') {
      // In a cluster the process that sequenced the turn start runs the agent: at most once.
      if (!e.remote) this.#maybeStart(channel, chat.session, action);
      return;
    }
    // A run whose turn is no longer active is aborted by the `turnEnded` hook.
    if (run && chat.state.activeTurn?.id === run.turnId) {
      for (const w of [...run.waiters]) if (w.check(chat.state)) run.waiters.delete(w);
    }
  }

  /** The provider running the session's agent, if the session exists and its provider is installed. */
  #providerOf(session: string): AgentProvider | undefined {
    const entry = this.hub.sessionEntry(session);
    return entry ? this.providers.get(entry.provider) : undefined;
  }

  #maybeStart(chat: string, sessionUri: string, action: Extract<KnownAction, { type: 'chat/turnStarted' }>): void {
    const provider = this.#providerOf(sessionUri);
    if (!provider) return;
    const turnId = action.turnId;
    const existing = this.#runs.get(chat);
    if (existing) this.#abort(existing);
    const run: Run = { chat, turnId, controller: new AbortController(), waiters: new Set() };
    this.#runs.set(chat, run);
    const message: Message = action.message;
    const startedAt = Date.parse(action.startedAt);
    void this.#execute(run, provider, sessionUri, message, Number.isFinite(startedAt) ? startedAt : this.now());
  }

  async #execute(run: Run, provider: AgentProvider, session: string, message: Message, startedAt: number): Promise<void> {
    const ctx = this.#context(run, session, message);
    const duration = (): number => Math.max(0, this.now() - startedAt);
    try {
      const result = await provider.runTurn(ctx);
      if (run.controller.signal.aborted) return;
      if (result === 'complete') await this.hub.dispatchServer(run.chat, { type: 'chat/turnComplete', turnId: run.turnId, duration: duration() });
    } catch (err) {
      if (run.controller.signal.aborted) return;
      const failure = err instanceof TurnFailure ? err : undefined;
      if (!failure) this.logger.warn('agent run failed', { chat: run.chat, turnId: run.turnId, ...errorFields(err) });
      await this.hub
        .dispatchServer(run.chat, {
          type: 'chat/error',
          turnId: run.turnId,
          duration: duration(),
          error: { errorType: failure?.errorType ?? 'agentError', message: failure?.message ?? 'The agent failed unexpectedly.' },
        })
        .catch((e: unknown) => this.logger.debug('could not end failed turn', errorFields(e)));
    } finally {
      if (this.#runs.get(run.chat) === run) this.#runs.delete(run.chat);
      for (const w of run.waiters) w.fail(new AbortedError());
      run.waiters.clear();
    }
  }

  #abort(run: Run): void {
    run.controller.abort();
    for (const w of run.waiters) w.fail(new AbortedError());
    run.waiters.clear();
    if (this.#runs.get(run.chat) === run) this.#runs.delete(run.chat);
  }

  /** Resolves with the first non-undefined value of `pick` on the chat's state (now or after a commit). */
  #waitFor<T>(run: Run, pick: (state: ChatState) => T | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (run.controller.signal.aborted) return reject(new AbortedError());
      const state = this.hub.chatEntry(run.chat)?.state;
      const now = state ? pick(state) : undefined;
      if (now !== undefined) return resolve(now);
      run.waiters.add({
        check: (s) => {
          const v = pick(s);
          if (v === undefined) return false;
          resolve(v);
          return true;
        },
        fail: reject,
      });
    });
  }

  #context(run: Run, session: string, message: Message): TurnContext {
    const { chat, turnId } = run;
    const signal = run.controller.signal;
    const dispatch = (action: WireAction): Promise<number> => {
      if (signal.aborted) return Promise.reject(new AbortedError());
      return this.hub.dispatchServer(chat, action);
    };
    return {
      session,
      owner: this.hub.sessionEntry(session)?.owner,
      chat,
      turnId,
      message,
      signal,
      say: async (text) => {
        const partId = this.newId();
        const pending = [dispatch({ type: 'chat/responsePart', turnId, part: { kind: 'markdown', id: partId, content: '' } })];
        for (const chunk of chunkText(text)) pending.push(dispatch({ type: 'chat/delta', turnId, partId, content: chunk }));
        await Promise.all(pending);
      },
      requestInput: async (request: ChatInputRequest): Promise<InputOutcome> => {
        await dispatch({ type: 'chat/inputRequested', request });
        return this.#waitFor(run, (state) => {
          const answered = findAnsweredInputRequest(state, request.id);
          return answered?.response ? { response: answered.response, answers: answered.request.answers ?? {} } : undefined;
        });
      },
      runTool: async (call: ToolCallRequest): Promise<ToolOutcome> => {
        const displayName = call.displayName ?? call.name;
        await dispatch({ type: 'chat/toolCallStart', turnId, toolCallId: call.id, toolName: call.name, displayName });
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
        const decided = await this.#waitFor(run, (state) => findDecidedToolCall(state, call.id));
        if (decided.status !== 'running') return { approved: false, state: decided };
        const output = call.execute ? await call.execute(call.input) : `${displayName} finished.`;
        await dispatch({
          type: 'chat/toolCallComplete',
          turnId,
          toolCallId: call.id,
          result: { success: true, pastTenseMessage: `Ran ${displayName}`, content: [{ type: 'text', text: output }] },
        });
        const final = await this.#waitFor(run, (state) => findActiveToolCall(state, call.id));
        return { approved: true, state: final };
      },
      sleep: (ms) =>
        new Promise<void>((resolve, reject) => {
          if (signal.aborted) return reject(new AbortedError());
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
      waitFor: (pick) => this.#waitFor(run, pick),
    };
  }
}
