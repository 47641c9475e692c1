/** Chat-channel actions (§3.1–§3.4): turn lifecycle, input requests, pending messages, tool calls. */
import { z } from 'zod';
import {
  chatInputAnswerSchema,
  chatInputAnswersSchema,
  chatInputRequestSchema,
  chatInputResponseSchema,
  confirmationPromptFields,
  errorInfoSchema,
  errorPartSchema,
  idSchema,
  isoTimestampSchema,
  labelSchema,
  messageSchema,
  pendingMessageSchema,
  responsePartSchema,
  StateLimits,
  textSchema,
  toolAuthSchema,
  toolCallContributorSchema,
  toolConfirmedSchema,
  toolContentSchema,
  toolResultSchema,
  turnSchema,
  usageSchema,
} from '../state.js';
import { durationSchema, meta, toolScoped, turnScoped } from './common.js';

// ─── §3.1 Turn lifecycle ─────────────────────────────────────────────────────

export const turnStartedActionSchema = z.looseObject({
  type: z.literal('chat/turnStarted'),
  ...turnScoped,
  startedAt: isoTimestampSchema,
  message: messageSchema,
  /** The steering / queued message this turn consumes; removed from its list. */
  queuedMessageId: idSchema.optional(),
});
export const deltaActionSchema = z.looseObject({
  type: z.literal('chat/delta'),
  ...turnScoped,
  partId: idSchema,
  content: z.string(),
});
export const reasoningActionSchema = z.looseObject({
  type: z.literal('chat/reasoning'),
  ...turnScoped,
  partId: idSchema,
  content: z.string(),
});
export const responsePartActionSchema = z.looseObject({
  type: z.literal('chat/responsePart'),
  ...turnScoped,
  part: responsePartSchema,
});
export const usageActionSchema = z.looseObject({
  type: z.literal('chat/usage'),
  ...turnScoped,
  usage: usageSchema,
});
export const turnCompleteActionSchema = z.looseObject({
  type: z.literal('chat/turnComplete'),
  ...turnScoped,
  duration: durationSchema,
});
export const turnCancelledActionSchema = z.looseObject({
  type: z.literal('chat/turnCancelled'),
  ...turnScoped,
  duration: durationSchema,
});
/** [A] carries `error`; [S] carries an error `part` appended as the turn's last response part. */
export const errorActionSchema = z.looseObject({
  type: z.literal('chat/error'),
  ...turnScoped,
  duration: durationSchema,
  error: errorInfoSchema.optional(),
  part: errorPartSchema.optional(),
});
/** [S] Reopens the latest turn when it ended in a resumable error. */
export const turnResumeActionSchema = z.looseObject({
  type: z.literal('chat/turnResume'),
  ...turnScoped,
});
export const truncatedActionSchema = z.looseObject({
  type: z.literal('chat/truncated'),
  /** Keep turns up to and including this one; absent = clear everything. */
  turnId: idSchema.optional(),
  ...meta,
});
/**
 * Typed peers encode a turn without usage as `usage: null` (upstream's `UsageInfo | null`); a JSON
 * `null` means absent, so it is dropped before the turn is read.
 */
function withoutNullUsage(turn: unknown): unknown {
  if (typeof turn !== 'object' || turn === null || !('usage' in turn) || turn.usage !== null) return turn;
  const { usage: _absent, ...rest } = turn;
  return rest;
}

export const turnsLoadedActionSchema = z.looseObject({
  type: z.literal('chat/turnsLoaded'),
  turns: z.array(z.preprocess(withoutNullUsage, turnSchema)),
  turnsNextCursor: z.string().max(StateLimits.label).optional(),
  ...meta,
});
export const activityChangedActionSchema = z.looseObject({
  type: z.literal('chat/activityChanged'),
  activity: labelSchema.optional(),
  ...meta,
});
export const draftChangedActionSchema = z.looseObject({
  type: z.literal('chat/draftChanged'),
  draft: messageSchema.optional(),
  ...meta,
});

// ─── §3.2 Input requests ─────────────────────────────────────────────────────

export const inputRequestedActionSchema = z.looseObject({
  type: z.literal('chat/inputRequested'),
  request: chatInputRequestSchema,
  ...meta,
});
export const inputAnswerChangedActionSchema = z.looseObject({
  type: z.literal('chat/inputAnswerChanged'),
  requestId: idSchema,
  questionId: idSchema,
  /** Absent = clear this question's answer. */
  answer: chatInputAnswerSchema.optional(),
  ...meta,
});
export const inputCompletedActionSchema = z.looseObject({
  type: z.literal('chat/inputCompleted'),
  requestId: idSchema,
  response: chatInputResponseSchema,
  /** Overlaid per question on the answers synced so far. */
  answers: chatInputAnswersSchema.optional(),
  ...meta,
});

// ─── §3.3 Pending messages and steering ──────────────────────────────────────

export const pendingMessageKindSchema = z.enum(['steering', 'queued']);
export type PendingMessageKind = z.infer<typeof pendingMessageKindSchema>;

export const pendingMessageSetActionSchema = z.looseObject({
  type: z.literal('chat/pendingMessageSet'),
  kind: pendingMessageKindSchema,
  id: idSchema,
  message: messageSchema,
  ...meta,
});
export const pendingMessageRemovedActionSchema = z.looseObject({
  type: z.literal('chat/pendingMessageRemoved'),
  kind: pendingMessageKindSchema,
  id: idSchema,
  ...meta,
});
export const queuedMessagesReorderedActionSchema = z.looseObject({
  type: z.literal('chat/queuedMessagesReordered'),
  order: z.array(idSchema).max(StateLimits.listItems),
  ...meta,
});
/** [L] Upsert into the steering-message list (independent of the legacy single slot). */
export const steeringMessageSetActionSchema = z.looseObject({
  type: z.literal('chat/steeringMessageSet'),
  steeringMessage: pendingMessageSchema,
  ...meta,
});
export const steeringMessageRemovedActionSchema = z.looseObject({
  type: z.literal('chat/steeringMessageRemoved'),
  id: idSchema,
  ...meta,
});

// ─── §3.4 Tool calls ─────────────────────────────────────────────────────────

export const toolCallStartActionSchema = z.looseObject({
  type: z.literal('chat/toolCallStart'),
  ...toolScoped,
  toolName: z.string().max(StateLimits.id),
  displayName: labelSchema,
  intention: textSchema.optional(),
  contributor: toolCallContributorSchema.optional(),
});
export const toolCallDeltaActionSchema = z.looseObject({
  type: z.literal('chat/toolCallDelta'),
  ...toolScoped,
  /** Appended to `partialInput`. */
  content: z.string().optional(),
  invocationMessage: textSchema.optional(),
});
export const toolCallReadyActionSchema = z.looseObject({
  type: z.literal('chat/toolCallReady'),
  ...toolScoped,
  ...confirmationPromptFields,
  /** Set = no confirmation needed (→ running); absent = ask the user (→ pending-confirmation). */
  confirmed: toolConfirmedSchema.optional(),
  contributor: toolCallContributorSchema.optional(),
  intention: textSchema.optional(),
});
export const toolCallApprovedActionSchema = z.looseObject({
  type: z.literal('chat/toolCallConfirmed'),
  ...toolScoped,
  approved: z.literal(true),
  confirmed: toolConfirmedSchema,
  /** Replaces inline string input; referenced input is rewritten by the host instead. */
  editedToolInput: textSchema.optional(),
  selectedOptionId: idSchema.optional(),
});
export const toolCallDeniedActionSchema = z.looseObject({
  type: z.literal('chat/toolCallConfirmed'),
  ...toolScoped,
  approved: z.literal(false),
  reason: z.enum(['denied', 'skipped']),
  userSuggestion: z.union([textSchema, messageSchema]).optional(),
  reasonMessage: textSchema.optional(),
  selectedOptionId: idSchema.optional(),
});
export const toolCallConfirmedActionSchema = z.discriminatedUnion('approved', [toolCallApprovedActionSchema, toolCallDeniedActionSchema]);
export const toolCallCompleteActionSchema = z.looseObject({
  type: z.literal('chat/toolCallComplete'),
  ...toolScoped,
  result: toolResultSchema,
  requiresResultConfirmation: z.boolean().optional(),
});
export const toolCallResultConfirmedActionSchema = z.looseObject({
  type: z.literal('chat/toolCallResultConfirmed'),
  ...toolScoped,
  approved: z.boolean(),
});
export const toolCallContentChangedActionSchema = z.looseObject({
  type: z.literal('chat/toolCallContentChanged'),
  ...toolScoped,
  content: toolContentSchema,
});
export const toolCallAuthRequiredActionSchema = z.looseObject({
  type: z.literal('chat/toolCallAuthRequired'),
  ...toolScoped,
  auth: toolAuthSchema,
});
export const toolCallAuthResolvedActionSchema = z.looseObject({
  type: z.literal('chat/toolCallAuthResolved'),
  ...toolScoped,
});

// ─── Per-chat read and archived flags (AHP 1.0) ─────────────────────────────

/** Sets or clears the chat's own IsRead bit (`status` 32); the session's flag is separate. */
export const chatIsReadChangedActionSchema = z.looseObject({
  type: z.literal('chat/isReadChanged'),
  isRead: z.boolean(),
  ...meta,
});
/** Sets or clears the chat's own IsArchived bit (`status` 64). */
export const chatIsArchivedChangedActionSchema = z.looseObject({
  type: z.literal('chat/isArchivedChanged'),
  isArchived: z.boolean(),
  ...meta,
});

// ─── Working directories (AHP 0.8) ───────────────────────────────────────────

export const chatWorkingDirectorySetActionSchema = z.looseObject({
  type: z.literal('chat/workingDirectorySet'),
  directory: z.string().min(1).max(StateLimits.resourceUri),
  ...meta,
});
export const chatWorkingDirectoryRemovedActionSchema = z.looseObject({
  type: z.literal('chat/workingDirectoryRemoved'),
  directory: z.string().min(1).max(StateLimits.resourceUri),
  ...meta,
});
