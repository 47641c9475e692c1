/**
 * Submit asks first when the form is not settled (issue 28): a teammate changed an answer in the
 * last moments (the submitter may not have seen it), or someone is still typing a text answer
 * (presence says they are in it, or its shared text just changed). The rules are pure
 * (`submitWarnings`, no DOM); `SubmitGuardBar` (submit-guard-bar.ts) is the inline confirmation.
 */
import type { EditorPresence, RemoteChange } from './form-draft-sync.js';

/** A teammate's change this recent (ms) makes Submit ask. */
export const RECENT_CHANGE_MS = 3_000;

export interface GuardQuestion {
  readonly id: string;
  readonly title: string;
  readonly kind: string;
}

export interface GuardInput {
  readonly now: number;
  readonly questions: readonly GuardQuestion[];
  /** Teammates' changes (already limited to the recent ones or not: older ones are ignored here). */
  readonly changes: readonly RemoteChange[];
  /** Everyone else's presence: who is editing which question. */
  readonly editing: readonly EditorPresence[];
  /** The answer as the form shows it now, in words ("SEV3"), for the change lines. */
  readonly shownText: (questionId: string) => string;
}

function names(list: readonly string[]): string {
  const unique = [...new Set(list)];
  return unique.length <= 1 ? (unique[0] ?? 'Someone') : `${unique.slice(0, -1).join(', ')} and ${unique.at(-1)}`;
}

/** One line per unsettled answer; empty when Submit may go ahead without asking. */
export function submitWarnings(input: GuardInput): string[] {
  const lines: string[] = [];
  const recent = input.changes.filter((c) => input.now - c.at <= RECENT_CHANGE_MS);
  for (const q of input.questions) {
    const changes = recent.filter((c) => c.questionId === q.id);
    if (q.kind === 'text') {
      const typists = [...input.editing.filter((e) => e.question === q.id).map((e) => e.name), ...changes.map((c) => c.who ?? 'Someone')];
      if (typists.length === 0) continue;
      const who = names(typists);
      lines.push(`${who} ${who.includes(' and ') ? 'are' : 'is'} still typing in “${q.title}”.`);
      continue;
    }
    const last = changes.at(-1);
    if (!last) continue;
    const seconds = Math.max(0, Math.round((input.now - last.at) / 1000));
    const shown = input.shownText(q.id);
    lines.push(`${last.who ?? 'A teammate'} changed “${q.title}” to ${shown === '—' ? 'no answer' : shown} ${seconds === 0 ? 'just now' : `${seconds} s ago`}.`);
  }
  return lines;
}
