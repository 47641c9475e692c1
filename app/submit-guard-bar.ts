/** Submit's inline question (the rules are in submit-guard.ts). */
import { el, replaceChildren } from './dom.js';

/**
 * "bob changed “Severity” to SEV3 just now. Submit anyway?" with a real button that takes the
 * focus, and a way back to the form. Its lines are refreshed while it is open (the form keeps
 * following the shared draft), so what it says is what Submit anyway would send.
 */
export class SubmitGuardBar {
  readonly el = el('div', { class: 'confirm-end submit-guard', attrs: { 'data-testid': 'submit-guard', role: 'group', 'aria-label': 'Confirm submitting', hidden: 'hidden' } });
  readonly #text = el('div', { class: 'guard-lines', attrs: { 'aria-live': 'polite' } });
  #open = false;

  constructor(
    private readonly onConfirm: () => void,
    private readonly onBack: () => void,
  ) {}

  get open(): boolean {
    return this.#open;
  }

  show(lines: readonly string[]): void {
    const id = `guard-${Math.random().toString(36).slice(2, 10)}`;
    this.#text.id = id;
    this.#fill(lines);
    const yes = el('button', {
      class: 'primary',
      attrs: { type: 'button', 'data-testid': 'submit-anyway', 'aria-describedby': id },
      text: 'Submit anyway',
      on: {
        click: () => {
          this.hide();
          this.onConfirm();
        },
      },
    });
    const back = el('button', {
      class: 'link',
      attrs: { type: 'button', 'data-testid': 'keep-answering' },
      text: 'Keep answering',
      on: {
        click: () => {
          this.hide();
          this.onBack();
        },
      },
    });
    replaceChildren(this.el, this.#text, el('div', { class: 'actions' }, yes, ' ', back));
    this.el.hidden = false;
    this.#open = true;
    yes.focus();
  }

  /** New lines while open (the form changed); the last ones stay when nothing new is left to say. */
  refresh(lines: readonly string[]): void {
    if (this.#open && lines.length > 0) this.#fill(lines);
  }

  hide(): void {
    this.#open = false;
    this.el.hidden = true;
  }

  #fill(lines: readonly string[]): void {
    replaceChildren(this.#text, ...lines.map((line) => el('p', { text: line })), el('p', { class: 'muted small', text: 'Submit sends the answers exactly as this form shows them now.' }));
  }
}
