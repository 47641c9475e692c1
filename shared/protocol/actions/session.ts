/** Session-channel actions (§3.5), including the hub's own `x-session/…` actions. */
import { z } from 'zod';
import { channelUriSchema, chatSummarySchema, labelSchema, sessionInputIdSchema, sessionInputRequestSchema, sessionStateSchema, StateLimits } from '../state.js';
import { meta } from './common.js';

// ─── §3.5 Session channel ────────────────────────────────────────────────────

export const sessionReadyActionSchema = z.looseObject({ type: z.literal('session/ready'), ...meta });
export const sessionTitleChangedActionSchema = z.looseObject({
  type: z.literal('session/titleChanged'),
  title: labelSchema,
  ...meta,
});
export const chatAddedActionSchema = z.looseObject({
  type: z.literal('session/chatAdded'),
  summary: chatSummarySchema,
  ...meta,
});
export const chatRemovedActionSchema = z.looseObject({
  type: z.literal('session/chatRemoved'),
  chat: channelUriSchema,
  ...meta,
});
export const chatUpdatedActionSchema = z.looseObject({
  type: z.literal('session/chatUpdated'),
  chat: channelUriSchema,
  changes: chatSummarySchema.partial(),
  ...meta,
});
export const defaultChatChangedActionSchema = z.looseObject({
  type: z.literal('session/defaultChatChanged'),
  defaultChat: channelUriSchema.optional(),
  ...meta,
});
export const inputNeededSetActionSchema = z.looseObject({
  type: z.literal('session/inputNeededSet'),
  request: sessionInputRequestSchema,
  ...meta,
});
export const inputNeededRemovedActionSchema = z.looseObject({
  type: z.literal('session/inputNeededRemoved'),
  id: sessionInputIdSchema,
  ...meta,
});
export const isReadChangedActionSchema = z.looseObject({
  type: z.literal('session/isReadChanged'),
  isRead: z.boolean(),
  ...meta,
});
export const isArchivedChangedActionSchema = z.looseObject({
  type: z.literal('session/isArchivedChanged'),
  isArchived: z.boolean(),
  ...meta,
});
/**
 * The session's chats in their new order (AHP 1.0, after a move): `chats` is the complete
 * resulting order of chat URIs. Chats it does not list keep their relative order after the
 * listed ones, and URIs that are not chats of the session are ignored, so a stale list never
 * drops a chat.
 */
export const chatsReorderedActionSchema = z.looseObject({
  type: z.literal('session/chatsReordered'),
  chats: z.array(channelUriSchema).max(StateLimits.listItems),
  ...meta,
});

/**
 * Implementation-defined (`x-`): an agent replaces the whole session state while subscribed
 * (2026-07-31). Named `session/stateReplaced` until 2026-12: upstream AHP has no such action, so
 * the name moved out of the standard namespace; `parseAction` still reads the old name (see
 * `LEGACY_ACTION_TYPES`).
 */
export const sessionStateReplacedActionSchema = z.looseObject({
  type: z.literal('x-session/stateReplaced'),
  state: sessionStateSchema,
  ...meta,
});

/**
 * Implementation-defined (`x-`): a person chose "always allow" for tool `toolName` in this
 * session (a permission reply with an `allow_always` option). The reducer records it in
 * `_meta['hub/approvedTools']`; the hub then approves later confirmations of that tool in this
 * session itself (`confirmed: 'setting'`). Being in the log, it survives restarts.
 */
export const toolApprovalRememberedActionSchema = z.looseObject({
  type: z.literal('x-session/toolApprovalRemembered'),
  toolName: z.string().min(1).max(StateLimits.id),
  ...meta,
});

/**
 * Implementation-defined (`x-`): a person chose "always deny" for tool `toolName` in this session
 * (a permission reply with a `reject_always` option). The reducer records it in
 * `_meta['hub/deniedTools']`; the hub then denies later confirmations of that tool in this session
 * itself. The two lists exclude each other: remembering a denial drops the tool from
 * `hub/approvedTools`, and `x-session/toolApprovalRemembered` drops it from `hub/deniedTools`
 * (the latest choice wins). Being in the log, it survives restarts.
 */
export const toolDenialRememberedActionSchema = z.looseObject({
  type: z.literal('x-session/toolDenialRemembered'),
  toolName: z.string().min(1).max(StateLimits.id),
  ...meta,
});

/**
 * Implementation-defined (`x-`): a person approved a tool with one of the *agent's own*
 * `allow_always` options (Qwen's "Always Allow in project", …), through any surface. The agent
 * keeps that standing grant, not the hub: the hub records it only so people see it (with who
 * chose it, `_meta["hub/answeredBy"]`), in `_meta['hub/agentGrants']`; it cannot forget it.
 */
export const agentGrantRecordedActionSchema = z.looseObject({
  type: z.literal('x-session/agentGrantRecorded'),
  /** The precise tool identity (`toolIdentity`): the agent's tool name, or kind and command. */
  toolName: z.string().min(1).max(StateLimits.id),
  optionId: z.string().min(1).max(StateLimits.id),
  label: labelSchema,
  ...meta,
});

/**
 * Implementation-defined (`x-`), client-dispatchable: a person clears the remembered "always
 * allow" / "always deny" choice for `toolName` in this session, so the next confirmation of that
 * tool is asked again. Rejected when the session remembers no choice for the tool; viewers are
 * refused like for every dispatch. Being in the log, it survives restarts.
 */
export const toolChoiceForgottenActionSchema = z.looseObject({
  type: z.literal('x-session/toolChoiceForgotten'),
  toolName: z.string().min(1).max(StateLimits.id),
  ...meta,
});
