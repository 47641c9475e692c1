/**
 * The chat-channel reducer (§2.4, §3.1–3.4). Pure and clock-free:
 * - never reads the clock or randomness: `modifiedAt` comes from the action (`turnStarted.startedAt`,
 *   or `startedAt + duration` when a turn ends); actions without a timestamp leave it alone;
 * - never mutates its input, and returns the *same* state object for a no-op, so callers can
 *   detect "nothing happened" by identity;
 * - never throws: unknown action types are no-ops (forward compatibility). Known types are
 *   trusted to be well-formed (they come through `parseAction` or from typed server code); as a
 *   safety net, a payload that would make a transition throw is dropped as a no-op.
 */
import { type ChatAction, type DeltaAction, isChatActionType, type ReasoningAction, type ResponsePartAction, type TruncatedAction, type TurnResumeAction, type TurnsLoadedAction, type TurnStartedAction } from '../protocol/actions.js';
import { type ActiveTurn, type ChatState, type ErrorInfo, type ErrorPart, isPartOfKind, SessionStatus, withBit, type Turn, type TurnState } from '../protocol/state.js';
import { upsertBy, withField } from './collections.js';
import { appendPart } from './part-index.js';
import { hasTurn } from './selectors.js';
import { withDirectory, withoutDirectory } from './session-host-reducer.js';
import { replacePartAt, updateActiveTurn, withDerivedStatus, withResponseParts } from './chat-helpers.js';
import { idOf, inputAnswerChanged, inputCompleted, inputRequested, pendingMessageRemoved, pendingMessageSet, queuedMessagesReordered, removePendingFromList } from './chat-inputs.js';
import { cancelUnfinishedToolCall, changeToolContent, completeToolCall, confirmToolCall, confirmToolResult, prepareToolCall, requireToolAuth, resolveToolAuth, streamToolInput, toolCallStart, transitionToolCall } from './chat-tool-calls.js';

/**
 * `action` is typed loosely on purpose: logs and peers may carry types this version does not
 * know. The `ChatAction` member keeps excess-property checks for inline known actions.
 */
export function chatReducer(state: ChatState, action: ChatAction | { readonly type: string }): ChatState {
  if (!isChatActionType(action.type)) return state;
  try {
    return reduce(state, action as ChatAction);
  } catch {
    // Only reachable with a known type whose payload skipped validation (e.g. a missing object).
    // Dropping it keeps the channel alive; a valid action never takes this path.
    return state;
  }
}

function reduce(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case 'chat/turnStarted':
      return turnStarted(state, action);
    case 'chat/delta':
    case 'chat/reasoning':
      return appendToStreamedPart(state, action);
    case 'chat/responsePart':
      return appendResponsePart(state, action);
    case 'chat/usage':
      return updateActiveTurn(state, action.turnId, (turn) => ({ ...turn, usage: action.usage }));
    case 'chat/turnComplete':
      return endTurn(state, action.turnId, { outcome: 'complete', duration: action.duration });
    case 'chat/turnCancelled':
      return endTurn(state, action.turnId, { outcome: 'cancelled', duration: action.duration });
    case 'chat/error':
      return endTurn(state, action.turnId, {
        outcome: 'error',
        duration: action.duration,
        error: action.error,
        errorPart: action.part,
      });
    case 'chat/turnResume':
      return turnResume(state, action);
    case 'chat/truncated':
      return truncate(state, action);
    case 'chat/turnsLoaded':
      return turnsLoaded(state, action);
    case 'chat/activityChanged':
      return withField(state, 'activity', action.activity);
    case 'chat/draftChanged':
      return withField(state, 'draft', action.draft);
    case 'chat/isReadChanged':
      return withFlag(state, SessionStatus.IsRead, action.isRead);
    case 'chat/isArchivedChanged':
      return withFlag(state, SessionStatus.IsArchived, action.isArchived);
    case 'chat/workingDirectorySet':
      return withDirectory(state, action.directory);
    case 'chat/workingDirectoryRemoved':
      return withoutDirectory(state, action.directory);
    case 'chat/inputRequested':
      return inputRequested(state, action);
    case 'chat/inputAnswerChanged':
      return inputAnswerChanged(state, action);
    case 'chat/inputCompleted':
      return inputCompleted(state, action);
    case 'chat/pendingMessageSet':
      return pendingMessageSet(state, action);
    case 'chat/pendingMessageRemoved':
      return pendingMessageRemoved(state, action);
    case 'chat/queuedMessagesReordered':
      return queuedMessagesReordered(state, action);
    case 'chat/steeringMessageSet':
      return { ...state, steeringMessages: upsertBy(state.steeringMessages, action.steeringMessage, idOf) };
    case 'chat/steeringMessageRemoved':
      return removePendingFromList(state, 'steeringMessages', action.id);
    case 'chat/toolCallStart':
      return toolCallStart(state, action);
    case 'chat/toolCallDelta':
      return transitionToolCall(state, action, streamToolInput);
    case 'chat/toolCallReady':
      return transitionToolCall(state, action, prepareToolCall);
    case 'chat/toolCallConfirmed':
      return transitionToolCall(state, action, confirmToolCall);
    case 'chat/toolCallComplete':
      return transitionToolCall(state, action, completeToolCall);
    case 'chat/toolCallResultConfirmed':
      return transitionToolCall(state, action, confirmToolResult);
    case 'chat/toolCallContentChanged':
      return transitionToolCall(state, action, changeToolContent);
    case 'chat/toolCallAuthRequired':
      return transitionToolCall(state, action, requireToolAuth);
    case 'chat/toolCallAuthResolved':
      return transitionToolCall(state, action, resolveToolAuth);
    default:
      return unreachable(action, state);
  }
}

/** The chat's own IsRead / IsArchived bit; the same state when it already has that value. */
function withFlag(state: ChatState, bit: number, on: boolean): ChatState {
  const status = withBit(state.status, bit, on);
  return status === state.status ? state : { ...state, status };
}

/** Compile-time exhaustiveness: adding a chat action without a case fails to type-check here. */
function unreachable(_action: never, state: ChatState): ChatState {
  return state;
}

// ─── Turn lifecycle (§3.1) ───────────────────────────────────────────────────

function turnStarted(state: ChatState, action: TurnStartedAction): ChatState {
  // [I] A replayed start must not reset a streaming turn or resurrect a finished one.
  if (hasTurn(state, action.turnId)) {
    return state;
  }
  const activeTurn: ActiveTurn = {
    id: action.turnId,
    startedAt: action.startedAt,
    message: action.message,
    responseParts: [],
  };
  let next: ChatState = { ...state, activeTurn, modifiedAt: action.startedAt };
  if (action.queuedMessageId !== undefined) next = removeConsumedMessage(next, action.queuedMessageId);
  return withDerivedStatus(next, { clearIsRead: true });
}

/** The message a turn was started from leaves whichever pending list held it. */
function removeConsumedMessage(state: ChatState, messageId: string): ChatState {
  let next = state;
  if (next.steeringMessage?.id === messageId) next = withField(next, 'steeringMessage', undefined);
  next = removePendingFromList(next, 'steeringMessages', messageId);
  return removePendingFromList(next, 'queuedMessages', messageId);
}

/** `chat/delta` → markdown part, `chat/reasoning` → reasoning part, addressed by part `id`. */
function appendToStreamedPart(state: ChatState, action: DeltaAction | ReasoningAction): ChatState {
  const kind = action.type === 'chat/delta' ? 'markdown' : 'reasoning';
  return updateActiveTurn(state, action.turnId, (turn) => {
    // Parts without an id (tool calls, unknown kinds) can never match.
    const index = turn.responseParts.findIndex((part) => isPartOfKind(part, kind) && part.id === action.partId);
    return withResponseParts(
      turn,
      replacePartAt(turn.responseParts, index, (part) => (isPartOfKind(part, kind) ? { ...part, content: part.content + action.content } : part)),
    );
  });
}

function appendResponsePart(state: ChatState, action: ResponsePartAction): ChatState {
  // [S] Error parts are appended only by `chat/error`, which also ends the turn.
  if (isPartOfKind(action.part, 'error')) return state;
  const next = updateActiveTurn(state, action.turnId, (turn) => ({
    ...turn,
    responseParts: appendPart(turn.responseParts, action.part),
  }));
  // A part may arrive already blocking (an open request, a tool awaiting confirmation).
  return next === state ? state : withDerivedStatus(next);
}

interface TurnEnd {
  readonly outcome: TurnState;
  readonly duration: number;
  readonly error?: ErrorInfo | undefined;
  readonly errorPart?: ErrorPart | undefined;
}

/**
 * Ends the active turn: unfinished tool calls are cancelled as `skipped`, input-request parts stay
 * as they are (an unanswered one is recognisable by its missing `response`), and the turn moves
 * to `turns`. No-op unless `turnId` is the active turn.
 */
function endTurn(state: ChatState, turnId: string, end: TurnEnd): ChatState {
  const turn = state.activeTurn;
  if (!turn || turn.id !== turnId) return state;
  const duration = Number.isFinite(end.duration) && end.duration > 0 ? end.duration : 0;
  const responseParts = turn.responseParts.map(cancelUnfinishedToolCall);
  if (end.errorPart) responseParts.push(end.errorPart);
  const finished: Turn = {
    ...turn,
    duration,
    responseParts,
    state: end.outcome,
    ...(end.error !== undefined && { error: end.error }),
  };
  const next: ChatState = {
    ...withField(state, 'activeTurn', undefined),
    turns: [...state.turns, finished],
    modifiedAt: addMilliseconds(turn.startedAt, duration) ?? state.modifiedAt,
  };
  return withDerivedStatus(next, { turnEndedWithError: end.outcome === 'error' });
}

/** `iso + ms` as an ISO string; undefined when `iso` does not parse or the sum is out of range. */
function addMilliseconds(iso: string, ms: number): string | undefined {
  const time = Date.parse(iso) + ms;
  const maxDateMs = 8.64e15; // ECMAScript Date range; `toISOString` throws beyond it.
  return Number.isFinite(time) && Math.abs(time) <= maxDateMs ? new Date(time).toISOString() : undefined;
}

/** [S] A turn that ended in an error whose last part says it may be resumed. */
export function isResumableTurn(turn: Turn): boolean {
  const lastPart = turn.responseParts.at(-1);
  return turn.state === 'error' && lastPart !== undefined && isPartOfKind(lastPart, 'error') && lastPart.resumable === true;
}

/** [S] Moves the latest turn, ended by a resumable error, back to `activeTurn` unchanged. */
function turnResume(state: ChatState, action: TurnResumeAction): ChatState {
  const last = state.turns.at(-1);
  if (state.activeTurn || !last || last.id !== action.turnId || !isResumableTurn(last)) return state;
  const activeTurn: ActiveTurn = {
    id: last.id,
    // Turns loaded from older producers may lack `startedAt`; the chat's clock is the best stand-in.
    startedAt: last.startedAt ?? state.modifiedAt,
    message: last.message,
    responseParts: last.responseParts,
    ...(last.usage !== undefined && { usage: last.usage }),
  };
  return withDerivedStatus({ ...state, turns: state.turns.slice(0, -1), activeTurn }, { clearIsRead: true });
}

/**
 * Keeps turns through `turnId` (unknown id: the whole action is a no-op) or clears them all
 * (also dropping the pagination cursor). Always drops the active turn with all its parts.
 */
function truncate(state: ChatState, action: TruncatedAction): ChatState {
  let next: ChatState;
  if (action.turnId === undefined) {
    next = withField({ ...state, turns: [] }, 'turnsNextCursor', undefined);
  } else {
    const index = state.turns.findIndex((turn) => turn.id === action.turnId);
    if (index === -1) return state;
    next = { ...state, turns: state.turns.slice(0, index + 1) };
  }
  return withDerivedStatus(withField(next, 'activeTurn', undefined));
}

/** Prepends an older page of turns, skipping ids already present, and replaces the cursor. */
function turnsLoaded(state: ChatState, action: TurnsLoadedAction): ChatState {
  const present = new Set(state.turns.map((turn) => turn.id));
  if (state.activeTurn) present.add(state.activeTurn.id);
  const older: Turn[] = [];
  for (const turn of action.turns) {
    if (present.has(turn.id)) continue;
    present.add(turn.id);
    older.push(turn);
  }
  const next = older.length > 0 ? { ...state, turns: [...older, ...state.turns] } : state;
  return withField(next, 'turnsNextCursor', action.turnsNextCursor);
}
