/** Binds a shared Y.Text to a form field (DOM side of collab.ts). */
import type * as Y from 'yjs';
import { applyTextDiff } from './collab.js';

/**
 * Two-way binding of a Y.Text to an <input>/<textarea>: local typing becomes a minimal Yjs edit;
 * remote edits update the field and move the caret with the text around it.
 */
export function bindText(ytext: Y.Text, field: HTMLInputElement | HTMLTextAreaElement, onLocalEdit: (value: string) => void): () => void {
  field.value = ytext.toString();
  const onInput = (): void => {
    ytext.doc!.transact(() => applyTextDiff(ytext, field.value), 'local');
    onLocalEdit(field.value);
  };
  const observer = (event: Y.YTextEvent): void => {
    if (event.transaction.origin === 'local') return;
    const hasSel = document.activeElement === field && field.selectionStart !== null;
    let start = hasSel ? field.selectionStart! : 0;
    let end = hasSel ? field.selectionEnd! : 0;
    let index = 0;
    for (const op of event.delta) {
      if (op.retain !== undefined) index += op.retain;
      else if (typeof op.insert === 'string') {
        const n = op.insert.length;
        if (index < start) start += n;
        if (index < end) end += n;
        index += n;
      } else if (op.delete !== undefined) {
        const n = op.delete;
        if (index < start) start -= Math.min(n, start - index);
        if (index < end) end -= Math.min(n, end - index);
      }
    }
    field.value = ytext.toString();
    if (hasSel) {
      try {
        field.setSelectionRange(start, end);
      } catch {
        // input types without a selection API (email, date)
      }
    }
  };
  field.addEventListener('input', onInput);
  ytext.observe(observer);
  return () => {
    field.removeEventListener('input', onInput);
    ytext.unobserve(observer);
  };
}
