/**
 * Checks for server-side actions produced by agents (in-process or connected over the WebSocket
 * with an agent token). Their shape is already checked by `parseAction`; here we check that
 * turn-scoped actions address the chat's active turn, so a late or confused agent cannot write
 * into a finished turn or start streaming into nothing. Reducers would ignore such actions, but
 * logging and broadcasting no-ops would only confuse clients.
 */
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatState } from '../../shared/protocol/state.js';

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

export function validateAgentAction(action: WireAction, chat: ChatState | undefined): string | undefined {
  if (action.type.startsWith('chat/') && !chat) return `${action.type} must be dispatched on a chat channel`;
  if (!chat) return undefined;
  if (action.type === 'chat/inputRequested' && !chat.activeTurn) return 'chat/inputRequested needs an active turn';
  if (TURN_SCOPED.has(action.type)) {
    const turnId = action['turnId'];
    if (!chat.activeTurn) return `${action.type}: no active turn`;
    if (turnId !== chat.activeTurn.id) return `${action.type}: turn ${String(turnId)} is not the active turn ${chat.activeTurn.id}`;
  }
  return undefined;
}
