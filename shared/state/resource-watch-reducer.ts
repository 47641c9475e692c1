/**
 * The resource-watch-channel reducer (AHP 0.8). What is watched is fixed when the channel opens;
 * `resourceWatch/changed` reports changes to subscribers and leaves state alone, as does any
 * unknown action type.
 */
import type { ResourceWatchAction } from '../protocol/actions.js';
import type { ResourceWatchState } from '../protocol/state.js';

export function resourceWatchReducer(state: ResourceWatchState, _action: ResourceWatchAction | { readonly type: string }): ResourceWatchState {
  return state;
}
