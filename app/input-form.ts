/**
 * An input request in its place in the response stream: a form for every question kind while it
 * is open, the answered record once it is resolved.
 *
 * Collaboration: every change of a non-text answer is dispatched at once as a
 * `chat/inputAnswerChanged` draft, so all tabs see the same form; text answers live in a Y.Text
 * per question (synced through `x-collab/*`), which the hub merges character by character and
 * mirrors into the drafts for AHP clients without Yjs. Presence shows who views the request and
 * which question each person is editing. Accepting sends the answers as this tab shows them.
 */
import type { ChatInputAnswer, ChatInputAnswerValue, ChatInputQuestion, ChatInputRequest, InputRequestPart, ResponsePart } from '../shared/protocol/state.js';
import { CollabDoc, presenceName } from './collab.js';
import { bindText, cursorOf, RemoteCursorOverlay, resolveCursor, type RemoteMark, type SharedCursor } from './text-binding.js';
import { el, markdownInto, replaceChildren } from './dom.js';
import { answeredByOf, answeredByText, colorFor, FROM_APP_META } from './format.js';
import { submitProblems } from '../shared/state/answer-rules.js';
import { answerInWords } from '../shared/state/transcript.js';
import { safeHref } from './markdown.js';
import type { PartContext, PartView } from './parts.js';

type Q = ChatInputQuestion & Record<string, unknown>;
interface Option {
  id: string;
  label: string;
  description?: string;
  recommended?: boolean;
}

interface Field {
  readonly question: Q;
  readonly el: HTMLElement;
  readonly presence: HTMLElement;
  /** The answer as this tab currently shows it, or undefined when empty. */
  value(): ChatInputAnswerValue | undefined;
  /** Shows a synced draft (skipped while the person here is editing this field). */
  show(answer: ChatInputAnswer | undefined): void;
  setDisabled(disabled: boolean): void;
  destroy(): void;
  /** Others' carets and selections (shared text answers only, once bound to their Y.Text). */
  showCursors?(marks: readonly RemoteMark[]): void;
}

export class InputRequestView implements PartView {
  readonly el: HTMLElement;
  readonly #fields = new Map<string, Field>();
  readonly #viewing = el('div', { class: 'viewing', attrs: { 'data-testid': 'request-presence' } });
  readonly #status = el('div', { class: 'form-status', attrs: { role: 'status', 'aria-live': 'polite' } });
  readonly #buttons: HTMLButtonElement[] = [];
  readonly #errors = new Map<string, HTMLElement>();
  /** After a refused submit, problems are re-checked on every change so fixed ones disappear. */
  #checking = false;
  #request: ChatInputRequest;
  #resolved = false;
  /** The resolved record was built from this `_meta` (the who-answered stamp is in it). */
  #recordMeta: unknown;
  #busy = false;
  #urlOpened = false;
  #collab: CollabDoc | undefined;
  /** The text fields' values went out as plain drafts once the shared text was lost. */
  #collabFallback = false;
  #collabOff: (() => void) | undefined;
  #editing: string | null = null;
  #cursor: SharedCursor | null = null;

  constructor(
    private readonly ctx: PartContext,
    part: InputRequestPart,
    active: boolean,
  ) {
    this.#request = part.request;
    this.el = el('div', { class: 'part input-request card', attrs: { 'data-request': part.request.id } });
    const recheck = (): void => {
      if (!this.#checking || this.#resolved) return;
      // Text fields draft after a short pause; check what the field shows now.
      if (this.#validate() === 0) {
        this.#checking = false;
        this.#setStatus('');
      }
    };
    this.el.addEventListener('input', recheck);
    this.el.addEventListener('change', recheck);
    if (part.response === undefined && active) this.#buildForm();
    else this.#buildRecord(part);
  }

  update(raw: ResponsePart, active: boolean): void {
    const part = raw as InputRequestPart;
    if (this.#resolved) {
      // The who-answered stamp may arrive after the record (the answer's echo carries it).
      if (part.request !== this.#request || part._meta !== this.#recordMeta) this.#buildRecord(part);
      return;
    }
    if (part.response !== undefined || !active) {
      this.#buildRecord(part);
      return;
    }
    // A snapshot after a reconnect brings new objects for the same questions: keep the form then.
    if (part.request.questions !== this.#request.questions && JSON.stringify(part.request.questions) !== JSON.stringify(this.#request.questions)) {
      this.#request = part.request;
      this.#buildForm();
      return;
    }
    this.#request = part.request;
    for (const [id, field] of this.#fields) field.show(part.request.answers?.[id]);
  }

  // ─── Open form ─────────────────────────────────────────────────────────────

  #buildForm(): void {
    this.#destroyFields();
    const request = this.#request;
    const canWrite = this.ctx.app.canWrite;
    // A viewer follows along: "needs your input" would ask them for something they cannot give.
    const heading = canWrite ? 'The agent needs your input' : 'The agent is waiting for an answer';
    const children: Array<HTMLElement | null> = [el('div', { class: 'request-head' }, el('h2', { class: 'request-title', text: heading }), this.#viewing)];
    if (request.message) {
      const msg = el('div', { class: 'markdown request-message' });
      markdownInto(msg, request.message);
      children.push(msg);
    }
    if (request.url) children.push(this.#urlBlock(request.url));
    for (const question of request.questions ?? []) {
      const field = this.#field(question as Q);
      this.#fields.set(question.id, field);
      field.show(request.answers?.[question.id]);
      children.push(field.el);
    }
    if (!canWrite) children.push(el('p', { class: 'muted', attrs: { 'data-testid': 'read-only' }, text: 'You have read-only access: you can follow along but not answer.' }));
    const acceptLabel = request.url && !request.questions?.length ? 'Mark as done' : 'Submit answers';
    const accept = this.#button(acceptLabel, 'primary', 'accept');
    const decline = this.#button('Decline', '', 'decline');
    const cancel = this.#button('Cancel', 'link', 'cancel');
    this.#confirmEnd.hidden = true;
    children.push(el('div', { class: 'actions' }, accept, decline, cancel), this.#confirmEnd, this.#status);
    replaceChildren(this.el, ...children);
    for (const f of this.#fields.values()) f.setDisabled(!canWrite);
    this.#refreshButtons();
    this.#startCollab();
  }

  #button(text: string, cls: string, response: 'accept' | 'decline' | 'cancel'): HTMLButtonElement {
    const b = el('button', {
      class: cls,
      attrs: { type: 'button', 'data-response': response },
      text,
      ...(this.ctx.app.canWrite ? {} : { title: 'Viewers cannot answer' }),
      on: { click: () => (response === 'accept' ? void this.#complete(response) : this.#askToEnd(response)) },
    });
    this.#buttons.push(b);
    return b;
  }

  /** Space for "Decline for everyone?" — ending a shared form needs a second, deliberate click. */
  readonly #confirmEnd = el('div', { class: 'confirm-end', attrs: { 'data-testid': 'confirm-end-bar', role: 'group', 'aria-label': 'Confirm ending the request', hidden: 'hidden' } });

  #askToEnd(response: 'decline' | 'cancel'): void {
    const verb = response === 'decline' ? 'Decline' : 'Cancel';
    const yes = el('button', {
      class: 'danger',
      attrs: { type: 'button', 'data-testid': 'confirm-end' },
      text: `${verb} for everyone`,
      on: {
        click: () => {
          this.#confirmEnd.hidden = true;
          void this.#complete(response);
        },
      },
    });
    const keep = el('button', {
      class: 'link',
      attrs: { type: 'button', 'data-testid': 'keep-form' },
      text: 'Keep answering',
      on: {
        click: () => {
          this.#confirmEnd.hidden = true;
        },
      },
    });
    replaceChildren(this.#confirmEnd, el('span', { text: `${response === 'decline' ? 'Declining' : 'Cancelling'} ends this request for everyone in this chat, and the agent is told. ` }), yes, ' ', keep);
    this.#confirmEnd.hidden = false;
    yes.focus();
  }

  #refreshButtons(): void {
    for (const b of this.#buttons) {
      const needsUrl = b.dataset['response'] === 'accept' && this.#request.url !== undefined && !this.#urlOpened && !this.#request.questions?.length;
      b.disabled = !this.ctx.app.canWrite || this.#busy || needsUrl;
    }
  }

  #urlBlock(url: string): HTMLElement {
    const href = safeHref(url);
    const open = el('button', {
      class: 'primary',
      attrs: { type: 'button', disabled: href && this.ctx.app.canWrite ? undefined : 'disabled', 'data-testid': 'open-url' },
      text: 'Open link',
      on: {
        click: () => {
          if (!href) return;
          window.open(href, '_blank', 'noopener,noreferrer');
          this.#urlOpened = true;
          this.#refreshButtons();
          this.#setStatus('When you are done on that page, come back and mark it as done.');
        },
      },
    });
    return el('div', { class: 'url-request' }, el('div', {}, 'Link: ', href ? el('code', { text: href }) : el('span', { class: 'md-inert-link', text: `${url} (not an http(s) link; not opened)` })), el('div', { class: 'actions' }, open));
  }

  #field(question: Q): Field {
    const field = this.#fieldFor(question);
    const error = el('div', { class: 'field-error', attrs: { 'data-testid': 'field-error', id: `${field.el.dataset['controlId']}-error`, hidden: 'hidden' } });
    field.el.append(error);
    this.#errors.set(question.id, error);
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
    return field;
  }

  #fieldFor(question: Q): Field {
    const id = `q-${this.#request.id}-${question.id}`.replace(/[^\w-]/g, '_');
    const required = question.required === true;
    const presence = el('span', { class: 'presence', attrs: { 'data-testid': 'presence' } });
    // A choice group is named with aria-label (see `#field`); only a single field gets a <label for>.
    const single = question.kind === 'text' || question.kind === 'number' || question.kind === 'integer';
    const label = el(
      single ? 'label' : 'span',
      { class: 'q-title', attrs: { for: single ? id : undefined, id: `${id}-label` } },
      (question.title as string | undefined) ?? question.id,
      // The star is for the eye only; the control's own name says ", required" (see `#field`).
      required ? el('span', { class: 'required', attrs: { 'aria-hidden': 'true' }, text: ' *' }) : null,
    );
    const message = question.message ? el('div', { class: 'q-message markdown', attrs: { id: `${id}-message` } }) : null;
    if (message) markdownInto(message, String(question.message));
    const hint = el('div', { class: 'q-hint muted', attrs: { id: `${id}-hint` } });
    const wrap = el('div', { class: 'question', attrs: { 'data-question': question.id, 'data-kind': question.kind, 'data-control-id': id } }, el('div', { class: 'q-head' }, label, presence), message, hint);
    const focus = (on: boolean): void => this.#setEditing(on ? question.id : null);
    wrap.addEventListener('focusin', () => focus(true));
    wrap.addEventListener('focusout', (e) => {
      if (!wrap.contains(e.relatedTarget as Node | null)) focus(false);
    });
    const draft = (value: ChatInputAnswerValue | undefined): void => void this.#draft(question.id, value);
    switch (question.kind) {
      case 'text':
        return this.#textField(question, id, wrap, presence, hint, required);
      case 'number':
      case 'integer': {
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
        input.addEventListener('input', () => draft(read()));
        wrap.append(input);
        return {
          question,
          el: wrap,
          presence,
          value: read,
          show: (a) => {
            if (document.activeElement === input) return;
            if (a && a.state !== 'skipped' && a.value.kind === 'number') input.value = String((a.value as { value: number }).value);
          },
          setDisabled: (d) => (input.disabled = d),
          destroy: () => {},
        };
      }
      case 'boolean': {
        // A real yes/no choice: two radios, neither picked until someone answers (or a default).
        const group = el('div', { class: 'options yes-no', attrs: { role: 'radiogroup', id, 'aria-required': required ? 'true' : undefined } });
        const yes = el('input', { attrs: { type: 'radio', name: id, value: 'yes', 'data-testid': `yes-${question.id}` } });
        const no = el('input', { attrs: { type: 'radio', name: id, value: 'no', 'data-testid': `no-${question.id}` } });
        if (typeof question['defaultValue'] === 'boolean') (question['defaultValue'] ? yes : no).checked = true;
        const read = (): ChatInputAnswerValue | undefined => (yes.checked ? { kind: 'boolean', value: true } : no.checked ? { kind: 'boolean', value: false } : undefined);
        for (const r of [yes, no]) r.addEventListener('change', () => draft(read()));
        group.append(el('label', { class: 'option' }, yes, ' Yes'), el('label', { class: 'option' }, no, ' No'));
        wrap.append(group);
        return {
          question,
          el: wrap,
          presence,
          value: read,
          show: (a) => {
            if (a && a.state !== 'skipped' && a.value.kind === 'boolean') {
              const v = (a.value as { value: boolean }).value;
              yes.checked = v;
              no.checked = !v;
            }
          },
          setDisabled: (d) => {
            yes.disabled = d;
            no.disabled = d;
          },
          destroy: () => {},
        };
      }
      case 'single-select':
      case 'multi-select':
        return this.#selectField(question, id, wrap, presence, hint, draft);
      default: {
        wrap.append(el('div', { class: 'muted', text: `This app cannot show a "${question.kind}" question; it will be skipped.` }));
        return { question, el: wrap, presence, value: () => undefined, show: () => {}, setDisabled: () => {}, destroy: () => {} };
      }
    }
  }

  #textField(question: Q, id: string, wrap: HTMLElement, presence: HTMLElement, hint: HTMLElement, required: boolean): Field {
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
    let draftTimer: number | undefined;
    const field: Field & { bind(doc: CollabDoc): void } = {
      question,
      el: wrap,
      presence,
      value: () => (input.value === '' ? undefined : { kind: 'text', value: input.value }),
      show: (a) => {
        // While bound to the shared text, the Y.Text is the truth for this field; before that, a
        // typed change still waiting for its debounced draft is newer than any synced state.
        if (bound || document.activeElement === input || draftTimer !== undefined) return;
        const text = a && a.state !== 'skipped' && a.value.kind === 'text' ? (a.value as { value: string }).value : a ? undefined : undefined;
        if (text !== undefined) input.value = text;
        else if (!a && input.value === '' && defaultValue) input.value = defaultValue;
        refreshCount();
      },
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
        bound = true;
        // The hub seeds each Y.Text with the current draft (or the question's default) once.
        unbind = bindText(ytext, input, () => refreshCount());
        ytext.observe(() => {
          refreshCount();
          this.#renderCursors();
        });
        refreshCount();
        // Remote carets and selections, and ours for the others (relative positions over awareness).
        const overlay = new RemoteCursorOverlay(input);
        field.showCursors = (marks) => overlay.show(marks);
        let frame = 0;
        const publish = (): void => {
          cancelAnimationFrame(frame);
          frame = requestAnimationFrame(() => {
            if (document.activeElement === input) this.#setCursor(cursorOf(ytext, question.id, input));
          });
        };
        for (const type of ['select', 'keyup', 'mouseup', 'input', 'focus']) input.addEventListener(type, publish);
        this.#renderCursors();
      },
    };
    // Until (or unless) the shared text is available, type straight into the AHP draft.
    input.addEventListener('input', () => {
      refreshCount();
      if (bound) return;
      window.clearTimeout(draftTimer);
      draftTimer = window.setTimeout(() => {
        draftTimer = undefined;
        void this.#draft(question.id, input.value === '' ? undefined : { kind: 'text', value: input.value });
      }, 150);
    });
    return field;
  }

  #selectField(question: Q, id: string, wrap: HTMLElement, presence: HTMLElement, hint: HTMLElement, draft: (v: ChatInputAnswerValue | undefined) => void): Field {
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
        draft(read());
      });
    }
    // Typing "Other" is debounced; until that draft is dispatched (and so part of the optimistic
    // state) the synced answer is older than what this tab shows and must not overwrite it.
    let otherTimer: number | undefined;
    if (other) {
      other.addEventListener('input', () => {
        if (!multi && other.value.trim()) for (const b of boxes) b.checked = false;
        enforceMax();
        window.clearTimeout(otherTimer);
        otherTimer = window.setTimeout(() => {
          otherTimer = undefined;
          draft(read());
        }, 200);
      });
    }
    wrap.append(group);
    return {
      question,
      el: wrap,
      presence,
      value: read,
      show: (a) => {
        if (!a || a.state === 'skipped' || wrap.contains(document.activeElement) || otherTimer !== undefined) return;
        const v = a.value as { kind: string; value: unknown; freeformValues?: string[] };
        const ids = v.kind === 'selected-many' && Array.isArray(v.value) ? (v.value as string[]) : v.kind === 'selected' ? [String(v.value)] : [];
        for (const b of boxes) b.checked = ids.includes(b.value);
        if (other) other.value = v.freeformValues?.[0] ?? '';
        enforceMax();
      },
      setDisabled: (d) => {
        allDisabled = d;
        enforceMax();
      },
      destroy: () => window.clearTimeout(otherTimer),
    };
  }

  // ─── Drafts, completion, collaboration ─────────────────────────────────────

  async #draft(questionId: string, value: ChatInputAnswerValue | undefined): Promise<void> {
    if (!this.ctx.app.canWrite || this.#resolved) return;
    const action: Record<string, unknown> = { type: 'chat/inputAnswerChanged', requestId: this.#request.id, questionId };
    if (value !== undefined) action['answer'] = { state: 'draft', value };
    const result = await this.ctx.chat.dispatch(action as { type: string });
    if (result.accepted || this.#resolved) return;
    // Never dropped silently: say so and offer to send what the field holds now.
    const resend = el('button', {
      class: 'link',
      attrs: { type: 'button', 'data-testid': 'resend-draft', 'data-question': questionId },
      text: 'Resend',
      on: { click: () => void this.#draft(questionId, this.#fields.get(questionId)?.value()) },
    });
    this.#setStatus(`Not delivered: your answer to “${this.#fields.get(questionId)?.question.title ?? questionId}” did not reach the hub (${result.reason}). `, true);
    this.#status.append(resend);
  }

  /**
   * The shared text could not be joined again after a reconnect (and the request is still open):
   * send what the text fields hold as plain drafts, so it is delivered or marked not delivered.
   */
  #collabLost(): void {
    if (this.#resolved || this.#collabFallback) return;
    this.#collabFallback = true;
    for (const [id, field] of this.#fields) if (field.question.kind === 'text') void this.#draft(id, field.value());
  }

  /** The answers as this tab shows them: submitted where filled in, skipped where empty. */
  #answers(): Record<string, ChatInputAnswer> {
    const answers: Record<string, ChatInputAnswer> = {};
    for (const [id, field] of this.#fields) {
      const value = field.value();
      answers[id] = value ? { state: 'submitted', value } : { state: 'skipped' };
    }
    return answers;
  }

  /**
   * Runs the hub's own answer rules (shared/state/answer-rules.ts) and shows every problem at
   * its field at once. Returns how many questions need attention.
   */
  #validate(): number {
    const problems = submitProblems(this.#request.questions ?? [], this.#answers());
    const byQuestion = new Map(problems.map((p) => [p.questionId, p.advice]));
    for (const [id, error] of this.#errors) {
      const advice = byQuestion.get(id);
      const field = this.#fields.get(id);
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
    return problems.length;
  }

  async #complete(response: 'accept' | 'decline' | 'cancel'): Promise<void> {
    if (!this.ctx.app.canWrite) return;
    const action: Record<string, unknown> = { type: 'chat/inputCompleted', requestId: this.#request.id, response, _meta: FROM_APP_META };
    if (response === 'accept') {
      const problems = this.#validate();
      if (problems > 0) {
        this.#checking = true;
        this.#setStatus(problems === 1 ? 'One answer needs attention (see the highlighted question).' : `${problems} answers need attention (see the highlighted questions).`, true);
        (this.el.querySelector('.question.invalid input:not([disabled]), .question.invalid textarea:not([disabled])') as HTMLElement | null)?.focus();
        return;
      }
      const answers = this.#answers();
      if (Object.keys(answers).length > 0) action['answers'] = answers;
      this.ctx.onAnswered?.();
    }
    this.#busy = true;
    this.#refreshButtons();
    this.#setStatus('Sending…');
    const result = await this.ctx.chat.dispatch(action as { type: string });
    this.#busy = false;
    if (!this.#resolved) {
      this.#refreshButtons();
      this.#setStatus(result.accepted ? '' : `Not accepted: ${result.reason}`, !result.accepted);
    }
  }

  #setStatus(text: string, error = false): void {
    this.#status.textContent = text;
    this.#status.className = error ? 'form-status error' : 'form-status muted';
  }

  #startCollab(): void {
    const hasText = (this.#request.questions ?? []).some((q) => q.kind === 'text');
    const doc = new CollabDoc(this.ctx.app.client, this.ctx.chat.channel, this.#request.id);
    this.#collab = doc;
    doc.setPresence({ user: { name: this.ctx.app.user }, editing: this.#editing });
    this.#collabOff = doc.onChange(() => {
      this.#renderPresence();
      this.#renderCursors();
      if (doc.rejoinFailed && this.#collab === doc) this.#collabLost();
    });
    doc
      .join()
      .then(() => {
        if (this.#collab !== doc || !hasText) return;
        for (const field of this.#fields.values()) (field as Partial<{ bind(d: CollabDoc): void }>).bind?.(doc);
      })
      .catch(() => {
        // No collaboration (feature missing or request already resolved): drafts still sync.
      });
  }

  #setEditing(questionId: string | null): void {
    this.#editing = questionId;
    if (questionId === null || this.#cursor?.question !== questionId) this.#cursor = null;
    this.#publishPresence();
  }

  #setCursor(cursor: SharedCursor | null): void {
    if (cursor?.anchor === this.#cursor?.anchor && cursor?.head === this.#cursor?.head && cursor?.question === this.#cursor?.question) return;
    this.#cursor = cursor;
    this.#publishPresence();
  }

  #publishPresence(): void {
    this.#collab?.setPresence({ user: { name: this.ctx.app.user }, editing: this.#editing, cursor: this.#cursor });
  }

  /** Draws everyone else's caret and selection in the shared text answers. */
  #renderCursors(): void {
    const doc = this.#collab;
    if (!doc) return;
    const others = doc.others();
    for (const [id, field] of this.#fields) {
      if (!field.showCursors) continue;
      const marks: RemoteMark[] = [];
      for (const [, state] of others) {
        const cursor = state.cursor;
        if (!cursor || cursor.question !== id || typeof cursor.anchor !== 'string' || typeof cursor.head !== 'string') continue;
        const range = resolveCursor(doc.doc, cursor);
        if (!range) continue;
        const name = presenceName(state, this.ctx.app.devMode);
        marks.push({ name, color: colorFor(name), start: range[0], end: range[1] });
      }
      field.showCursors(marks);
    }
  }

  #renderPresence(): void {
    const doc = this.#collab;
    if (!doc) return;
    const others = doc.others();
    const who = (s: Parameters<typeof presenceName>[0]): string => presenceName(s, this.ctx.app.devMode);
    const chip = (name: string, extra = ''): HTMLElement => el('span', { class: 'chip', attrs: { style: `--c:${colorFor(name)}`, 'data-user': name }, text: name + extra });
    replaceChildren(this.#viewing, ...(others.length > 0 ? ['Also here: ', ...others.map(([, s]) => chip(who(s)))] : []));
    for (const [id, field] of this.#fields) {
      const editors = others.filter(([, s]) => s.editing === id).map(([, s]) => who(s));
      replaceChildren(field.presence, ...editors.map((n) => chip(n, ' is editing')));
      field.el.classList.toggle('being-edited', editors.length > 0);
    }
  }

  // ─── Resolved record ───────────────────────────────────────────────────────

  #buildRecord(part: InputRequestPart): void {
    this.#resolved = true;
    this.#recordMeta = part._meta;
    this.#request = part.request;
    this.#destroyFields();
    const outcome = part.response === 'accept' ? 'Answered' : part.response === 'decline' ? 'Declined' : part.response === 'cancel' ? 'Cancelled' : 'Not answered (the turn ended first)';
    this.el.className = 'part input-request card resolved';
    this.el.setAttribute('data-response', part.response ?? 'none');
    const rows = (part.request.questions ?? []).map((q) =>
      el('li', {}, el('span', { class: 'q-title', text: `${(q as Q).title ?? q.id}: ` }), el('span', { class: 'answer', attrs: { 'data-answer': q.id }, text: answerInWords(part.request.answers?.[q.id], q) })),
    );
    const message = part.request.message ? el('div', { class: 'markdown muted' }) : null;
    if (message) markdownInto(message, part.request.message!);
    const by = answeredByOf((part as { _meta?: unknown })._meta);
    replaceChildren(
      this.el,
      el('div', { class: 'request-head' }, el('h2', { class: 'request-title', text: 'Input request' }), el('span', { class: `badge outcome-${part.response ?? 'none'}`, attrs: { 'data-testid': 'outcome' }, text: outcome })),
      message,
      part.request.url ? el('div', { class: 'muted small' }, 'Link: ', el('code', { text: part.request.url })) : null,
      rows.length > 0 ? el('ul', { class: 'answers' }, ...rows) : null,
      by ? el('div', { class: 'muted answered-by', attrs: { 'data-testid': 'answered-by' }, text: `${outcome} by ${answeredByText(by, this.ctx.app.devMode)}` }) : null,
    );
  }

  #destroyFields(): void {
    for (const f of this.#fields.values()) f.destroy();
    this.#fields.clear();
    this.#errors.clear();
    this.#checking = false;
    this.#buttons.length = 0;
    this.#collabOff?.();
    this.#collab?.destroy();
    this.#collab = undefined;
  }

  destroy(): void {
    this.#destroyFields();
  }
}

/** What carries a question's description: its choice group, or its one input. */
function describedControls(wrap: HTMLElement): HTMLElement[] {
  const group = wrap.querySelector<HTMLElement>('[role=radiogroup], [role=group]');
  if (group) return [group];
  return [...wrap.querySelectorAll<HTMLElement>('input, textarea')];
}

function numAttr(v: unknown): string | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined;
}

function rangeHint(min: unknown, max: unknown, unit: string): string {
  const lo = typeof min === 'number' ? min : undefined;
  const hi = typeof max === 'number' ? max : undefined;
  if (lo !== undefined && hi !== undefined) return `${lo}–${hi} ${unit}`;
  const numeric = unit === 'number' || unit === 'whole number';
  if (lo !== undefined) return numeric ? `a ${unit}, ${lo} or more` : `at least ${lo} ${unit}`;
  if (hi !== undefined) return numeric ? `a ${unit}, ${hi} or less` : `at most ${hi} ${unit}`;
  return numeric ? `a ${unit}` : '';
}
