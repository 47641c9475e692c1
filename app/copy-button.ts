/**
 * A small "Copy" button for a piece of text people paste elsewhere (a session id, a link to a
 * turn). It copies the way the code blocks' Copy does (code-copy.ts): the Clipboard API, else the
 * old copy command, else `shown` selected so Ctrl+C copies it; a screen reader is told which.
 */
import { copyAndConfirm } from './code-copy.js';
import { el } from './dom.js';

export function copyButton(text: () => string, options: { label?: string; testid: string; ariaLabel: string; shown?: () => Node | undefined }): HTMLButtonElement {
  const label = options.label ?? 'Copy';
  const button = el('button', {
    class: 'link small',
    attrs: { type: 'button', 'data-testid': options.testid, 'aria-label': options.ariaLabel },
    text: label,
    on: { click: () => copyAndConfirm(button, text(), options.shown?.(), label) },
  });
  return button;
}
