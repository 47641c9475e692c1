/**
 * Who answered each input request, for display. The hub keeps that beside the chat state, not in
 * it (shared/state/answered-by.ts): the snapshot's `_meta` carries the index, and each later
 * `chat/inputCompleted` envelope carries its own stamp. This class folds both and hands the
 * renderer turns whose resolved input-request parts carry the stamp in `_meta["hub/answeredBy"]`
 * again — a display copy only: the view's state stays exactly what the standard reducers make.
 */
import type { ChannelChange } from '../shared/client/channel-view.js';
import type { ActiveTurn, InputRequestPart, ResponsePart, Turn } from '../shared/protocol/state.js';
import { ANSWERED_BY_META, answeredByIn, answerIndexIn, STOPPED_BY_META, withAnswer, type AnsweredBy, type AnswerIndex } from '../shared/state/answered-by.js';

export class AnswerStamps {
  #index: AnswerIndex = {};
  /** Who stopped each cancelled turn (snapshot `_meta["hub/stoppedBy"]`, then `chat/turnCancelled` stamps). */
  #stops: AnswerIndex = {};
  /** Decorated copies per original turn; dropped whenever the index changes. */
  #decorated = new WeakMap<Turn | ActiveTurn, Turn | ActiveTurn>();

  constructor(snapshotMeta: unknown) {
    this.#index = answerIndexIn(snapshotMeta);
    this.#stops = answerIndexIn(snapshotMeta, STOPPED_BY_META);
  }

  /** Who stopped the turn, when the hub recorded it. */
  stoppedBy(turnId: string): AnsweredBy | undefined {
    return this.#stops[turnId];
  }

  /** Folds a view change; true when the index changed. */
  note(change: ChannelChange, snapshotMeta: unknown): boolean {
    if (change.type === 'reset') {
      this.#stops = { ...this.#stops, ...answerIndexIn(snapshotMeta, STOPPED_BY_META) };
      this.#set({ ...this.#index, ...answerIndexIn(snapshotMeta) });
      return true;
    }
    if (change.type !== 'envelope' || change.envelope.rejectionReason !== undefined) return false;
    const action = change.envelope.action as { type: string; requestId?: unknown; turnId?: unknown; _meta?: unknown };
    if (action.type === 'chat/turnCancelled' && typeof action.turnId === 'string') {
      const by = answeredByIn(action._meta);
      if (by) this.#stops = withAnswer(this.#stops, action.turnId, by);
      return false;
    }
    if (action.type !== 'chat/inputCompleted' || typeof action.requestId !== 'string') return false;
    const by = answeredByIn(action._meta);
    if (!by) return false;
    this.#set(withAnswer(this.#index, action.requestId, by));
    return true;
  }

  /** The turn as rendered: resolved input requests carry who answered them. Stable identity. */
  decorate<T extends Turn | ActiveTurn>(turn: T): T {
    const cached = this.#decorated.get(turn);
    if (cached) return cached as T;
    let changed = false;
    const parts = turn.responseParts.map((part): ResponsePart => {
      if (part.kind !== 'inputRequest') return part;
      const input = part as InputRequestPart;
      const by = input.response === undefined ? undefined : this.#index[input.request.id];
      if (!by) return part;
      changed = true;
      const meta = (input as { _meta?: Record<string, unknown> })._meta;
      return { ...input, _meta: { ...meta, [ANSWERED_BY_META]: by } };
    });
    const shown = changed ? { ...turn, responseParts: parts } : turn;
    this.#decorated.set(turn, shown);
    return shown;
  }

  #set(index: AnswerIndex): void {
    this.#index = index;
    this.#decorated = new WeakMap();
  }
}
