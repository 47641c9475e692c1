/**
 * The AHP 1.1 wire additions the hub speaks when a connection negotiated 1.1.x
 * (`version-features.ts`): per-channel reconnect, windowed delivery (credit windows, frames,
 * checkpoints) and session artifacts. Shapes follow upstream's 1.1 round-trip fixtures
 * (`test/fixtures/ahp-conformance/round-trips-1.1`); docs/protocol.md#ahp-11 says where we chose.
 */
import { z } from 'zod';
import { actionEnvelopeSchema, initializeResultSchema, Limits, snapshotSchema, subscribeParamsSchema } from './messages.js';
import { MAX_URI_LENGTH } from './uris.js';

const uri = z.string().min(1).max(MAX_URI_LENGTH);
const meta = z.record(z.string(), z.unknown()).optional();
/** serverSeq and byte positions: non-negative safe integers (positions may pass 32 bits). */
const position = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

// ─── Per-channel reconnect ───────────────────────────────────────────────────

/** One subscribed channel and the last serverSeq the client applied on it. */
export const channelReplayCursorSchema = z.object({ channel: uri, lastSeenServerSeq: position });
export type ChannelReplayCursor = z.infer<typeof channelReplayCursorSchema>;

/** A windowed channel's applied-action checkpoint (not its byte counters). */
export const windowCheckpointSchema = z.object({ channel: uri, lastAppliedServerSeq: position });

/** `reconnect` with one cursor per channel (1.1): no connection-wide watermark. */
export const channelReconnectParamsSchema = z.object({
  channel: uri,
  clientId: z.string().min(1).max(Limits.maxIdLength),
  subscriptions: z.array(channelReplayCursorSchema).max(Limits.maxSubscriptionsPerRequest),
  _meta: meta,
});
export type ChannelReconnectParams = z.infer<typeof channelReconnectParamsSchema>;

/** The connection-wide `reconnect` shape, in 1.1 optionally with windowed channels' checkpoints. */
export const windowedReconnectParamsSchema = z.object({
  channel: uri,
  clientId: z.string().min(1).max(Limits.maxIdLength),
  lastSeenServerSeq: position,
  subscriptions: z.array(uri).max(Limits.maxSubscriptionsPerRequest),
  windows: z.object({ items: z.array(windowCheckpointSchema).max(Limits.maxSubscriptionsPerRequest) }).optional(),
  _meta: meta,
});
export type WindowedReconnectParams = z.infer<typeof windowedReconnectParamsSchema>;

/** Exactly one recovery per requested channel; kinds may differ within one response. */
export const channelRecoverySchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('replay'), channel: uri, actions: z.array(actionEnvelopeSchema) }),
  z.object({ kind: z.literal('snapshot'), channel: uri, snapshot: snapshotSchema }),
  z.object({ kind: z.literal('missing'), channel: uri }),
]);
export type ChannelRecovery = z.infer<typeof channelRecoverySchema>;
export const channelReconnectResultSchema = z.looseObject({ channels: z.array(channelRecoverySchema) });
export type ChannelReconnectResult = z.infer<typeof channelReconnectResultSchema>;

// ─── Windowed delivery ───────────────────────────────────────────────────────

/**
 * One direction's receive limits, in UTF-16 bytes of serialized message text (2 per code unit):
 * the receiver's window, the largest fragment it takes, the largest message it reassembles.
 */
export const receiveLimitsSchema = z.object({
  windowBytes: z
    .number()
    .int()
    .min(1)
    .max(2 ** 32 - 1),
  maximumFrameBytes: z
    .number()
    .int()
    .min(1)
    .max(2 ** 32 - 1),
  maximumMessageBytes: z
    .number()
    .int()
    .min(1)
    .max(2 ** 32 - 1),
});
export type ReceiveLimits = z.infer<typeof receiveLimitsSchema>;

/** `subscribe.flowControl`: the client opts in with its receive limits. */
export const subscribeFlowControlSchema = z.object({ receive: receiveLimitsSchema });
/** `SubscribeResult.flowControl`: the client's limits as the host will honour them, and the host's. */
export const grantedFlowControlSchema = z.object({ clientReceive: receiveLimitsSchema, hostReceive: receiveLimitsSchema });
export type GrantedFlowControl = z.infer<typeof grantedFlowControlSchema>;

/** `channel/frame`: a fragment of one serialized JSON-RPC message; `final` ends the message. */
export const channelFrameParamsSchema = z.object({ channel: uri, data: z.string(), final: z.boolean() });
/** `channel/credit` (client → host): cumulative UTF-16 bytes of frame data the client consumed. */
export const channelCreditParamsSchema = z.object({ channel: uri, consumedBytes: position });
/** `channel/ready`: bootstrap (subscribe, or recovery after reconnect) is over; frames follow. */
export const channelReadyParamsSchema = z.looseObject({ channel: uri });
/** `channel/reset`: the windowed subscription ended (the client may subscribe again). */
export const channelResetParamsSchema = z.looseObject({ channel: uri, reason: z.string().max(64) });
/** `channel/snapshot`: a fresh snapshot on a windowed channel (recovery by snapshot), sent framed. */
export const channelSnapshotParamsSchema = z.looseObject({ channel: uri, snapshot: snapshotSchema });

/** One windowed channel's recovery in a reconnect result: its window again, and how it resumes. */
export const windowRecoverySchema = z.object({ channel: uri, flowControl: grantedFlowControlSchema, recovery: z.enum(['replay', 'snapshot']) });
/** `ReconnectResult.windows`: the retained windowed subscriptions (empty: none could be kept). */
export const reconnectWindowsSchema = z.object({ items: z.array(windowRecoverySchema) });

/** `subscribe` params as 1.1 has them: `flowControl` opts into windowed delivery (ignored before 1.1). */
export const subscribeParams11Schema = subscribeParamsSchema.extend({ flowControl: subscribeFlowControlSchema.optional() });
/** `subscribe` result: `flowControl` present only when the host accepted windowed delivery. */
export const subscribeResult11Schema = z.looseObject({ snapshot: snapshotSchema.optional(), flowControl: grantedFlowControlSchema.optional() });

/** The connection-wide reconnect result of 1.1, with the windowed channels' recoveries. */
export const windowedReconnectResultSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('replay'), actions: z.array(actionEnvelopeSchema), missing: z.array(uri).optional(), windows: reconnectWindowsSchema.optional() }),
  z.looseObject({ type: z.literal('snapshot'), snapshots: z.array(snapshotSchema), missing: z.array(uri).optional(), windows: reconnectWindowsSchema.optional() }),
]);
export type WindowedReconnectResult = z.infer<typeof windowedReconnectResultSchema>;

/** zod's issue code for issues a transform adds (here: the chosen form's own issues, as found). */
const ZOD_CUSTOM_ISSUE = 'custom' as const;

/** Per-channel cursors: no connection-wide `lastSeenServerSeq`, and subscriptions that are objects. */
function isPerChannelShape(raw: unknown): boolean {
  if (typeof raw !== 'object' || raw === null || 'lastSeenServerSeq' in raw) return false;
  const subscriptions = (raw as { subscriptions?: unknown }).subscriptions;
  return Array.isArray(subscriptions) && subscriptions.some((s) => typeof s === 'object' && s !== null);
}

/**
 * `reconnect` params in either 1.1 form: one cursor per channel, or connection-wide (with
 * windows). The shape picks the schema, so a malformed request is told what its own form lacks
 * (a union would only say "Invalid input").
 */
export const reconnect11ParamsSchema = z.unknown().transform((raw, ctx): WindowedReconnectParams | ChannelReconnectParams => {
  const parsed = isPerChannelShape(raw) ? channelReconnectParamsSchema.safeParse(raw) : windowedReconnectParamsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, code: ZOD_CUSTOM_ISSUE, input: raw });
  return z.NEVER;
});

/** `InitializeResult` of 1.1: `steeringMessages: {}` advertises the steering list as its own capability. */
export const initializeResult11Schema = initializeResultSchema.extend({
  serverInfo: initializeResultSchema.shape.serverInfo.optional(),
  steeringMessages: z.object({}).optional(),
});

export const ChannelMethod = {
  Frame: 'channel/frame',
  Credit: 'channel/credit',
  Ready: 'channel/ready',
  Reset: 'channel/reset',
  Snapshot: 'channel/snapshot',
} as const;

// Session artifacts (`SessionSummary.artifacts`) live with the summary: state/artifacts.ts.
export { artifactRelationSchema, artifactSchema, type Artifact } from './state/artifacts.js';
