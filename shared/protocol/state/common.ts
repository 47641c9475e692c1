/** Shared building blocks of AHP state: size limits, the SessionStatus bitset, ids, timestamps, messages. */
import { z } from 'zod';
import { MAX_URI_LENGTH } from '../uris.js';

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
export const metaSchema = z.record(z.string().max(StateLimits.id), z.unknown()).refine((meta) => Object.keys(meta).length <= StateLimits.metaKeys, {
  message: `must have at most ${StateLimits.metaKeys} keys`,
});

/** A record keyed by id, with at most `maxKeys` entries. */
export function boundedRecord<T extends z.ZodType>(value: T, maxKeys: number) {
  return z.record(idSchema, value).refine((record) => Object.keys(record).length <= maxKeys, {
    message: `must have at most ${maxKeys} entries`,
  });
}

/**
 * Fallback member of an open union: any object whose `kind` is not one of `knownKinds`.
 * The kind check aborts so that, for a malformed *known* kind, the error reported is the one
 * from the known shape (see `describeIssues` in describe-issues.ts).
 */
export function unknownKindSchema(knownKinds: readonly string[]) {
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
