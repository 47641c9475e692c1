/**
 * The session-channel reducer (§3.5, §2.5). Pure, clock-free, never throws, never mutates its
 * input, and returns the same object for a no-op. Unknown action types are no-ops.
 *
 * It does not aggregate chat statuses (§2.6 is a producer rule, see `aggregateSessionStatus`):
 * exactly as upstream, a session's `status` moves only through the `inputNeeded` roll-up and the
 * IsRead / IsArchived flags. The hub publishes the aggregate in the root catalogue's summaries.
 */
import { isSessionActionType, LEGACY_ACTION_TYPES, SESSION_HOST_ACTION_TYPES, type SessionAction, type SessionHostAction } from '../protocol/actions.js';
import { INPUT_NEEDED_BIT, SessionStatus, withActivity, withBit, type ChatSummary, type SessionInputRequest, type SessionState } from '../protocol/state.js';
import { removeWhere, upsertBy, withField } from './collections.js';
import { awaitingUserCount, removeInputNeededEntry, setInputNeededEntry } from './input-needed-index.js';
import { reduceSessionHostAction } from './session-host-reducer.js';
import { answeredByIn, type AnsweredBy } from './answered-by.js';
import { AGENT_GRANTS_META, agentGrants, APPROVED_TOOLS_META, DENIED_TOOLS_META, rememberedTools, TOOL_CHOICE_BY_META, type AgentGrant, type RememberedToolList } from './selectors.js';

/** `action` is typed loosely on purpose (unknown types are legal); see `chatReducer`. */
export function sessionReducer(state: SessionState, action: SessionAction | { readonly type: string }): SessionState {
  // Records logged before a rename carry the old name (see LEGACY_ACTION_TYPES).
  const legacy = LEGACY_ACTION_TYPES.get(action.type);
  if (legacy) return sessionReducer(state, { ...action, type: legacy });
  if (!isSessionActionType(action.type)) return state;
  try {
    return reduce(state, action as SessionAction);
  } catch {
    // Only reachable with a known type whose payload skipped validation; see chatReducer.
    return state;
  }
}

function reduce(state: SessionState, action: SessionAction): SessionState {
  switch (action.type) {
    case 'session/ready':
      // Never touches `status`: a provisional session may already be running its first turn.
      return withField(state, 'lifecycle', 'ready');
    case 'session/titleChanged':
      return withField(state, 'title', action.title);
    case 'session/chatAdded':
      return { ...state, chats: upsertBy(state.chats, action.summary, resourceOf) };
    case 'session/chatsReordered':
      return chatsReordered(state, action.chats);
    case 'session/chatRemoved':
      return chatRemoved(state, action.chat);
    case 'session/chatUpdated':
      return chatUpdated(state, action.chat, action.changes);
    case 'session/defaultChatChanged':
      return withField(state, 'defaultChat', action.defaultChat);
    case 'session/inputNeededSet':
      return withInputNeeded(state, setInputNeededEntry(state.inputNeeded, action.request));
    case 'session/inputNeededRemoved':
      return inputNeededRemoved(state, action.id);
    case 'session/isReadChanged':
      return withField(state, 'status', withBit(state.status, SessionStatus.IsRead, action.isRead));
    case 'session/isArchivedChanged':
      return withField(state, 'status', withBit(state.status, SessionStatus.IsArchived, action.isArchived));
    case 'x-session/stateReplaced':
      return action.state;
    case 'x-session/toolApprovalRemembered':
      return withChoiceStamp(toolApprovalRemembered(state, action.toolName), action.toolName, answeredByIn(action._meta));
    case 'x-session/toolDenialRemembered':
      return withChoiceStamp(toolDenialRemembered(state, action.toolName), action.toolName, answeredByIn(action._meta));
    case 'x-session/agentGrantRecorded':
      return agentGrantRecorded(state, action.toolName, action.optionId, action.label, answeredByIn(action._meta));
    case 'x-session/toolChoiceForgotten':
      return withChoiceStamp(toolChoiceForgotten(state, action.toolName), action.toolName, undefined);
    default:
      if (isSessionHostAction(action)) return reduceSessionHostAction(state, action);
      return unreachable(action, state);
  }
}

function isSessionHostAction(action: SessionAction): action is SessionHostAction {
  return SESSION_HOST_ACTION_TYPES.has(action.type);
}

/** Compile-time exhaustiveness: adding a session action without a case fails to type-check here. */
function unreachable(_action: never, state: SessionState): SessionState {
  return state;
}

/** Tool names remembered per session (per list); the oldest are forgotten beyond this. */
const MAX_APPROVED_TOOLS_META = 256;

/**
 * Adds `toolName` to `_meta['hub/approvedTools']` and drops it from `_meta['hub/deniedTools']`
 * (the latest "always" choice wins); a no-op when it is already approved and not denied.
 */
function toolApprovalRemembered(state: SessionState, toolName: string): SessionState {
  return rememberTool(state, toolName, APPROVED_TOOLS_META, DENIED_TOOLS_META);
}

/** The mirror of `toolApprovalRemembered`: adds to `hub/deniedTools`, drops from `hub/approvedTools`. */
function toolDenialRemembered(state: SessionState, toolName: string): SessionState {
  return rememberTool(state, toolName, DENIED_TOOLS_META, APPROVED_TOOLS_META);
}

/** Drops `toolName` from both remembered lists (an empty list is removed). */
function toolChoiceForgotten(state: SessionState, toolName: string): SessionState {
  const approved = rememberedTools(state, APPROVED_TOOLS_META);
  const denied = rememberedTools(state, DENIED_TOOLS_META);
  if (!approved.includes(toolName) && !denied.includes(toolName)) return state;
  const meta: Record<string, unknown> = { ...state._meta };
  for (const [key, list] of [
    [APPROVED_TOOLS_META, approved],
    [DENIED_TOOLS_META, denied],
  ] as const) {
    const rest = list.filter((name) => name !== toolName);
    if (rest.length > 0) meta[key] = rest;
    else delete meta[key];
  }
  return { ...state, _meta: meta };
}

function rememberTool(state: SessionState, toolName: string, addTo: RememberedToolList, removeFrom: RememberedToolList): SessionState {
  const list = rememberedTools(state, addTo);
  const other = rememberedTools(state, removeFrom);
  const listed = list.includes(toolName);
  const inOther = other.includes(toolName);
  if (listed && !inOther) return state;
  const meta: Record<string, unknown> = { ...state._meta };
  if (!listed) meta[addTo] = [...list, toolName].slice(-MAX_APPROVED_TOOLS_META);
  if (inOther) {
    const rest = other.filter((name) => name !== toolName);
    if (rest.length > 0) meta[removeFrom] = rest;
    else delete meta[removeFrom];
  }
  return { ...state, _meta: meta };
}

/**
 * Keeps `_meta['hub/toolChoiceBy']` in step with the two lists: the stamp of the choice just
 * made for `toolName` (none when the action carried none, or the choice was forgotten), and
 * no stamp for a tool neither list names any more (the oldest drop out past the cap).
 */
function withChoiceStamp(state: SessionState, toolName: string, by: AnsweredBy | undefined): SessionState {
  const raw = state._meta?.[TOOL_CHOICE_BY_META];
  const old: Record<string, unknown> = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  if (by === undefined && !Object.hasOwn(old, toolName)) return state;
  const listed = new Set([...rememberedTools(state, APPROVED_TOOLS_META), ...rememberedTools(state, DENIED_TOOLS_META)]);
  const next: Record<string, unknown> = {};
  for (const [tool, stamp] of Object.entries(old)) if (tool !== toolName && listed.has(tool)) next[tool] = stamp;
  if (by !== undefined && listed.has(toolName)) next[toolName] = by;
  const meta: Record<string, unknown> = { ...state._meta };
  if (Object.keys(next).length > 0) meta[TOOL_CHOICE_BY_META] = next;
  else delete meta[TOOL_CHOICE_BY_META];
  return { ...state, _meta: meta };
}

/** Agent-kept grants the session shows; the oldest are dropped beyond this. */
const MAX_AGENT_GRANTS = 256;

/** Records an agent-kept standing grant; the same tool and option again replaces the older entry. */
function agentGrantRecorded(state: SessionState, toolName: string, optionId: string, label: string, by: AnsweredBy | undefined): SessionState {
  const entryOf = (g: AgentGrant): AgentGrant => (g.by ? { toolName: g.toolName, optionId: g.optionId, label: g.label, by: g.by } : { toolName: g.toolName, optionId: g.optionId, label: g.label });
  const rest = agentGrants(state)
    .filter((g) => g.toolName !== toolName || g.optionId !== optionId)
    .map(entryOf);
  const entry = entryOf({ toolName, optionId, label, by });
  return { ...state, _meta: { ...state._meta, [AGENT_GRANTS_META]: [...rest, entry].slice(-MAX_AGENT_GRANTS) } };
}

const resourceOf = (chat: ChatSummary): string => chat.resource;

/** Listed chats first, in the listed order; unlisted ones after them in their old order. */
function chatsReordered(state: SessionState, order: readonly string[]): SessionState {
  const rank = new Map<string, number>();
  for (const uri of order) if (!rank.has(uri)) rank.set(uri, rank.size);
  const position = (chat: ChatSummary): number => rank.get(chat.resource) ?? Number.MAX_SAFE_INTEGER;
  // Array.prototype.sort is stable, so unlisted chats keep their relative order.
  const chats = [...state.chats].sort((a, b) => position(a) - position(b));
  return chats.every((chat, i) => chat === state.chats[i]) ? state : { ...state, chats };
}

/** Removes a chat from the catalogue; a default-chat hint pointing at it goes too. */
function chatRemoved(state: SessionState, chat: string): SessionState {
  const chats = removeWhere(state.chats, (summary) => summary.resource === chat);
  if (chats === state.chats) return state;
  const next: SessionState = { ...state, chats: [...chats] };
  return next.defaultChat === chat ? withField(next, 'defaultChat', undefined) : next;
}

/** Merges partial changes into a known chat's summary; the summary keeps its own resource. */
function chatUpdated(state: SessionState, chat: string, changes: Partial<ChatSummary>): SessionState {
  const index = state.chats.findIndex((summary) => summary.resource === chat);
  if (index === -1) return state;
  const chats = state.chats.map((summary, i) => (i === index ? { ...summary, ...changes, resource: chat } : summary));
  return { ...state, chats };
}

function inputNeededRemoved(state: SessionState, id: string): SessionState {
  const entries = state.inputNeeded;
  if (!entries) return state;
  const remaining = removeInputNeededEntry(entries, id);
  return remaining === entries ? state : withInputNeeded(state, remaining);
}

/**
 * Stores the roll-up (empty → absent) and re-derives the InputNeeded bit: any entry that awaits a
 * person makes the activity InputNeeded; otherwise only bit 16 is cleared, so a running session
 * stays InProgress and an idle one stays idle. Client-executed tools never count (2026-08-03).
 */
function withInputNeeded(state: SessionState, entries: readonly SessionInputRequest[]): SessionState {
  const status = awaitingUserCount(entries) > 0 ? withActivity(state.status, SessionStatus.InputNeeded) : withBit(state.status, INPUT_NEEDED_BIT, false);
  // `entries` is a fresh list (input-needed-index.ts) carrying its index: stored as it is, not copied.
  return { ...withField(state, 'inputNeeded', entries.length > 0 ? (entries as SessionInputRequest[]) : undefined), status };
}
