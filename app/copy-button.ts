/**
 * A small "Copy" button for a piece of text people paste elsewhere (a session id, a link to a
 * turn). Without clipboard access (an insecure origin, a denied permission) it selects `shown`
 * so Ctrl+C copies it, and says so.
 */
import { el } from './dom.js';

export function copyButton(text: () => string, options: { label?: string; testid: string; ariaLabel: string; shown?: () => Node | undefined }): HTMLButtonElement {
  const label = options.label ?? 'Copy';
  const button = el('button', {
    class: 'link small',
    attrs: { type: 'button', 'data-testid': options.testid, 'aria-label': options.ariaLabel },
    text: label,
    on: {
      click: () => {
        const done = (): void => {
          button.textContent = 'Copied';
          window.setTimeout(() => (button.textContent = label), 1500);
        };
        const fallback = (): void => {
          const node = options.shown?.();
          if (node) {
            const range = document.createRange();
            range.selectNodeContents(node);
            getSelection()?.removeAllRanges();
            getSelection()?.addRange(range);
            button.textContent = 'Selected — press Ctrl+C';
          } else button.textContent = text();
        };
        if (navigator.clipboard) navigator.clipboard.writeText(text()).then(done, fallback);
        else fallback();
      },
    },
  });
  return button;
}
