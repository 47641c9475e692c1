/** Chat-channel state (§2.1, §2.2): response parts, turns, the chat and its catalogue summary. */
import { z } from 'zod';
import {
  channelUriSchema,
  contentRefSchema,
  errorInfoSchema,
  idSchema,
  isoTimestampSchema,
  labelSchema,
  messageSchema,
  metaSchema,
  pendingMessageSchema,
  sessionStatusSchema,
  StateLimits,
  textSchema,
  unknownKindSchema,
  usageSchema,
} from './common.js';
import { chatInputRequestSchema, chatInputResponseSchema } from './chat-input.js';
import { toolCallStateSchema } from './tool-calls.js';

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

export const KNOWN_PART_KINDS = ['markdown', 'reasoning', 'contentRef', 'toolCall', 'systemNotification', 'inputRequest', 'error'] as const;
export const knownResponsePartSchema = z.discriminatedUnion('kind', [markdownPartSchema, reasoningPartSchema, contentRefPartSchema, toolCallPartSchema, systemNotificationPartSchema, inputRequestPartSchema, errorPartSchema]);
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
export function isPartOfKind<K extends ResponsePartKind>(part: ResponsePart, kind: K): part is Extract<KnownResponsePart, { kind: K }> {
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
