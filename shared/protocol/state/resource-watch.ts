/**
 * Resource-watch-channel state (AHP 0.8): what is watched. Changes travel as
 * `resourceWatch/changed` actions and are not state (the reducer leaves state alone).
 */
import { z } from 'zod';
import { StateLimits } from './common.js';

const globListSchema = z.looseObject({ items: z.array(z.string().max(StateLimits.label)).max(StateLimits.listItems) });

export const resourceWatchStateSchema = z.looseObject({
  root: z.string().min(1).max(StateLimits.resourceUri),
  recursive: z.boolean(),
  excludes: globListSchema.optional(),
  includes: globListSchema.optional(),
});
export type ResourceWatchState = z.infer<typeof resourceWatchStateSchema>;

export const resourceChangeSchema = z.looseObject({
  uri: z.string().min(1).max(StateLimits.resourceUri),
  /** `added` | `updated` | `deleted` (open). */
  type: z.string().max(64),
});
export type ResourceChange = z.infer<typeof resourceChangeSchema>;
