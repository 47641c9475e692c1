/**
 * A typist's text when someone else ends the form under their cursor (issue 28): the form turns
 * into the answered record, and what they had typed stays beside it, read-only, with *Copy* and
 * *Send as a follow-up* (a message to the agent through the chat's composer: a steering addition
 * while the turn runs, a new turn otherwise). Never cut silently.
 */
import { el, replaceChildren } from './dom.js';

/** How long after a keystroke a text answer still counts as "being typed" here. */
export const TYPING_KEEP_MS = 5_000;

export interface KeptAnswer {
  readonly questionId: string;
  readonly title: string;
  /** The text as this tab held it when the request was resolved. */
  readonly text: string;
  /** True when the recorded answer is not this text (some of it was not sent). */
  readonly cut: boolean;
}

/** `added`: the composer held a message being written, so the text was appended there, unsent. */
export type FollowUpResult = 'sent' | 'added' | 'failed';
/** Sends a message to the agent as if typed in the composer. */
export type SendFollowUp = (text: string) => Promise<FollowUpResult>;

export class KeptTextBox {
  readonly el = el('div', { class: 'kept-text', attrs: { 'data-testid': 'kept-text', role: 'region', 'aria-label': 'Your unsent text' } });
  readonly #by = el('p', { class: 'kept-by', attrs: { 'data-testid': 'kept-by' } });
  readonly #status = el('p', { class: 'muted small', attrs: { 'data-testid': 'kept-status', role: 'status', 'aria-live': 'polite' } });
  readonly #boxes: HTMLTextAreaElement[] = [];

  constructor(
    kept: readonly KeptAnswer[],
    private readonly sendFollowUp: SendFollowUp | undefined,
  ) {
    const items = kept.map((k) => this.#item(k));
    replaceChildren(this.el, this.#by, ...items, this.#status);
  }

  /** "Submitted by alice" (or declined, cancelled, the turn ended): the stamp may come after the record. */
  setOutcome(what: string): void {
    this.#by.textContent = `${what} while you were typing. Your text is kept here: copy it, or send it to the agent as a follow-up.`;
  }

  /** Moves the focus into the kept text (the field the person was typing in is gone). */
  focus(): void {
    this.#boxes[0]?.focus();
  }

  #item(k: KeptAnswer): HTMLElement {
    const box = el('textarea', { class: 'kept-box', attrs: { readonly: 'readonly', rows: '3', 'aria-label': `Your text for “${k.title}”`, 'data-question': k.questionId } });
    box.value = k.text;
    this.#boxes.push(box);
    const copy = el('button', { attrs: { type: 'button', 'data-testid': 'copy-kept' }, text: 'Copy', on: { click: () => this.#copy(box, copy) } });
    const send = el('button', {
      class: 'primary',
      attrs: { type: 'button', 'data-testid': 'send-kept', disabled: this.sendFollowUp ? undefined : 'disabled' },
      text: 'Send as a follow-up',
      on: { click: () => void this.#send(k, send) },
    });
    return el('div', { class: 'kept-item' }, el('div', { class: 'q-title', text: `${k.title}${k.cut ? ' — not all of this was sent' : ''}` }), box, el('div', { class: 'actions' }, copy, ' ', send));
  }

  #copy(box: HTMLTextAreaElement, button: HTMLButtonElement): void {
    const done = (): void => {
      button.textContent = 'Copied';
      window.setTimeout(() => (button.textContent = 'Copy'), 1500);
    };
    const fallback = (): void => {
      box.focus();
      box.select();
      button.textContent = 'Selected — press Ctrl+C';
    };
    if (navigator.clipboard) navigator.clipboard.writeText(box.value).then(done, fallback);
    else fallback();
  }

  async #send(k: KeptAnswer, button: HTMLButtonElement): Promise<void> {
    if (!this.sendFollowUp) return;
    button.disabled = true;
    this.#status.textContent = 'Sending…';
    const result = await this.sendFollowUp(`${k.title}: ${k.text}`);
    const WORDS: Record<FollowUpResult, string> = {
      sent: 'Sent as a follow-up (see its receipt under the chat).',
      added: 'Added to the message you are writing in the composer: send it from there.',
      failed: 'Not sent: see the message under the composer, then try again.',
    };
    this.#status.textContent = WORDS[result];
    button.disabled = result !== 'failed';
  }
}
