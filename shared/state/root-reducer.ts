/**
 * The root-channel reducer. Root state is the agent catalogue; sessions are announced through
 * ephemeral `root/session*` notifications, which are not state. Unknown action types are no-ops.
 */
import { isRootActionType, type RootAction } from '../protocol/actions.js';
import type { RootState } from '../protocol/state.js';

/** `action` is typed loosely on purpose (unknown types are legal); see `chatReducer`. */
export function rootReducer(state: RootState, action: RootAction | { readonly type: string }): RootState {
  if (!isRootActionType(action.type)) return state;
  try {
    return reduce(state, action as RootAction);
  } catch {
    // Only reachable with a known type whose payload skipped validation; see chatReducer.
    return state;
  }
}

function reduce(state: RootState, action: RootAction): RootState {
  switch (action.type) {
    case 'root/agentsChanged':
      return { ...state, agents: [...action.agents] };
    default:
      // A one-member union does not narrow to never; its discriminant does.
      return unreachable(action.type, state);
  }
}

/** Compile-time exhaustiveness: adding a root action without a case fails to type-check here. */
function unreachable(_type: never, state: RootState): RootState {
  return state;
}
