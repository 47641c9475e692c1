/** Session artifacts (AHP 1.1): what a session produced or referenced, on its summary. */
import { z } from 'zod';
import { channelUriSchema, metaSchema } from './common.js';

/** How an artifact relates to the session (or one chat of it); `kind` is open-ended upstream. */
export const artifactRelationSchema = z.looseObject({ kind: z.string().min(1).max(64), chat: channelUriSchema.optional() });
/**
 * One artifact on `SessionSummary.artifacts`. `type` is open-ended (unknown types are kept
 * verbatim); a `resource` artifact carries a ContentRef (`uri`, `label`, `contentType`, `sizeHint`).
 */
export const artifactSchema = z.looseObject({
  type: z.string().min(1).max(64),
  label: z.string().max(1_024).optional(),
  uri: z.string().min(1).max(4_096).optional(),
  displayKind: z.string().max(64).optional(),
  contentType: z.string().max(256).optional(),
  sizeHint: z.number().int().nonnegative().optional(),
  relations: z.array(artifactRelationSchema).max(64).optional(),
  _meta: metaSchema.optional(),
});
export type Artifact = z.infer<typeof artifactSchema>;
