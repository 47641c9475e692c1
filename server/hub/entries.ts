/**
 * The in-memory entries of a session and a chat: what `HubState` (catalogue.ts) holds and
 * `ChatTable` (chat-table.ts) parks. A module of types below both, so neither imports the other.
 */
import type { ChatState, SessionState } from '../../shared/protocol/state.js';
import type { AnswerIndex } from '../../shared/state/answered-by.js';
import type { InputBook } from '../../shared/state/input-receipts.js';

export interface SessionEntry {
  readonly uri: string;
  readonly tenant: string;
  readonly owner: string;
  readonly provider: string;
  readonly createdAt: string;
  state: SessionState;
  readonly chats: Set<string>;
  /**
   * Steering receipts (`shared/state/input-receipts.ts`), folded from the session's chat records
   * and kept beside the state like `answeredBy`; absent until the first input, and in images
   * written before receipts were durable.
   */
  inputs?: InputBook;
}

export interface ChatEntry {
  readonly uri: string;
  readonly session: string;
  state: ChatState;
  /**
   * Who answered each input request (from the `chat/inputCompleted` stamps), kept beside the
   * state so the state stays what standard reducers make of it; absent until the first answer
   * and in images written before it existed. Sent as the chat snapshot's `_meta`.
   */
  answeredBy?: AnswerIndex;
  /** Who stopped each cancelled turn (the `chat/turnCancelled` stamps), kept and sent the same way. */
  stoppedBy?: AnswerIndex;
}
