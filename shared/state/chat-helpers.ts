/** Helpers every chat-reducer module shares: the derived status and active-turn updates. */
import { type ActiveTurn, type ChatState, type ResponsePart, SessionStatus, withBit } from '../protocol/state.js';
import { deriveChatStatus } from './status.js';
import { replacePart } from './part-index.js';

// ─── Status ──────────────────────────────────────────────────────────────────

interface StatusChange {
  /** The turn just ended through `chat/error` (§2.4 rule 1). */
  readonly turnEndedWithError?: boolean;
  /** New activity the user has not seen: `turnStarted`, `inputRequested`, `turnResume`. */
  readonly clearIsRead?: boolean;
}

/** Recomputes `status` (flags kept); returns `state` itself when the value does not change. */
export function withDerivedStatus(state: ChatState, change: StatusChange = {}): ChatState {
  let status = deriveChatStatus(state, change.turnEndedWithError);
  if (change.clearIsRead) status = withBit(status, SessionStatus.IsRead, false);
  return status === state.status ? state : { ...state, status };
}

/** Applies `update` to the active turn if it is `turnId`; the same state when nothing changes. */
export function updateActiveTurn(state: ChatState, turnId: string, update: (turn: ActiveTurn) => ActiveTurn): ChatState {
  const turn = state.activeTurn;
  if (!turn || turn.id !== turnId) return state;
  const next = update(turn);
  return next === turn ? state : { ...state, activeTurn: next };
}

export function withResponseParts(turn: ActiveTurn, responseParts: readonly ResponsePart[]): ActiveTurn {
  // Every helper that changes parts returns a fresh array (which may carry the part index): no copy.
  return responseParts === turn.responseParts ? turn : { ...turn, responseParts: responseParts as ResponsePart[] };
}

/** `updateAt` for response parts, keeping the part index (a part keeps its id through every update here). */
export function replacePartAt(parts: readonly ResponsePart[], index: number, update: (part: ResponsePart) => ResponsePart): readonly ResponsePart[] {
  const current = parts[index];
  return index < 0 || current === undefined ? parts : replacePart(parts, index, update(current));
}
