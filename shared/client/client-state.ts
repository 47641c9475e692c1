/**
 * The client's one state: what the connection feeds and what views and listeners read. Traffic
 * goes one way — transport → connection → `ClientState` → listeners — and a dispatch goes the
 * other way out, state → the `Wire` of the current connection, which is attached only while a
 * handshake has finished on it (no wire = not ready: dispatches wait in pending).
 *
 * It holds the connection's status and its listeners, the notification listeners, the
 * `initialize` result and history epoch, every subscribed channel's view, subscribes in flight,
 * own dispatches awaiting their echo, and the serverSeq watermark sent in `reconnect`. One path
 * (`routeEnvelope`) applies live and replayed envelopes alike; recovery.ts drives it after a
 * reconnect, `receive` for live traffic.
 */
import { type ActionEnvelope, type InitializeResult, JSONRPC, Method, ServerNotification, type WireAction, actionEnvelopeSchema, subscribeResultSchema } from '../protocol/messages.js';
import type { ChannelKind } from '../protocol/uris.js';
import { ChannelViewImpl, type DispatchResult, type SentDispatch, type ViewStore, erase } from './channel-view.js';
import type { AhpClientLogger, ConnectionState, ConnectionStateListener, NotificationListener } from './client-types.js';
import { AhpConnectionError, AhpProtocolError } from './errors.js';
import type { WireReducer } from './reconciler.js';

/** The way out: the connection whose handshake finished. */
export interface Wire {
  sendFrame(frame: string): void;
}

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

export class ClientState implements ViewStore {
  readonly clientId: string;
  readonly logger: AhpClientLogger;
  readonly #maxPending: number;

  // ─── The connection, as the client sees it ──────────────────────────────
  #status: ConnectionState = 'closed';
  /** Set by close() or a fatal error: nothing reopens the client afterwards. */
  closedError: AhpConnectionError | undefined;
  /** Result of the latest successful `initialize`. */
  initializeResult: InitializeResult | undefined;
  /** The hub history epoch the replicas' cursor belongs to (docs/continuity.md#epoch); sent with `reconnect`. */
  epoch: string | undefined;
  #wire: Wire | undefined;
  readonly #statusListeners = new Set<ConnectionStateListener>();
  readonly #notificationListeners = new Map<string, Set<NotificationListener>>();

  // ─── The replicas ────────────────────────────────────────────────────────
  readonly views = new Map<string, ChannelViewImpl<unknown>>();
  readonly subscribing = new Map<string, PendingSubscribe>();
  readonly #dispatchWaiters = new Map<number, DispatchWaiter>();
  /** Non-undefined while applying a reconnect result: live envelopes wait here (see recovery.ts). */
  heldEnvelopes: ActionEnvelope[] | undefined;
  /** Highest serverSeq known to be reflected locally; sent in `reconnect`. */
  lastSeenServerSeq = 0;
  #nextClientSeq = 1;

  constructor(options: { readonly clientId: string; readonly maxPending: number; readonly logger: AhpClientLogger }) {
    this.clientId = options.clientId;
    this.#maxPending = options.maxPending;
    this.logger = options.logger;
  }

  get status(): ConnectionState {
    return this.#status;
  }

  /** A handshake finished on the current connection: ordinary traffic may flow. */
  get ready(): boolean {
    return this.#wire !== undefined;
  }

  get pendingActionCount(): number {
    return this.#dispatchWaiters.size;
  }

  setStatus(status: ConnectionState): void {
    const previous = this.#status;
    if (previous === status) return;
    this.#status = status;
    for (const listener of [...this.#statusListeners]) {
      try {
        listener(status, previous);
      } catch (error) {
        this.logger.warn('connection state listener threw', error);
      }
    }
  }

  onStatus(listener: ConnectionStateListener): () => void {
    this.#statusListeners.add(listener);
    return () => this.#statusListeners.delete(listener);
  }

  onNotification(method: string, listener: NotificationListener): () => void {
    let set = this.#notificationListeners.get(method);
    if (!set) {
      set = new Set();
      this.#notificationListeners.set(method, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#notificationListeners.get(method) === set) this.#notificationListeners.delete(method);
    };
  }

  /** The handshake finished on `wire`: dispatches go out on it from now on. */
  attachWire(wire: Wire): void {
    this.#wire = wire;
  }

  /** The connection was abandoned: nothing goes out until the next handshake, and no result is being applied. */
  detachWire(): void {
    this.#wire = undefined;
    this.heldEnvelopes = undefined;
  }

  // ─── What the connection feeds ───────────────────────────────────────────

  /** A server notification: `action` envelopes go to their view, anything else to its listeners. */
  receive(method: string, params: unknown): void {
    if (method === ServerNotification.Action) {
      const parsed = actionEnvelopeSchema.safeParse(params);
      if (!parsed.success) this.logger.warn('ignoring malformed action envelope', parsed.error);
      else if (this.heldEnvelopes) this.heldEnvelopes.push(parsed.data);
      else this.routeEnvelope(parsed.data, false);
      return;
    }
    const listeners = this.#notificationListeners.get(method);
    if (!listeners) return;
    for (const listener of [...listeners]) {
      try {
        listener(params, method);
      } catch (error) {
        this.logger.warn(`listener for ${method} threw`, error);
      }
    }
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
    const outcome = view.applyEnvelope(envelope, this.clientId, replayed);
    if (outcome.kind === 'confirmed') {
      for (const skipped of outcome.skipped) {
        this.#settleDispatch(skipped.clientSeq, { accepted: false, reason: 'the server never acknowledged this action' });
      }
      this.#settleDispatch(outcome.pending.clientSeq, { accepted: true, envelope });
    } else if (outcome.kind === 'rejected') {
      this.#settleDispatch(outcome.pending.clientSeq, { accepted: false, reason: envelope.rejectionReason ?? 'rejected', envelope });
    }
  }

  noteServerSeq(seq: number): void {
    if (seq > this.lastSeenServerSeq) this.lastSeenServerSeq = seq;
  }

  // ─── Subscriptions ───────────────────────────────────────────────────────

  /** A subscribe was sent: `response` is its answer; resolves with the view once the snapshot arrived. */
  open(channel: string, kind: ChannelKind | undefined, reducer: WireReducer<unknown>, subscribeParams: Record<string, unknown>, response: Promise<unknown>): Promise<ChannelViewImpl<unknown>> {
    const buffer: ActionEnvelope[] = [];
    const promise = response.then((raw) => {
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
          store: this,
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
  unsubscribe(channel: string): void {
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
    this.#wire?.sendFrame(JSON.stringify({ jsonrpc: JSONRPC, method: Method.Unsubscribe, params: { channel } }));
  }

  // ─── Dispatch: state → wire ──────────────────────────────────────────────

  /**
   * Admits a dispatch of `view` and sends it: its clientSeq and the promise its echo settles, or
   * the refusal. The view adds it to its pending actions on return, before any frame can arrive
   * (a transport never reports an event from inside `send`), so the state never calls back into it.
   */
  send(view: ChannelViewImpl<unknown>, action: WireAction): SentDispatch {
    if (this.closedError) return { refused: Promise.reject(this.closedError) };
    // The view checked its own status; one that ended is no longer in the map either.
    if (this.views.get(view.channel) !== view) return { refused: Promise.resolve({ accepted: false, reason: `not subscribed to ${view.channel}` }) };
    if (this.#dispatchWaiters.size >= this.#maxPending) return { refused: Promise.resolve({ accepted: false, reason: 'too many pending actions' }) };
    const clientSeq = this.#nextClientSeq++;
    const result = new Promise<DispatchResult>((resolve, reject) => {
      this.#dispatchWaiters.set(clientSeq, { channel: view.channel, resolve, reject });
    });
    // Without a wire the action only waits in pending; resendPending sends it after recovery.
    this.#sendDispatch(view.channel, clientSeq, action);
    return { clientSeq, result };
  }

  #sendDispatch(channel: string, clientSeq: number, action: WireAction): void {
    this.#wire?.sendFrame(JSON.stringify({ jsonrpc: JSONRPC, method: Method.DispatchAction, params: { channel, clientSeq, action } }));
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

  // ─── Endings ─────────────────────────────────────────────────────────────

  endView(view: ChannelViewImpl<unknown>, status: 'gone' | 'closed', reason: string): void {
    const dropped = view.end(status, reason);
    for (const p of dropped) {
      const waiter = this.#dispatchWaiters.get(p.clientSeq);
      if (!waiter) continue;
      this.#dispatchWaiters.delete(p.clientSeq);
      // Closed for good → reject (the documented "connection closed" case); otherwise resolve.
      if (this.closedError) waiter.reject(this.closedError);
      else waiter.resolve({ accepted: false, reason: `${view.channel} ${status === 'gone' ? 'is gone' : 'was unsubscribed'} (${reason}); the outcome of this action is unknown` });
    }
  }

  /** Closed for good: every view ends, every subscribe in flight is cancelled, every dispatch rejects. */
  close(error: AhpConnectionError): void {
    this.closedError = error;
    this.detachWire();
    for (const view of [...this.views.values()]) this.endView(view, 'closed', error.message);
    this.views.clear();
    for (const pending of this.subscribing.values()) pending.cancelled = true;
    // Dispatches not tied to a live view anymore (defensive; endView settles the rest).
    for (const waiter of this.#dispatchWaiters.values()) waiter.reject(error);
    this.#dispatchWaiters.clear();
    this.setStatus('closed');
  }
}
