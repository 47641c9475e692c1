/** Pieces every action schema shares: the wire shape of any action and the `_meta` / turn / tool scopes. */
import { z } from 'zod';
import { idSchema, metaSchema } from '../state.js';

/** Any action on the wire: an object with a string `type`; everything else is carried through. */
export const anyActionSchema = z.looseObject({ type: z.string().min(1).max(128) });
export type AnyAction = z.infer<typeof anyActionSchema>;

export const meta = { _meta: metaSchema.optional() };
export const turnScoped = { turnId: idSchema, ...meta };
export const toolScoped = { turnId: idSchema, toolCallId: idSchema, ...meta };
/** Milliseconds on the producer's clock; the reducer clamps negatives to 0. */
export const durationSchema = z.number();
