/**
 * A subscribed channel as the application sees it: confirmed + optimistic state, change
 * listeners and dispatch. The reconciliation rules live in reconciler.ts; this class adds
 * listener plumbing and lifecycle. Created only by the client state (client-state.ts) when a
 * subscribe's snapshot arrives; it reads and writes through that one state.
 */
import type { ChannelKind } from '../protocol/uris.js';
import type { ActionEnvelope, WireAction } from '../protocol/messages.js';
import type { AhpClientLogger } from './client-types.js';
import { Reconciler, type EnvelopeOutcome, type PendingAction, type WireReducer } from './reconciler.js';

/** What `dispatch` resolves to. It never rejects for a rejected action. */
export type DispatchResult =
  | { readonly accepted: true; readonly envelope: ActionEnvelope }
  | {
      readonly accepted: false;
      /** The server's `rejectionReason`, or a client-side reason (queue full, channel gone, …). */
      readonly reason: string;
      /** Present when the server echoed a rejection. */
      readonly envelope?: ActionEnvelope;
    };

/** Why a view's state changed; passed to `onChange` listeners. */
export type ChannelChange =
  /** An envelope was applied. `replayed` = it came from a `reconnect` replay, not live. */
  | { readonly type: 'envelope'; readonly envelope: ActionEnvelope; readonly replayed: boolean }
  /** A local dispatch was added to pending (optimistic state moved ahead). */
  | { readonly type: 'dispatched'; readonly clientSeq: number; readonly action: WireAction }
  /** Confirmed state was replaced by a snapshot (recovery). */
  | { readonly type: 'reset'; readonly fromSeq: number }
  /** The view ended (see ChannelViewStatus); pending actions were dropped. Last change it emits. */
  | { readonly type: 'ended'; readonly status: 'gone' | 'closed'; readonly reason: string };

/**
 * - `active`: live.
 * - `gone`: the server no longer serves it (reconnect reported it `missing`, or re-subscribing
 *   failed); `onGone` listeners were called.
 * - `closed`: the application unsubscribed or closed the client.
 */
export type ChannelViewStatus = 'active' | 'gone' | 'closed';

export type ChannelChangeListener<S> = (view: ChannelView<S>, change: ChannelChange) => void;

export interface ChannelView<S> {
  readonly channel: string;
  readonly kind: ChannelKind | undefined;
  readonly status: ChannelViewStatus;
  /** Set when status is not `active`. */
  readonly endReason: string | undefined;
  /** Server-confirmed state: the snapshot plus every applied envelope. */
  readonly confirmed: S;
  /** Optimistic state = confirmed with pending own actions replayed on top. Render this. */
  readonly state: S;
  /** Own actions not yet echoed, oldest first. */
  readonly pendingActions: readonly PendingAction[];
  /** Highest serverSeq reflected in `confirmed`. */
  readonly lastAppliedSeq: number;
  /**
   * The `_meta` of the latest snapshot (outside `state`): facts the server keeps beside the
   * reducer state, e.g. a chat's `hub/answeredBy` index. Undefined when the snapshot had none.
   */
  readonly snapshotMeta: Readonly<Record<string, unknown>> | undefined;
  /**
   * Called after every change of `state` or `confirmed`, including envelopes replayed after a
   * reconnect. Returns an unsubscribe function. Listener exceptions are logged, not rethrown.
   */
  onChange(listener: ChannelChangeListener<S>): () => void;
  /** Called once if the server drops the channel. Returns an unsubscribe function. */
  onGone(listener: (reason: string) => void): () => void;
  /**
   * Applies `action` optimistically and sends it. Resolves `{accepted: true, envelope}` on the
   * echo and `{accepted: false, reason}` on a rejection echo or a client-side refusal. Rejects
   * only with a permanent AhpConnectionError (client closed for good). While reconnecting the
   * action waits in the pending queue and is sent after recovery with the same clientSeq.
   */
  dispatch(action: WireAction): Promise<DispatchResult>;
  /** Same as `client.unsubscribe(channel)`. */
  unsubscribe(): void;
}

/** What `ViewStore.send` answers: the dispatch's clientSeq and its outcome, or a refusal. */
export type SentDispatch = { readonly clientSeq: number; readonly result: Promise<DispatchResult> } | { readonly refused: Promise<DispatchResult> };

/** The client state a view belongs to (`ClientState`): where its dispatches and its unsubscribe go. */
export interface ViewStore {
  send(view: ChannelViewImpl<unknown>, action: WireAction): SentDispatch;
  unsubscribe(channel: string): void;
  readonly logger: AhpClientLogger;
  /** Set once the client is closed for good (a dispatch then rejects with it). */
  readonly closedError: Error | undefined;
}

/**
 * Parameterised by S for the public type, but stored by the client as ChannelViewImpl<unknown>
 * (see `erase`): a channel's state type is fixed by its reducer, chosen once at subscribe time.
 */
export class ChannelViewImpl<S> implements ChannelView<S> {
  readonly channel: string;
  readonly kind: ChannelKind | undefined;
  /** Re-sent when the client has to re-subscribe (reconnect fallback). */
  readonly subscribeParams: Readonly<Record<string, unknown>>;
  readonly #reconciler: Reconciler<S>;
  readonly #store: ViewStore;
  readonly #changeListeners = new Set<ChannelChangeListener<S>>();
  readonly #goneListeners = new Set<(reason: string) => void>();
  #status: ChannelViewStatus = 'active';
  #endReason: string | undefined;
  #snapshotMeta: Readonly<Record<string, unknown>> | undefined;

  constructor(init: {
    channel: string;
    kind: ChannelKind | undefined;
    reducer: WireReducer<S>;
    /** Snapshot state from the wire; trusted to match the reducer's state type. */
    state: S;
    fromSeq: number;
    snapshotMeta?: Readonly<Record<string, unknown>> | undefined;
    subscribeParams: Readonly<Record<string, unknown>>;
    store: ViewStore;
  }) {
    this.channel = init.channel;
    this.kind = init.kind;
    this.subscribeParams = init.subscribeParams;
    this.#store = init.store;
    this.#snapshotMeta = init.snapshotMeta;
    this.#reconciler = new Reconciler(init.reducer, init.state, init.fromSeq, (error, action) => init.store.logger.warn(`reducer threw on ${action.type} for ${init.channel}; action skipped locally`, error));
  }

  get status(): ChannelViewStatus {
    return this.#status;
  }
  get endReason(): string | undefined {
    return this.#endReason;
  }
  get confirmed(): S {
    return this.#reconciler.confirmed;
  }
  get state(): S {
    return this.#reconciler.optimistic;
  }
  get pendingActions(): readonly PendingAction[] {
    return this.#reconciler.pending;
  }
  get lastAppliedSeq(): number {
    return this.#reconciler.lastAppliedSeq;
  }
  get snapshotMeta(): Readonly<Record<string, unknown>> | undefined {
    return this.#snapshotMeta;
  }

  onChange(listener: ChannelChangeListener<S>): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  onGone(listener: (reason: string) => void): () => void {
    this.#goneListeners.add(listener);
    return () => this.#goneListeners.delete(listener);
  }

  dispatch(action: WireAction): Promise<DispatchResult> {
    if (this.#status !== 'active' && !this.#store.closedError) return Promise.resolve({ accepted: false, reason: `not subscribed to ${this.channel}` });
    const sent = this.#store.send(erase(this), action);
    if ('refused' in sent) return sent.refused;
    this.#addPending({ clientSeq: sent.clientSeq, action });
    return sent.result;
  }

  unsubscribe(): void {
    this.#store.unsubscribe(this.channel);
  }

  // ─── Client-internal (not on the ChannelView interface) ──────────────────────

  #addPending(pending: PendingAction): void {
    this.#reconciler.addPending(pending);
    this.emit({ type: 'dispatched', clientSeq: pending.clientSeq, action: pending.action });
  }

  /** Applies an envelope; notifies listeners if anything changed. */
  applyEnvelope(envelope: ActionEnvelope, ownClientId: string, replayed: boolean): EnvelopeOutcome {
    const outcome = this.#reconciler.applyEnvelope(envelope, ownClientId);
    if (outcome.kind !== 'duplicate' && outcome.kind !== 'ignored') this.emit({ type: 'envelope', envelope, replayed });
    return outcome;
  }

  /** Replaces confirmed state with a snapshot received from the wire. */
  resetFromSnapshot(state: S, fromSeq: number, snapshotMeta?: Readonly<Record<string, unknown>>): void {
    this.#snapshotMeta = snapshotMeta;
    this.#reconciler.reset(state, fromSeq);
    this.emit({ type: 'reset', fromSeq });
  }

  /** Ends the view and hands back the pending actions so the client can settle their promises. */
  end(status: 'gone' | 'closed', reason: string): PendingAction[] {
    if (this.#status !== 'active') return [];
    this.#status = status;
    this.#endReason = reason;
    const pending = this.#reconciler.clearPending();
    this.emit({ type: 'ended', status, reason });
    if (status === 'gone') {
      for (const listener of [...this.#goneListeners]) this.#safely(() => listener(reason));
    }
    this.#changeListeners.clear();
    this.#goneListeners.clear();
    return pending;
  }

  emit(change: ChannelChange): void {
    // Copy: a listener may unsubscribe itself (or others) while we iterate.
    for (const listener of [...this.#changeListeners]) this.#safely(() => listener(this, change));
  }

  #safely(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.#store.logger.warn(`listener for ${this.channel} threw`, error);
    }
  }
}

/**
 * The one place a view's state type is erased for storage in the client's channel map. Safe
 * because nothing outside the view ever reads S through the erased type: states only flow
 * between the view's own reducer and its own snapshot.
 */
export function erase<S>(view: ChannelViewImpl<S>): ChannelViewImpl<unknown> {
  return view as unknown as ChannelViewImpl<unknown>;
}
