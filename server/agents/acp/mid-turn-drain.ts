/**
 * Qwen Code's pull-style mid-turn input: between tool batches its ACP agent asks the client
 * `craft/drainMidTurnQueue` for messages queued while the turn ran, and adds what it gets to the
 * model's next request. The hub answers with the steering inputs accepted for that turn, taken at
 * a barrier (consumed, visible in the transcript, durable) before the answer leaves the process.
 * An agent that gets method-not-found stops asking for good, so the hub answers every call, with
 * an empty list when there is nothing (or no turn) to hand over.
 */
import { z } from 'zod';
import type { Logger } from '../../log.js';
import { errorFields } from '../../log.js';
import type { TurnContext } from '../agent.js';

export const MID_TURN_QUEUE_DRAIN = 'craft/drainMidTurnQueue';

/** Only `sessionId` matters; the rest (`promptId`, the queued-prompt watch flag) is Qwen's own bookkeeping. */
export const drainParams = z.object({ sessionId: z.string() }).passthrough();

/** The answer Qwen Code reads: `messages` (non-empty strings) and whether a whole prompt waits behind the turn. */
export interface DrainAnswer {
  readonly messages: string[];
  readonly hasQueuedPrompt: false;
}

export const NOTHING_TO_DRAIN: DrainAnswer = { messages: [], hasQueuedPrompt: false };

/**
 * Agents known to drain before they first call it, so steering is offered from their first turn:
 * Qwen Code drains unconditionally and says so by name only (its capabilities do not).
 */
export function drainsMidTurnQueue(agentInfo: { name?: string } | null | undefined): boolean {
  return agentInfo?.name === 'qwen-code';
}

/** Takes every accepted steering input of the running turn and hands their texts to the agent. */
export async function drainForAgent(ctx: TurnContext | undefined, logger: Logger): Promise<DrainAnswer> {
  if (!ctx || ctx.signal.aborted) return NOTHING_TO_DRAIN;
  try {
    const taken = await ctx.barrier();
    return { messages: taken.map((input) => input.text).filter((text) => text.trim() !== ''), hasQueuedPrompt: false };
  } catch (err) {
    if (!ctx.signal.aborted) logger.warn('mid-turn queue drain failed', errorFields(err));
    return NOTHING_TO_DRAIN;
  }
}
