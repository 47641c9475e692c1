/** Chat input requests (elicitation, §4): questions, answer values, answers and requests. */
import { z } from 'zod';
import { boundedRecord, idSchema, labelSchema, StateLimits, textSchema, unknownKindSchema } from './common.js';

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
export const knownChatInputQuestionSchema = z.discriminatedUnion('kind', [textQuestionSchema, numberQuestionSchema, booleanQuestionSchema, singleSelectQuestionSchema, multiSelectQuestionSchema]);
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
export const knownChatInputAnswerValueSchema = z.discriminatedUnion('kind', [textAnswerValueSchema, numberAnswerValueSchema, booleanAnswerValueSchema, selectedAnswerValueSchema, selectedManyAnswerValueSchema]);
export const chatInputAnswerValueSchema = z.union([knownChatInputAnswerValueSchema, unknownKindSchema(KNOWN_ANSWER_VALUE_KINDS)]);
export type KnownChatInputAnswerValue = z.infer<typeof knownChatInputAnswerValueSchema>;
export type ChatInputAnswerValue = z.infer<typeof chatInputAnswerValueSchema>;

export type AnswerValueKind = KnownChatInputAnswerValue['kind'];

/** Narrows an answer value to a known kind (sound for parsed data, like `isPartOfKind`). */
export function isAnswerValueOfKind<K extends AnswerValueKind>(value: ChatInputAnswerValue, kind: K): value is Extract<KnownChatInputAnswerValue, { kind: K }> {
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
