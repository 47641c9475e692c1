/** Session-channel state (§2.5, §3.5): the input-needed roll-up, the session and its summary. */
import { z } from 'zod';
import { MAX_URI_LENGTH } from '../uris.js';
import {
  channelUriSchema,
  idSchema,
  isoTimestampSchema,
  labelSchema,
  metaSchema,
  sessionStatusSchema,
  StateLimits,
} from './common.js';
import { chatInputRequestSchema } from './chat-input.js';
import { toolCallStateSchema } from './tool-calls.js';
import { chatSummarySchema } from './chat.js';

// ─── Sessions (§2.5, §3.5) ───────────────────────────────────────────────────

/** Opaque key of a `SessionInputRequest`; this hub uses `${chatUri}#${requestId or toolCallId}`. */
export const sessionInputIdSchema = z.string().min(1).max(MAX_URI_LENGTH + StateLimits.id + 1);

const sessionInputBase = { id: sessionInputIdSchema, chat: channelUriSchema };
export const chatInputEntrySchema = z.looseObject({
  ...sessionInputBase,
  kind: z.literal('chatInput'),
  request: chatInputRequestSchema,
});
export const toolConfirmationEntrySchema = z.looseObject({
  ...sessionInputBase,
  kind: z.literal('toolConfirmation'),
  turnId: idSchema,
  toolCall: toolCallStateSchema,
});
export const toolClientExecutionEntrySchema = z.looseObject({
  ...sessionInputBase,
  kind: z.literal('toolClientExecution'),
  turnId: idSchema,
  clientId: idSchema,
  toolCall: toolCallStateSchema,
});
export const toolAuthenticationEntrySchema = z.looseObject({
  ...sessionInputBase,
  kind: z.literal('toolAuthentication'),
  turnId: idSchema,
  toolCall: toolCallStateSchema,
});
export const sessionInputRequestSchema = z.discriminatedUnion('kind', [
  chatInputEntrySchema,
  toolConfirmationEntrySchema,
  toolClientExecutionEntrySchema,
  toolAuthenticationEntrySchema,
]);
export type SessionInputRequest = z.infer<typeof sessionInputRequestSchema>;
export type SessionInputRequestKind = SessionInputRequest['kind'];

export const activeClientSchema = z.looseObject({ clientId: idSchema });
export type ActiveClient = z.infer<typeof activeClientSchema>;

export const sessionLifecycleSchema = z.string().max(64);

export const sessionStateSchema = z.looseObject({
  resource: channelUriSchema.optional(),
  provider: z.string().max(StateLimits.id),
  title: labelSchema,
  /** Aggregated activity (§2.6) plus the session-scoped IsRead / IsArchived flags. */
  status: sessionStatusSchema,
  /** `activity` of the chat that contributed the aggregated activity bits (§2.6). */
  activity: labelSchema.optional(),
  /** `creating` | `ready` | … (open). */
  lifecycle: sessionLifecycleSchema,
  activeClients: z.array(activeClientSchema),
  /** Chat catalogue; each entry mirrors the chat's own state via `session/chatUpdated`. */
  chats: z.array(chatSummarySchema),
  /** Input-routing hint: the chat that gets input when none is named. */
  defaultChat: channelUriSchema.optional(),
  /** Host-maintained roll-up of everything blocked on a person (or a client) across all chats. */
  inputNeeded: z.array(sessionInputRequestSchema).optional(),
  _meta: metaSchema.optional(),
});
export type SessionState = z.infer<typeof sessionStateSchema>;

/** A session as listed in the root catalogue (`listSessions`, `root/session*` notifications). */
export const sessionSummarySchema = z.looseObject({
  resource: channelUriSchema,
  provider: z.string().max(StateLimits.id),
  title: labelSchema,
  status: sessionStatusSchema,
  activity: labelSchema.optional(),
  createdAt: isoTimestampSchema.optional(),
  modifiedAt: isoTimestampSchema,
  /** Number of `inputNeeded` entries that await a person (client execution excluded). */
  inputNeededCount: z.number().int().nonnegative().optional(),
  _meta: metaSchema.optional(),
});
export type SessionSummary = z.infer<typeof sessionSummarySchema>;

