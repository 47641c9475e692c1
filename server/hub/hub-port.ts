/**
 * The seam between the hub and the features built on it (agent runner, steering, permission
 * replies, collaboration, the qwen-serve surface). Features see only `HubPort`: they enter
 * actions and commands through its one door (`enter`) and render the one `Outcome`, read session and chat state through named
 * accessors, and observe the hub through typed hooks called in one documented order.
 *
 * Hook order. Every hook event is delivered to the registered owners in `HOOK_ORDER`, whatever
 * order they registered in: the cluster's agent-lease keeper first (it takes the lease of a
 * turn this process starts), then the agent runner (it aborts a run before anyone reacts to the
 * turn's end), then the server's own metrics, then the features in the order `npm start` installs
 * them. Owners named `extension` (tests, third-party features) come last, in registration order.
 *
 * Two phases per commit (the rule itself is stated and enforced in `commit-pipeline.ts`):
 * - commit phase (`afterCommit`, then `turnEnded` when the commit ended the chat's active turn):
 *   synchronous, as the action is sequenced, before it is durable. It folds state a feature
 *   decides from and nothing else: no I/O, no dispatch, nothing that leaves the process.
 * - delivered phase (the effects registered with `CommitEvent.afterAppend`, then `afterDurable`,
 *   then `turnEndedDurable`; `sessionDisposed`, `chatDisposed`): once the record is in the log, in
 *   serverSeq order, right after its envelope went to WebSocket subscribers. Everything that
 *   leaves the process happens here: SSE frames, answers to agents, collaboration frames,
 *   starting or aborting agent runs, follow-up dispatches. Never runs for a record whose append
 *   failed. A commit-phase hook that causes such an effect registers it on the commit
 *   (`e.afterAppend(fn)`); no feature keeps a buffer of its own.
 * A dispatch made from a hook is sequenced after the current commit and announced after every
 * owner has seen the current one, so each owner sees serverSeq strictly increasing in each phase.
 *
 * A hook that throws is logged and does not stop the others (nor the commit, which is already
 * sequenced).
 */
import type { KnownAction } from '../../shared/protocol/actions.js';
import type { ActionOrigin, WireAction } from '../../shared/protocol/messages.js';
import type { Principal } from '../auth/auth.js';
import type { ChatEntry, SessionEntry } from './catalogue.js';
import type { Connection } from './connection.js';
import type { SessionReader } from './queries.js';
import type { CheckEntry, Entry, Outcome } from './entry.js';

/** Who observes the hub, in the order they are called (see the file header). */
export const HOOK_ORDER = ['leases', 'agents', 'metrics', 'steering', 'interactions', 'collab', 'qwen-serve', 'push', 'windowed', 'extension'] as const;
export type HookOwner = (typeof HOOK_ORDER)[number];

/**
 * One committed action, as features see it: sequenced and applied. Commit-phase hooks get it as
 * the hub accepts it (before the log append); delivered-phase hooks get the same event once it
 * is durable. Remote actions are durable already.
 */
export interface CommitEvent {
  readonly channel: string;
  /** The action exactly as committed (unknown keys kept). */
  readonly action: WireAction;
  /**
   * The same action as the typed union, parsed once by the hub before it was committed;
   * undefined for action types this hub does not know (carried through, reducer no-ops).
   */
  readonly known: KnownAction | undefined;
  readonly serverSeq: number;
  readonly origin?: ActionOrigin | undefined;
  /**
   * Cluster mode: another hub process sequenced it (this one folded it from the shared log).
   * Side effects (running an agent) belong to the process that sequenced the action.
   */
  readonly remote?: boolean;
  /**
   * Registers an effect this commit causes (an SSE frame, a follow-up dispatch, waking an agent)
   * to run in the commit's delivered phase: once the record is in the log and its envelope went
   * out, before any owner's `afterDurable`, in the order registered. Never runs when the append
   * failed. Called once the commit is delivered already (from a delivered-phase hook), it runs
   * at once. This is how a commit-phase hook causes anything that leaves the process.
   */
  afterAppend(effect: () => void): void;
}

/** What the hub knows of a commit before it is announced (the `CommitEvent` without its effects). */
export type CommitFacts = Omit<CommitEvent, 'afterAppend'>;

/** Why a chat's active turn stopped being active. */
export type TurnEndReason = 'completed' | 'cancelled' | 'failed' | 'truncated' | 'other';

/**
 * Derived by the hub, once, from the chat's state before and after a commit: the chat had an
 * active turn `turnId` and no longer has it (or has another one).
 */
export interface TurnEndedEvent {
  readonly chat: string;
  readonly session: string;
  readonly turnId: string;
  readonly reason: TurnEndReason;
  /** The commit that ended it. */
  readonly commit: CommitEvent;
}

export interface HubHooks {
  /** Commit phase: fold the commit into feature state (synchronous, no side effects). */
  afterCommit?(e: CommitEvent): void;
  /** Commit phase: the commit ended the chat's active turn (after every owner's `afterCommit`). */
  turnEnded?(e: TurnEndedEvent): void;
  /** Delivered phase: the commit is in the log; act on it (send, answer, dispatch). */
  afterDurable?(e: CommitEvent): void;
  /** Delivered phase: the turn end is in the log (after every owner's `afterDurable`). */
  turnEndedDurable?(e: TurnEndedEvent): void;
  /** Delivered phase: the session's disposal is in the log; it and its chats are gone from the catalogue. */
  sessionDisposed?(e: { readonly session: string }): void;
  /** Delivered phase: the chat's disposal is in the log. */
  chatDisposed?(e: { readonly chat: string; readonly session: string }): void;
  /** A client connection closed; features drop what they hold for it (presence, listeners). */
  disconnected?(conn: Connection): void;
  /** A client subscribed to a channel (`subscribe`, or rejoined it with `reconnect`). */
  subscribed?(e: { readonly channel: string; readonly principal: Principal }): void;
}

export interface HubPort {
  /**
   * The one door (`door.ts`): every action (as a principal, or as the hub / an in-process agent)
   * and command (create/dispose session and chat), and the operations a feature performs itself
   * (steer, prompt, answerPermission, cancel…), which the door checks. Admission, tenant
   * visibility and authorization are checked there, once; the decision is made synchronously
   * within the call (the first of racing callers wins); writes resolve once durable. Features
   * only render the `Outcome`.
   */
  enter(entry: CheckEntry): Outcome;
  enter(entry: Entry): Outcome | Promise<Outcome>;
  /** The session if it exists and the principal's tenant may see it. */
  visibleSession(principal: Principal, uri: string): SessionEntry | undefined;
  /** The chat if it exists and its session is visible to the principal. */
  visibleChat(principal: Principal, uri: string): ChatEntry | undefined;
  /** The session by URI, without any tenant check: for state the caller already scoped. */
  sessionEntry(uri: string): SessionEntry | undefined;
  /** The chat by URI, without any tenant check. */
  chatEntry(uri: string): ChatEntry | undefined;
  /** Read-only access to the tenant's sessions and chats for search and export; never loads a parked session. */
  readonly reader: SessionReader;
  /** The chat a session's non-AHP surfaces (prompt route, steering, qwen-serve) act on. */
  defaultChatOf(sessionUri: string): string | undefined;
  /** Resolves once everything sequenced so far is durable and delivered. */
  drain(): Promise<void>;
  /** True when this hub shares its log with other processes (cluster mode). */
  readonly sharesLog: boolean;
  /** Why this tenant's storage refuses writes right now (a batch in doubt, the database away), else undefined. */
  readonly storageProblem: string | undefined;
  /** Cluster mode: resolves once this process holds the write turn (see Hub.decisionTurn); undefined otherwise. */
  decisionTurn(): Promise<void> | undefined;
  /** Registers hooks for an owner (called in `HOOK_ORDER`); returns the unregister function. */
  hook(owner: HookOwner, hooks: HubHooks): () => void;
}

/** Which turn-ending reason a committed action stands for. */
export function turnEndReasonOf(actionType: string): TurnEndReason {
  switch (actionType) {
    case 'chat/turnComplete':
      return 'completed';
    case 'chat/turnCancelled':
      return 'cancelled';
    case 'chat/error':
      return 'failed';
    case 'chat/truncated':
      return 'truncated';
    default:
      return 'other';
  }
}
