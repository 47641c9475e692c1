/**
 * The text of what goes out, and THE MERGE RULE for streamed text, in one module below the
 * fan-out, the lag queue, the pipeline and the replay window, so each calls forward into it:
 * `encodeEnvelope` / `encodeNotification` build a frame's JSON once (the action's text from
 * `actionJson`), and `mergeStreamingActions` is the one rule by which consecutive `chat/delta`
 * (or `chat/reasoning`) text is merged — at ingest (`commit-pipeline.ts`), in a group commit's run
 * and a latency window (`fanout.ts`), and for a lagging receiver (`lag-queue.ts`).
 */
import { isKnownAction, type DeltaAction, type ReasoningAction } from '../../shared/protocol/actions.js';
import type { ActionEnvelope, WireAction } from '../../shared/protocol/messages.js';
import { actionJson } from '../action-json.js';

export function encodeNotification(method: string, params: unknown): string {
  return `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${JSON.stringify(params)}}`;
}

/**
 * The `action` notification for an envelope, with the fields in the schema's order. The action's
 * text comes from `actionJson`, so the JSON built for the size budget and the log record is
 * reused, never rebuilt per envelope.
 */
export function encodeEnvelope(envelope: ActionEnvelope): string {
  let params = '{"channel":' + JSON.stringify(envelope.channel) + ',"action":' + actionJson(envelope.action) + ',"serverSeq":' + envelope.serverSeq;
  if (envelope.origin !== undefined) params += ',"origin":' + JSON.stringify(envelope.origin);
  if (envelope.rejectionReason !== undefined) params += ',"rejectionReason":' + JSON.stringify(envelope.rejectionReason);
  if (envelope.rejectionKind !== undefined) params += ',"rejectionKind":' + JSON.stringify(envelope.rejectionKind);
  return '{"jsonrpc":"2.0","method":"action","params":' + params + '}}';
}

/** THE MERGE RULE for one receiver: two streaming envelopes, origins dropped (a lagging receiver's held frames, `lag-queue.ts`). */
export function mergeForReceiver(prev: ActionEnvelope, next: ActionEnvelope): ActionEnvelope | undefined {
  return mergeStreamingEnvelopes(withoutOrigin(prev), withoutOrigin(next));
}

/**
 * Merges two consecutive streaming actions when applying the result equals applying both:
 * `chat/delta` (or `chat/reasoning`) for the same turn and part, without `_meta`.
 */
export function mergeStreamingActions(a: WireAction, b: WireAction): WireAction | undefined {
  const first = streamingTextAction(a);
  const second = streamingTextAction(b);
  if (!first || !second || first.type !== second.type) return undefined;
  if (first.turnId !== second.turnId || first.partId !== second.partId) return undefined;
  if (first._meta !== undefined || second._meta !== undefined) return undefined;
  if (typeof first.content !== 'string' || typeof second.content !== 'string') return undefined;
  return { ...b, content: first.content + second.content };
}

function streamingTextAction(action: WireAction): DeltaAction | ReasoningAction | undefined {
  return isKnownAction(action) && (action.type === 'chat/delta' || action.type === 'chat/reasoning') ? action : undefined;
}

/** Merges `next` into `prev` for receivers that are not their origin; echoes are never merged. */
export function mergeStreamingEnvelopes(prev: ActionEnvelope, next: ActionEnvelope): ActionEnvelope | undefined {
  if (prev.origin || next.origin || prev.rejectionReason || next.rejectionReason) return undefined;
  if (prev.channel !== next.channel) return undefined;
  const action = mergeStreamingActions(prev.action, next.action);
  return action ? { ...next, action } : undefined;
}

export function withoutOrigin(envelope: ActionEnvelope): ActionEnvelope {
  if (!envelope.origin) return envelope;
  const { origin: _origin, ...rest } = envelope;
  return rest;
}
