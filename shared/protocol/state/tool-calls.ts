/** Tool-call state (§3.4): one discriminated union over the call's status. */
import { z } from 'zod';
import { contentRefSchema, idSchema, labelSchema, messageSchema, metaSchema, StateLimits, textSchema } from './common.js';

// ─── Tool calls (§3.4) ───────────────────────────────────────────────────────

export const toolCallContributorSchema = z.discriminatedUnion('kind', [
  /** Executed by the client with this id; only it may complete the call. */
  z.looseObject({ kind: z.literal('client'), clientId: idSchema }),
  z.looseObject({ kind: z.literal('mcp'), customizationId: idSchema }),
]);
export type ToolCallContributor = z.infer<typeof toolCallContributorSchema>;

/** Inline input (string) or a reference to it. */
export const toolInputSchema = z.union([z.string(), contentRefSchema]);
export type ToolInput = z.infer<typeof toolInputSchema>;

export const riskAssessmentSchema = z.discriminatedUnion('status', [
  z.looseObject({ kind: z.string().max(64), status: z.literal('loading') }),
  z.looseObject({
    kind: z.string().max(64),
    status: z.literal('complete'),
    reason: textSchema,
    safety: z.number().min(0).max(1),
  }),
]);
export type RiskAssessment = z.infer<typeof riskAssessmentSchema>;

export const confirmationOptionSchema = z.looseObject({
  id: idSchema,
  label: labelSchema,
  kind: z.enum(['approve', 'deny']),
  group: z.union([z.number(), z.string().max(StateLimits.id)]).optional(),
});
export type ConfirmationOption = z.infer<typeof confirmationOptionSchema>;

export const toolConfirmedSchema = z.enum(['not-needed', 'user-action', 'setting']);
export type ToolConfirmed = z.infer<typeof toolConfirmedSchema>;

/** Tool output blocks (`{type: 'text', text}`, `{type: 'terminal', resource}`, …). */
export const toolContentSchema = z.array(z.looseObject({ type: z.string().max(64) }));
export type ToolContent = z.infer<typeof toolContentSchema>;

export const toolAuthSchema = z.looseObject({
  reason: z.string().max(64),
  /** RFC 9728 protected-resource metadata. */
  resource: z.looseObject({ resource: z.string().max(StateLimits.resourceUri) }),
  requiredScopes: z.array(z.string().max(StateLimits.id)).max(StateLimits.options).optional(),
  description: textSchema.optional(),
});
export type ToolAuth = z.infer<typeof toolAuthSchema>;

export const toolResultSchema = z.looseObject({
  success: z.boolean(),
  pastTenseMessage: textSchema,
  content: toolContentSchema.optional(),
  structuredContent: z.unknown().optional(),
  error: z.looseObject({ message: textSchema, code: z.string().max(StateLimits.id).optional() }).optional(),
});
export type ToolResult = z.infer<typeof toolResultSchema>;

const toolCallBase = {
  toolCallId: idSchema,
  toolName: z.string().max(StateLimits.id),
  displayName: labelSchema,
  intention: textSchema.optional(),
  contributor: toolCallContributorSchema.optional(),
  _meta: metaSchema.optional(),
};
/** Fields of a tool that has been approved to run (or needed no approval). */
const executionFields = {
  invocationMessage: textSchema,
  toolInput: toolInputSchema.optional(),
  confirmed: toolConfirmedSchema,
  selectedOption: confirmationOptionSchema.optional(),
  content: toolContentSchema.optional(),
};
const resultFields = {
  success: z.boolean(),
  pastTenseMessage: textSchema,
  structuredContent: z.unknown().optional(),
  error: toolResultSchema.shape.error,
};

export const streamingToolCallSchema = z.looseObject({
  ...toolCallBase,
  status: z.literal('streaming'),
  partialInput: z.string().optional(),
  invocationMessage: textSchema.optional(),
});
/** What a tool asks the user to confirm; carried by `chat/toolCallReady` and kept while pending. */
export const confirmationPromptFields = {
  invocationMessage: textSchema,
  toolInput: toolInputSchema.optional(),
  confirmationTitle: labelSchema.optional(),
  riskAssessment: riskAssessmentSchema.optional(),
  edits: z.looseObject({}).optional(),
  editable: z.boolean().optional(),
  options: z.array(confirmationOptionSchema).max(StateLimits.options).optional(),
};
export const pendingConfirmationToolCallSchema = z.looseObject({
  ...toolCallBase,
  status: z.literal('pending-confirmation'),
  ...confirmationPromptFields,
});
export const runningToolCallSchema = z.looseObject({
  ...toolCallBase,
  ...executionFields,
  status: z.literal('running'),
});
export const authRequiredToolCallSchema = z.looseObject({
  ...toolCallBase,
  ...executionFields,
  status: z.literal('auth-required'),
  auth: toolAuthSchema,
});
export const pendingResultConfirmationToolCallSchema = z.looseObject({
  ...toolCallBase,
  ...executionFields,
  ...resultFields,
  status: z.literal('pending-result-confirmation'),
});
export const completedToolCallSchema = z.looseObject({
  ...toolCallBase,
  ...executionFields,
  ...resultFields,
  status: z.literal('completed'),
});
export const cancelledToolCallSchema = z.looseObject({
  ...toolCallBase,
  status: z.literal('cancelled'),
  invocationMessage: textSchema.optional(),
  toolInput: toolInputSchema.optional(),
  reason: z.enum(['denied', 'skipped', 'result-denied']),
  reasonMessage: textSchema.optional(),
  /** What the user would rather have the agent do (text, or a full message). */
  userSuggestion: z.union([textSchema, messageSchema]).optional(),
  selectedOption: confirmationOptionSchema.optional(),
});

export const toolCallStateSchema = z.discriminatedUnion('status', [
  streamingToolCallSchema,
  pendingConfirmationToolCallSchema,
  runningToolCallSchema,
  authRequiredToolCallSchema,
  pendingResultConfirmationToolCallSchema,
  completedToolCallSchema,
  cancelledToolCallSchema,
]);
export type StreamingToolCall = z.infer<typeof streamingToolCallSchema>;
export type PendingConfirmationToolCall = z.infer<typeof pendingConfirmationToolCallSchema>;
export type RunningToolCall = z.infer<typeof runningToolCallSchema>;
export type AuthRequiredToolCall = z.infer<typeof authRequiredToolCallSchema>;
export type PendingResultConfirmationToolCall = z.infer<typeof pendingResultConfirmationToolCallSchema>;
export type CompletedToolCall = z.infer<typeof completedToolCallSchema>;
export type CancelledToolCall = z.infer<typeof cancelledToolCallSchema>;
export type ToolCallState = z.infer<typeof toolCallStateSchema>;
export type ToolCallStatus = ToolCallState['status'];
