/**
 * An input request in its place in the response stream: a form for every question kind while it
 * is open, the answered record once it is resolved.
 *
 * Collaboration: every change of a non-text answer is dispatched at once as a
 * `chat/inputAnswerChanged` draft, so all tabs see the same form; text answers live in a Y.Text
 * per question (synced through `x-collab/*`), which the hub merges character by character and
 * mirrors into the drafts for AHP clients without Yjs. Presence shows who views the request and
 * which question each person is editing. Every field shows the synced answer, focused or not
 * (form-draft-sync.ts), so accepting sends the answers as this tab shows them, which are the shared
 * ones; Submit asks first when a teammate just changed one or is still typing (submit-guard.ts),
 * and a typist whose form someone else ends keeps their text (kept-text.ts).
 */
import type { ChatInputAnswer, ChatInputAnswerValue, ChatInputRequest, InputRequestPart, ResponsePart } from '../shared/protocol/state.js';
import { applyTextDiff, CollabDoc, presenceName } from './collab.js';
import { booleanField, numAttr, numberField, rangeHint, selectField, setTextKeepingCaret, type Field, type FieldSlot, type Q } from './form-fields.js';
import { DraftActivity, teammateDraftOf } from './form-draft-sync.js';
import { RECENT_CHANGE_MS, submitWarnings } from './submit-guard.js';
import { SubmitGuardBar } from './submit-guard-bar.js';
import { KeptTextBox, TYPING_KEEP_MS, type KeptAnswer } from './kept-text.js';
import { showNotDelivered } from './not-delivered.js';
import { bindText, cursorOf, RemoteCursorOverlay, resolveCursor, type RemoteMark, type SharedCursor } from './text-binding.js';
import { el, markdownInto, replaceChildren } from './dom.js';
import { answeredByOf, answeredByText, colorFor, FROM_APP_META, personName } from './format.js';
import { submitProblems } from '../shared/state/answer-rules.js';
import { answerInWords } from '../shared/state/transcript.js';
import { safeHref } from './markdown.js';
import type { PartContext, PartView } from './parts.js';

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
  /** Teammates' changes and presence, for Submit's question (submit-guard.ts). */
  readonly #activity = new DraftActivity();
  readonly #guard = new SubmitGuardBar(
    () => void this.#complete('accept', true),
    () => this.el.querySelector<HTMLElement>('[data-response=accept]')?.focus(),
  );
  /** This tab pressed Submit / Decline / Cancel (so a typist's kept text is not offered here). */
  #endedHere = false;
  /** What this tab was typing when someone else ended the request (kept-text.ts). */
  #kept: KeptTextBox | undefined;
  /** Follows teammates' drafts while the form is open (dropped with the form). */
  #offChat: (() => void) | undefined;

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
    this.#guard.refresh(this.#warnings());
  }

  // ─── Open form ─────────────────────────────────────────────────────────────

  #buildForm(): void {
    this.#destroyFields();
    this.#offChat ??= this.ctx.chat.onChange((_, change) => {
      const questionId = teammateDraftOf(change, this.#request.id, this.ctx.app.client.clientId);
      if (questionId !== undefined) this.#noteTeammate(questionId);
    });
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
    this.#guard.hide();
    children.push(el('div', { class: 'actions' }, accept, decline, cancel), this.#guard.el, this.#confirmEnd, this.#status);
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
    this.#guard.hide();
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
    const slot: FieldSlot = { question, id, wrap, presence, hint, required, draft: (value) => void this.#draft(question.id, value) };
    switch (question.kind) {
      case 'text':
        return this.#textField(slot);
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

  #textField({ question, id, wrap, presence, hint, required }: FieldSlot): Field {
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
    const field: Field & { bind(doc: CollabDoc): void } = {
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
        field.show(this.#request.answers?.[question.id]);
        // The hub seeds each Y.Text with the current draft (or the question's default) once.
        unbind = bindText(ytext, input, () => refreshCount());
        ytext.observe((event) => {
          // 'remote' is collab.ts's origin for what the hub sent: someone else's keystrokes.
          if (event.transaction.origin === 'remote') this.#noteTeammate(question.id);
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
      typedAt = Date.now();
      if (bound) return;
      window.clearTimeout(draftTimer);
      draftTimer = window.setTimeout(() => {
        draftTimer = undefined;
        void this.#draft(question.id, input.value === '' ? undefined : { kind: 'text', value: input.value });
      }, 150);
    });
    return field;
  }

  // ─── Drafts, completion, collaboration ─────────────────────────────────────

  async #draft(questionId: string, value: ChatInputAnswerValue | undefined): Promise<void> {
    if (!this.ctx.app.canWrite || this.#resolved) return;
    const action: Record<string, unknown> = { type: 'chat/inputAnswerChanged', requestId: this.#request.id, questionId };
    if (value !== undefined) action['answer'] = { state: 'draft', value };
    const result = await this.ctx.chat.dispatch(action as { type: string });
    if (result.accepted || this.#resolved) return;
    // Never dropped silently: say so and offer to send what the field holds now.
    showNotDelivered(this.#status, this.#titleOf(questionId), result.reason, () => void this.#draft(questionId, this.#fields.get(questionId)?.value()));
  }

  #titleOf(questionId: string): { id: string; title: string } {
    const title = this.#fields.get(questionId)?.question.title;
    return { id: questionId, title: typeof title === 'string' ? title : questionId };
  }

  /** Text typed offline that the restarted hub's shared text could not take: offer it again. */
  #offerUndelivered(doc: CollabDoc): void {
    for (const [questionId, text] of doc.undelivered) {
      if (!this.#fields.has(questionId) || this.#status.querySelector(`[data-question="${CSS.escape(questionId)}"]`)) continue;
      const why = `someone changed the same words while you were offline; yours were “${text}”`;
      showNotDelivered(this.#status, this.#titleOf(questionId), why, () => {
        doc.resend(questionId);
        this.#setStatus('');
      });
    }
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

  /** `confirmed`: the person answered Submit's question (submit-guard.ts) with "Submit anyway". */
  async #complete(response: 'accept' | 'decline' | 'cancel', confirmed = false): Promise<void> {
    if (!this.ctx.app.canWrite || this.#busy) return;
    const action: Record<string, unknown> = { type: 'chat/inputCompleted', requestId: this.#request.id, response, _meta: FROM_APP_META };
    if (response === 'accept') {
      const problems = this.#validate();
      if (problems > 0) {
        this.#checking = true;
        this.#setStatus(problems === 1 ? 'One answer needs attention (see the highlighted question).' : `${problems} answers need attention (see the highlighted questions).`, true);
        (this.el.querySelector('.question.invalid input:not([disabled]), .question.invalid textarea:not([disabled])') as HTMLElement | null)?.focus();
        return;
      }
      const warnings = confirmed ? [] : this.#warnings();
      if (warnings.length > 0) {
        this.#confirmEnd.hidden = true;
        this.#guard.show(warnings);
        return;
      }
      // Read now, after any question: exactly what the form shows (the shared draft).
      const answers = this.#answers();
      if (Object.keys(answers).length > 0) action['answers'] = answers;
      this.ctx.onAnswered?.();
    }
    this.#guard.hide();
    this.#endedHere = true;
    this.#busy = true;
    this.#refreshButtons();
    this.#setStatus('Sending…');
    const result = await this.ctx.chat.dispatch(action as { type: string });
    this.#busy = false;
    if (!result.accepted) this.#endedHere = false;
    if (!this.#resolved) {
      this.#refreshButtons();
      this.#setStatus(result.accepted ? '' : `Not accepted: ${result.reason}`, !result.accepted);
    }
  }

  #setStatus(text: string, error = false): void {
    this.#status.textContent = text;
    this.#status.className = error ? 'form-status error' : 'form-status muted';
  }

  #noteTeammate(questionId: string): void {
    if (this.#resolved) return;
    this.#activity.noteChange(questionId, Date.now());
    this.#guard.refresh(this.#warnings());
  }

  /** What Submit should ask about first: teammates' changes just now, someone still typing. */
  #warnings(): string[] {
    if (this.#resolved) return [];
    const now = Date.now();
    return submitWarnings({
      now,
      questions: (this.#request.questions ?? []).map((q) => ({ id: q.id, title: String((q as Q).title ?? q.id), kind: q.kind })),
      changes: this.#activity.recent(now, RECENT_CHANGE_MS),
      editing: this.#activity.editing,
      shownText: (id) => {
        const field = this.#fields.get(id);
        const value = field?.value();
        return answerInWords(value ? { state: 'submitted', value } : undefined, field?.question);
      },
    });
  }

  /** Text this tab was typing that someone else's answer (or the turn's end) took away. */
  #keptAnswers(part: InputRequestPart): KeptAnswer[] {
    if (this.#endedHere) return [];
    const now = Date.now();
    const kept: KeptAnswer[] = [];
    for (const [id, field] of this.#fields) {
      const value = field.value();
      if (field.question.kind !== 'text' || value?.kind !== 'text') continue;
      const text = String(value.value);
      const sent = part.request.answers?.[id];
      const cut = !(sent && sent.state !== 'skipped' && sent.value.kind === 'text' && sent.value.value === text);
      const typing = now - (field.typedAt?.() ?? 0) <= TYPING_KEEP_MS;
      // The caret in it (presence shows them editing) or keys a moment ago: they are the typist.
      if (typing || field.el.contains(document.activeElement)) kept.push({ questionId: id, title: String(field.question.title ?? id), text, cut });
    }
    return kept;
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
      if (doc.undelivered.size > 0 && this.#collab === doc && !this.#resolved) this.#offerUndelivered(doc);
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
    this.#activity.notePresence(others.map(([, s]) => ({ name: who(s), question: s.editing })));
    replaceChildren(this.#viewing, ...(others.length > 0 ? ['Also here: ', ...others.map(([, s]) => chip(who(s)))] : []));
    for (const [id, field] of this.#fields) {
      const editors = others.filter(([, s]) => s.editing === id).map(([, s]) => who(s));
      replaceChildren(field.presence, ...editors.map((n) => chip(n, ' is editing')));
      field.el.classList.toggle('being-edited', editors.length > 0);
    }
  }

  // ─── Resolved record ───────────────────────────────────────────────────────

  #buildRecord(part: InputRequestPart): void {
    const hadFocus = this.el.contains(document.activeElement);
    if (!this.#resolved && !this.#kept) {
      const kept = this.#keptAnswers(part);
      if (kept.length > 0) this.#kept = new KeptTextBox(kept, this.ctx.sendFollowUp);
    }
    this.#resolved = true;
    this.#offChat?.();
    this.#offChat = undefined;
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
      this.#kept?.el,
    );
    if (this.#kept) {
      const who = by ? personName(by.user, this.ctx.app.devMode) : undefined;
      const verb = part.response === 'accept' ? 'Submitted' : part.response === 'decline' ? 'Declined' : part.response === 'cancel' ? 'Cancelled' : undefined;
      this.#kept.setOutcome(verb ? `${verb} by ${who === undefined || who === 'you' ? 'someone else' : who}` : 'The turn ended');
      if (hadFocus) this.#kept.focus();
    }
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
    this.#offChat?.();
    this.#destroyFields();
  }
}

/** What carries a question's description: its choice group, or its one input. */
function describedControls(wrap: HTMLElement): HTMLElement[] {
  const group = wrap.querySelector<HTMLElement>('[role=radiogroup], [role=group]');
  if (group) return [group];
  return [...wrap.querySelectorAll<HTMLElement>('input, textarea')];
}
