/**
 * Server-side validation of client-dispatched actions (§3.6 plus the sensible extras listed
 * there). A rejected action is echoed with `rejectionReason` and never applied, so every reason
 * is a readable sentence naming the problem.
 *
 * This runs before the reducer and before any side effect (starting or aborting an agent run,
 * answering a blocked tool): "valid" here means "the reducer will act on it", so a stale or
 * replayed action is rejected instead of silently becoming a no-op with side effects.
 */
import {
  CLIENT_DISPATCHABLE_ACTIONS,
  isKnownAction,
  parseAction,
  type ChatAction,
  type InputAnswerChangedAction,
  type InputCompletedAction,
  type KnownAction,
  type SessionAction,
  type ToolCallConfirmedAction,
  type TurnResumeAction,
  type TurnStartedAction,
} from '../protocol/actions.js';
import type { ChatInputAnswer, ChatInputAnswers, ChatInputQuestion, ChatInputRequest, ChatState, Message, SessionState, ToolCallState } from '../protocol/state.js';
import { answerProblem } from './answer-rules.js';
import { isResumableTurn } from './chat-reducer.js';
import { APPROVED_TOOLS_META, DENIED_TOOLS_META, findActiveToolCall, findEndedTurn, findOpenInputRequest, rememberedTools, type RememberedToolList } from './selectors.js';

export interface ClientActionContext {
  /** Kind of the channel the action was dispatched on. */
  readonly channelKind: 'chat' | 'session';
  /** Current state of the target chat (chat channel). */
  readonly chat?: ChatState;
  /** Current state of the target session (session channel). */
  readonly session?: SessionState;
  /** The dispatching connection's `clientId`. */
  readonly clientId: string;
  /** Chat URIs of the session; defaults to the session state's chat catalogue. */
  readonly sessionChats?: readonly string[];
  /** True if `turnId` exists in any chat of the session (turn ids are unique session-wide). */
  readonly allTurnIds?: (turnId: string) => boolean;
}

/** A rejection reason, or undefined when the action may be applied. */
export type Rejection = string | undefined;

export function validateClientAction(ctx: ClientActionContext, action: { type: string }): Rejection {
  if (!CLIENT_DISPATCHABLE_ACTIONS.has(action.type)) return `${action.type} is not client-dispatchable`;
  // Re-parse: callers may hand us anything, and every check below relies on the typed shape.
  const parsed = parseAction(action);
  if (!parsed.ok) return parsed.message;
  return validateParsedClientAction(ctx, parsed.action);
}

/**
 * The same checks for an action the caller has already run through `parseAction` (the hub's
 * dispatch path parses once and hands the result on), so it is not parsed a second time.
 */
export function validateParsedClientAction(ctx: ClientActionContext, action: { type: string }): Rejection {
  if (!CLIENT_DISPATCHABLE_ACTIONS.has(action.type) || !isKnownAction(action)) return `${action.type} is not client-dispatchable`;
  return validateKnownAction(ctx, action);
}

function validateKnownAction(ctx: ClientActionContext, action: KnownAction): Rejection {
  const wanted = action.type.startsWith('chat/') ? 'chat' : 'session';
  if (ctx.channelKind !== wanted) return `${action.type} must be dispatched on a ${wanted} channel`;
  if (wanted === 'session') return validateSessionAction(ctx, action as SessionAction);
  if (!ctx.chat) return 'unknown chat';
  return validateChatAction(ctx, ctx.chat, action as ChatAction);
}

// ─── Session channel ─────────────────────────────────────────────────────────

function validateSessionAction(ctx: ClientActionContext, action: SessionAction): Rejection {
  if (action.type === 'x-session/toolChoiceForgotten') return validateToolChoiceForgotten(ctx, action.toolName);
  if (action.type === 'session/titleChanged') return action.title.trim() === '' ? 'a session title cannot be blank' : undefined;
  if (action.type !== 'session/defaultChatChanged' || action.defaultChat === undefined) return undefined;
  const chats = ctx.sessionChats ?? ctx.session?.chats.map((chat) => chat.resource) ?? [];
  return chats.includes(action.defaultChat) ? undefined : `unknown chat ${action.defaultChat} in this session`;
}

/** Only a choice the session remembers can be forgotten (`hub/approvedTools`, `hub/deniedTools`). */
function validateToolChoiceForgotten(ctx: ClientActionContext, toolName: string): Rejection {
  const listed = (key: RememberedToolList): boolean => rememberedTools(ctx.session, key).includes(toolName);
  return listed(APPROVED_TOOLS_META) || listed(DENIED_TOOLS_META) ? undefined : `no remembered always-allow or always-deny choice for tool ${toolName} in this session`;
}

// ─── Chat channel ────────────────────────────────────────────────────────────

/**
 * Pending messages (queued or steering) one chat may hold. Each is up to 100,000 characters, so
 * without a count a single user could grow one chat without bound; replacing an existing id
 * never counts as a new one.
 */
export const MAX_PENDING_MESSAGES_PER_KIND = 100;

function requireRoomFor(list: ReadonlyArray<{ id: string }> | undefined, id: string, kind: string): Rejection {
  if (!list || list.length < MAX_PENDING_MESSAGES_PER_KIND || list.some((m) => m.id === id)) return undefined;
  return `too many ${kind} messages (pending_messages_limit): at most ${MAX_PENDING_MESSAGES_PER_KIND} per chat; remove one first`;
}

function validateChatAction(ctx: ClientActionContext, chat: ChatState, action: ChatAction): Rejection {
  switch (action.type) {
    case 'chat/turnStarted':
      return validateTurnStarted(ctx, chat, action);
    case 'chat/turnCancelled':
      return requireActiveTurn(chat, action.turnId, 'no active turn to cancel');
    case 'chat/turnResume':
      return validateTurnResume(chat, action);
    case 'chat/truncated':
      return action.turnId === undefined || findEndedTurn(chat, action.turnId) !== undefined ? undefined : `unknown turn ${action.turnId}`;
    case 'chat/isReadChanged':
    case 'chat/isArchivedChanged':
      // Per-person flags with no side effect: setting one twice is harmless (like the session's).
      return undefined;
    case 'chat/draftChanged':
      return action.draft ? requireUserMessage(action.type, action.draft) : undefined;
    case 'chat/pendingMessageSet':
      // The legacy steering kind is a single slot; only the queued list grows.
      return requireUserMessage(action.type, action.message) ?? (action.kind === 'queued' ? requireRoomFor(chat.queuedMessages, action.id, 'queued') : undefined);
    case 'chat/steeringMessageSet':
      return requireUserMessage(action.type, action.steeringMessage.message) ?? requireRoomFor(chat.steeringMessages, action.steeringMessage.id, 'steering');
    case 'chat/pendingMessageRemoved':
      return hasPendingMessage(chat, action.kind, action.id) ? undefined : `no ${action.kind} message with id ${action.id}`;
    case 'chat/steeringMessageRemoved':
      return hasPendingMessage(chat, 'steeringList', action.id) ? undefined : `no steering message with id ${action.id}`;
    case 'chat/queuedMessagesReordered':
      // Unknown and repeated ids are ignored by the reducer; a stale order is harmless.
      return undefined;
    case 'chat/inputAnswerChanged':
      return validateInputAnswerChanged(chat, action);
    case 'chat/inputCompleted':
      return validateInputCompleted(chat, action);
    case 'chat/toolCallConfirmed':
      return validateToolCallConfirmed(chat, action);
    case 'chat/toolCallResultConfirmed':
      return withToolCall(chat, action.turnId, action.toolCallId, (toolCall) => (toolCall.status === 'pending-result-confirmation' ? undefined : `tool call ${toolCall.toolCallId} is not awaiting result review (it is ${toolCall.status})`));
    case 'chat/toolCallComplete':
      return withToolCall(
        chat,
        action.turnId,
        action.toolCallId,
        (toolCall) => requireOwner(ctx, toolCall, 'complete') ?? (toolCall.status === 'running' || toolCall.status === 'pending-confirmation' ? undefined : `tool call ${toolCall.toolCallId} cannot be completed (it is ${toolCall.status})`),
      );
    case 'chat/toolCallContentChanged':
      return withToolCall(
        chat,
        action.turnId,
        action.toolCallId,
        (toolCall) => requireOwner(ctx, toolCall, 'update') ?? (toolCall.status === 'running' ? undefined : `tool call ${toolCall.toolCallId} is not running (it is ${toolCall.status})`),
      );
    default:
      // Server-only chat actions never get here: CLIENT_DISPATCHABLE_ACTIONS filtered them out.
      return `${action.type} is not client-dispatchable`;
  }
}

/** Clients speak for a person: turn, pending and draft messages must have origin `user`. */
function requireUserMessage(type: string, message: Message): Rejection {
  return message.origin.kind === 'user' ? undefined : `${type} needs a message with origin "user", not "${message.origin.kind}"`;
}

function requireActiveTurn(chat: ChatState, turnId: string, whenIdle: string): Rejection {
  if (!chat.activeTurn) return whenIdle;
  return chat.activeTurn.id === turnId ? undefined : `turn ${turnId} is not the active turn`;
}

/**
 * The reducer would overwrite an active turn, and an id that was used before would be a replay:
 * both must be refused before the agent is started. Turn ids are unique across the session.
 */
function validateTurnStarted(ctx: ClientActionContext, chat: ChatState, action: TurnStartedAction): Rejection {
  const notUser = requireUserMessage(action.type, action.message);
  if (notUser) return notUser;
  if (chat.activeTurn) return `a turn is already in progress (${chat.activeTurn.id})`;
  const usedHere = findEndedTurn(chat, action.turnId) !== undefined;
  if (usedHere || ctx.allTurnIds?.(action.turnId)) return `turn id ${action.turnId} is already used`;
  return undefined;
}

/** [S] Only the latest turn, ended by a resumable error, with nothing else running. */
function validateTurnResume(chat: ChatState, action: TurnResumeAction): Rejection {
  if (chat.activeTurn) return `cannot resume turn ${action.turnId} while turn ${chat.activeTurn.id} is in progress`;
  const last = chat.turns.at(-1);
  if (!last || last.id !== action.turnId) return `turn ${action.turnId} is not the latest turn`;
  if (last.state !== 'error') return `turn ${action.turnId} did not end in an error`;
  return isResumableTurn(last) ? undefined : `turn ${action.turnId} is not resumable`;
}

function hasPendingMessage(chat: ChatState, where: 'steering' | 'queued' | 'steeringList', id: string): boolean {
  switch (where) {
    case 'steering':
      return chat.steeringMessage?.id === id;
    case 'queued':
      return chat.queuedMessages?.some((message) => message.id === id) ?? false;
    case 'steeringList':
      return chat.steeringMessages?.some((message) => message.id === id) ?? false;
  }
}

// ─── Input requests ──────────────────────────────────────────────────────────

function staleRequest(requestId: string): string {
  return `unknown or already resolved input request ${requestId}`;
}

function validateInputAnswerChanged(chat: ChatState, action: InputAnswerChangedAction): Rejection {
  const part = findOpenInputRequest(chat, action.requestId);
  if (!part) return staleRequest(action.requestId);
  const question = findQuestion(part.request, action.questionId);
  if (!question) return unknownQuestion(part.request, action.questionId);
  return action.answer ? validateAnswerValue(question, action.answer) : undefined;
}

/**
 * The completing client's answers are checked like any other; `accept` additionally needs a
 * *submitted* answer for every required question in the final (synced + overlaid) answers.
 */
function validateInputCompleted(chat: ChatState, action: InputCompletedAction): Rejection {
  const part = findOpenInputRequest(chat, action.requestId);
  if (!part) return staleRequest(action.requestId);
  const request = part.request;
  for (const [questionId, answer] of Object.entries(action.answers ?? {})) {
    const question = findQuestion(request, questionId);
    if (!question) return unknownQuestion(request, questionId);
    const problem = validateAnswerValue(question, answer);
    if (problem) return problem;
  }
  if (action.response !== 'accept') return undefined;
  const finalAnswers: ChatInputAnswers = { ...request.answers, ...action.answers };
  const unanswered = request.questions?.find((question) => question.required === true && ownAnswer(finalAnswers, question.id)?.state !== 'submitted');
  return unanswered ? `question ${unanswered.id} is required and has no submitted answer` : undefined;
}

function findQuestion(request: ChatInputRequest, questionId: string): ChatInputQuestion | undefined {
  return request.questions?.find((question) => question.id === questionId);
}

function unknownQuestion(request: ChatInputRequest, questionId: string): string {
  return `unknown question ${questionId} in input request ${request.id}`;
}

/** Own entries only: a question id like `constructor` must not find `Object.prototype` members. */
function ownAnswer(answers: ChatInputAnswers, questionId: string): ChatInputAnswer | undefined {
  return Object.hasOwn(answers, questionId) ? answers[questionId] : undefined;
}

/**
 * Checks one answer against its question; reused by every surface that accepts answers
 * (WebSocket actions, HTTP reply routes) and by the browser app. The rules themselves
 * (kind, min/max, options, selection count, text format) live in `answer-rules.ts`.
 */
export function validateAnswerValue(question: ChatInputQuestion, answer: ChatInputAnswer): Rejection {
  return answerProblem(question, answer)?.reason;
}

// ─── Tool calls ──────────────────────────────────────────────────────────────

/** Runs `check` on the tool call in the active turn, after rejecting a stale turn or unknown id. */
function withToolCall(chat: ChatState, turnId: string, toolCallId: string, check: (toolCall: ToolCallState) => Rejection): Rejection {
  const stale = requireActiveTurn(chat, turnId, `no active turn (tool call ${toolCallId})`);
  if (stale) return stale;
  const toolCall = findActiveToolCall(chat, toolCallId);
  return toolCall ? check(toolCall) : `unknown tool call ${toolCallId}`;
}

function validateToolCallConfirmed(chat: ChatState, action: ToolCallConfirmedAction): Rejection {
  return withToolCall(chat, action.turnId, action.toolCallId, (toolCall) => {
    if (toolCall.status !== 'pending-confirmation') {
      return `tool call ${toolCall.toolCallId} is not awaiting confirmation (it is ${toolCall.status})`;
    }
    const optionId = action.selectedOptionId;
    if (optionId !== undefined && !toolCall.options?.some((option) => option.id === optionId)) {
      return `unknown option ${optionId} for tool call ${toolCall.toolCallId}`;
    }
    // The producer decides whether its input may be edited; an edit it did not offer is refused.
    if (action.approved && action.editedToolInput !== undefined && toolCall.editable !== true) {
      return `tool call ${toolCall.toolCallId} does not allow editing its input`;
    }
    return undefined;
  });
}

/** Only the client named as contributor executes (and so completes or updates) a client tool. */
function requireOwner(ctx: ClientActionContext, toolCall: ToolCallState, verb: string): Rejection {
  const contributor = toolCall.contributor;
  if (contributor?.kind !== 'client') {
    return `tool call ${toolCall.toolCallId} is executed by the server; clients cannot ${verb} it`;
  }
  return contributor.clientId === ctx.clientId ? undefined : `only client ${contributor.clientId} may ${verb} tool call ${toolCall.toolCallId}`;
}
