/**
 * Annotations-channel state (AHP 0.8): review comments anchored to a turn and a file (optionally
 * a range), each a thread of entries.
 */
import { z } from 'zod';
import { idSchema, metaSchema, StateLimits } from './common.js';

/** `{start: {line, character}, end: …}`; kept opaque beyond being an object. */
export const textRangeSchema = z.looseObject({});
export type TextRange = z.infer<typeof textRangeSchema>;

/** A string or `{markdown: string}`. */
const stringOrMarkdownSchema = z.union([z.string().max(StateLimits.text), z.looseObject({})]);

export const annotationEntrySchema = z.looseObject({
  id: idSchema,
  text: stringOrMarkdownSchema,
  _meta: metaSchema.optional(),
});
export type AnnotationEntry = z.infer<typeof annotationEntrySchema>;

export const annotationSchema = z.looseObject({
  id: idSchema,
  turnId: idSchema,
  resource: z.string().min(1).max(StateLimits.resourceUri),
  range: textRangeSchema.optional(),
  resolved: z.boolean(),
  entries: z.array(annotationEntrySchema).max(StateLimits.listItems),
  _meta: metaSchema.optional(),
});
export type Annotation = z.infer<typeof annotationSchema>;

export const annotationsStateSchema = z.looseObject({
  annotations: z.array(annotationSchema).max(StateLimits.listItems),
});
export type AnnotationsState = z.infer<typeof annotationsStateSchema>;
