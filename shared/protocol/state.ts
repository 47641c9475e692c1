/**
 * AHP state shapes as zod schemas, one module per channel under `state/` (re-exported here so
 * `./state.js` stays the import path). The schemas are the single source of truth; every
 * TypeScript type is `z.infer` of its schema.
 *
 * Conventions:
 * - Objects are loose (`z.looseObject`): keys we do not know survive a decode/encode round trip,
 *   which is what forward compatibility (§6.10) needs.
 * - "Open" unions (response parts, question kinds, answer value kinds, chat origins) accept kinds
 *   we do not know as opaque objects, but a *known* kind must match its own shape: a malformed
 *   `{kind: 'text'}` is rejected rather than being waved through as "unknown".
 * - Strings and arrays a client can send carry size limits (see `StateLimits`). Fields only the
 *   server produces (streamed markdown, tool output) are not capped here: the transport's frame
 *   limit bounds them, and a cap would make a legitimate long answer unparseable.
 * - JSON `null` is not "absent": optional fields are `undefined`/missing, never `null`.
 */
export * from './state/common.js';
export * from './state/chat-input.js';
export * from './state/tool-calls.js';
export * from './state/chat.js';
export * from './state/session.js';
export * from './state/root.js';
export * from './state/config.js';
export * from './state/terminal.js';
export * from './state/changeset.js';
export * from './state/annotations.js';
export * from './state/resource-watch.js';
