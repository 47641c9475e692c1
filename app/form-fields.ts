/**
 * The form's non-text fields (number, yes/no, single and multi select) and what every field of
 * input-form.ts offers. Each field shows the synced answer whenever it arrives, focused or not
 * (why that is right: form-draft-sync.ts); its own changes are drafted at once, so what it shows
 * and what Submit reads from it are the shared state.
 */
import type { ChatInputAnswer, ChatInputAnswerValue, ChatInputQuestion } from '../shared/protocol/state.js';
import { answerProblem } from '../shared/state/answer-rules.js';
import { el } from './dom.js';
import { freeTextOf, pickedIds } from './form-draft-sync.js';
import type { RemoteMark } from './text-binding.js';

export type Q = ChatInputQuestion & Record<string, unknown>;
export interface Option {
  id: string;
  label: string;
  description?: string;
  recommended?: boolean;
}

export interface Field {
  readonly question: Q;
  readonly el: HTMLElement;
  readonly presence: HTMLElement;
  /** The answer as this tab currently shows it, or undefined when empty. */
  value(): ChatInputAnswerValue | undefined;
  /** Shows the synced answer (the latest shared draft), whether or not the field has the focus. */
  show(answer: ChatInputAnswer | undefined): void;
  setDisabled(disabled: boolean): void;
  destroy(): void;
  /** Others' carets and selections (shared text answers only, once bound to their Y.Text). */
  showCursors?(marks: readonly RemoteMark[]): void;
  /** When this tab last typed in it (text answers), for keeping a typist's text (kept-text.ts). */
  typedAt?(): number;
}

/** Where a field is built: its wrapper, presence chip and hint line, and how it drafts a change. */
export interface FieldSlot {
  readonly question: Q;
  readonly id: string;
  readonly wrap: HTMLElement;
  readonly presence: HTMLElement;
  readonly hint: HTMLElement;
  readonly required: boolean;
  readonly draft: (value: ChatInputAnswerValue | undefined) => void;
}

/**
 * No answer synced yet leaves a field's defaults (a fresh form shows them); an answer that was
 * there and is gone (a teammate unticked everything) clears the field as it cleared theirs.
 */
function answered(answer: ChatInputAnswer | undefined): answer is Exclude<ChatInputAnswer, { state: 'skipped' }> {
  return answer !== undefined && answer.state !== 'skipped';
}

export function numberField(s: FieldSlot): Field {
  const { question, id, wrap, hint, required } = s;
  const input = el('input', {
    attrs: {
      id,
      type: 'number',
      step: question.kind === 'integer' ? '1' : 'any',
      min: numAttr(question['min']),
      max: numAttr(question['max']),
      required: required ? 'required' : undefined,
      'aria-required': required ? 'true' : undefined,
    },
  });
  if (typeof question['defaultValue'] === 'number') input.value = String(question['defaultValue']);
  hint.textContent = rangeHint(question['min'], question['max'], question.kind === 'integer' ? 'whole number' : 'number');
  const read = (): ChatInputAnswerValue | undefined => (input.value === '' || Number.isNaN(input.valueAsNumber) ? undefined : { kind: 'number', value: input.valueAsNumber });
  // A value no draft may carry (2.5 for a whole number: the hub's rules refuse it) is not sent and
  // not overwritten: it stays here while the person corrects it, and Submit names the problem.
  const undraftable = (): boolean => {
    const value = read();
    return value !== undefined && answerProblem(question, { state: 'draft', value }) !== undefined;
  };
  input.addEventListener('input', () => {
    if (!undraftable()) s.draft(read());
  });
  wrap.append(input);
  let synced = false;
  return {
    question,
    el: wrap,
    presence: s.presence,
    value: read,
    show: (a) => {
      if (undraftable()) return;
      if (answered(a) && a.value.kind === 'number') {
        synced = true;
        const v = (a.value as { value: number }).value;
        // "2." being typed reads as 2: an equal number is left alone, so is the half-typed text.
        if (input.valueAsNumber !== v) input.value = String(v);
      } else if (a === undefined && synced && input.value !== '') {
        // A half-typed number ("-", "1e") reads as '' and was drafted as none: it stays.
        input.value = '';
      }
    },
    setDisabled: (d) => (input.disabled = d),
    destroy: () => {},
  };
}

export function booleanField(s: FieldSlot): Field {
  const { question, id, wrap, required } = s;
  // A real yes/no choice: two radios, neither picked until someone answers (or a default).
  const group = el('div', { class: 'options yes-no', attrs: { role: 'radiogroup', id, 'aria-required': required ? 'true' : undefined } });
  const yes = el('input', { attrs: { type: 'radio', name: id, value: 'yes', 'data-testid': `yes-${question.id}` } });
  const no = el('input', { attrs: { type: 'radio', name: id, value: 'no', 'data-testid': `no-${question.id}` } });
  if (typeof question['defaultValue'] === 'boolean') (question['defaultValue'] ? yes : no).checked = true;
  const read = (): ChatInputAnswerValue | undefined => (yes.checked ? { kind: 'boolean', value: true } : no.checked ? { kind: 'boolean', value: false } : undefined);
  for (const r of [yes, no]) r.addEventListener('change', () => s.draft(read()));
  group.append(el('label', { class: 'option' }, yes, ' Yes'), el('label', { class: 'option' }, no, ' No'));
  wrap.append(group);
  let synced = false;
  return {
    question,
    el: wrap,
    presence: s.presence,
    value: read,
    show: (a) => {
      if (answered(a) && a.value.kind === 'boolean') {
        synced = true;
        const v = (a.value as { value: boolean }).value;
        yes.checked = v;
        no.checked = !v;
      } else if (a === undefined && synced) {
        yes.checked = false;
        no.checked = false;
      }
    },
    setDisabled: (d) => {
      yes.disabled = d;
      no.disabled = d;
    },
    destroy: () => {},
  };
}

export function selectField(s: FieldSlot): Field {
  const { question, id, wrap, hint } = s;
  const multi = question.kind === 'multi-select';
  const options = (question['options'] as Option[] | undefined) ?? [];
  const freeform = question['allowFreeformInput'] === true;
  const group = el('div', { class: 'options', attrs: { role: multi ? 'group' : 'radiogroup', id, 'aria-required': question.required === true && !multi ? 'true' : undefined } });
  const boxes = options.map((o) => {
    const input = el('input', { attrs: { type: multi ? 'checkbox' : 'radio', name: id, value: o.id } });
    if (!multi && o.recommended) input.checked = true;
    group.append(
      el(
        'label',
        { class: 'option' },
        input,
        ' ',
        el('span', { text: o.label }),
        o.recommended ? el('span', { class: 'badge', text: 'recommended' }) : null,
        o.description ? el('span', { class: 'muted small', text: ` — ${o.description}` }) : null,
      ),
    );
    return input;
  });
  const other = freeform ? el('input', { attrs: { type: 'text', placeholder: multi ? 'Other (in addition)' : 'Other (instead of an option)', 'aria-label': 'Other', maxlength: '1000' } }) : undefined;
  if (other) group.append(other);
  if (multi) hint.textContent = rangeHint(question['min'], question['max'], 'selections');
  const read = (): ChatInputAnswerValue | undefined => {
    const picked = boxes.filter((b) => b.checked).map((b) => b.value);
    const extra = other?.value.trim() ?? '';
    if (multi) {
      if (picked.length === 0 && !extra) return undefined;
      return extra ? { kind: 'selected-many', value: picked, freeformValues: [extra] } : { kind: 'selected-many', value: picked };
    }
    if (extra && picked.length === 0) return { kind: 'selected', value: extra, freeformValues: [extra] };
    return picked[0] !== undefined ? { kind: 'selected', value: picked[0] } : undefined;
  };
  // A multi-select with a maximum cannot take one more tick than allowed: the other boxes are
  // disabled while the limit is reached (free text counts as a selection, as on the hub).
  const max = multi && typeof question['max'] === 'number' ? (question['max'] as number) : undefined;
  let allDisabled = false;
  const enforceMax = (): void => {
    const count = boxes.filter((b) => b.checked).length + ((other?.value.trim() ?? '') !== '' ? 1 : 0);
    for (const b of boxes) b.disabled = allDisabled || (max !== undefined && !b.checked && count >= max);
    if (other) other.disabled = allDisabled || (max !== undefined && other.value.trim() === '' && count >= max);
  };
  for (const b of boxes) {
    b.addEventListener('change', () => {
      if (!multi && other) other.value = '';
      enforceMax();
      s.draft(read());
    });
  }
  // "Other" is drafted on every keystroke like any change, so the synced answer is never behind
  // what this tab shows (a debounce would leave a window where it is).
  other?.addEventListener('input', () => {
    if (!multi && other.value.trim()) for (const b of boxes) b.checked = false;
    enforceMax();
    s.draft(read());
  });
  wrap.append(group);
  let synced = false;
  return {
    question,
    el: wrap,
    presence: s.presence,
    value: read,
    show: (a) => {
      if (!answered(a) && (a !== undefined || !synced)) return;
      synced = true;
      const ids = pickedIds(a);
      for (const b of boxes) b.checked = ids.includes(b.value);
      // The draft holds the trimmed text: "Zig " being typed is the same answer as "Zig".
      const free = freeTextOf(a);
      if (other && other.value.trim() !== free) setTextKeepingCaret(other, free);
      enforceMax();
    },
    setDisabled: (d) => {
      allDisabled = d;
      enforceMax();
    },
    destroy: () => {},
  };
}

export function numAttr(v: unknown): string | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined;
}

export function rangeHint(min: unknown, max: unknown, unit: string): string {
  const lo = typeof min === 'number' ? min : undefined;
  const hi = typeof max === 'number' ? max : undefined;
  if (lo !== undefined && hi !== undefined) return `${lo}–${hi} ${unit}`;
  const numeric = unit === 'number' || unit === 'whole number';
  if (lo !== undefined) return numeric ? `a ${unit}, ${lo} or more` : `at least ${lo} ${unit}`;
  if (hi !== undefined) return numeric ? `a ${unit}, ${hi} or less` : `at most ${hi} ${unit}`;
  return numeric ? `a ${unit}` : '';
}

/**
 * Sets a text input's value only when it differs (an equal assignment would still move the caret
 * in some browsers), keeping the caret where it was when the input has the focus.
 */
export function setTextKeepingCaret(input: HTMLInputElement | HTMLTextAreaElement, value: string): void {
  if (input.value === value) return;
  const focused = document.activeElement === input;
  const start = input.selectionStart;
  const end = input.selectionEnd;
  input.value = value;
  if (!focused || start === null || end === null) return;
  try {
    input.setSelectionRange(Math.min(start, value.length), Math.min(end, value.length));
  } catch {
    // input types without a selection API (email, date)
  }
}
