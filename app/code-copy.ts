/**
 * The Copy button of code blocks in agent text (`markdown.ts` renders the button without a
 * handler). One listener on the document serves every block, including the tail of a streaming
 * part that is rebuilt each frame: it copies the text of the block the pressed button sits in,
 * as it is on screen at that moment.
 *
 * `navigator.clipboard` needs a secure context (https, or a loopback address) and the page's
 * focus; elsewhere, or when the browser refuses, a hidden textarea and `execCommand('copy')` do
 * it. If both fail the code is selected so Ctrl+C copies it, and the button says so. Every other
 * Copy button (the session id, links to a turn and a question: copy-button.ts) takes the same
 * path through `copyAndConfirm`.
 */

/** How long the button says "Copied" before it reads "Copy" again. */
const CONFIRM_MS = 2_000;

export function installCodeCopy(doc: Document): void {
  doc.addEventListener('click', (e) => {
    const button = (e.target as Element | null)?.closest?.('button.md-copy');
    if (!(button instanceof HTMLButtonElement)) return;
    const code = button.closest('.md-code')?.querySelector('pre > code');
    if (!code) return;
    e.preventDefault();
    copyFromButton(button, code);
  });
}

/**
 * Copies the text of `source` and says so on `button` ("Copied"); when nothing could copy, selects
 * `source` and asks for Ctrl+C instead. The button reads "Copy" again after a moment.
 */
export function copyFromButton(button: HTMLButtonElement, source: Node): void {
  copyAndConfirm(button, source.textContent ?? '', source);
}

/**
 * Copies `text` and says so on `button` and to screen readers; the button reads `idleLabel` again
 * after a moment. When nothing could copy, `shown` (where the page shows the text) is selected for
 * Ctrl+C; with nothing to select, the button shows the text itself to be copied by hand.
 */
export function copyAndConfirm(button: HTMLButtonElement, text: string, shown: Node | undefined, idleLabel = 'Copy'): void {
  const doc = button.ownerDocument;
  void copyText(text, doc).then((copied) => {
    if (copied) return confirm(button, 'Copied', idleLabel);
    if (shown) {
      selectContents(shown, doc);
      return confirm(button, 'Selected — press Ctrl+C', idleLabel);
    }
    announce(doc, 'Could not copy: the text is shown on the button, copy it from there.');
    button.textContent = text;
  });
}

/** Puts `text` on the clipboard; false when neither the Clipboard API nor the fallback could. */
export async function copyText(text: string, doc: Document): Promise<boolean> {
  const clipboard = doc.defaultView?.navigator.clipboard;
  if (clipboard && doc.defaultView?.isSecureContext) {
    try {
      await clipboard.writeText(text);
      return true;
    } catch {
      // refused (no focus, a permission policy): try the old way
    }
  }
  return copyWithTextarea(text, doc);
}

function copyWithTextarea(text: string, doc: Document): boolean {
  const area = doc.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  // Off screen but selectable; fixed so the page does not scroll to it.
  area.style.position = 'fixed';
  area.style.top = '-1000px';
  area.style.opacity = '0';
  const focused = doc.activeElement as HTMLElement | null;
  doc.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = doc.execCommand('copy');
  } catch {
    copied = false;
  }
  area.remove();
  focused?.focus?.();
  return copied;
}

function selectContents(node: Node, doc: Document): void {
  const selection = doc.getSelection();
  if (!selection) return;
  const range = doc.createRange();
  range.selectNodeContents(node);
  selection.removeAllRanges();
  selection.addRange(range);
}

const resetTimers = new WeakMap<HTMLButtonElement, number>();

/**
 * A polite live region that says what a Copy did: a screen reader does not announce the changed
 * text of the button that has focus.
 */
function announce(doc: Document, text: string): void {
  let region = doc.querySelector<HTMLElement>('[data-testid=copy-status]');
  if (!region) {
    region = doc.createElement('div');
    region.className = 'sr-only';
    region.setAttribute('role', 'status');
    region.setAttribute('data-testid', 'copy-status');
    doc.body.append(region);
  }
  region.textContent = text;
}

function confirm(button: HTMLButtonElement, label: string, idleLabel: string): void {
  announce(button.ownerDocument, label === 'Copied' ? 'Copied to the clipboard.' : 'Could not copy: the text is selected, press Ctrl+C.');
  button.textContent = label;
  button.dataset['copied'] = label === 'Copied' ? 'true' : 'false';
  const view = button.ownerDocument.defaultView;
  if (!view) return;
  view.clearTimeout(resetTimers.get(button));
  resetTimers.set(
    button,
    view.setTimeout(() => {
      button.textContent = idleLabel;
      delete button.dataset['copied'];
    }, CONFIRM_MS),
  );
}
