/**
 * The form's "Not delivered" notice: an answer (a draft the hub refused, or text typed offline
 * that a restarted hub could not merge) did not reach the hub. Never silent: it says which
 * question and why, and offers Resend.
 */
import { el } from './dom.js';

export function showNotDelivered(status: HTMLElement, question: { id: string; title: string }, why: string, resend: () => void): void {
  status.textContent = `Not delivered: your answer to “${question.title}” did not reach the hub (${why}). `;
  status.className = 'form-status error';
  status.append(
    el('button', {
      class: 'link',
      attrs: { type: 'button', 'data-testid': 'resend-draft', 'data-question': question.id },
      text: 'Resend',
      on: { click: resend },
    }),
  );
}
