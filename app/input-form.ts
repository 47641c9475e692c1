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
 *
 * This module is the form's lifecycle (open form ↔ record), its drafts and its Submit; a question
 * is built by form-question.ts, the shared text and presence are form-collab.ts, the resolved
 * record form-record.ts, "Decline for everyone?" confirm-end-bar.ts.
 */
import type { ChatInputAnswer, ChatInputAnswerValue, ChatInputRequest, ChatState, InputRequestPart, ResponsePart } from '../shared/protocol/state.js';
import type { CollabDoc } from './collab.js';
import type { Field, Q } from './form-fields.js';
import { DraftActivity, teammateDraftOf } from './form-draft-sync.js';
import { FormCollab } from './form-collab.js';
import { questionField, showProblems } from './form-question.js';
import type { TextFieldHooks } from './form-text-field.js';
import { renderRecord } from './form-record.js';
import { ConfirmEndBar } from './confirm-end-bar.js';
import { RECENT_CHANGE_MS, submitWarnings } from './submit-guard.js';
import { SubmitGuardBar } from './submit-guard-bar.js';
import { KeptTextBox, TYPING_KEEP_MS, type KeptAnswer } from './kept-text.js';
import { showNotDelivered } from './not-delivered.js';
import { el, markdownInto, replaceChildren } from './dom.js';
import { FROM_APP_META } from './format.js';
import { submitProblems } from '../shared/state/answer-rules.js';
import { findOpenInputRequest } from '../shared/state/selectors.js';
import { answerInWords } from '../shared/state/transcript.js';
import { safeHref } from './markdown.js';
import type { PartContext, PartView } from './part-view.js';

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
  /** The text fields' values went out as plain drafts once the shared text was lost. */
  #collabFallback = false;
  /** Teammates' changes and presence, for Submit's question (submit-guard.ts). */
  readonly #activity = new DraftActivity();
  /** The shared text, presence and carets of the open form (form-collab.ts). */
  readonly #collab: FormCollab;
  /** Space for "Decline for everyone?" (confirm-end-bar.ts). */
  readonly #confirmEnd = new ConfirmEndBar();
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
    this.#collab = new FormCollab(ctx.app, ctx.chat.channel, this.#fields, this.#activity, this.#viewing);
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
    this.#offChat ??= this.ctx.chat.onChange((view, change) => {
      const questionId = teammateDraftOf(change, this.#request.id, this.ctx.app.client.clientId);
      if (questionId === undefined) return;
      this.#noteTeammate(questionId);
      // Shown now, as this tab's view has it (a pending change of ours stays on top); the transcript's next frame agrees.
      this.#fields.get(questionId)?.show(findOpenInputRequest(view.state as ChatState, this.#request.id)?.request.answers?.[questionId]);
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
      const { field, error } = questionField(request.id, question as Q, {
        editing: (questionId) => this.#collab.setEditing(questionId),
        draft: (value) => void this.#draft(question.id, value),
        text: (questionId) => this.#textHooks(questionId),
      });
      this.#fields.set(question.id, field);
      this.#errors.set(question.id, error);
      field.show(request.answers?.[question.id]);
      children.push(field.el);
    }
    if (!canWrite) children.push(el('p', { class: 'muted', attrs: { 'data-testid': 'read-only' }, text: 'You have read-only access: you can follow along but not answer.' }));
    const acceptLabel = request.url && !request.questions?.length ? 'Mark as done' : 'Submit answers';
    const accept = this.#button(acceptLabel, 'primary', 'accept');
    const decline = this.#button('Decline', '', 'decline');
    const cancel = this.#button('Cancel', 'link', 'cancel');
    this.#confirmEnd.hide();
    this.#guard.hide();
    children.push(el('div', { class: 'actions' }, accept, decline, cancel), this.#guard.el, this.#confirmEnd.el, this.#status);
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

  #askToEnd(response: 'decline' | 'cancel'): void {
    this.#guard.hide();
    this.#confirmEnd.ask(response, () => void this.#complete(response));
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

  /** What a text question's field asks of the form (form-text-field.ts). */
  #textHooks(questionId: string): TextFieldHooks {
    return {
      answerNow: () => this.#request.answers?.[questionId],
      remoteEdit: () => this.#noteTeammate(questionId),
      cursorsChanged: () => this.#collab.renderCursors(),
      cursorMoved: (cursor) => this.#collab.setCursor(cursor),
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
    showProblems(this.#fields, this.#errors, new Map(problems.map((p) => [p.questionId, p.advice])));
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
        this.#confirmEnd.hide();
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
    this.#collab.start(this.#request.id, hasText, (doc) => {
      if (doc.rejoinFailed) this.#collabLost();
      if (doc.undelivered.size > 0 && !this.#resolved) this.#offerUndelivered(doc);
    });
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
    renderRecord(this.el, part, this.ctx.app.devMode, this.#kept, hadFocus);
  }

  #destroyFields(): void {
    for (const f of this.#fields.values()) f.destroy();
    this.#fields.clear();
    this.#errors.clear();
    this.#checking = false;
    this.#buttons.length = 0;
    this.#collab.stop();
  }

  destroy(): void {
    this.#offChat?.();
    this.#destroyFields();
  }
}
