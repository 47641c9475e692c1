/** Resource-watch-channel actions (AHP 0.8): change batches from the host; state is left alone. */
import { z } from 'zod';
import { resourceChangeSchema, StateLimits } from '../state.js';
import { meta } from './common.js';

export const resourceWatchChangedActionSchema = z.looseObject({
  type: z.literal('resourceWatch/changed'),
  changes: z.looseObject({ items: z.array(resourceChangeSchema).max(StateLimits.listItems) }),
  ...meta,
});

export const resourceWatchActionSchema = z.discriminatedUnion('type', [resourceWatchChangedActionSchema]);
export type ResourceWatchAction = z.infer<typeof resourceWatchActionSchema>;
export type ResourceWatchActionType = ResourceWatchAction['type'];
