/** Annotations-channel actions (AHP 0.8); every one may come from a client. */
import { z } from 'zod';
import { annotationEntrySchema, annotationSchema, idSchema, StateLimits, textRangeSchema } from '../state.js';
import { meta } from './common.js';

export const annotationsSetActionSchema = z.looseObject({
  type: z.literal('annotations/set'),
  annotation: annotationSchema,
  ...meta,
});
/** Changes only the fields it carries. */
export const annotationsUpdatedActionSchema = z.looseObject({
  type: z.literal('annotations/updated'),
  annotationId: idSchema,
  turnId: idSchema.optional(),
  resource: z.string().min(1).max(StateLimits.resourceUri).optional(),
  range: textRangeSchema.optional(),
  resolved: z.boolean().optional(),
  ...meta,
});
export const annotationsRemovedActionSchema = z.looseObject({
  type: z.literal('annotations/removed'),
  annotationId: idSchema,
  ...meta,
});
export const annotationsEntrySetActionSchema = z.looseObject({
  type: z.literal('annotations/entrySet'),
  annotationId: idSchema,
  entry: annotationEntrySchema,
  ...meta,
});
export const annotationsEntryRemovedActionSchema = z.looseObject({
  type: z.literal('annotations/entryRemoved'),
  annotationId: idSchema,
  entryId: idSchema,
  ...meta,
});

export const annotationsActionSchema = z.discriminatedUnion('type', [annotationsSetActionSchema, annotationsUpdatedActionSchema, annotationsRemovedActionSchema, annotationsEntrySetActionSchema, annotationsEntryRemovedActionSchema]);
export type AnnotationsAction = z.infer<typeof annotationsActionSchema>;
export type AnnotationsActionType = AnnotationsAction['type'];
