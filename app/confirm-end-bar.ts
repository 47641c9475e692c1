/**
 * "Decline for everyone?": ending a shared form (Decline, Cancel) needs a second, deliberate
 * click on this bar, which says that the request ends for everyone in the chat.
 */
import { el, replaceChildren } from './dom.js';

export class ConfirmEndBar {
  readonly el = el('div', { class: 'confirm-end', attrs: { 'data-testid': 'confirm-end-bar', role: 'group', 'aria-label': 'Confirm ending the request', hidden: 'hidden' } });

  /** Asks; `end` runs on the confirming click. */
  ask(response: 'decline' | 'cancel', end: () => void): void {
    const verb = response === 'decline' ? 'Decline' : 'Cancel';
    const yes = el('button', {
      class: 'danger',
      attrs: { type: 'button', 'data-testid': 'confirm-end' },
      text: `${verb} for everyone`,
      on: {
        click: () => {
          this.el.hidden = true;
          end();
        },
      },
    });
    const keep = el('button', {
      class: 'link',
      attrs: { type: 'button', 'data-testid': 'keep-form' },
      text: 'Keep answering',
      on: {
        click: () => {
          this.el.hidden = true;
        },
      },
    });
    replaceChildren(this.el, el('span', { text: `${response === 'decline' ? 'Declining' : 'Cancelling'} ends this request for everyone in this chat, and the agent is told. ` }), yes, ' ', keep);
    this.el.hidden = false;
    yes.focus();
  }

  hide(): void {
    this.el.hidden = true;
  }
}
