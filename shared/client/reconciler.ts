/**
 * Write-ahead reconciliation for one channel (AHP §1.6), free of I/O so it can be tested alone.
 *
 *   confirmed  = snapshot + every envelope the server applied, in serverSeq order
 *   pending    = own actions sent (or about to be sent) whose echo has not arrived yet
 *   optimistic = pending replayed on top of confirmed — what a UI renders
 *
 * The server echo is authoritative: an accepted own action is applied to `confirmed` from the
 * echo (not from our local copy), so true conflicts resolve server-wins.
 */
import type { ActionEnvelope, WireAction } from '../protocol/messages.js';

/** A reducer over wire actions. Must be pure and must return `state` for unknown action types. */
export type WireReducer<S> = (state: S, action: WireAction) => S;

export interface PendingAction {
  /** Client-wide counter value sent in `dispatchAction.clientSeq`; comes back as `origin.clientSeq`. */
  readonly clientSeq: number;
  readonly action: WireAction;
}

export type EnvelopeOutcome =
  /** serverSeq at or below what this channel already applied (replay overlap): nothing changed. */
  | { readonly kind: 'duplicate' }
  /** A server-originated or foreign action, applied to confirmed; pending were rebased on it. */
  | { readonly kind: 'applied' }
  /** A rejection of someone else's action (or of one we no longer track): nothing to apply. */
  | { readonly kind: 'ignored' }
  /** Echo of our own action: removed from pending, applied to confirmed. */
  | { readonly kind: 'confirmed'; readonly pending: PendingAction; readonly skipped: readonly PendingAction[] }
  /** Rejection of our own action: removed from pending, confirmed untouched. */
  | { readonly kind: 'rejected'; readonly pending: PendingAction };

export class Reconciler<S> {
  readonly #reducer: WireReducer<S>;
  readonly #onReducerError: (error: unknown, action: WireAction) => void;
  #confirmed: S;
  #pending: PendingAction[] = [];
  /** Cache; undefined = stale. Recomputing on read keeps bursts of envelopes cheap. */
  #optimistic: { value: S } | undefined;
  #lastAppliedSeq: number;

  constructor(reducer: WireReducer<S>, initial: S, fromSeq: number, onReducerError: (error: unknown, action: WireAction) => void = () => {}) {
    this.#reducer = reducer;
    this.#onReducerError = onReducerError;
    this.#confirmed = initial;
    this.#lastAppliedSeq = fromSeq;
  }

  get confirmed(): S {
    return this.#confirmed;
  }

  get optimistic(): S {
    if (!this.#optimistic) {
      let state = this.#confirmed;
      for (const p of this.#pending) state = this.#reduce(state, p.action);
      this.#optimistic = { value: state };
    }
    return this.#optimistic.value;
  }

  get pending(): readonly PendingAction[] {
    return this.#pending;
  }

  /**
   * Highest serverSeq reflected in `confirmed` (the snapshot's fromSeq until the first envelope).
   * Because serverSeq is one server-wide counter, channels see sparse sequences; this is only
   * used to refuse applying the same envelope twice (replay overlapping live delivery).
   */
  get lastAppliedSeq(): number {
    return this.#lastAppliedSeq;
  }

  addPending(pending: PendingAction): void {
    this.#pending.push(pending);
    this.#optimistic = undefined;
  }

  /** Removes one pending action without an echo (unsubscribe, channel gone, shutdown). */
  removePending(clientSeq: number): PendingAction | undefined {
    const index = this.#pending.findIndex((p) => p.clientSeq === clientSeq);
    if (index < 0) return undefined;
    const [removed] = this.#pending.splice(index, 1);
    this.#optimistic = undefined;
    return removed;
  }

  clearPending(): PendingAction[] {
    const all = this.#pending;
    this.#pending = [];
    this.#optimistic = undefined;
    return all;
  }

  /** Replaces confirmed state (snapshot recovery). Pending actions stay and are replayed on top. */
  reset(state: S, fromSeq: number): void {
    this.#confirmed = state;
    this.#lastAppliedSeq = fromSeq;
    this.#optimistic = undefined;
  }

  applyEnvelope(envelope: ActionEnvelope, ownClientId: string): EnvelopeOutcome {
    const origin = envelope.origin;
    const own = origin !== undefined && origin.clientId === ownClientId;
    const ownIndex = own ? this.#pending.findIndex((p) => p.clientSeq === origin.clientSeq) : -1;

    if (envelope.rejectionReason !== undefined) {
      // Rejections are not entries of the sequenced log: a hub stamps them with its *current*
      // serverSeq (ours does), which can equal the seq of an action already applied here, and they
      // never change state. So they bypass the duplicate guard, do not advance lastAppliedSeq,
      // and remove only the action they name.
      if (ownIndex < 0) return { kind: 'ignored' }; // someone else's, or one we no longer track
      const [entry] = this.#pending.splice(ownIndex, 1);
      this.#optimistic = undefined;
      return entry ? { kind: 'rejected', pending: entry } : { kind: 'ignored' };
    }

    if (envelope.serverSeq <= this.#lastAppliedSeq) return { kind: 'duplicate' };
    this.#lastAppliedSeq = envelope.serverSeq;

    if (ownIndex >= 0) {
      // Normally ownIndex is 0 (the echo matches the head). Accepted echoes on a channel arrive in
      // application order and the server handles one client's dispatches in order, so anything
      // queued *before* the echoed action that is still pending will never be echoed (dropped by
      // the server, or folded into a recovery snapshot). Dropping it keeps its optimistic effect
      // from lingering forever.
      const skipped = this.#pending.splice(0, ownIndex);
      const [entry] = this.#pending.splice(0, 1);
      this.#optimistic = undefined;
      this.#confirmed = this.#reduce(this.#confirmed, envelope.action);
      if (!entry) return { kind: 'applied' }; // unreachable: ownIndex was a valid index
      return { kind: 'confirmed', pending: entry, skipped };
    }

    // Server-originated, foreign, or our own action that we are no longer tracking (e.g. sent by
    // a previous page load with the same clientId): the server applied it, so must we.
    this.#confirmed = this.#reduce(this.#confirmed, envelope.action);
    this.#optimistic = undefined;
    return { kind: 'applied' };
  }

  #reduce(state: S, action: WireAction): S {
    try {
      return this.#reducer(state, action);
    } catch (error) {
      // Reducers are specified never to throw; if one does, keep the last good state rather
      // than tearing down the connection, and let the host log it.
      this.#onReducerError(error, action);
      return state;
    }
  }
}
