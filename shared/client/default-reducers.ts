/**
 * The reducer a ChannelView uses per channel kind unless the caller overrides it. These are the
 * same pure reducers the hub runs, so a client's confirmed state equals the server's.
 */
import type { ChatState, RootState, SessionState } from '../protocol/state.js';
import { chatReducer } from '../state/chat-reducer.js';
import { rootReducer } from '../state/root-reducer.js';
import { sessionReducer } from '../state/session-reducer.js';
import type { WireReducer } from './reconciler.js';

export type { ChatState, RootState, SessionState };

export interface ReducerRegistry {
  readonly root: WireReducer<RootState>;
  readonly session: WireReducer<SessionState>;
  readonly chat: WireReducer<ChatState>;
}

export const defaultReducers: ReducerRegistry = {
  root: rootReducer,
  session: sessionReducer,
  chat: chatReducer,
};
