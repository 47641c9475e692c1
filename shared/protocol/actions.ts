/**
 * AHP actions (§3) as zod schemas, one per action type, plus `parseAction` which validates a raw
 * client payload against the schema for its `type`.
 *
 * Actions travel as bare payloads inside envelopes and never carry their channel URI. Unknown
 * action types are legal on the wire (newer peers) and are reducer no-ops, so `parseAction` lets
 * them through; whether a client may *dispatch* one is a separate question answered by
 * `CLIENT_DISPATCHABLE_ACTIONS` and `validateClientAction`.
 */
import { z } from 'zod';
import { checkJsonBounds, type JsonBoundsViolation } from './json-bounds.js';
import { describeIssues } from './describe-issues.js';
import {
  StateLimits,
  agentInfoSchema,
  channelUriSchema,
  chatInputAnswerSchema,
  chatInputAnswersSchema,
  chatInputRequestSchema,
  chatInputResponseSchema,
  chatSummarySchema,
  errorInfoSchema,
  errorPartSchema,
  idSchema,
  isoTimestampSchema,
  labelSchema,
  confirmationPromptFields,
  messageSchema,
  metaSchema,
  pendingMessageSchema,
  responsePartSchema,
  sessionInputIdSchema,
  sessionInputRequestSchema,
  sessionStateSchema,
  textSchema,
  toolAuthSchema,
  toolCallContributorSchema,
  toolConfirmedSchema,
  toolContentSchema,
  toolResultSchema,
  turnSchema,
  usageSchema,
} from './state.js';

/** Any action on the wire: an object with a string `type`; everything else is carried through. */
export const anyActionSchema = z.looseObject({ type: z.string().min(1).max(128) });
export type AnyAction = z.infer<typeof anyActionSchema>;

const meta = { _meta: metaSchema.optional() };
const turnScoped = { turnId: idSchema, ...meta };
const toolScoped = { turnId: idSchema, toolCallId: idSchema, ...meta };
/** Milliseconds on the producer's clock; the reducer clamps negatives to 0. */
const durationSchema = z.number();

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
export const turnsLoadedActionSchema = z.looseObject({
  type: z.literal('chat/turnsLoaded'),
  turns: z.array(turnSchema),
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
export const toolCallConfirmedActionSchema = z.discriminatedUnion('approved', [
  toolCallApprovedActionSchema,
  toolCallDeniedActionSchema,
]);
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
/** Replaces the whole session state while subscribed (2026-07-31). */
export const sessionStateReplacedActionSchema = z.looseObject({
  type: z.literal('session/stateReplaced'),
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

// ─── Root channel ────────────────────────────────────────────────────────────

export const agentsChangedActionSchema = z.looseObject({
  type: z.literal('root/agentsChanged'),
  agents: z.array(agentInfoSchema),
  ...meta,
});

// ─── Unions and types ────────────────────────────────────────────────────────

export const chatActionSchema = z.discriminatedUnion('type', [
  turnStartedActionSchema,
  deltaActionSchema,
  reasoningActionSchema,
  responsePartActionSchema,
  usageActionSchema,
  turnCompleteActionSchema,
  turnCancelledActionSchema,
  errorActionSchema,
  turnResumeActionSchema,
  truncatedActionSchema,
  turnsLoadedActionSchema,
  activityChangedActionSchema,
  draftChangedActionSchema,
  inputRequestedActionSchema,
  inputAnswerChangedActionSchema,
  inputCompletedActionSchema,
  pendingMessageSetActionSchema,
  pendingMessageRemovedActionSchema,
  queuedMessagesReorderedActionSchema,
  steeringMessageSetActionSchema,
  steeringMessageRemovedActionSchema,
  toolCallStartActionSchema,
  toolCallDeltaActionSchema,
  toolCallReadyActionSchema,
  toolCallConfirmedActionSchema,
  toolCallCompleteActionSchema,
  toolCallResultConfirmedActionSchema,
  toolCallContentChangedActionSchema,
  toolCallAuthRequiredActionSchema,
  toolCallAuthResolvedActionSchema,
]);

export const sessionActionSchema = z.discriminatedUnion('type', [
  sessionReadyActionSchema,
  sessionTitleChangedActionSchema,
  chatAddedActionSchema,
  chatRemovedActionSchema,
  chatUpdatedActionSchema,
  defaultChatChangedActionSchema,
  inputNeededSetActionSchema,
  inputNeededRemovedActionSchema,
  isReadChangedActionSchema,
  isArchivedChangedActionSchema,
  sessionStateReplacedActionSchema,
  toolApprovalRememberedActionSchema,
  toolDenialRememberedActionSchema,
  toolChoiceForgottenActionSchema,
]);

export const rootActionSchema = z.discriminatedUnion('type', [agentsChangedActionSchema]);

export type TurnStartedAction = z.infer<typeof turnStartedActionSchema>;
export type DeltaAction = z.infer<typeof deltaActionSchema>;
export type ReasoningAction = z.infer<typeof reasoningActionSchema>;
export type ResponsePartAction = z.infer<typeof responsePartActionSchema>;
export type UsageAction = z.infer<typeof usageActionSchema>;
export type TurnCompleteAction = z.infer<typeof turnCompleteActionSchema>;
export type TurnCancelledAction = z.infer<typeof turnCancelledActionSchema>;
export type ErrorAction = z.infer<typeof errorActionSchema>;
export type TurnResumeAction = z.infer<typeof turnResumeActionSchema>;
export type TruncatedAction = z.infer<typeof truncatedActionSchema>;
export type TurnsLoadedAction = z.infer<typeof turnsLoadedActionSchema>;
export type ActivityChangedAction = z.infer<typeof activityChangedActionSchema>;
export type DraftChangedAction = z.infer<typeof draftChangedActionSchema>;
export type InputRequestedAction = z.infer<typeof inputRequestedActionSchema>;
export type InputAnswerChangedAction = z.infer<typeof inputAnswerChangedActionSchema>;
export type InputCompletedAction = z.infer<typeof inputCompletedActionSchema>;
export type PendingMessageSetAction = z.infer<typeof pendingMessageSetActionSchema>;
export type PendingMessageRemovedAction = z.infer<typeof pendingMessageRemovedActionSchema>;
export type QueuedMessagesReorderedAction = z.infer<typeof queuedMessagesReorderedActionSchema>;
export type SteeringMessageSetAction = z.infer<typeof steeringMessageSetActionSchema>;
export type SteeringMessageRemovedAction = z.infer<typeof steeringMessageRemovedActionSchema>;
export type ToolCallStartAction = z.infer<typeof toolCallStartActionSchema>;
export type ToolCallDeltaAction = z.infer<typeof toolCallDeltaActionSchema>;
export type ToolCallReadyAction = z.infer<typeof toolCallReadyActionSchema>;
export type ToolCallApprovedAction = z.infer<typeof toolCallApprovedActionSchema>;
export type ToolCallDeniedAction = z.infer<typeof toolCallDeniedActionSchema>;
export type ToolCallConfirmedAction = z.infer<typeof toolCallConfirmedActionSchema>;
export type ToolCallCompleteAction = z.infer<typeof toolCallCompleteActionSchema>;
export type ToolCallResultConfirmedAction = z.infer<typeof toolCallResultConfirmedActionSchema>;
export type ToolCallContentChangedAction = z.infer<typeof toolCallContentChangedActionSchema>;
export type ToolCallAuthRequiredAction = z.infer<typeof toolCallAuthRequiredActionSchema>;
export type ToolCallAuthResolvedAction = z.infer<typeof toolCallAuthResolvedActionSchema>;
export type SessionReadyAction = z.infer<typeof sessionReadyActionSchema>;
export type SessionTitleChangedAction = z.infer<typeof sessionTitleChangedActionSchema>;
export type ChatAddedAction = z.infer<typeof chatAddedActionSchema>;
export type ChatRemovedAction = z.infer<typeof chatRemovedActionSchema>;
export type ChatUpdatedAction = z.infer<typeof chatUpdatedActionSchema>;
export type DefaultChatChangedAction = z.infer<typeof defaultChatChangedActionSchema>;
export type InputNeededSetAction = z.infer<typeof inputNeededSetActionSchema>;
export type InputNeededRemovedAction = z.infer<typeof inputNeededRemovedActionSchema>;
export type IsReadChangedAction = z.infer<typeof isReadChangedActionSchema>;
export type IsArchivedChangedAction = z.infer<typeof isArchivedChangedActionSchema>;
export type SessionStateReplacedAction = z.infer<typeof sessionStateReplacedActionSchema>;
export type AgentsChangedAction = z.infer<typeof agentsChangedActionSchema>;
export type ToolApprovalRememberedAction = z.infer<typeof toolApprovalRememberedActionSchema>;
export type ToolDenialRememberedAction = z.infer<typeof toolDenialRememberedActionSchema>;
export type ToolChoiceForgottenAction = z.infer<typeof toolChoiceForgottenActionSchema>;

export type ChatAction = z.infer<typeof chatActionSchema>;
export type SessionAction = z.infer<typeof sessionActionSchema>;
export type RootAction = z.infer<typeof rootActionSchema>;
export type KnownAction = ChatAction | SessionAction | RootAction;
export type ChatActionType = ChatAction['type'];
export type SessionActionType = SessionAction['type'];
export type RootActionType = RootAction['type'];
export type KnownActionType = KnownAction['type'];

// ─── Registry ────────────────────────────────────────────────────────────────

/** Schema per known action type. `satisfies` makes a missing or misspelled type a compile error. */
const ACTION_SCHEMAS = {
  'chat/turnStarted': turnStartedActionSchema,
  'chat/delta': deltaActionSchema,
  'chat/reasoning': reasoningActionSchema,
  'chat/responsePart': responsePartActionSchema,
  'chat/usage': usageActionSchema,
  'chat/turnComplete': turnCompleteActionSchema,
  'chat/turnCancelled': turnCancelledActionSchema,
  'chat/error': errorActionSchema,
  'chat/turnResume': turnResumeActionSchema,
  'chat/truncated': truncatedActionSchema,
  'chat/turnsLoaded': turnsLoadedActionSchema,
  'chat/activityChanged': activityChangedActionSchema,
  'chat/draftChanged': draftChangedActionSchema,
  'chat/inputRequested': inputRequestedActionSchema,
  'chat/inputAnswerChanged': inputAnswerChangedActionSchema,
  'chat/inputCompleted': inputCompletedActionSchema,
  'chat/pendingMessageSet': pendingMessageSetActionSchema,
  'chat/pendingMessageRemoved': pendingMessageRemovedActionSchema,
  'chat/queuedMessagesReordered': queuedMessagesReorderedActionSchema,
  'chat/steeringMessageSet': steeringMessageSetActionSchema,
  'chat/steeringMessageRemoved': steeringMessageRemovedActionSchema,
  'chat/toolCallStart': toolCallStartActionSchema,
  'chat/toolCallDelta': toolCallDeltaActionSchema,
  'chat/toolCallReady': toolCallReadyActionSchema,
  'chat/toolCallConfirmed': toolCallConfirmedActionSchema,
  'chat/toolCallComplete': toolCallCompleteActionSchema,
  'chat/toolCallResultConfirmed': toolCallResultConfirmedActionSchema,
  'chat/toolCallContentChanged': toolCallContentChangedActionSchema,
  'chat/toolCallAuthRequired': toolCallAuthRequiredActionSchema,
  'chat/toolCallAuthResolved': toolCallAuthResolvedActionSchema,
  'session/ready': sessionReadyActionSchema,
  'session/titleChanged': sessionTitleChangedActionSchema,
  'session/chatAdded': chatAddedActionSchema,
  'session/chatRemoved': chatRemovedActionSchema,
  'session/chatUpdated': chatUpdatedActionSchema,
  'session/defaultChatChanged': defaultChatChangedActionSchema,
  'session/inputNeededSet': inputNeededSetActionSchema,
  'session/inputNeededRemoved': inputNeededRemovedActionSchema,
  'session/isReadChanged': isReadChangedActionSchema,
  'session/isArchivedChanged': isArchivedChangedActionSchema,
  'session/stateReplaced': sessionStateReplacedActionSchema,
  'x-session/toolApprovalRemembered': toolApprovalRememberedActionSchema,
  'x-session/toolDenialRemembered': toolDenialRememberedActionSchema,
  'x-session/toolChoiceForgotten': toolChoiceForgottenActionSchema,
  'root/agentsChanged': agentsChangedActionSchema,
} satisfies { [T in KnownActionType]: z.ZodType<Extract<KnownAction, { type: T }>> };

export const KNOWN_ACTION_TYPES: readonly KnownActionType[] = Object.keys(ACTION_SCHEMAS) as KnownActionType[];
const knownTypes: ReadonlySet<string> = new Set(KNOWN_ACTION_TYPES);

export function isKnownActionType(type: string): type is KnownActionType {
  return knownTypes.has(type);
}

export function isChatActionType(type: string): type is ChatActionType {
  return isKnownActionType(type) && type.startsWith('chat/');
}

export function isSessionActionType(type: string): type is SessionActionType {
  return isKnownActionType(type) && (type.startsWith('session/') || type.startsWith('x-session/'));
}

export function isRootActionType(type: string): type is RootActionType {
  return isKnownActionType(type) && type.startsWith('root/');
}

/**
 * Narrows an action whose type is known. Sound for anything that came through `parseAction` or
 * was built by typed server code; the reducers rely on it and guard against the rest.
 */
export function isKnownAction(action: { type: string }): action is KnownAction {
  return isKnownActionType(action.type);
}

/**
 * Server-only chat actions that only stream into the active turn: they never change status,
 * summary or input-needed (the hub skips roll-up) nor which interactions are pending.
 */
export const STREAMING_ONLY_ACTIONS: ReadonlySet<string> = new Set<KnownActionType>([
  'chat/delta',
  'chat/reasoning',
  'chat/usage',
  'chat/toolCallDelta',
  'chat/draftChanged',
  'chat/toolCallContentChanged',
]);

/** Actions a client may dispatch (the "C" entries of §3, plus [L]/[S] additions). */
export const CLIENT_DISPATCHABLE_ACTIONS: ReadonlySet<string> = new Set<KnownActionType>([
  'chat/turnStarted',
  'chat/turnCancelled',
  'chat/turnResume',
  'chat/truncated',
  'chat/draftChanged',
  'chat/inputAnswerChanged',
  'chat/inputCompleted',
  'chat/pendingMessageSet',
  'chat/pendingMessageRemoved',
  'chat/queuedMessagesReordered',
  'chat/steeringMessageSet',
  'chat/steeringMessageRemoved',
  'chat/toolCallConfirmed',
  'chat/toolCallResultConfirmed',
  'chat/toolCallComplete',
  'chat/toolCallContentChanged',
  'session/isReadChanged',
  'session/isArchivedChanged',
  'session/defaultChatChanged',
  'x-session/toolChoiceForgotten',
]);

// ─── Parsing ─────────────────────────────────────────────────────────────────

export type ParseActionResult =
  | { readonly ok: true; readonly action: KnownAction | AnyAction }
  | { readonly ok: false; readonly message: string; readonly code?: JsonBoundsViolation };

/**
 * Validates a raw action. Known types must match their schema; the message names the failing
 * field (`chat/turnStarted: message.text: …`). Unknown types pass as `{type, …}`. A top-level
 * `null` field of a known type is read as absent (see `withoutNullFields`).
 * Returned actions are fresh objects (unknown keys kept), safe to store and echo.
 */
export function parseAction(raw: unknown): ParseActionResult {
  // Unknown keys are carried through unvalidated, so their shape is bounded first: a value
  // nested thousands deep would otherwise be stored and then overflow every encoder.
  const outOfBounds = checkJsonBounds(raw);
  if (outOfBounds) return { ok: false, message: `action: ${outOfBounds.message}`, code: outOfBounds.code };
  const envelope = anyActionSchema.safeParse(raw);
  if (!envelope.success) {
    return { ok: false, message: `action: ${describeIssues(envelope.error.issues)}` };
  }
  const { type } = envelope.data;
  if (!isKnownActionType(type)) return { ok: true, action: envelope.data };

  const parsed = ACTION_SCHEMAS[type].safeParse(withoutNullFields(envelope.data));
  if (!parsed.success) return { ok: false, message: `${type}: ${describeIssues(parsed.error.issues)}` };
  return { ok: true, action: parsed.data };
}

/**
 * AHP treats a JSON `null` field as absent, and peers with typed encoders send `"draft": null`
 * or `"answer": null` to mean "clear". Top-level fields only: nested payloads (tool results,
 * `_meta`) are opaque and may use `null` as a value.
 */
function withoutNullFields(action: AnyAction): AnyAction {
  const entries = Object.entries(action);
  if (!entries.some(([, value]) => value === null)) return action;
  return Object.fromEntries(entries.filter(([, value]) => value !== null)) as AnyAction;
}
