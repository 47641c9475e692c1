/**
 * Status rules: chat status derivation (§2.4), what counts as "input needed" (§2.5) and the
 * session aggregate (§2.6). Pure functions over state; the reducers and the hub share them.
 */
import { INPUT_NEEDED_BIT, SessionStatus, activityOf, flagsOf, hasBit, isPartOfKind, withActivity, type ChatState, type ChatSummary, type SessionInputRequest, type ToolCallState } from '../protocol/state.js';
import type { KnownAction } from '../protocol/actions.js';
import { isOpenInputRequest } from './selectors.js';
import { blockingPartCount, inputKey, lastPositionOf, toolKey } from './part-index.js';

/** True when the active turn is blocked on the user (§2.5). A client-executed running tool is not. */
export function chatNeedsInput(chat: Pick<ChatState, 'activeTurn'>): boolean {
  // Counted, not scanned: during a burst of requests every action re-derives the status.
  return chat.activeTurn !== undefined && blockingPartCount(chat.activeTurn.responseParts) > 0;
}

/**
 * The chat's status per §2.4, flags (IsRead, IsArchived, unknown bits) preserved:
 * Error when the turn just ended through `chat/error`, else InputNeeded / InProgress while a turn
 * is active, else Idle. Error is "sticky" only because callers recompute it at the points §2.4
 * lists (a new turn, resume or truncation clears it), not because this function remembers it.
 */
export function deriveChatStatus(chat: Pick<ChatState, 'status' | 'activeTurn'>, turnEndedWithError = false): number {
  return withActivity(chat.status, chatActivity(chat, turnEndedWithError));
}

function chatActivity(chat: Pick<ChatState, 'activeTurn'>, turnEndedWithError: boolean): number {
  if (turnEndedWithError) return SessionStatus.Error;
  if (chatNeedsInput(chat)) return SessionStatus.InputNeeded;
  if (chat.activeTurn) return SessionStatus.InProgress;
  return SessionStatus.Idle;
}

/** A turn is running (InProgress or InputNeeded): test bit 8, never compare whole values. */
export function isBusy(status: number): boolean {
  return hasBit(status, SessionStatus.InProgress);
}

/** The activity says a person is needed (bit 16 on top of InProgress). */
export function needsInput(status: number): boolean {
  return hasBit(status, INPUT_NEEDED_BIT);
}

export function isErrored(status: number): boolean {
  return activityOf(status) === SessionStatus.Error;
}

export interface AggregateStatus {
  /** Activity bits from the contributing chat, plus the session's own flags. */
  readonly status: number;
  /** `activity` text of the chat that contributed the activity bits. */
  readonly activity?: string;
  /** Latest `modifiedAt` over all chats (absent for a session without chats). */
  readonly modifiedAt?: string;
}

/**
 * Session status roll-up (§2.6): activity bits from the default chat (or, without one, the most
 * recently modified chat); promoted to InputNeeded when any chat needs input, then to Error when
 * any chat is in error (Error wins: it needs attention and will not resolve by itself).
 * `sessionFlags` supplies IsRead / IsArchived (session-scoped); only its flag bits are used.
 */
export function aggregateSessionStatus(chats: readonly ChatSummary[], defaultChat: string | undefined, sessionFlags: number): AggregateStatus {
  const flags = flagsOf(sessionFlags);
  const byRecency = [...chats].sort((a, b) => timeOf(b.modifiedAt) - timeOf(a.modifiedAt));
  const base = chats.find((chat) => chat.resource === defaultChat) ?? byRecency[0];
  if (!base) return { status: flags + SessionStatus.Idle };

  // The default (or latest) chat speaks for the session unless another chat must be seen first.
  const promote = (applies: (status: number) => boolean) => (applies(base.status) ? base : byRecency.find((chat) => applies(chat.status)));
  const contributor = promote(isErrored) ?? promote(needsInput) ?? base;

  return {
    status: flags + activityOf(contributor.status),
    ...(contributor.activity !== undefined && { activity: contributor.activity }),
    modifiedAt: byRecency[0]!.modifiedAt,
  };
}

/** Milliseconds for ordering; unparsable timestamps sort as oldest. */
function timeOf(iso: string): number {
  const time = Date.parse(iso);
  return Number.isNaN(time) ? Number.NEGATIVE_INFINITY : time;
}

/** Session-level entry id for something a chat is blocked on. */
export function sessionInputId(chatUri: string, requestOrToolCallId: string): string {
  return `${chatUri}#${requestOrToolCallId}`;
}

/**
 * The `SessionState.inputNeeded` entries this chat contributes right now (§2.5): one per open
 * input request, pending (result) confirmation, MCP sign-in and client-executed running tool in
 * the active turn. The hub diffs successive results to dispatch `session/inputNeededSet/Removed`;
 * a chat without an active turn contributes nothing, so turn end and truncation clear its entries.
 */
export function sessionInputNeededEntries(chatUri: string, chat: Pick<ChatState, 'activeTurn'>): SessionInputRequest[] {
  const turn = chat.activeTurn;
  if (!turn) return [];
  const entries: SessionInputRequest[] = [];
  for (const part of turn.responseParts) {
    if (isOpenInputRequest(part)) {
      entries.push({ kind: 'chatInput', id: sessionInputId(chatUri, part.request.id), chat: chatUri, request: part.request });
      continue;
    }
    if (!isPartOfKind(part, 'toolCall')) continue;
    const entry = toolCallEntry(chatUri, turn.id, part.toolCall);
    if (entry) entries.push(entry);
  }
  return entries;
}

/**
 * The `inputNeeded` entry the chat contributes for one tool call or input request (by its id),
 * if any: the same entry `sessionInputNeededEntries` lists for it, found without building the
 * others. The newest part is looked at first (a burst of requests appends at the end).
 */
export function sessionInputNeededEntryOf(chatUri: string, chat: Pick<ChatState, 'activeTurn'>, requestOrToolCallId: string): SessionInputRequest | undefined {
  const turn = chat.activeTurn;
  if (!turn) return undefined;
  const parts = turn.responseParts;
  const part = parts[Math.max(lastPositionOf(parts, toolKey(requestOrToolCallId)), lastPositionOf(parts, inputKey(requestOrToolCallId)))];
  if (part && isPartOfKind(part, 'toolCall')) return toolCallEntry(chatUri, turn.id, part.toolCall);
  if (part && isOpenInputRequest(part)) return { kind: 'chatInput', id: sessionInputId(chatUri, part.request.id), chat: chatUri, request: part.request };
  return undefined;
}

/**
 * The one tool call or input request an action changes, when it changes nothing else a person
 * is asked (so roll-up and bookkeeping may look at that one only); undefined for every other action.
 */
export function interactionIdOf(action: KnownAction | undefined): string | undefined {
  switch (action?.type) {
    case 'chat/toolCallStart':
    case 'chat/toolCallDelta':
    case 'chat/toolCallReady':
    case 'chat/toolCallConfirmed':
    case 'chat/toolCallComplete':
    case 'chat/toolCallResultConfirmed':
    case 'chat/toolCallContentChanged':
    case 'chat/toolCallAuthRequired':
    case 'chat/toolCallAuthResolved':
      return action.toolCallId;
    case 'chat/inputAnswerChanged':
    case 'chat/inputCompleted':
      return action.requestId;
    case 'chat/inputRequested':
      return action.request.id;
    default:
      return undefined;
  }
}

function toolCallEntry(chatUri: string, turnId: string, toolCall: ToolCallState): SessionInputRequest | undefined {
  const common = { id: sessionInputId(chatUri, toolCall.toolCallId), chat: chatUri, turnId, toolCall };
  switch (toolCall.status) {
    case 'pending-confirmation':
    case 'pending-result-confirmation':
      return { kind: 'toolConfirmation', ...common };
    case 'auth-required':
      return { kind: 'toolAuthentication', ...common };
    case 'running':
      return toolCall.contributor?.kind === 'client' ? { kind: 'toolClientExecution', ...common, clientId: toolCall.contributor.clientId } : undefined;
    case 'streaming':
    case 'completed':
    case 'cancelled':
      return undefined;
  }
}

/** True for entries that wait for a person (everything except delegated client execution). */
export function awaitsUser(entry: Pick<SessionInputRequest, 'kind'>): boolean {
  return entry.kind !== 'toolClientExecution';
}
