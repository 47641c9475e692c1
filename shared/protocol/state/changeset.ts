/**
 * Changeset-channel state (AHP 0.8): the files an agent changed, as reviewable edits, plus the
 * operations (keep, undo, …) a host offers on them. `Changeset` is the session's catalogue entry
 * (`session/changesetsChanged`) that names where a changeset channel lives.
 */
import { z } from 'zod';
import { errorInfoSchema, idSchema, labelSchema, metaSchema, StateLimits, textSchema } from './common.js';

export const changesetSchema = z.looseObject({
  label: labelSchema,
  uriTemplate: z.string().min(1).max(StateLimits.resourceUri),
  description: textSchema.optional(),
  changeKind: z.string().max(StateLimits.id),
  capabilities: z.looseObject({ review: z.looseObject({}).optional() }).optional(),
});
export type Changeset = z.infer<typeof changesetSchema>;

export const changesetStatusSchema = z.enum(['computing', 'ready', 'error']);
export type ChangesetStatus = z.infer<typeof changesetStatusSchema>;

/** One changed file; `edit` (before / after / diff) is opaque to the hub. */
export const changesetFileSchema = z.looseObject({
  id: z.string().min(1).max(StateLimits.resourceUri),
  edit: z.looseObject({}),
  reviewed: z.boolean().optional(),
  _meta: metaSchema.optional(),
});
export type ChangesetFile = z.infer<typeof changesetFileSchema>;

export const changesetOperationStatusSchema = z.enum(['idle', 'running', 'error', 'disabled']);
export type ChangesetOperationStatus = z.infer<typeof changesetOperationStatusSchema>;

export const changesetOperationSchema = z.looseObject({
  id: idSchema,
  label: labelSchema,
  description: textSchema.optional(),
  /** `changeset` | `resource` | `range` (open). */
  scopes: z.array(z.string().max(64)).max(16),
  confirmation: z.unknown().optional(),
  icon: z.string().max(StateLimits.id).optional(),
  group: z.string().max(StateLimits.id).optional(),
  status: changesetOperationStatusSchema,
  error: errorInfoSchema.optional(),
});
export type ChangesetOperation = z.infer<typeof changesetOperationSchema>;

export const changesetStateSchema = z.looseObject({
  status: changesetStatusSchema,
  error: errorInfoSchema.optional(),
  files: z.array(changesetFileSchema),
  operations: z.array(changesetOperationSchema).optional(),
});
export type ChangesetState = z.infer<typeof changesetStateSchema>;
