/**
 * `x-collab/*`: y-protocols sync and awareness carried over the hub's `/ahp` JSON-RPC socket.
 * One Yjs document per open input request (`doc` = the request id) on a chat channel; each text
 * question of the request is a `Y.Text` named by its question id. Binary payloads are base64.
 *
 * Client → server
 * - request `x-collab/join {channel, doc}` → `{state, stateVector, awareness, epoch}`: the document as one
 *   Yjs update, the server's state vector (so the client can send what the server lacks) and every
 *   current awareness state. Errors: -32008 no open request, -32020 too many documents.
 * - notification `x-collab/sync {channel, doc, data}`: a y-protocols sync message (step 1, step 2
 *   or update). Step 1 is answered with step 2; updates from viewers are ignored.
 * - notification `x-collab/awareness {channel, doc, data}`: a y-protocols awareness update. The
 *   server stamps `user.id`/`user.role` of every state with the authenticated principal.
 * - notification `x-collab/leave {channel, doc}`: stop following; the sender's presence is removed.
 *
 * Server → client
 * - `x-collab/sync` and `x-collab/awareness` with the same shapes (changes made by others).
 * - `x-collab/closed {channel, doc, reason}`: the document was dropped (request resolved, turn
 *   ended, chat disposed, or a limit was exceeded). Nothing more is sent for it.
 *
 * The reserved document id `~chat` is presence only: joining it needs just a visible chat, it holds
 * no text (sync writes are ignored) and it lives until the chat is disposed. Tabs use it to show
 * who is viewing the chat; request documents show who is editing which question.
 *
 * The merged text of each `Y.Text` is mirrored into `chat/inputAnswerChanged` drafts (so AHP
 * clients without Yjs see it), and drafts set by such clients are merged back into the `Y.Text`.
 */
import { z } from 'zod';

export const CollabMethod = {
  Join: 'x-collab/join',
  Sync: 'x-collab/sync',
  Awareness: 'x-collab/awareness',
  Leave: 'x-collab/leave',
  Closed: 'x-collab/closed',
} as const;

/** Document id of a chat's presence-only room (no input request may use it). */
export const CHAT_PRESENCE_DOC = '~chat';

const channel = z.string().min(1).max(512);
const doc = z.string().min(1).max(256);
const base64 = z
  .string()
  .max(4 * 1024 * 1024)
  .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');

export const joinParamsSchema = z.object({ channel, doc });
export const leaveParamsSchema = z.object({ channel, doc });
export const dataParamsSchema = z.object({ channel, doc, data: base64 });

/** The one edit (delete then insert at `index`) that turns `prev` into `next`, around their common prefix and suffix. */
export interface TextEdit {
  readonly index: number;
  readonly remove: number;
  readonly insert: string;
}

export function textDiff(prev: string, next: string): TextEdit {
  let start = 0;
  while (start < prev.length && start < next.length && prev[start] === next[start]) start++;
  let endPrev = prev.length;
  let endNext = next.length;
  while (endPrev > start && endNext > start && prev[endPrev - 1] === next[endNext - 1]) {
    endPrev--;
    endNext--;
  }
  return { index: start, remove: endPrev - start, insert: next.slice(start, endNext) };
}
