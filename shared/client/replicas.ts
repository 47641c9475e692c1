/**
 * The client's local replicas: every subscribed channel's ChannelView, subscribes still in flight,
 * own dispatches awaiting their echo, and the serverSeq watermark sent in `reconnect`. One path
 * (`routeEnvelope`) applies live and replayed envelopes alike; recovery.ts drives it after a
 * reconnect, the AhpClient facade for live traffic.
 */
import { JSONRPC, Method, actionEnvelopeSchema, subscribeResultSchema, type ActionEnvelope, type WireAction } from '../protocol/messages.js';
import { ChannelViewImpl, erase, type ChannelViewHost, type DispatchResult } from './channel-view.js';
import type { AhpClientLogger } from './client-types.js';
import { AhpConnectionError, AhpProtocolError } from './errors.js';
import type { ChannelKind } from '../protocol/uris.js';
import type { WireReducer } from './reconciler.js';

// A rejection echo carries the hub's current head, which is 0 on a brand-new log; the envelope
// schema allows it.
const inboundEnvelopeSchema = actionEnvelopeSchema;

interface DispatchWaiter {
  readonly channel: string;
  readonly resolve: (result: DispatchResult) => void;
  readonly reject: (error: Error) => void;
}

export interface PendingSubscribe {
  readonly promise: Promise<ChannelViewImpl<unknown>>;
  /** Envelopes for the channel that arrive before the snapshot does. */
  readonly buffer: ActionEnvelope[];
  cancelled: boolean;
}

/** A subscribe result's snapshot: `meta` is the snapshot's own `_meta` (outside `state`). */
export interface WireSnapshot {
  readonly state: unknown;
  readonly fromSeq: number;
  readonly meta: Readonly<Record<string, unknown>> | undefined;
}

export function snapshotFrom(channel: string, raw: unknown): WireSnapshot {
  const parsed = subscribeResultSchema.safeParse(raw);
  if (!parsed.success || !parsed.data.snapshot) throw new AhpProtocolError(`subscribe ${channel}: no snapshot in result`);
  const { state, fromSeq, _meta } = parsed.data.snapshot;
  return { state, fromSeq, meta: _meta };
}

export interface ReplicasOptions {
  readonly clientId: string;
  readonly maxPending: number;
  readonly logger: AhpClientLogger;
  /** Set once the client is closed for good. */
  readonly closedError: () => AhpConnectionError | undefined;
  /** The handshake finished on the current socket. */
  readonly isReady: () => boolean;
  readonly sendFrame: (frame: string) => void;
  /** An ordinary (not handshake) `subscribe` request. */
  readonly subscribeRequest: (params: Record<string, unknown>) => Promise<unknown>;
  readonly viewHost: ChannelViewHost;
}

export class ChannelReplicas {
  readonly views = new Map<string, ChannelViewImpl<unknown>>();
  readonly subscribing = new Map<string, PendingSubscribe>();
  readonly #dispatchWaiters = new Map<number, DispatchWaiter>();
  /** Non-undefined while applying a reconnect result: live envelopes wait here (see recovery.ts). */
  heldEnvelopes: ActionEnvelope[] | undefined;
  /** Highest serverSeq known to be reflected locally; sent in `reconnect`. */
  lastSeenServerSeq = 0;
  #nextClientSeq = 1;

  readonly #options: ReplicasOptions;

  constructor(options: ReplicasOptions) {
    this.#options = options;
  }

  get pendingActionCount(): number {
    return this.#dispatchWaiters.size;
  }

  /** Subscribes with `reducer`; resolves with the view once the snapshot arrived. */
  open(channel: string, kind: ChannelKind | undefined, reducer: WireReducer<unknown>, subscribeParams: Record<string, unknown>): Promise<ChannelViewImpl<unknown>> {
    const buffer: ActionEnvelope[] = [];
    const promise = this.#options.subscribeRequest(subscribeParams).then((raw) => {
      const snapshot = snapshotFrom(channel, raw);
      const pending = this.subscribing.get(channel);
      this.subscribing.delete(channel);
      if (pending?.cancelled) {
        this.#sendUnsubscribe(channel);
        throw new AhpConnectionError(`unsubscribed from ${channel} before the subscription completed`, false);
      }
      const view = erase(
        new ChannelViewImpl({
          channel,
          kind,
          reducer,
          state: snapshot.state,
          fromSeq: snapshot.fromSeq,
          snapshotMeta: snapshot.meta,
          subscribeParams,
          host: this.#options.viewHost,
        }),
      );
      this.views.set(channel, view);
      this.noteServerSeq(snapshot.fromSeq);
      // Envelopes that overtook the response; the view skips those already in the snapshot.
      for (const envelope of buffer) this.applyToView(view, envelope, false);
      return view;
    });
    this.subscribing.set(channel, { promise, buffer, cancelled: false });
    promise.catch(() => {
      if (this.subscribing.get(channel)?.promise === promise) this.subscribing.delete(channel);
    });
    return promise;
  }

  /** Stops following a channel; its view ends ('closed'), unconfirmed dispatches resolve accepted:false. */
  close(channel: string): void {
    const inFlight = this.subscribing.get(channel);
    if (inFlight) inFlight.cancelled = true;
    const view = this.views.get(channel);
    if (!view) return;
    this.views.delete(channel);
    // While disconnected there is nothing to tell: `reconnect` only lists channels we still hold.
    this.#sendUnsubscribe(channel);
    this.endView(view, 'closed', 'unsubscribed');
  }

  #sendUnsubscribe(channel: string): void {
    if (this.#options.isReady()) this.#options.sendFrame(JSON.stringify({ jsonrpc: JSONRPC, method: Method.Unsubscribe, params: { channel } }));
  }

  /** A `ServerNotification.Action` from the wire: validated, then held or routed. */
  onActionNotification(params: unknown): void {
    const parsed = inboundEnvelopeSchema.safeParse(params);
    if (!parsed.success) {
      this.#options.logger.warn('ignoring malformed action envelope', parsed.error);
      return;
    }
    if (this.heldEnvelopes) this.heldEnvelopes.push(parsed.data);
    else this.routeEnvelope(parsed.data, false);
  }

  /** The single path for live and replayed envelopes (replayed ones must notify listeners too). */
  routeEnvelope(envelope: ActionEnvelope, replayed: boolean): void {
    const view = this.views.get(envelope.channel);
    if (view) {
      this.applyToView(view, envelope, replayed);
      return;
    }
    // Overtook its subscribe response: keep it until the snapshot arrives.
    this.subscribing.get(envelope.channel)?.buffer.push(envelope);
    // Otherwise it is for a channel we no longer follow (it crossed our unsubscribe): drop it.
  }

  applyToView(view: ChannelViewImpl<unknown>, envelope: ActionEnvelope, replayed: boolean): void {
    // A rejection's serverSeq is only the hub's current head, not a log position we have seen.
    if (envelope.rejectionReason === undefined) this.noteServerSeq(envelope.serverSeq);
    const outcome = view.applyEnvelope(envelope, this.#options.clientId, replayed);
    if (outcome.kind === 'confirmed') {
      for (const skipped of outcome.skipped) {
        this.#settleDispatch(skipped.clientSeq, { accepted: false, reason: 'the server never acknowledged this action' });
      }
      this.#settleDispatch(outcome.pending.clientSeq, { accepted: true, envelope });
    } else if (outcome.kind === 'rejected') {
      this.#settleDispatch(outcome.pending.clientSeq, { accepted: false, reason: envelope.rejectionReason ?? 'rejected', envelope });
    }
  }

  dispatch(view: ChannelViewImpl<unknown>, action: WireAction): Promise<DispatchResult> {
    const closedError = this.#options.closedError();
    if (closedError) return Promise.reject(closedError);
    if (view.status !== 'active' || this.views.get(view.channel) !== view) {
      return Promise.resolve({ accepted: false, reason: `not subscribed to ${view.channel}` });
    }
    if (this.#dispatchWaiters.size >= this.#options.maxPending) {
      return Promise.resolve({ accepted: false, reason: 'too many pending actions' });
    }
    const clientSeq = this.#nextClientSeq++;
    const result = new Promise<DispatchResult>((resolve, reject) => {
      this.#dispatchWaiters.set(clientSeq, { channel: view.channel, resolve, reject });
    });
    view.addPending({ clientSeq, action });
    // While not ready the action only waits in pending; resendPending sends it after recovery.
    if (this.#options.isReady()) this.#sendDispatch(view.channel, clientSeq, action);
    return result;
  }

  #sendDispatch(channel: string, clientSeq: number, action: WireAction): void {
    this.#options.sendFrame(JSON.stringify({ jsonrpc: JSONRPC, method: Method.DispatchAction, params: { channel, clientSeq, action } }));
  }

  /**
   * After recovery: everything still pending was neither echoed nor rejected in the replay, so
   * the server has not applied it. Resend in clientSeq order (across channels, so a server that
   * checks per-client clientSeq order sees them in order) with the original clientSeq.
   */
  resendPending(): void {
    const all: Array<{ channel: string; clientSeq: number; action: WireAction }> = [];
    for (const view of this.views.values()) {
      for (const p of view.pendingActions) all.push({ channel: view.channel, clientSeq: p.clientSeq, action: p.action });
    }
    all.sort((a, b) => a.clientSeq - b.clientSeq);
    for (const p of all) this.#sendDispatch(p.channel, p.clientSeq, p.action);
  }

  #settleDispatch(clientSeq: number, result: DispatchResult): void {
    const waiter = this.#dispatchWaiters.get(clientSeq);
    if (!waiter) return;
    this.#dispatchWaiters.delete(clientSeq);
    waiter.resolve(result);
  }

  endView(view: ChannelViewImpl<unknown>, status: 'gone' | 'closed', reason: string): void {
    const dropped = view.end(status, reason);
    const closedError = this.#options.closedError();
    for (const p of dropped) {
      const waiter = this.#dispatchWaiters.get(p.clientSeq);
      if (!waiter) continue;
      this.#dispatchWaiters.delete(p.clientSeq);
      // Closed for good → reject (the documented "connection closed" case); otherwise resolve.
      if (closedError) waiter.reject(closedError);
      else waiter.resolve({ accepted: false, reason: `${view.channel} ${status === 'gone' ? 'is gone' : 'was unsubscribed'} (${reason}); the outcome of this action is unknown` });
    }
  }

  /** Closed for good: every view ends, every subscribe in flight is cancelled, every dispatch rejects. */
  endAll(error: AhpConnectionError): void {
    for (const view of [...this.views.values()]) this.endView(view, 'closed', error.message);
    this.views.clear();
    for (const pending of this.subscribing.values()) pending.cancelled = true;
    // Dispatches not tied to a live view anymore (defensive; endView settles the rest).
    for (const waiter of this.#dispatchWaiters.values()) waiter.reject(error);
    this.#dispatchWaiters.clear();
  }

  noteServerSeq(seq: number): void {
    if (seq > this.lastSeenServerSeq) this.lastSeenServerSeq = seq;
  }
}
