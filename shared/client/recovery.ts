/**
 * §1.7 reconnect, run by the AhpClient during the handshake of a new link: `reconnect` for every
 * channel still held (in batches), then the replay or snapshots applied to the client state
 * through its single envelope path; channels the server refuses to resume are re-subscribed one by
 * one, channels it no longer knows end as 'gone'. On a 1.1 connection each channel is sent with
 * its own cursor (the last serverSeq its view applied) and gets its own recovery; otherwise the
 * client-wide watermark goes out (legacy).
 */
import type { z } from 'zod';
import { EPOCH_META_KEY, Limits, Method, reconnectResultSchema } from '../protocol/messages.js';
import { channelReconnectResultSchema, type ChannelRecovery } from '../protocol/messages-1-1.js';
import { ROOT_URI } from '../protocol/uris.js';
import { speaksChannelReconnect } from '../protocol/version-features.js';
import { type ClientState, type WireSnapshot, snapshotFrom } from './client-state.js';
import type { AhpConnection } from './connection.js';
import { AhpProtocolError, AhpRequestError } from './errors.js';

type ParsedReconnectResult = z.infer<typeof reconnectResultSchema>;

/** What recovery works on: the client state it applies to and the connection being set up. */
interface RecoveryContext {
  readonly state: ClientState;
  readonly connection: AhpConnection;
}

/** A request on the link being set up (it does not wait for the handshake). */
function handshakeRequest(ctx: RecoveryContext, method: string, params: Record<string, unknown>): Promise<unknown> {
  return ctx.connection.request(method, params, { handshake: true });
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Live envelopes arriving while the result is applied are held back and routed afterwards, so
 * that a live action can never overtake (and, via the per-channel seq guard, suppress) an older
 * replayed one.
 */
export async function recover(state: ClientState, connection: AhpConnection, generation: number, serverSeqAtInitialize: number, protocolVersion?: string): Promise<void> {
  const ctx: RecoveryContext = { state, connection };
  const channels = [...state.views.keys()];
  if (channels.length > 0) {
    const baseline = state.lastSeenServerSeq;
    state.heldEnvelopes = [];
    try {
      for (const batch of chunk(channels, Limits.maxSubscriptionsPerRequest)) {
        if (speaksChannelReconnect(protocolVersion)) await recoverChannels(ctx, generation, baseline, batch);
        else await recoverBatch(ctx, generation, baseline, batch);
      }
    } catch (error) {
      // Retry from the same watermark; the per-channel guard skips what was already applied.
      state.lastSeenServerSeq = baseline;
      throw error;
    }
    const held = state.heldEnvelopes;
    state.heldEnvelopes = undefined;
    for (const envelope of held) state.routeEnvelope(envelope, false);
  }
  // Every action on our channels up to the initialize-time head is now reflected (replayed or
  // inside a snapshot), so the next reconnect can start from there.
  state.noteServerSeq(serverSeqAtInitialize);
}

async function recoverBatch(ctx: RecoveryContext, generation: number, lastSeenServerSeq: number, channels: string[]): Promise<void> {
  let raw: unknown;
  try {
    const epoch = ctx.state.epoch;
    const params = { channel: ROOT_URI, clientId: ctx.state.clientId, lastSeenServerSeq, subscriptions: channels };
    raw = await handshakeRequest(ctx, Method.Reconnect, epoch === undefined ? params : { ...params, _meta: { [EPOCH_META_KEY]: epoch } });
  } catch (error) {
    if (!(error instanceof AhpRequestError)) throw error;
    // The server refused to resume us (e.g. does not implement reconnect): start over cleanly.
    ctx.state.logger.warn('reconnect refused; re-subscribing', error);
    await resubscribe(ctx, generation, channels);
    return;
  }
  ctx.connection.assertCurrent(generation);
  const parsed = reconnectResultSchema.safeParse(raw);
  if (!parsed.success) {
    ctx.state.logger.warn('reconnect: unexpected result shape; re-subscribing', parsed.error);
    await resubscribe(ctx, generation, channels);
    return;
  }
  await applyRecovery(ctx, generation, parsed.data, channels);
}

/** AHP 1.1: one cursor per channel; a host that refuses the shape gets the legacy request. */
async function recoverChannels(ctx: RecoveryContext, generation: number, baseline: number, channels: string[]): Promise<void> {
  const subscriptions = channels.map((channel) => ({ channel, lastSeenServerSeq: ctx.state.views.get(channel)?.lastAppliedSeq ?? 0 }));
  let raw: unknown;
  try {
    raw = await handshakeRequest(ctx, Method.Reconnect, { channel: ROOT_URI, clientId: ctx.state.clientId, subscriptions });
  } catch (error) {
    if (!(error instanceof AhpRequestError)) throw error;
    ctx.state.logger.warn('per-channel reconnect refused; sending the connection-wide one', error);
    return recoverBatch(ctx, generation, baseline, channels);
  }
  ctx.connection.assertCurrent(generation);
  const parsed = channelReconnectResultSchema.safeParse(raw);
  if (!parsed.success) {
    ctx.state.logger.warn('reconnect: unexpected result shape; re-subscribing', parsed.error);
    return resubscribe(ctx, generation, channels);
  }
  const answered = new Set<string>();
  for (const recovery of parsed.data.channels) {
    if (!channels.includes(recovery.channel) || answered.has(recovery.channel)) continue;
    answered.add(recovery.channel);
    applyChannelRecovery(ctx, recovery);
  }
  // Exactly one recovery per channel is owed; fetch any the answer left out one by one.
  const unanswered = channels.filter((c) => !answered.has(c) && ctx.state.views.has(c));
  if (unanswered.length > 0) await resubscribe(ctx, generation, unanswered);
}

function applyChannelRecovery(ctx: RecoveryContext, recovery: ChannelRecovery): void {
  const state = ctx.state;
  const view = state.views.get(recovery.channel);
  if (!view) return;
  if (recovery.kind === 'replay') {
    for (const envelope of recovery.actions) if (envelope.channel === recovery.channel) state.routeEnvelope(envelope, true);
  } else if (recovery.kind === 'snapshot') {
    view.resetFromSnapshot(recovery.snapshot.state, recovery.snapshot.fromSeq, recovery.snapshot._meta);
    state.noteServerSeq(recovery.snapshot.fromSeq);
  } else {
    state.views.delete(recovery.channel);
    state.endView(view, 'gone', 'the server can no longer resume this channel');
  }
}

async function applyRecovery(ctx: RecoveryContext, generation: number, result: ParsedReconnectResult, channels: string[]): Promise<void> {
  const state = ctx.state;
  const missing = new Set(result.missing);
  if (result.type === 'replay') {
    for (const envelope of result.actions) state.routeEnvelope(envelope, true);
  } else {
    const covered = new Set<string>();
    for (const snapshot of result.snapshots) {
      const view = state.views.get(snapshot.resource);
      if (!view) continue;
      covered.add(snapshot.resource);
      view.resetFromSnapshot(snapshot.state, snapshot.fromSeq, snapshot._meta);
      state.noteServerSeq(snapshot.fromSeq);
    }
    // A snapshot result should cover every channel; fetch any it left out one by one.
    const uncovered = channels.filter((c) => !covered.has(c) && !missing.has(c) && state.views.has(c));
    if (uncovered.length > 0) await resubscribe(ctx, generation, uncovered);
  }
  for (const channel of missing) {
    const view = state.views.get(channel);
    if (!view) continue;
    state.views.delete(channel);
    state.endView(view, 'gone', 'the server can no longer resume this channel');
  }
}

async function resubscribe(ctx: RecoveryContext, generation: number, channels: string[]): Promise<void> {
  const state = ctx.state;
  for (const channel of channels) {
    const view = state.views.get(channel);
    if (!view) continue;
    let snapshot: WireSnapshot;
    try {
      snapshot = snapshotFrom(channel, await handshakeRequest(ctx, Method.Subscribe, { ...view.subscribeParams }));
    } catch (error) {
      if (!(error instanceof AhpRequestError) && !(error instanceof AhpProtocolError)) throw error;
      state.views.delete(channel);
      state.endView(view, 'gone', `re-subscribe failed: ${error.message}`);
      continue;
    }
    ctx.connection.assertCurrent(generation);
    view.resetFromSnapshot(snapshot.state, snapshot.fromSeq, snapshot.meta);
    state.noteServerSeq(snapshot.fromSeq);
  }
}
