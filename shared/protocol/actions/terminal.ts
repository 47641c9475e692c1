/** Terminal-channel actions (AHP 0.7+). `terminal/input` is a request to the host, a reducer no-op. */
import { z } from 'zod';
import { idSchema, labelSchema, StateLimits, terminalClaimSchema } from '../state.js';
import { meta } from './common.js';

const terminalDimension = z.number().int().positive().max(10_000);

export const terminalDataActionSchema = z.looseObject({ type: z.literal('terminal/data'), data: z.string(), ...meta });
export const terminalInputActionSchema = z.looseObject({
  type: z.literal('terminal/input'),
  data: z.string().max(StateLimits.text),
  ...meta,
});
export const terminalResizedActionSchema = z.looseObject({
  type: z.literal('terminal/resized'),
  cols: terminalDimension,
  rows: terminalDimension,
  ...meta,
});
export const terminalClaimedActionSchema = z.looseObject({
  type: z.literal('terminal/claimed'),
  claim: terminalClaimSchema,
  ...meta,
});
export const terminalTitleChangedActionSchema = z.looseObject({
  type: z.literal('terminal/titleChanged'),
  title: labelSchema,
  ...meta,
});
export const terminalCwdChangedActionSchema = z.looseObject({
  type: z.literal('terminal/cwdChanged'),
  cwd: z.string().max(StateLimits.resourceUri),
  ...meta,
});
export const terminalExitedActionSchema = z.looseObject({
  type: z.literal('terminal/exited'),
  exitCode: z.number().int().optional(),
  ...meta,
});
export const terminalClearedActionSchema = z.looseObject({ type: z.literal('terminal/cleared'), ...meta });
export const terminalCommandDetectionAvailableActionSchema = z.looseObject({
  type: z.literal('terminal/commandDetectionAvailable'),
  ...meta,
});
export const terminalCommandExecutedActionSchema = z.looseObject({
  type: z.literal('terminal/commandExecuted'),
  commandId: idSchema,
  commandLine: z.string().max(StateLimits.text),
  timestamp: z.number(),
  ...meta,
});
export const terminalCommandFinishedActionSchema = z.looseObject({
  type: z.literal('terminal/commandFinished'),
  commandId: idSchema,
  exitCode: z.number().int().optional(),
  durationMs: z.number().nonnegative().optional(),
  ...meta,
});

export const terminalActionSchema = z.discriminatedUnion('type', [
  terminalDataActionSchema,
  terminalInputActionSchema,
  terminalResizedActionSchema,
  terminalClaimedActionSchema,
  terminalTitleChangedActionSchema,
  terminalCwdChangedActionSchema,
  terminalExitedActionSchema,
  terminalClearedActionSchema,
  terminalCommandDetectionAvailableActionSchema,
  terminalCommandExecutedActionSchema,
  terminalCommandFinishedActionSchema,
]);
export type TerminalAction = z.infer<typeof terminalActionSchema>;
export type TerminalActionType = TerminalAction['type'];
