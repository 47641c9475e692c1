/**
 * AHP state shapes (root, session, chat) as zod schemas. The schemas are the single source of
 * truth; every TypeScript type here is `z.infer` of its schema.
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
import { z } from 'zod';
import { MAX_URI_LENGTH } from './uris.js';

// ─── Limits ──────────────────────────────────────────────────────────────────

export const StateLimits = {
  /** Message text, answers, reasons: anything a person might type. */
  text: 100_000,
  /** Ids (turn, part, request, question, option, tool call, pending message). */
  id: 256,
  /** Short human labels: titles, option labels, display names, activity lines. */
  label: 1_000,
  /** Resource URIs that are not channel URIs (attachments, content refs). */
  resourceUri: 8_192,
  questions: 50,
  options: 100,
  attachments: 100,
  /** Pending-message lists, reorder lists, working directories. */
  listItems: 1_000,
  /** `_meta` bags are opaque; cap the number of keys, not their content. */
  metaKeys: 64,
} as const;

// ─── SessionStatus bitset ────────────────────────────────────────────────────

/**
 * `SessionStatus` (§2.3). Bits 0–4 form one mutually exclusive activity value; bits 5 and up are
 * independent flags. Unknown bits must survive, so the helpers below use arithmetic instead of
 * the 32-bit bitwise operators (which would mangle bit 31 and lose anything above it).
 */
export const SessionStatus = {
  Idle: 1,
  Error: 2,
  InProgress: 8,
  /** InProgress + bit 16: a turn is active *and* blocked on the user. */
  InputNeeded: 24,
  IsRead: 32,
  IsArchived: 64,
} as const;
export type SessionStatusValue = (typeof SessionStatus)[keyof typeof SessionStatus];

/** Size of the activity field: bits 0–4. */
const ACTIVITY_RANGE = 32;
/** The bit that distinguishes InputNeeded (24) from InProgress (8). */
export const INPUT_NEEDED_BIT = 16;

export const sessionStatusSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** Activity value of a status (`status & 31`). */
export function activityOf(status: number): number {
  return status % ACTIVITY_RANGE;
}

/** Flag bits of a status (`status & ~31`), unknown bits included. */
export function flagsOf(status: number): number {
  return status - activityOf(status);
}

/** Replaces the activity value, keeping every flag. */
export function withActivity(status: number, activity: number): number {
  return flagsOf(status) + activityOf(activity);
}

/** True when the single-bit `bit` (a power of two) is set. */
export function hasBit(status: number, bit: number): boolean {
  return Math.floor(status / bit) % 2 === 1;
}

/** Sets or clears the single-bit `bit`, leaving every other bit alone. */
export function withBit(status: number, bit: number, on: boolean): number {
  const present = hasBit(status, bit);
  if (present === on) return status;
  return on ? status + bit : status - bit;
}

// ─── Small building blocks ───────────────────────────────────────────────────

export const idSchema = z.string().min(1).max(StateLimits.id);
export const channelUriSchema = z.string().min(1).max(MAX_URI_LENGTH);
export const labelSchema = z.string().max(StateLimits.label);
export const textSchema = z.string().max(StateLimits.text);

/** `YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z` or an offset: what `Date.prototype.toISOString` and peers emit. */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** An ISO 8601 date-time. Must also parse, because reducers do arithmetic on it. */
export const isoTimestampSchema = z
  .string()
  .max(64)
  .refine((value) => ISO_DATE_TIME.test(value) && !Number.isNaN(Date.parse(value)), {
    message: 'must be an ISO 8601 timestamp',
  });

/** Opaque, namespaced extension data. Receivers ignore keys they do not know. */
export const metaSchema = z
  .record(z.string().max(StateLimits.id), z.unknown())
  .refine((meta) => Object.keys(meta).length <= StateLimits.metaKeys, {
    message: `must have at most ${StateLimits.metaKeys} keys`,
  });

/** A record keyed by id, with at most `maxKeys` entries. */
function boundedRecord<T extends z.ZodType>(value: T, maxKeys: number) {
  return z.record(idSchema, value).refine((record) => Object.keys(record).length <= maxKeys, {
    message: `must have at most ${maxKeys} entries`,
  });
}

/**
 * Fallback member of an open union: any object whose `kind` is not one of `knownKinds`.
 * The kind check aborts so that, for a malformed *known* kind, the error reported is the one
 * from the known shape (see `describeIssues` in describe-issues.ts).
 */
function unknownKindSchema(knownKinds: readonly string[]) {
  return z.looseObject({
    kind: z
      .string()
      .min(1)
      .max(StateLimits.id)
      .refine((kind) => !knownKinds.includes(kind), { message: 'malformed known kind', abort: true }),
  });
}

// ─── Messages ────────────────────────────────────────────────────────────────

/** `user` | `agent` | `tool` | `systemNotification` | `automation` | future kinds. Clients may only send `user`. */
export const messageOriginSchema = z.looseObject({ kind: z.string().min(1).max(64) });
export type MessageOrigin = z.infer<typeof messageOriginSchema>;

export const attachmentSchema = z.looseObject({});
export type Attachment = z.infer<typeof attachmentSchema>;

export const messageSchema = z.looseObject({
  text: textSchema,
  origin: messageOriginSchema,
  attachments: z.array(attachmentSchema).max(StateLimits.attachments).optional(),
  /** Model selection, e.g. `{id: 'gpt-4'}`. */
  model: z.looseObject({ id: z.string().max(StateLimits.id).optional() }).optional(),
  /** Agent selection, e.g. `{uri: 'file:///…/review.agent.md'}`. */
  agent: z.looseObject({ uri: z.string().max(StateLimits.resourceUri).optional() }).optional(),
  _meta: metaSchema.optional(),
});
export type Message = z.infer<typeof messageSchema>;

export const pendingMessageSchema = z.looseObject({ id: idSchema, message: messageSchema });
export type PendingMessage = z.infer<typeof pendingMessageSchema>;

export const errorInfoSchema = z.looseObject({
  errorType: z.string().max(StateLimits.id),
  message: textSchema,
  stack: textSchema.optional(),
  _meta: metaSchema.optional(),
});
export type ErrorInfo = z.infer<typeof errorInfoSchema>;

export const usageSchema = z.looseObject({
  inputTokens: z.number().nonnegative().optional(),
  outputTokens: z.number().nonnegative().optional(),
});
export type Usage = z.infer<typeof usageSchema>;

/** Large content addressed by URI and read with `resourceRead`. */
export const contentRefSchema = z.looseObject({
  uri: z.string().min(1).max(StateLimits.resourceUri),
});
export type ContentRef = z.infer<typeof contentRefSchema>;

// ─── Chat input (elicitation, §4) ────────────────────────────────────────────

export const chatInputOptionSchema = z.looseObject({
  /** For MCP enums: the enum string itself. */
  id: idSchema,
  label: labelSchema,
  description: textSchema.optional(),
  /** Marks the default choice (select questions have no `defaultValue`). */
  recommended: z.boolean().optional(),
});
export type ChatInputOption = z.infer<typeof chatInputOptionSchema>;

const questionBase = {
  /** Key of this question in `ChatInputRequest.answers`. */
  id: idSchema,
  title: labelSchema.optional(),
  message: textSchema,
  required: z.boolean().optional(),
};

const optionsSchema = z.array(chatInputOptionSchema).max(StateLimits.options);

export const textQuestionSchema = z.looseObject({
  ...questionBase,
  kind: z.literal('text'),
  /** `email`, `uri`, `date`, `date-time` are enforced on submitted answers (shared/state/answer-rules.ts); other values are hints. */
  format: z.string().max(64).optional(),
  /** Minimum / maximum length in characters. */
  min: z.number().int().nonnegative().optional(),
  max: z.number().int().nonnegative().optional(),
  defaultValue: textSchema.optional(),
});
export const numberQuestionSchema = z.looseObject({
  ...questionBase,
  /** `integer` keeps its own kind on the wire but shares the `number` answer value kind. */
  kind: z.enum(['number', 'integer']),
  min: z.number().optional(),
  max: z.number().optional(),
  defaultValue: z.number().optional(),
});
export const booleanQuestionSchema = z.looseObject({
  ...questionBase,
  kind: z.literal('boolean'),
  defaultValue: z.boolean().optional(),
});
export const singleSelectQuestionSchema = z.looseObject({
  ...questionBase,
  kind: z.literal('single-select'),
  options: optionsSchema,
  /** Free text may be given *instead of* an option. */
  allowFreeformInput: z.boolean().optional(),
});
export const multiSelectQuestionSchema = z.looseObject({
  ...questionBase,
  kind: z.literal('multi-select'),
  options: optionsSchema,
  /** Free text may be given *in addition to* options. */
  allowFreeformInput: z.boolean().optional(),
  /** Minimum / maximum number of selections. */
  min: z.number().int().nonnegative().optional(),
  max: z.number().int().nonnegative().optional(),
});

export const KNOWN_QUESTION_KINDS = ['text', 'number', 'integer', 'boolean', 'single-select', 'multi-select'] as const;
export const knownChatInputQuestionSchema = z.discriminatedUnion('kind', [
  textQuestionSchema,
  numberQuestionSchema,
  booleanQuestionSchema,
  singleSelectQuestionSchema,
  multiSelectQuestionSchema,
]);
/** A question of a kind this version does not know: kept intact, answered with any value. */
export const unknownChatInputQuestionSchema = unknownKindSchema(KNOWN_QUESTION_KINDS).extend({
  id: idSchema,
  message: textSchema.optional(),
  required: z.boolean().optional(),
});
export const chatInputQuestionSchema = z.union([knownChatInputQuestionSchema, unknownChatInputQuestionSchema]);
export type TextQuestion = z.infer<typeof textQuestionSchema>;
export type NumberQuestion = z.infer<typeof numberQuestionSchema>;
export type BooleanQuestion = z.infer<typeof booleanQuestionSchema>;
export type SingleSelectQuestion = z.infer<typeof singleSelectQuestionSchema>;
export type MultiSelectQuestion = z.infer<typeof multiSelectQuestionSchema>;
export type KnownChatInputQuestion = z.infer<typeof knownChatInputQuestionSchema>;
export type ChatInputQuestion = z.infer<typeof chatInputQuestionSchema>;

export function isKnownQuestion(question: ChatInputQuestion): question is KnownChatInputQuestion {
  return (KNOWN_QUESTION_KINDS as readonly string[]).includes(question.kind);
}

const freeformValuesSchema = z.array(textSchema).max(StateLimits.options);

export const textAnswerValueSchema = z.looseObject({ kind: z.literal('text'), value: textSchema });
export const numberAnswerValueSchema = z.looseObject({ kind: z.literal('number'), value: z.number() });
export const booleanAnswerValueSchema = z.looseObject({ kind: z.literal('boolean'), value: z.boolean() });
export const selectedAnswerValueSchema = z.looseObject({
  kind: z.literal('selected'),
  /** An option id, or free text when the question allows it. */
  value: textSchema,
  freeformValues: freeformValuesSchema.optional(),
});
export const selectedManyAnswerValueSchema = z.looseObject({
  kind: z.literal('selected-many'),
  value: z.array(idSchema).max(StateLimits.options),
  freeformValues: freeformValuesSchema.optional(),
});

export const KNOWN_ANSWER_VALUE_KINDS = ['text', 'number', 'boolean', 'selected', 'selected-many'] as const;
export const knownChatInputAnswerValueSchema = z.discriminatedUnion('kind', [
  textAnswerValueSchema,
  numberAnswerValueSchema,
  booleanAnswerValueSchema,
  selectedAnswerValueSchema,
  selectedManyAnswerValueSchema,
]);
export const chatInputAnswerValueSchema = z.union([
  knownChatInputAnswerValueSchema,
  unknownKindSchema(KNOWN_ANSWER_VALUE_KINDS),
]);
export type KnownChatInputAnswerValue = z.infer<typeof knownChatInputAnswerValueSchema>;
export type ChatInputAnswerValue = z.infer<typeof chatInputAnswerValueSchema>;

export type AnswerValueKind = KnownChatInputAnswerValue['kind'];

/** Narrows an answer value to a known kind (sound for parsed data, like `isPartOfKind`). */
export function isAnswerValueOfKind<K extends AnswerValueKind>(
  value: ChatInputAnswerValue,
  kind: K,
): value is Extract<KnownChatInputAnswerValue, { kind: K }> {
  return value.kind === kind;
}

/** Drafts sync between clients; submitted answers are what the server consumes on completion. */
export const valuedAnswerSchema = z.looseObject({
  state: z.enum(['draft', 'submitted']),
  value: chatInputAnswerValueSchema,
});
export const skippedAnswerSchema = z.looseObject({
  state: z.literal('skipped'),
  freeformValues: freeformValuesSchema.optional(),
});
export const chatInputAnswerSchema = z.discriminatedUnion('state', [valuedAnswerSchema, skippedAnswerSchema]);
export type ChatInputAnswer = z.infer<typeof chatInputAnswerSchema>;

export const chatInputAnswersSchema = boundedRecord(chatInputAnswerSchema, StateLimits.questions);
export type ChatInputAnswers = z.infer<typeof chatInputAnswersSchema>;

export const chatInputResponseSchema = z.enum(['accept', 'decline', 'cancel']);
export type ChatInputResponse = z.infer<typeof chatInputResponseSchema>;

export const chatInputRequestSchema = z.looseObject({
  id: idSchema,
  message: textSchema.optional(),
  /** Open-or-review flow: may replace or accompany the questions. */
  url: z.string().max(StateLimits.resourceUri).optional(),
  questions: z.array(chatInputQuestionSchema).max(StateLimits.questions).optional(),
  answers: chatInputAnswersSchema.optional(),
});
export type ChatInputRequest = z.infer<typeof chatInputRequestSchema>;

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

// ─── Response parts (§2.2) ───────────────────────────────────────────────────

export const markdownPartSchema = z.looseObject({ kind: z.literal('markdown'), id: idSchema, content: z.string() });
export const reasoningPartSchema = z.looseObject({ kind: z.literal('reasoning'), id: idSchema, content: z.string() });
export const contentRefPartSchema = contentRefSchema.extend({ kind: z.literal('contentRef') });
export const toolCallPartSchema = z.looseObject({ kind: z.literal('toolCall'), toolCall: toolCallStateSchema });
export const systemNotificationPartSchema = z.looseObject({
  kind: z.literal('systemNotification'),
  /** Plain string or a markdown object. */
  content: z.union([z.string(), z.looseObject({})]),
  _meta: metaSchema.optional(),
});
/** The live prompt and its durable record: `response` absent = still open (or abandoned at turn end). */
export const inputRequestPartSchema = z.looseObject({
  kind: z.literal('inputRequest'),
  request: chatInputRequestSchema,
  response: chatInputResponseSchema.optional(),
});
/** [S] Appended only by `chat/error`; `resumable` allows `chat/turnResume`. */
export const errorPartSchema = z.looseObject({
  kind: z.literal('error'),
  error: errorInfoSchema,
  resumable: z.boolean().optional(),
});

export const KNOWN_PART_KINDS = [
  'markdown',
  'reasoning',
  'contentRef',
  'toolCall',
  'systemNotification',
  'inputRequest',
  'error',
] as const;
export const knownResponsePartSchema = z.discriminatedUnion('kind', [
  markdownPartSchema,
  reasoningPartSchema,
  contentRefPartSchema,
  toolCallPartSchema,
  systemNotificationPartSchema,
  inputRequestPartSchema,
  errorPartSchema,
]);
export const unknownResponsePartSchema = unknownKindSchema(KNOWN_PART_KINDS);
export const responsePartSchema = z.union([knownResponsePartSchema, unknownResponsePartSchema]);
export type MarkdownPart = z.infer<typeof markdownPartSchema>;
export type ReasoningPart = z.infer<typeof reasoningPartSchema>;
export type ContentRefPart = z.infer<typeof contentRefPartSchema>;
export type ToolCallPart = z.infer<typeof toolCallPartSchema>;
export type SystemNotificationPart = z.infer<typeof systemNotificationPartSchema>;
export type InputRequestPart = z.infer<typeof inputRequestPartSchema>;
export type ErrorPart = z.infer<typeof errorPartSchema>;
export type KnownResponsePart = z.infer<typeof knownResponsePartSchema>;
export type ResponsePart = z.infer<typeof responsePartSchema>;
export type ResponsePartKind = KnownResponsePart['kind'];

/**
 * Narrows a part to a known kind. Sound because parsing never lets a known kind through the
 * unknown-kind fallback; TypeScript cannot see that on its own (the fallback's kind is `string`).
 */
export function isPartOfKind<K extends ResponsePartKind>(
  part: ResponsePart,
  kind: K,
): part is Extract<KnownResponsePart, { kind: K }> {
  return part.kind === kind;
}

// ─── Turns and chats (§2.1) ──────────────────────────────────────────────────

export const turnStateSchema = z.enum(['complete', 'cancelled', 'error']);
export type TurnState = z.infer<typeof turnStateSchema>;

export const turnSchema = z.looseObject({
  id: idSchema,
  startedAt: isoTimestampSchema.optional(),
  /** Milliseconds, producer clock, clamped to >= 0. */
  duration: z.number().nonnegative().optional(),
  message: messageSchema,
  responseParts: z.array(responsePartSchema),
  usage: usageSchema.optional(),
  state: turnStateSchema,
  /** [A] only; [S] records errors as an `error` response part instead. */
  error: errorInfoSchema.optional(),
});
export type Turn = z.infer<typeof turnSchema>;

export const activeTurnSchema = z.looseObject({
  id: idSchema,
  startedAt: isoTimestampSchema,
  message: messageSchema,
  responseParts: z.array(responsePartSchema),
  usage: usageSchema.optional(),
});
export type ActiveTurn = z.infer<typeof activeTurnSchema>;

export const chatOriginSchema = z.union([
  z.discriminatedUnion('kind', [
    z.looseObject({ kind: z.literal('user') }),
    z.looseObject({ kind: z.literal('fork'), chat: channelUriSchema, turnId: idSchema }),
    z.looseObject({
      kind: z.literal('sideChat'),
      chat: channelUriSchema,
      turnId: idSchema,
      selection: z.unknown().optional(),
    }),
    z.looseObject({ kind: z.literal('tool'), chat: channelUriSchema, toolCallId: idSchema }),
  ]),
  unknownKindSchema(['user', 'fork', 'sideChat', 'tool']),
]);
export type ChatOrigin = z.infer<typeof chatOriginSchema>;

export const interactivitySchema = z.string().max(64);

/** Fields shared by `ChatState` and its catalogue projection `ChatSummary`. */
const chatSummaryFields = {
  resource: channelUriSchema,
  title: labelSchema,
  status: sessionStatusSchema,
  /** One-line "what is happening" text, e.g. "Running terminal command". */
  activity: labelSchema.optional(),
  modifiedAt: isoTimestampSchema,
  origin: chatOriginSchema.optional(),
  /** `full` | `read-only` | `hidden` (open). */
  interactivity: interactivitySchema.optional(),
  workingDirectories: z.array(z.string().max(StateLimits.resourceUri)).max(StateLimits.listItems).optional(),
  parentChat: channelUriSchema.optional(),
  description: textSchema.optional(),
  _meta: metaSchema.optional(),
};

export const chatStateSchema = z.looseObject({
  ...chatSummaryFields,
  turns: z.array(turnSchema),
  /** Set when older turns exist that are not loaded (see `fetchTurns` / `chat/turnsLoaded`). */
  turnsNextCursor: z.string().max(StateLimits.label).optional(),
  activeTurn: activeTurnSchema.optional(),
  /** Legacy single steering slot; independent of `steeringMessages`. */
  steeringMessage: pendingMessageSchema.optional(),
  /** [L] steering-message list. */
  steeringMessages: z.array(pendingMessageSchema).max(StateLimits.listItems).optional(),
  queuedMessages: z.array(pendingMessageSchema).max(StateLimits.listItems).optional(),
  /** Shared composer draft (last writer wins). */
  draft: messageSchema.optional(),
});
export type ChatState = z.infer<typeof chatStateSchema>;

export const chatSummarySchema = z.looseObject(chatSummaryFields);
export type ChatSummary = z.infer<typeof chatSummarySchema>;

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

// ─── Root ────────────────────────────────────────────────────────────────────

export const agentInfoSchema = z.looseObject({
  provider: z.string().min(1).max(StateLimits.id),
  displayName: labelSchema,
  description: textSchema.optional(),
});
export type AgentInfo = z.infer<typeof agentInfoSchema>;

export const rootStateSchema = z.looseObject({
  agents: z.array(agentInfoSchema),
  _meta: metaSchema.optional(),
});
export type RootState = z.infer<typeof rootStateSchema>;

// ─── Initial states ──────────────────────────────────────────────────────────

export function initialChatState(resource: string, title: string, modifiedAt: string): ChatState {
  return { resource, title, status: SessionStatus.Idle, modifiedAt, turns: [] };
}

/**
 * A new session. `lifecycle` defaults to `ready`: this hub has nothing to provision before a
 * session can take turns; a host that does passes `creating` and later dispatches `session/ready`.
 */
export function initialSessionState(
  resource: string,
  provider: string,
  title: string,
  lifecycle: string = 'ready',
): SessionState {
  return { resource, provider, title, status: SessionStatus.Idle, lifecycle, activeClients: [], chats: [] };
}

export function initialRootState(agents: readonly AgentInfo[]): RootState {
  return { agents: [...agents] };
}
