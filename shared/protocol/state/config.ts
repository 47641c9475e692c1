/** A host-defined configuration block (root and session): a JSON schema and its current values. */
import { z } from 'zod';
import { StateLimits } from './common.js';

export const configValuesSchema = z.record(z.string().max(StateLimits.id), z.unknown());
export const configStateSchema = z.looseObject({
  schema: z.looseObject({}),
  values: configValuesSchema,
});
export type ConfigState = z.infer<typeof configStateSchema>;
