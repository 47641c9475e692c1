/**
 * One question of an input form: its label (named in one piece for screen readers), message,
 * hint, presence chip and error line around the field for its kind (form-fields.ts,
 * form-text-field.ts), and how the answer rules' problems are shown at it.
 */
import type { ChatInputAnswerValue } from '../shared/protocol/state.js';
import { el, markdownInto } from './dom.js';
import { booleanField, numberField, selectField, type Field, type FieldSlot, type Q } from './form-fields.js';
import { textField, type TextFieldHooks } from './form-text-field.js';

/** What a question's field tells its form. */
export interface QuestionHooks {
  /** The person moved into (`questionId`) or out of (null) the question. */
  editing(questionId: string | null): void;
  /** The question's draft changed (the form's own function for this question, handed to the field as is). */
  draft(value: ChatInputAnswerValue | undefined): void;
  /** For a text question: its shared-text hooks. */
  text(questionId: string): TextFieldHooks;
}

/** A question's field with its error line. */
export interface QuestionField {
  readonly field: Field;
  readonly error: HTMLElement;
}

export function questionField(requestId: string, question: Q, hooks: QuestionHooks): QuestionField {
  const field = fieldFor(requestId, question, hooks);
  const error = el('div', { class: 'field-error', attrs: { 'data-testid': 'field-error', id: `${field.el.dataset['controlId']}-error`, hidden: 'hidden' } });
  field.el.append(error);
  // Screen readers read the question's text and hint with the field, not only after an error.
  const described = [`${field.el.dataset['controlId']}-message`, `${field.el.dataset['controlId']}-hint`].filter((id) => field.el.querySelector(`[id="${id}"]`)?.textContent);
  // Named in one piece, "Project name, required" (a hidden ", required" span would be read with
  // a pause before its comma), whether the control is an input or a choice group.
  const name = `${(question.title as string | undefined) ?? question.id}${question.required === true ? ', required' : ''}`;
  for (const control of describedControls(field.el)) {
    control.setAttribute('aria-label', name);
    if (described.length > 0) control.setAttribute('aria-describedby', described.join(' '));
    control.dataset['describedby'] = described.join(' ');
  }
  return { field, error };
}

function fieldFor(requestId: string, question: Q, hooks: QuestionHooks): Field {
  const id = `q-${requestId}-${question.id}`.replace(/[^\w-]/g, '_');
  const required = question.required === true;
  const presence = el('span', { class: 'presence', attrs: { 'data-testid': 'presence' } });
  // A choice group is named with aria-label (see `questionField`); only a single field gets a <label for>.
  const single = question.kind === 'text' || question.kind === 'number' || question.kind === 'integer';
  const label = el(
    single ? 'label' : 'span',
    { class: 'q-title', attrs: { for: single ? id : undefined, id: `${id}-label` } },
    (question.title as string | undefined) ?? question.id,
    // The star is for the eye only; the control's own name says ", required" (see `questionField`).
    required ? el('span', { class: 'required', attrs: { 'aria-hidden': 'true' }, text: ' *' }) : null,
  );
  const message = question.message ? el('div', { class: 'q-message markdown', attrs: { id: `${id}-message` } }) : null;
  if (message) markdownInto(message, String(question.message));
  const hint = el('div', { class: 'q-hint muted', attrs: { id: `${id}-hint` } });
  const wrap = el('div', { class: 'question', attrs: { 'data-question': question.id, 'data-kind': question.kind, 'data-control-id': id } }, el('div', { class: 'q-head' }, label, presence), message, hint);
  const focus = (on: boolean): void => hooks.editing(on ? question.id : null);
  wrap.addEventListener('focusin', () => focus(true));
  wrap.addEventListener('focusout', (e) => {
    if (!wrap.contains(e.relatedTarget as Node | null)) focus(false);
  });
  const slot: FieldSlot = { question, id, wrap, presence, hint, required, draft: hooks.draft };
  switch (question.kind) {
    case 'text':
      return textField(slot, hooks.text(question.id));
    case 'number':
    case 'integer':
      return numberField(slot);
    case 'boolean':
      return booleanField(slot);
    case 'single-select':
    case 'multi-select':
      return selectField(slot);
    default: {
      wrap.append(el('div', { class: 'muted', text: `This app cannot show a "${question.kind}" question; it will be skipped.` }));
      return { question, el: wrap, presence, value: () => undefined, show: () => {}, setDisabled: () => {}, destroy: () => {} };
    }
  }
}

/** Shows each question's advice (or none) at its field, marking its controls invalid for screen readers. */
export function showProblems(fields: ReadonlyMap<string, Field>, errors: ReadonlyMap<string, HTMLElement>, byQuestion: ReadonlyMap<string, string>): void {
  for (const [id, error] of errors) {
    const advice = byQuestion.get(id);
    const field = fields.get(id);
    error.textContent = advice ?? '';
    error.hidden = advice === undefined;
    field?.el.classList.toggle('invalid', advice !== undefined);
    for (const control of field ? describedControls(field.el) : []) {
      const base = control.dataset['describedby'] ?? '';
      if (advice !== undefined) control.setAttribute('aria-invalid', 'true');
      else control.removeAttribute('aria-invalid');
      const ids = [advice !== undefined ? error.id : '', base].filter(Boolean).join(' ');
      if (ids) control.setAttribute('aria-describedby', ids);
      else control.removeAttribute('aria-describedby');
    }
  }
}

/** What carries a question's description: its choice group, or its one input. */
function describedControls(wrap: HTMLElement): HTMLElement[] {
  const group = wrap.querySelector<HTMLElement>('[role=radiogroup], [role=group]');
  if (group) return [group];
  return [...wrap.querySelectorAll<HTMLElement>('input, textarea')];
}
