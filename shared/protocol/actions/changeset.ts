/** Changeset-channel actions (AHP 0.8). Only `changeset/filesReviewChanged` comes from clients. */
import { z } from 'zod';
import { changesetFileSchema, changesetOperationSchema, changesetOperationStatusSchema, changesetStatusSchema, errorInfoSchema, idSchema, StateLimits } from '../state.js';
import { meta } from './common.js';

const fileIdSchema = z.string().min(1).max(StateLimits.resourceUri);

export const changesetStatusChangedActionSchema = z.looseObject({
  type: z.literal('changeset/statusChanged'),
  status: changesetStatusSchema,
  error: errorInfoSchema.optional(),
  ...meta,
});
export const changesetFileSetActionSchema = z.looseObject({
  type: z.literal('changeset/fileSet'),
  file: changesetFileSchema,
  ...meta,
});
export const changesetFileRemovedActionSchema = z.looseObject({
  type: z.literal('changeset/fileRemoved'),
  fileId: fileIdSchema,
  ...meta,
});
export const changesetFilesReviewChangedActionSchema = z.looseObject({
  type: z.literal('changeset/filesReviewChanged'),
  files: z.array(fileIdSchema).max(StateLimits.listItems),
  reviewed: z.boolean(),
  ...meta,
});
export const changesetContentChangedActionSchema = z.looseObject({
  type: z.literal('changeset/contentChanged'),
  files: z.array(changesetFileSchema),
  operations: z.array(changesetOperationSchema).optional(),
  error: errorInfoSchema.optional(),
  ...meta,
});
/** `operations` absent (or `null` on the wire) removes the list. */
export const changesetOperationsChangedActionSchema = z.looseObject({
  type: z.literal('changeset/operationsChanged'),
  operations: z.array(changesetOperationSchema).optional(),
  ...meta,
});
export const changesetOperationStatusChangedActionSchema = z.looseObject({
  type: z.literal('changeset/operationStatusChanged'),
  operationId: idSchema,
  status: changesetOperationStatusSchema,
  error: errorInfoSchema.optional(),
  ...meta,
});
export const changesetClearedActionSchema = z.looseObject({ type: z.literal('changeset/cleared'), ...meta });

export const changesetActionSchema = z.discriminatedUnion('type', [
  changesetStatusChangedActionSchema,
  changesetFileSetActionSchema,
  changesetFileRemovedActionSchema,
  changesetFilesReviewChangedActionSchema,
  changesetContentChangedActionSchema,
  changesetOperationsChangedActionSchema,
  changesetOperationStatusChangedActionSchema,
  changesetClearedActionSchema,
]);
export type ChangesetAction = z.infer<typeof changesetActionSchema>;
export type ChangesetActionType = ChangesetAction['type'];
