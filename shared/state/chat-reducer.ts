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
import {
  isChatActionType,
  type ChatAction,
  type DeltaAction,
  type InputAnswerChangedAction,
  type InputCompletedAction,
  type InputRequestedAction,
  type PendingMessageRemovedAction,
  type PendingMessageSetAction,
  type QueuedMessagesReorderedAction,
  type ReasoningAction,
  type ResponsePartAction,
  type ToolCallAuthRequiredAction,
  type ToolCallAuthResolvedAction,
  type ToolCallCompleteAction,
  type ToolCallConfirmedAction,
  type ToolCallContentChangedAction,
  type ToolCallDeltaAction,
  type ToolCallReadyAction,
  type ToolCallResultConfirmedAction,
  type ToolCallStartAction,
  type TruncatedAction,
  type TurnResumeAction,
  type TurnStartedAction,
  type TurnsLoadedAction,
} from '../protocol/actions.js';
import {
  SessionStatus,
  isPartOfKind,
  withBit,
  type ActiveTurn,
  type ChatInputRequest,
  type ChatState,
  type ErrorInfo,
  type ErrorPart,
  type InputRequestPart,
  type PendingMessage,
  type ResponsePart,
  type ToolCallContributor,
  type ToolCallState,
  type Turn,
  type TurnState,
} from '../protocol/state.js';
import { nonEmpty, nonEmptyRecord, removeWhere, setEntry, upsertBy, withField } from './collections.js';
import { appendPart, firstPositionOf, inputKey, replacePart, toolKey } from './part-index.js';
import { hasTurn, isOpenInputRequest } from './selectors.js';
import { deriveChatStatus } from './status.js';

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

/** Compile-time exhaustiveness: adding a chat action without a case fails to type-check here. */
function unreachable(_action: never, state: ChatState): ChatState {
  return state;
}

// ─── Status ──────────────────────────────────────────────────────────────────

interface StatusChange {
  /** The turn just ended through `chat/error` (§2.4 rule 1). */
  readonly turnEndedWithError?: boolean;
  /** New activity the user has not seen: `turnStarted`, `inputRequested`, `turnResume`. */
  readonly clearIsRead?: boolean;
}

/** Recomputes `status` (flags kept); returns `state` itself when the value does not change. */
function withDerivedStatus(state: ChatState, change: StatusChange = {}): ChatState {
  let status = deriveChatStatus(state, change.turnEndedWithError);
  if (change.clearIsRead) status = withBit(status, SessionStatus.IsRead, false);
  return status === state.status ? state : { ...state, status };
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

function updateActiveTurn(state: ChatState, turnId: string, update: (turn: ActiveTurn) => ActiveTurn): ChatState {
  const turn = state.activeTurn;
  if (!turn || turn.id !== turnId) return state;
  const next = update(turn);
  return next === turn ? state : { ...state, activeTurn: next };
}

function withResponseParts(turn: ActiveTurn, responseParts: readonly ResponsePart[]): ActiveTurn {
  // Every helper that changes parts returns a fresh array (which may carry the part index): no copy.
  return responseParts === turn.responseParts ? turn : { ...turn, responseParts: responseParts as ResponsePart[] };
}

/** `chat/delta` → markdown part, `chat/reasoning` → reasoning part, addressed by part `id`. */
function appendToStreamedPart(state: ChatState, action: DeltaAction | ReasoningAction): ChatState {
  const kind = action.type === 'chat/delta' ? 'markdown' : 'reasoning';
  return updateActiveTurn(state, action.turnId, (turn) => {
    // Parts without an id (tool calls, unknown kinds) can never match.
    const index = turn.responseParts.findIndex((part) => isPartOfKind(part, kind) && part.id === action.partId);
    return withResponseParts(
      turn,
      replacePartAt(turn.responseParts, index, (part) =>
        isPartOfKind(part, kind) ? { ...part, content: part.content + action.content } : part,
      ),
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

// ─── Input requests (§3.2) ───────────────────────────────────────────────────

/** Updates the open (unanswered) input-request part with `requestId` in the active turn. */
function updateOpenRequest(
  state: ChatState,
  requestId: string,
  update: (part: InputRequestPart) => InputRequestPart,
): ChatState {
  const turn = state.activeTurn;
  if (!turn) return state;
  const index = findOpenRequestIndex(turn, requestId);
  if (index === -1) return state;
  return updateActiveTurn(state, turn.id, (current) =>
    withResponseParts(
      current,
      replacePartAt(current.responseParts, index, (part) => (isOpenInputRequest(part) ? update(part) : part)),
    ),
  );
}

function findOpenRequestIndex(turn: ActiveTurn, requestId: string): number {
  return firstPositionOf(turn.responseParts, inputKey(requestId), isOpenInputRequest);
}

/** `updateAt` for response parts, keeping the part index (a part keeps its id through every update here). */
function replacePartAt(parts: readonly ResponsePart[], index: number, update: (part: ResponsePart) => ResponsePart): readonly ResponsePart[] {
  const current = parts[index];
  return index < 0 || current === undefined ? parts : replacePart(parts, index, update(current));
}

/**
 * Upserts by request id among *open* parts (a resolved part with the same id is history and is
 * not matched). A re-sent request keeps the answers synced so far unless it carries its own.
 */
function inputRequested(state: ChatState, action: InputRequestedAction): ChatState {
  const turn = state.activeTurn;
  if (!turn) return state;
  const next =
    findOpenRequestIndex(turn, action.request.id) === -1
      ? updateActiveTurn(state, turn.id, (current) => ({
          ...current,
          responseParts: appendPart(current.responseParts, { kind: 'inputRequest', request: action.request }),
        }))
      : updateOpenRequest(state, action.request.id, (part) => ({
          ...part,
          request: keepSyncedAnswers(part.request, action.request),
        }));
  return withDerivedStatus(next, { clearIsRead: true });
}

function keepSyncedAnswers(previous: ChatInputRequest, incoming: ChatInputRequest): ChatInputRequest {
  if (incoming.answers !== undefined || previous.answers === undefined) return incoming;
  return { ...incoming, answers: previous.answers };
}

/** Sets or clears one question's answer (drafts from any client merge per question). */
function inputAnswerChanged(state: ChatState, action: InputAnswerChangedAction): ChatState {
  return updateOpenRequest(state, action.requestId, (part) => {
    const current = part.request.answers;
    if (action.answer === undefined && !(current && Object.hasOwn(current, action.questionId))) return part;
    const answers = nonEmptyRecord(setEntry(current, action.questionId, action.answer));
    return { ...part, request: withField(part.request, 'answers', answers) };
  });
}

/** Resolves the part in place: final answers = synced answers overlaid per question by the action's. */
function inputCompleted(state: ChatState, action: InputCompletedAction): ChatState {
  const next = updateOpenRequest(state, action.requestId, (part) => {
    const answers = nonEmptyRecord({ ...part.request.answers, ...action.answers });
    // As upstream, the part's `_meta` is left alone: who answered (the hub's stamp on the action)
    // is indexed beside the state, see shared/state/answered-by.ts.
    return { ...part, request: withField(part.request, 'answers', answers), response: action.response };
  });
  return next === state ? state : withDerivedStatus(next);
}

// ─── Pending messages and steering (§3.3) ────────────────────────────────────

const idOf = (message: PendingMessage): string => message.id;

function pendingMessageSet(state: ChatState, action: PendingMessageSetAction): ChatState {
  const pending: PendingMessage = { id: action.id, message: action.message };
  return action.kind === 'steering'
    ? { ...state, steeringMessage: pending }
    : { ...state, queuedMessages: upsertBy(state.queuedMessages, pending, idOf) };
}

function pendingMessageRemoved(state: ChatState, action: PendingMessageRemovedAction): ChatState {
  if (action.kind === 'queued') return removePendingFromList(state, 'queuedMessages', action.id);
  return state.steeringMessage?.id === action.id ? withField(state, 'steeringMessage', undefined) : state;
}

function removePendingFromList(
  state: ChatState,
  key: 'queuedMessages' | 'steeringMessages',
  messageId: string,
): ChatState {
  const list = state[key];
  if (!list) return state;
  const remaining = removeWhere(list, (message) => message.id === messageId);
  return remaining === list ? state : withField(state, key, nonEmpty(remaining));
}

/** Listed ids first (unknown and repeated ids ignored), then the rest in their original order. */
function queuedMessagesReordered(state: ChatState, action: QueuedMessagesReorderedAction): ChatState {
  const queued = state.queuedMessages;
  if (!queued || queued.length === 0) return state;
  const firstById = new Map<string, PendingMessage>();
  for (const message of queued) if (!firstById.has(message.id)) firstById.set(message.id, message);
  const front: PendingMessage[] = [];
  const moved = new Set<PendingMessage>();
  for (const id of action.order) {
    const message = firstById.get(id);
    if (message && !moved.has(message)) {
      moved.add(message);
      front.push(message);
    }
  }
  return { ...state, queuedMessages: [...front, ...queued.filter((message) => !moved.has(message))] };
}

// ─── Tool calls (§3.4) ───────────────────────────────────────────────────────

function findToolCallIndex(turn: ActiveTurn, toolCallId: string): number {
  return firstPositionOf(turn.responseParts, toolKey(toolCallId));
}

function toolCallStart(state: ChatState, action: ToolCallStartAction): ChatState {
  return updateActiveTurn(state, action.turnId, (turn) => {
    // Tool calls are addressed by id; a second start for the same id would make that ambiguous.
    if (findToolCallIndex(turn, action.toolCallId) !== -1) return turn;
    const toolCall: ToolCallState = {
      status: 'streaming',
      toolCallId: action.toolCallId,
      toolName: action.toolName,
      displayName: action.displayName,
      intention: action.intention,
      contributor: action.contributor,
      _meta: action._meta,
    };
    return { ...turn, responseParts: appendPart(turn.responseParts, { kind: 'toolCall', toolCall }) };
  });
}

interface ToolAction {
  readonly turnId: string;
  readonly toolCallId: string;
  readonly _meta?: Record<string, unknown> | undefined;
}

/**
 * Applies a tool-call transition in the active turn. `transition` returns undefined when the
 * call is not in a status the action applies to; wrong turn, unknown id or wrong status are
 * all no-ops. Status is recomputed because most transitions start or end a wait for the user.
 */
function transitionToolCall<A extends ToolAction>(
  state: ChatState,
  action: A,
  transition: (toolCall: ToolCallState, action: A) => ToolCallState | undefined,
): ChatState {
  const next = updateActiveTurn(state, action.turnId, (turn) => {
    const index = findToolCallIndex(turn, action.toolCallId);
    return withResponseParts(
      turn,
      replacePartAt(turn.responseParts, index, (part) => {
        if (!isPartOfKind(part, 'toolCall')) return part;
        const toolCall = transition(part.toolCall, action);
        return toolCall ? { ...part, toolCall } : part;
      }),
    );
  });
  return next === state ? state : withDerivedStatus(next);
}

/** Identity and presentation fields every status carries; an action's `_meta` replaces the stored one. */
function toolBase(toolCall: ToolCallState, meta: Record<string, unknown> | undefined) {
  return {
    toolCallId: toolCall.toolCallId,
    toolName: toolCall.toolName,
    displayName: toolCall.displayName,
    intention: toolCall.intention,
    contributor: toolCall.contributor,
    _meta: meta ?? toolCall._meta,
  };
}

function streamToolInput(toolCall: ToolCallState, action: ToolCallDeltaAction): ToolCallState | undefined {
  if (toolCall.status !== 'streaming') return undefined;
  return {
    ...toolCall,
    ...(action.content !== undefined && { partialInput: (toolCall.partialInput ?? '') + action.content }),
    invocationMessage: action.invocationMessage ?? toolCall.invocationMessage,
    _meta: action._meta ?? toolCall._meta,
  };
}

/**
 * Producers may refine the contributor late (e.g. name the MCP server), but client execution
 * ownership is fixed at `toolCallStart`: it is never granted, moved or revoked afterwards,
 * because only the owning client may complete the call.
 */
function refineContributor(
  current: ToolCallContributor | undefined,
  proposed: ToolCallContributor | undefined,
): ToolCallContributor | undefined {
  if (!proposed || current?.kind === 'client' || proposed.kind === 'client') return current;
  return proposed;
}

/**
 * `chat/toolCallReady`: from streaming, running (mid-run re-confirmation) or pending-confirmation
 * (an update that merges earlier prompt fields). `confirmed` → running, else → pending-confirmation.
 */
function prepareToolCall(toolCall: ToolCallState, action: ToolCallReadyAction): ToolCallState | undefined {
  if (toolCall.status !== 'streaming' && toolCall.status !== 'running' && toolCall.status !== 'pending-confirmation') {
    return undefined;
  }
  const base = {
    ...toolBase(toolCall, action._meta),
    intention: action.intention ?? toolCall.intention,
    contributor: refineContributor(toolCall.contributor, action.contributor),
  };
  const toolInput = action.toolInput ?? (toolCall.status === 'streaming' ? undefined : toolCall.toolInput);
  if (action.confirmed !== undefined) {
    return { ...base, status: 'running', invocationMessage: action.invocationMessage, toolInput, confirmed: action.confirmed };
  }
  const earlierPrompt = toolCall.status === 'pending-confirmation' ? toolCall : undefined;
  return {
    ...base,
    status: 'pending-confirmation',
    invocationMessage: action.invocationMessage,
    toolInput,
    confirmationTitle: action.confirmationTitle ?? earlierPrompt?.confirmationTitle,
    riskAssessment: action.riskAssessment ?? earlierPrompt?.riskAssessment,
    edits: action.edits ?? earlierPrompt?.edits,
    editable: action.editable ?? earlierPrompt?.editable,
    options: action.options ?? earlierPrompt?.options,
  };
}

/** pending-confirmation → running (approved) or cancelled (denied). */
function confirmToolCall(toolCall: ToolCallState, action: ToolCallConfirmedAction): ToolCallState | undefined {
  if (toolCall.status !== 'pending-confirmation') return undefined;
  const base = toolBase(toolCall, action._meta);
  const selectedOption =
    action.selectedOptionId === undefined
      ? undefined
      : toolCall.options?.find((option) => option.id === action.selectedOptionId);
  const chosen = selectedOption ? { selectedOption } : {};
  if (action.approved) {
    // Inline (string) input is replaced by the user's edit; referenced input is rewritten by the host.
    const toolInput =
      typeof toolCall.toolInput === 'object' ? toolCall.toolInput : (action.editedToolInput ?? toolCall.toolInput);
    return {
      ...base,
      status: 'running',
      invocationMessage: toolCall.invocationMessage,
      toolInput,
      confirmed: action.confirmed,
      ...chosen,
    };
  }
  return {
    ...base,
    status: 'cancelled',
    invocationMessage: toolCall.invocationMessage,
    toolInput: toolCall.toolInput,
    reason: action.reason,
    reasonMessage: action.reasonMessage,
    userSuggestion: action.userSuggestion,
    ...chosen,
  };
}

/**
 * running / pending-confirmation (`confirmed` defaults to `not-needed`) / auth-required → completed,
 * or pending-result-confirmation when requested. From auth-required only a *failed* result is
 * accepted (the user gave up signing in) and it never waits for result review: a success can only
 * follow `chat/toolCallAuthResolved`.
 */
function completeToolCall(toolCall: ToolCallState, action: ToolCallCompleteAction): ToolCallState | undefined {
  const execution = executionFields(toolCall);
  if (!execution) return undefined;
  if (toolCall.status === 'auth-required' && action.result.success) return undefined;
  const { success, pastTenseMessage, content, structuredContent, error } = action.result;
  const fields = {
    ...toolBase(toolCall, action._meta),
    ...execution,
    success,
    pastTenseMessage,
    // Partial output streamed while running stays unless the result brings its own.
    content: content ?? execution.content,
    structuredContent,
    error,
  };
  const awaitsReview = action.requiresResultConfirmation === true && toolCall.status !== 'auth-required';
  return awaitsReview ? { ...fields, status: 'pending-result-confirmation' } : { ...fields, status: 'completed' };
}

/** What an executing (or about to execute) tool call carries into its result states. */
function executionFields(toolCall: ToolCallState) {
  switch (toolCall.status) {
    case 'pending-confirmation':
      return { invocationMessage: toolCall.invocationMessage, toolInput: toolCall.toolInput, confirmed: 'not-needed' as const };
    case 'running':
    case 'auth-required':
      return {
        invocationMessage: toolCall.invocationMessage,
        toolInput: toolCall.toolInput,
        confirmed: toolCall.confirmed,
        selectedOption: toolCall.selectedOption,
        content: toolCall.content,
      };
    case 'streaming':
    case 'pending-result-confirmation':
    case 'completed':
    case 'cancelled':
      return undefined;
  }
}

/** pending-result-confirmation → completed (approved) or cancelled `result-denied`. */
function confirmToolResult(toolCall: ToolCallState, action: ToolCallResultConfirmedAction): ToolCallState | undefined {
  if (toolCall.status !== 'pending-result-confirmation') return undefined;
  if (action.approved) return { ...toolCall, status: 'completed', _meta: action._meta ?? toolCall._meta };
  return {
    ...toolBase(toolCall, action._meta),
    status: 'cancelled',
    invocationMessage: toolCall.invocationMessage,
    toolInput: toolCall.toolInput,
    reason: 'result-denied',
    ...(toolCall.selectedOption && { selectedOption: toolCall.selectedOption }),
  };
}

function changeToolContent(toolCall: ToolCallState, action: ToolCallContentChangedAction): ToolCallState | undefined {
  if (toolCall.status !== 'running') return undefined;
  return { ...toolCall, content: action.content, _meta: action._meta ?? toolCall._meta };
}

/** running → auth-required, for MCP-contributed calls only (sign-in is an MCP step-up). */
function requireToolAuth(toolCall: ToolCallState, action: ToolCallAuthRequiredAction): ToolCallState | undefined {
  if (toolCall.status !== 'running' || toolCall.contributor?.kind !== 'mcp') return undefined;
  return { ...toolCall, status: 'auth-required', auth: action.auth, _meta: action._meta ?? toolCall._meta };
}

/** auth-required → running, everything else preserved. */
function resolveToolAuth(toolCall: ToolCallState, action: ToolCallAuthResolvedAction): ToolCallState | undefined {
  if (toolCall.status !== 'auth-required') return undefined;
  const running = withField(toolCall, 'auth', undefined);
  return { ...running, status: 'running', _meta: action._meta ?? toolCall._meta };
}

/** Turn end: every call not yet completed/cancelled becomes cancelled with reason `skipped`. */
function cancelUnfinishedToolCall(part: ResponsePart): ResponsePart {
  if (!isPartOfKind(part, 'toolCall')) return part;
  const toolCall = part.toolCall;
  const base = { ...toolBase(toolCall, undefined), status: 'cancelled' as const, reason: 'skipped' as const };
  switch (toolCall.status) {
    case 'completed':
    case 'cancelled':
      return part;
    case 'streaming':
      return { ...part, toolCall: { ...base, invocationMessage: toolCall.invocationMessage ?? '' } };
    case 'pending-confirmation':
      return { ...part, toolCall: { ...base, invocationMessage: toolCall.invocationMessage, toolInput: toolCall.toolInput } };
    case 'running':
    case 'auth-required':
    case 'pending-result-confirmation':
      return {
        ...part,
        toolCall: {
          ...base,
          invocationMessage: toolCall.invocationMessage,
          toolInput: toolCall.toolInput,
          ...(toolCall.selectedOption && { selectedOption: toolCall.selectedOption }),
        },
      };
  }
}
