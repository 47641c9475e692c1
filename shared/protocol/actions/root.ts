/** Root-channel actions. */
import { z } from 'zod';
import { agentInfoSchema, configValuesSchema, StateLimits, terminalInfoSchema } from '../state.js';
import { meta } from './common.js';

// ─── Root channel ────────────────────────────────────────────────────────────

export const agentsChangedActionSchema = z.looseObject({
  type: z.literal('root/agentsChanged'),
  agents: z.array(agentInfoSchema),
  ...meta,
});

export const activeSessionsChangedActionSchema = z.looseObject({
  type: z.literal('root/activeSessionsChanged'),
  activeSessions: z.number().int().nonnegative(),
  ...meta,
});
export const terminalsChangedActionSchema = z.looseObject({
  type: z.literal('root/terminalsChanged'),
  terminals: z.array(terminalInfoSchema).max(StateLimits.listItems),
  ...meta,
});
/** Merges `config` into the values (or replaces them with `replace: true`); a no-op without a config. */
export const rootConfigChangedActionSchema = z.looseObject({
  type: z.literal('root/configChanged'),
  config: configValuesSchema,
  replace: z.boolean().optional(),
  ...meta,
});
