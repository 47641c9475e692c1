/**
 * A text question's field: an input (or textarea) that drafts its value after a short pause and,
 * once the form's shared text is joined (form-collab.ts), is bound to that question's Y.Text, so
 * several people type into it at once, with their carets drawn in it.
 */
import type { ChatInputAnswer } from '../shared/protocol/state.js';
import { applyTextDiff, type CollabDoc } from './collab.js';
import { el } from './dom.js';
import { numAttr, rangeHint, setTextKeepingCaret, type Field, type FieldSlot } from './form-fields.js';
import { bindText, cursorOf, RemoteCursorOverlay, type SharedCursor } from './text-binding.js';

/** What a text field tells its form and asks of it. */
export interface TextFieldHooks {
  /** The request's current answer to this question (the shared draft). */
  answerNow(): ChatInputAnswer | undefined;
  /** Someone else typed in the shared text. */
  remoteEdit(): void;
  /** The shared text changed: carets drawn in the fields may have moved. */
  cursorsChanged(): void;
  /** This tab's caret or selection in the field moved. */
  cursorMoved(cursor: SharedCursor | null): void;
}

/** A text field that can be bound to the form's shared text once it is joined. */
export type TextField = Field & { bind(doc: CollabDoc): void };

export function textField({ question, id, wrap, presence, hint, required, draft }: FieldSlot, hooks: TextFieldHooks): TextField {
  const format = typeof question['format'] === 'string' ? (question['format'] as string) : undefined;
  const type = format === 'email' ? 'email' : format === 'uri' ? 'url' : format === 'date' ? 'date' : format === 'date-time' ? 'datetime-local' : undefined;
  const attrs = { id, minlength: numAttr(question['min']), maxlength: numAttr(question['max']), required: required ? 'required' : undefined, 'aria-required': required ? 'true' : undefined, 'data-testid': `text-${question.id}` };
  const input: HTMLInputElement | HTMLTextAreaElement = type ? el('input', { attrs: { ...attrs, type } }) : el('textarea', { attrs: { ...attrs, rows: '2' } });
  const counter = el('span', { class: 'counter muted' });
  const refreshCount = (): void => {
    const max = question['max'];
    counter.textContent = typeof max === 'number' ? `${input.value.length} / ${max}` : '';
  };
  const lengthHint = rangeHint(question['min'], question['max'], 'characters');
  hint.textContent = [format ? `Format: ${format}` : '', lengthHint].filter(Boolean).join(' · ');
  wrap.append(input, counter);
  const defaultValue = typeof question['defaultValue'] === 'string' ? (question['defaultValue'] as string) : '';
  let unbind: (() => void) | undefined;
  let bound = false;
  let boundTo: CollabDoc | undefined;
  let draftTimer: number | undefined;
  let typedAt = 0;
  const field: TextField = {
    question,
    el: wrap,
    presence,
    value: () => (input.value === '' ? undefined : { kind: 'text', value: input.value }),
    show: (a) => {
      const text = a && a.state !== 'skipped' && a.value.kind === 'text' ? (a.value as { value: string }).value : undefined;
      // While bound to the shared text, the Y.Text is the truth for this field (merged, caret
      // kept; the draft only tells it what is durable); before that, a typed change still
      // waiting for its debounced draft is newer.
      if (bound) boundTo?.confirmDurable(question.id, text ?? '');
      if (bound || draftTimer !== undefined) return;
      if (text !== undefined) setTextKeepingCaret(input, text);
      else if (!a && input.value === '' && defaultValue) input.value = defaultValue;
      refreshCount();
    },
    typedAt: () => typedAt,
    setDisabled: (d) => {
      input.disabled = d;
      input.readOnly = d;
    },
    destroy: () => {
      unbind?.();
      window.clearTimeout(draftTimer);
    },
    bind: (doc: CollabDoc) => {
      const ytext = doc.text(question.id);
      // Keys typed before the shared text was joined (their debounced draft may not even have
      // gone out) go into it; binding would otherwise show the older shared text over them.
      if (typedAt > 0 && input.value !== ytext.toString()) {
        window.clearTimeout(draftTimer);
        draftTimer = undefined;
        doc.doc.transact(() => applyTextDiff(ytext, input.value), 'local');
      }
      bound = true;
      boundTo = doc;
      field.show(hooks.answerNow());
      // The hub seeds each Y.Text with the current draft (or the question's default) once.
      unbind = bindText(ytext, input, () => refreshCount());
      ytext.observe((event) => {
        // 'remote' is collab.ts's origin for what the hub sent: someone else's keystrokes.
        if (event.transaction.origin === 'remote') hooks.remoteEdit();
        refreshCount();
        hooks.cursorsChanged();
      });
      refreshCount();
      // Remote carets and selections, and ours for the others (relative positions over awareness).
      const overlay = new RemoteCursorOverlay(input);
      field.showCursors = (marks) => overlay.show(marks);
      let frame = 0;
      const publish = (): void => {
        cancelAnimationFrame(frame);
        frame = requestAnimationFrame(() => {
          if (document.activeElement === input) hooks.cursorMoved(cursorOf(ytext, question.id, input));
        });
      };
      for (const type of ['select', 'keyup', 'mouseup', 'input', 'focus']) input.addEventListener(type, publish);
      hooks.cursorsChanged();
    },
  };
  // Until (or unless) the shared text is available, type straight into the AHP draft.
  input.addEventListener('input', () => {
    refreshCount();
    typedAt = Date.now();
    if (bound) return;
    window.clearTimeout(draftTimer);
    draftTimer = window.setTimeout(() => {
      draftTimer = undefined;
      draft(input.value === '' ? undefined : { kind: 'text', value: input.value });
    }, 150);
  });
  return field;
}
