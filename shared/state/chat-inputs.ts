/** Chat reducer transitions for input requests (§3.2) and pending / steering messages (§3.3). Pure, like `chatReducer`. */
import type { InputAnswerChangedAction, InputCompletedAction, InputRequestedAction, PendingMessageRemovedAction, PendingMessageSetAction, QueuedMessagesReorderedAction } from '../protocol/actions.js';
import type { ActiveTurn, ChatInputRequest, ChatState, InputRequestPart, PendingMessage } from '../protocol/state.js';
import { nonEmpty, nonEmptyRecord, removeWhere, setEntry, upsertBy, withField } from './collections.js';
import { isOpenInputRequest } from './selectors.js';
import { replacePartAt, updateActiveTurn, withDerivedStatus, withResponseParts } from './chat-helpers.js';
import { appendPart, firstPositionOf, inputKey } from './part-index.js';

// ─── Input requests (§3.2) ───────────────────────────────────────────────────

/** Updates the open (unanswered) input-request part with `requestId` in the active turn. */
function updateOpenRequest(state: ChatState, requestId: string, update: (part: InputRequestPart) => InputRequestPart): ChatState {
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

/**
 * Upserts by request id among *open* parts (a resolved part with the same id is history and is
 * not matched). A re-sent request keeps the answers synced so far unless it carries its own.
 */
export function inputRequested(state: ChatState, action: InputRequestedAction): ChatState {
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
export function inputAnswerChanged(state: ChatState, action: InputAnswerChangedAction): ChatState {
  return updateOpenRequest(state, action.requestId, (part) => {
    const current = part.request.answers;
    if (action.answer === undefined && !(current && Object.hasOwn(current, action.questionId))) return part;
    const answers = nonEmptyRecord(setEntry(current, action.questionId, action.answer));
    return { ...part, request: withField(part.request, 'answers', answers) };
  });
}

/** Resolves the part in place: final answers = synced answers overlaid per question by the action's. */
export function inputCompleted(state: ChatState, action: InputCompletedAction): ChatState {
  const next = updateOpenRequest(state, action.requestId, (part) => {
    const answers = nonEmptyRecord({ ...part.request.answers, ...action.answers });
    // As upstream, the part's `_meta` is left alone: who answered (the hub's stamp on the action)
    // is indexed beside the state, see shared/state/answered-by.ts.
    return { ...part, request: withField(part.request, 'answers', answers), response: action.response };
  });
  return next === state ? state : withDerivedStatus(next);
}

// ─── Pending messages and steering (§3.3) ────────────────────────────────────

export const idOf = (message: PendingMessage): string => message.id;

export function pendingMessageSet(state: ChatState, action: PendingMessageSetAction): ChatState {
  const pending: PendingMessage = { id: action.id, message: action.message };
  return action.kind === 'steering' ? { ...state, steeringMessage: pending } : { ...state, queuedMessages: upsertBy(state.queuedMessages, pending, idOf) };
}

export function pendingMessageRemoved(state: ChatState, action: PendingMessageRemovedAction): ChatState {
  if (action.kind === 'queued') return removePendingFromList(state, 'queuedMessages', action.id);
  return state.steeringMessage?.id === action.id ? withField(state, 'steeringMessage', undefined) : state;
}

export function removePendingFromList(state: ChatState, key: 'queuedMessages' | 'steeringMessages', messageId: string): ChatState {
  const list = state[key];
  if (!list) return state;
  const remaining = removeWhere(list, (message) => message.id === messageId);
  return remaining === list ? state : withField(state, key, nonEmpty(remaining));
}

/** Listed ids first (unknown and repeated ids ignored), then the rest in their original order. */
export function queuedMessagesReordered(state: ChatState, action: QueuedMessagesReorderedAction): ChatState {
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
