/**
 * Terminal-channel state (AHP 0.7+): one terminal's scrollback as content parts, its size, who
 * holds it (a client, or a session's tool call) and how it ended. `TerminalInfo` is the root
 * catalogue's projection (`root/terminalsChanged`).
 */
import { z } from 'zod';
import { channelUriSchema, idSchema, labelSchema, StateLimits } from './common.js';

export const terminalClaimSchema = z.union([
  z.looseObject({ kind: z.literal('client'), clientId: idSchema }),
  z.looseObject({
    kind: z.literal('session'),
    session: channelUriSchema,
    turnId: idSchema.optional(),
    toolCallId: idSchema.optional(),
  }),
]);
export type TerminalClaim = z.infer<typeof terminalClaimSchema>;

/** Output not (yet) attributed to a command; consecutive data is appended to the last one. */
export const terminalUnclassifiedPartSchema = z.looseObject({ type: z.literal('unclassified'), value: z.string() });
/** One shell command seen through command detection, with its output while it runs. */
export const terminalCommandPartSchema = z.looseObject({
  type: z.literal('command'),
  commandId: idSchema,
  commandLine: z.string().max(StateLimits.text),
  output: z.string(),
  /** Milliseconds since the epoch, producer clock. */
  timestamp: z.number(),
  isComplete: z.boolean(),
  exitCode: z.number().int().optional(),
  durationMs: z.number().nonnegative().optional(),
});
export const terminalContentPartSchema = z.discriminatedUnion('type', [terminalUnclassifiedPartSchema, terminalCommandPartSchema]);
export type TerminalUnclassifiedPart = z.infer<typeof terminalUnclassifiedPartSchema>;
export type TerminalCommandPart = z.infer<typeof terminalCommandPartSchema>;
export type TerminalContentPart = z.infer<typeof terminalContentPartSchema>;

const terminalDimension = z.number().int().positive().max(10_000);

export const terminalStateSchema = z.looseObject({
  title: labelSchema,
  cwd: z.string().max(StateLimits.resourceUri).optional(),
  cols: terminalDimension.optional(),
  rows: terminalDimension.optional(),
  content: z.array(terminalContentPartSchema),
  exitCode: z.number().int().optional(),
  claim: terminalClaimSchema,
  supportsCommandDetection: z.boolean().optional(),
  isPty: z.boolean().optional(),
});
export type TerminalState = z.infer<typeof terminalStateSchema>;

export const terminalInfoSchema = z.looseObject({
  resource: z.string().min(1).max(StateLimits.resourceUri),
  title: labelSchema,
  claim: terminalClaimSchema,
  exitCode: z.number().int().optional(),
});
export type TerminalInfo = z.infer<typeof terminalInfoSchema>;
