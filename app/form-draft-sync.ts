/**
 * How an open form follows the shared draft (issue 28): every field shows the latest synced
 * answer, focused or not, and the form remembers which teammate changed which answer when, so
 * Submit can say so (submit-guard.ts).
 *
 * Why showing the synced answer is always right, even under the cursor: a tab's own change is
 * dispatched at once and is part of the optimistic state it renders (confirmed state with its
 * pending actions on top), so the synced answer is never older than what this tab did; when the
 * echoes are in, every tab holds the hub's order. Text answers are the exception only in how
 * they are shown: their Y.Text binding (text-binding.ts) merges and keeps the caret.
 */
import type { ChannelChange } from '../shared/client/channel-view.js';
import type { ChatInputAnswer } from '../shared/protocol/state.js';

/** A teammate's change of one answer, as this tab received it (`at` on this tab's clock). */
export interface RemoteChange {
  readonly questionId: string;
  /** Who, as presence named them when the change arrived; undefined when presence did not say. */
  readonly who: string | undefined;
  readonly at: number;
}

/** Someone else's presence in the form: the question they are editing (focused), if any. */
export interface EditorPresence {
  readonly name: string;
  readonly question: string | null | undefined;
}

/**
 * The question of a teammate's draft in `requestId`, or undefined: this tab's own echoes, drafts
 * the hub writes itself (the mirror of the shared text has no origin; its edits arrive through
 * the Y.Text), rejections and other requests are not a teammate's change.
 */
export function teammateDraftOf(change: ChannelChange, requestId: string, ownClientId: string): string | undefined {
  if (change.type !== 'envelope') return undefined;
  const { envelope } = change;
  if (envelope.rejectionReason !== undefined || !envelope.origin || envelope.origin.clientId === ownClientId) return undefined;
  const action = envelope.action as { type: string; requestId?: unknown; questionId?: unknown };
  if (action.type !== 'chat/inputAnswerChanged' || action.requestId !== requestId || typeof action.questionId !== 'string') return undefined;
  return action.questionId;
}

/** Who else changed which answer of one open request, and who is editing what now. */
export class DraftActivity {
  readonly #changes = new Map<string, RemoteChange>();
  /** Question → the last person presence showed editing it (a change may arrive after they left it). */
  readonly #lastEditor = new Map<string, string>();
  #editing: readonly EditorPresence[] = [];

  /** Presence changed: who is editing which question now. */
  notePresence(editors: readonly EditorPresence[]): void {
    this.#editing = editors;
    for (const e of editors) if (e.question) this.#lastEditor.set(e.question, e.name);
  }

  /** A teammate changed `questionId` (a draft envelope, or a remote edit of its shared text). */
  noteChange(questionId: string, at: number): void {
    const now = this.#editing.find((e) => e.question === questionId)?.name;
    this.#changes.set(questionId, { questionId, who: now ?? this.#lastEditor.get(questionId), at });
  }

  /** Changes received within `withinMs` before `now`, oldest first. */
  recent(now: number, withinMs: number): RemoteChange[] {
    return [...this.#changes.values()].filter((c) => now - c.at <= withinMs).sort((a, b) => a.at - b.at);
  }

  /** Everyone else's presence, as last noted. */
  get editing(): readonly EditorPresence[] {
    return this.#editing;
  }
}

/** The option ids a synced choice answer picks (a single choice's free text picks none). */
export function pickedIds(answer: ChatInputAnswer | undefined): string[] {
  if (!answer || answer.state === 'skipped') return [];
  const v = answer.value as { kind: string; value: unknown };
  if (v.kind === 'selected-many' && Array.isArray(v.value)) return (v.value as unknown[]).map(String);
  return v.kind === 'selected' ? [String(v.value)] : [];
}

/** The free text of a synced choice answer ("Other"), or ''. */
export function freeTextOf(answer: ChatInputAnswer | undefined): string {
  if (!answer || answer.state === 'skipped') return '';
  return (answer.value as { freeformValues?: string[] }).freeformValues?.[0] ?? '';
}
