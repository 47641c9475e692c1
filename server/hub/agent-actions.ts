/**
 * Checks for server-side actions produced by agents (in-process or connected over the WebSocket
 * with an agent token). Their shape is already checked by `parseAction`; here we check that
 * turn-scoped actions address the chat's active turn, so a late or confused agent cannot write
 * into a finished turn or start streaming into nothing. Reducers would ignore such actions, but
 * logging and broadcasting no-ops would only confuse clients.
 *
 * Every field that names another hub resource (a chat in a session's catalogue, its default
 * chat, the chat of an input-needed entry, the session itself) must name one of *this* session's
 * chats: the hub and its features (steering, permission replies) follow those fields, so a
 * foreign chat there would let an agent of one tenant read or write another tenant's chat.
 */
import { inputRequestUrlRefusal } from '../../shared/state/answer-rules.js';
import { isKnownAction } from '../../shared/protocol/actions.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatState } from '../../shared/protocol/state.js';

/** The session an action is dispatched in, as the hub's catalogue knows it. */
export interface AgentActionScope {
  /** The session's channel URI. */
  readonly session: string;
  /** Chats that really belong to the session (the catalogue, not the session state). */
  readonly chats: ReadonlySet<string>;
}

/** Session actions whose effect the hub itself maintains; an agent never dispatches them. */
const HUB_MAINTAINED = new Set(['session/chatAdded', 'session/chatRemoved']);

/** Server-side chat actions that need the active turn. */
const TURN_SCOPED = new Set([
  'chat/delta',
  'chat/reasoning',
  'chat/responsePart',
  'chat/usage',
  'chat/turnComplete',
  'chat/error',
  'chat/toolCallStart',
  'chat/toolCallDelta',
  'chat/toolCallReady',
  'chat/toolCallComplete',
  'chat/toolCallContentChanged',
  'chat/toolCallAuthRequired',
  'chat/toolCallAuthResolved',
  'chat/toolCallConfirmed',
  'chat/toolCallResultConfirmed',
]);

export function validateAgentAction(action: WireAction, chat: ChatState | undefined, scope?: AgentActionScope): string | undefined {
  if (action.type.startsWith('chat/') && !chat) return `${action.type} must be dispatched on a chat channel`;
  if (!chat) return scope ? validateSessionReferences(action, scope) : undefined;
  if (action.type === 'chat/inputRequested' && !chat.activeTurn) return 'chat/inputRequested needs an active turn';
  if (isKnownAction(action) && action.type === 'chat/inputRequested') {
    const refusal = inputRequestUrlRefusal(action.request.url);
    if (refusal) return refusal;
  }
  if (TURN_SCOPED.has(action.type)) {
    const turnId = isKnownAction(action) && 'turnId' in action ? action.turnId : undefined;
    if (!chat.activeTurn) return `${action.type}: no active turn`;
    if (turnId !== chat.activeTurn.id) return `${action.type}: turn ${String(turnId)} is not the active turn ${chat.activeTurn.id}`;
  }
  return undefined;
}

/** Checks every resource a session-channel action names against the session's own chats. */
function validateSessionReferences(action: WireAction, scope: AgentActionScope): string | undefined {
  if (HUB_MAINTAINED.has(action.type)) return `${action.type} is maintained by the hub (use createChat / disposeChat)`;
  const own = (uri: unknown): boolean => typeof uri === 'string' && scope.chats.has(uri);
  const known = isKnownAction(action) ? action : undefined;
  switch (known?.type) {
    case 'session/chatUpdated':
      return own(known.chat) ? undefined : `session/chatUpdated: chat ${known.chat} is not a chat of this session`;
    case 'session/defaultChatChanged':
      return known.defaultChat === undefined || own(known.defaultChat) ? undefined : `session/defaultChatChanged: chat ${known.defaultChat} is not a chat of this session`;
    case 'session/inputNeededSet': {
      const { request } = known;
      return own(request.chat) ? undefined : `session/inputNeededSet: request.chat ${request.chat} is not a chat of this session`;
    }
    case 'x-session/stateReplaced': {
      const { state } = known;
      if (state.resource !== undefined && state.resource !== scope.session) {
        return `x-session/stateReplaced: state.resource must be this session (${scope.session})`;
      }
      if (state.defaultChat !== undefined && !own(state.defaultChat)) {
        return `x-session/stateReplaced: state.defaultChat ${state.defaultChat} is not a chat of this session`;
      }
      const foreign = state.chats.find((c) => !own(c.resource));
      if (foreign) return `x-session/stateReplaced: state.chats names ${foreign.resource}, which is not a chat of this session`;
      const listed = new Set(state.chats.map((c) => c.resource));
      const missing = [...scope.chats].find((c) => !listed.has(c));
      if (missing) return `x-session/stateReplaced: state.chats must list every chat of this session (missing ${missing})`;
      const entry = state.inputNeeded?.find((e) => !own(e.chat));
      if (entry) return `x-session/stateReplaced: state.inputNeeded names chat ${entry.chat}, which is not a chat of this session`;
      return undefined;
    }
    default:
      return undefined;
  }
}
