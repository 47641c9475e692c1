/**
 * The agent provider port. The hub calls `runTurn` when a turn starts on a chat whose session
 * uses this provider; the provider streams, asks and runs tools through the `TurnContext`,
 * and the hub turns every call into validated, sequenced, durable AHP actions. When `runTurn`
 * resolves the hub completes the turn; when it throws the hub ends the turn with `chat/error`;
 * when a client cancels, `signal` aborts and pending waits reject with an AbortError.
 */
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatInputRequest, ChatState, Message, ToolCallState } from '../../shared/protocol/state.js';

export interface AgentInfo {
  readonly provider: string;
  readonly displayName: string;
  readonly description?: string;
}

/** What a completed `chat/inputCompleted` gives back to the agent. */
export interface InputOutcome {
  readonly response: 'accept' | 'decline' | 'cancel';
  readonly answers: NonNullable<ChatInputRequest['answers']>;
}

export interface ToolCallRequest {
  readonly id: string;
  readonly name: string;
  readonly displayName?: string;
  readonly input?: unknown;
  /** When true the call waits in pending-confirmation for `chat/toolCallConfirmed`. */
  readonly confirm?: boolean;
  /** Confirmation options offered to the user (AHP `{id, label, kind: approve|deny}`). */
  readonly options?: ReadonlyArray<{ id: string; label: string; kind: 'approve' | 'deny'; group?: string }>;
  /** Runs the tool once it may run; its string result is reported as the tool's output. */
  readonly execute?: (input: unknown) => Promise<string>;
}

export interface ToolOutcome {
  readonly approved: boolean;
  readonly state: ToolCallState;
}

/** A steering input the agent took at a safe barrier (issue: steering a running turn). */
export interface SteeringInput {
  readonly inputId: string;
  readonly text: string;
}

export interface TurnContext {
  readonly session: string;
  /** The session owner (a user of the session's tenant): agent process caps count per owner. */
  readonly owner?: string | undefined;
  readonly chat: string;
  readonly turnId: string;
  readonly message: Message;
  readonly signal: AbortSignal;
  /** Streams markdown as a new response part (one responsePart + delta chunks). */
  say(text: string): Promise<void>;
  /** Dispatches `chat/inputRequested` and waits for `chat/inputCompleted` on that request. */
  requestInput(request: ChatInputRequest): Promise<InputOutcome>;
  /** Runs a tool call through the AHP tool state machine, with confirmation when asked. */
  runTool(call: ToolCallRequest): Promise<ToolOutcome>;
  /** Waits `ms` unless the turn is cancelled first. */
  sleep(ms: number): Promise<void>;
  /**
   * A safe input barrier: returns the steering inputs accepted since the last barrier, now
   * marked consumed and visible in the transcript. Agents call it between steps. `only` limits it
   * to the named input ids (an agent that takes inputs through its own channel reports which).
   */
  barrier(only?: readonly string[]): Promise<readonly SteeringInput[]>;
  /**
   * Lower level, for providers that translate another protocol (ACP) action by action: dispatches
   * one server-side action on this turn's chat (validated and sequenced like every other).
   */
  dispatch(action: WireAction): Promise<number>;
  /**
   * Resolves with the first non-undefined `pick` of the chat state (now or after a commit, once
   * that state is durable); rejects when the turn ends. `about`: the tool call or input request id
   * `pick` depends on alone, so only commits changing that one (or no single one) re-check it.
   */
  waitFor<T>(pick: (state: ChatState) => T | undefined, about?: string): Promise<T>;
}

export interface AgentProvider {
  readonly info: AgentInfo;
  /**
   * Drives one turn. Resolve to complete the turn; throw to fail it. Remote agents (which connect
   * over the WebSocket and dispatch actions themselves) use a provider whose runTurn never
   * finishes the turn on its own: see `RemoteAgentProvider`.
   */
  runTurn(ctx: TurnContext): Promise<TurnResult>;
  /**
   * Set when this provider's agent cannot take steering input while a turn runs: the steering
   * engine then offers no target and refuses submits with this reason (never accepting an input
   * it cannot deliver). Absent = the provider passes barriers (`TurnContext.barrier`).
   */
  steeringUnavailable?(session: string): { code: string; message: string } | undefined;
  /**
   * What becomes of this provider's turn that was running when the hub process stopped:
   * `replay` — the hub runs `runTurn` again with a context that matches each step against what
   * the log holds (turn-replay.ts), so a deterministic agent carries on where it was;
   * `reconnect` — the agent lives outside the hub: the turn stays open while it reconnects
   * (`remoteAgentGraceMs`). Absent: the agent died with the hub, so the turn ends with a
   * `hubRestarted` error (docs/continuity.md, "Turns").
   */
  readonly afterHubRestart?: 'replay' | 'reconnect';
  /** The hub session is gone: release whatever the provider holds for it (an agent process). */
  disposeSession?(session: string): void;
  /** Hub shutdown: release everything. */
  close?(): Promise<void>;
  /** The working directory the session's agent runs in, for providers that run processes. */
  workspaceOf?(session: string): string;
  /** Providers that run processes: how many live, and starts refused at a cap or failed (metrics). */
  stats?(): { processes: number; refusals: number; startFailures: number };
}

/** `complete`: the hub dispatches chat/turnComplete. `external`: someone else ends the turn. */
export type TurnResult = 'complete' | 'external';

export class TurnFailure extends Error {
  constructor(
    message: string,
    readonly errorType = 'agentError',
  ) {
    super(message);
    this.name = 'TurnFailure';
  }
}
