/** Session-channel state (§2.5, §3.5): the input-needed roll-up, the session and its summary. */
import { z } from 'zod';
import { MAX_URI_LENGTH } from '../uris.js';
import { channelUriSchema, errorInfoSchema, idSchema, isoTimestampSchema, labelSchema, metaSchema, sessionStatusSchema, StateLimits } from './common.js';
import { chatInputRequestSchema } from './chat-input.js';
import { toolCallStateSchema } from './tool-calls.js';
import { chatSummarySchema } from './chat.js';
import { changesetSchema } from './changeset.js';
import { configStateSchema } from './config.js';
import { artifactSchema } from './artifacts.js';

/** A tool the host offers (name plus an opaque JSON schema and description). */
export const toolDefinitionSchema = z.looseObject({ name: z.string().min(1).max(StateLimits.id) });
export type ToolDefinition = z.infer<typeof toolDefinitionSchema>;

/**
 * One customization: `plugin`, `mcpServer`, or a container with `children` (open `type`). Only
 * `id`, `enabled`, `children`, and an MCP server's `state` / `channel` are read by reducers.
 */
export interface Customization {
  readonly type: string;
  readonly id: string;
  readonly enabled?: boolean;
  readonly children?: readonly Customization[];
  /** An MCP server's run state and the channel it is reachable on once ready. */
  readonly state?: unknown;
  readonly channel?: string;
  readonly [key: string]: unknown;
}
export const customizationSchema: z.ZodType<Customization> = z.looseObject({
  type: z.string().min(1).max(64),
  id: idSchema,
  enabled: z.boolean().optional(),
  get children() {
    return z.array(customizationSchema).max(StateLimits.listItems).optional();
  },
});

/** An MCP server's run state: `{kind: 'starting' | 'ready' | 'stopped' | 'error' | …}`. */
export const mcpServerStateSchema = z.looseObject({ kind: z.string().min(1).max(64) });

// ─── Sessions (§2.5, §3.5) ───────────────────────────────────────────────────

/** Opaque key of a `SessionInputRequest`; this hub uses `${chatUri}#${requestId or toolCallId}`. */
export const sessionInputIdSchema = z
  .string()
  .min(1)
  .max(MAX_URI_LENGTH + StateLimits.id + 1);

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
export const sessionInputRequestSchema = z.discriminatedUnion('kind', [chatInputEntrySchema, toolConfirmationEntrySchema, toolClientExecutionEntrySchema, toolAuthenticationEntrySchema]);
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
  /** Why provisioning failed (`lifecycle: 'creationFailed'`). */
  creationError: errorInfoSchema.optional(),
  /** Tools the host itself offers in this session. */
  serverTools: z.array(toolDefinitionSchema).max(StateLimits.listItems).optional(),
  /** Plugins, MCP servers and their containers (open `type`). */
  customizations: z.array(customizationSchema).max(StateLimits.listItems).optional(),
  config: configStateSchema.optional(),
  /** Where this session's changeset channels live. */
  changesets: z.array(changesetSchema).max(StateLimits.listItems).optional(),
  workingDirectories: z.array(z.string().max(StateLimits.resourceUri)).max(StateLimits.listItems).optional(),
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
  /** AHP 1.1: what the session produced or referenced (unknown artifact types are kept). */
  artifacts: z.array(artifactSchema).max(StateLimits.listItems).optional(),
  _meta: metaSchema.optional(),
});
export type SessionSummary = z.infer<typeof sessionSummarySchema>;
