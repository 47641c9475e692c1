/** Root-channel actions. */
import { z } from 'zod';
import { agentInfoSchema } from '../state.js';
import { meta } from './common.js';

// ─── Root channel ────────────────────────────────────────────────────────────

export const agentsChangedActionSchema = z.looseObject({
  type: z.literal('root/agentsChanged'),
  agents: z.array(agentInfoSchema),
  ...meta,
});

