/**
 * The root-channel reducer. Root state is the agent catalogue, the host's active-session count,
 * terminals and config; sessions are announced through ephemeral `root/session*` notifications,
 * which are not state. Unknown action types are no-ops.
 */
import { isRootActionType, type RootAction } from '../protocol/actions.js';
import type { RootState } from '../protocol/state.js';
import { changedConfig } from './session-host-reducer.js';

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
    case 'root/activeSessionsChanged':
      return { ...state, activeSessions: action.activeSessions };
    case 'root/terminalsChanged':
      return { ...state, terminals: [...action.terminals] };
    case 'root/configChanged':
      return state.config ? { ...state, config: changedConfig(state.config, action.config, action.replace) } : state;
    default:
      return unreachable(action, state);
  }
}

/** Compile-time exhaustiveness: adding a root action without a case fails to type-check here. */
function unreachable(_action: never, state: RootState): RootState {
  return state;
}
