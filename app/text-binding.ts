/** Binds a shared Y.Text to a form field (DOM side of collab.ts). */
import * as Y from 'yjs';
import { fromBase64, toBase64 } from 'lib0/buffer';
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

/** Where someone's caret and selection are in a shared text, as Yjs relative positions. */
export interface SharedCursor {
  readonly question: string;
  /** Base64 of `Y.encodeRelativePosition` for the selection start and end. */
  readonly anchor: string;
  readonly head: string;
}

/**
 * The caret/selection of `field` as relative positions in `ytext`: they keep pointing at the same
 * characters while others type before them, which plain indices would not.
 */
export function cursorOf(ytext: Y.Text, question: string, field: HTMLInputElement | HTMLTextAreaElement): SharedCursor | null {
  if (field.selectionStart === null || field.selectionEnd === null) return null;
  const encode = (index: number): string => toBase64(Y.encodeRelativePosition(Y.createRelativePositionFromTypeIndex(ytext, index)));
  return { question, anchor: encode(field.selectionStart), head: encode(field.selectionEnd) };
}

/** Absolute [start, end] of a shared cursor in the current text, or undefined if unresolvable. */
export function resolveCursor(doc: Y.Doc, cursor: SharedCursor): [number, number] | undefined {
  try {
    const abs = (b64: string): number | undefined => Y.createAbsolutePositionFromRelativePosition(Y.decodeRelativePosition(fromBase64(b64)), doc)?.index;
    const start = abs(cursor.anchor);
    const end = abs(cursor.head);
    return start === undefined || end === undefined ? undefined : [Math.min(start, end), Math.max(start, end)];
  } catch {
    return undefined; // a malformed position from another client is simply not shown
  }
}

export interface RemoteMark {
  readonly name: string;
  readonly color: string;
  readonly start: number;
  readonly end: number;
}

/**
 * Draws other people's carets and selections over a text field: a transparent mirror of the
 * field's text behind the field (same font, padding and wrapping), where the marks are spans.
 * The field stays the only thing that takes input.
 */
export class RemoteCursorOverlay {
  readonly #mirror: HTMLDivElement;

  constructor(private readonly field: HTMLInputElement | HTMLTextAreaElement) {
    const host = document.createElement('div');
    host.className = 'cursor-host';
    field.replaceWith(host);
    this.#mirror = document.createElement('div');
    this.#mirror.className = `cursor-mirror${field instanceof HTMLInputElement ? ' single-line' : ''}`;
    this.#mirror.setAttribute('aria-hidden', 'true');
    host.append(this.#mirror, field);
    field.addEventListener('scroll', () => (this.#mirror.scrollTop = field.scrollTop));
  }

  show(marks: readonly RemoteMark[]): void {
    const text = this.field.value;
    const cs = getComputedStyle(this.field);
    for (const prop of ['font', 'padding', 'border-width', 'letter-spacing', 'line-height', 'width', 'height'] as const) this.#mirror.style.setProperty(prop, cs.getPropertyValue(prop));
    const sorted = [...marks].map((m) => ({ ...m, start: Math.min(m.start, text.length), end: Math.min(m.end, text.length) })).sort((a, b) => a.start - b.start);
    const nodes: Node[] = [];
    let at = 0;
    for (const m of sorted) {
      if (m.start < at) continue; // overlapping marks: the first one wins
      nodes.push(document.createTextNode(text.slice(at, m.start)));
      const caret = document.createElement('span');
      caret.className = 'remote-caret';
      caret.style.setProperty('--c', m.color);
      caret.dataset['user'] = m.name;
      caret.dataset['name'] = m.name;
      nodes.push(caret);
      if (m.end > m.start) {
        const sel = document.createElement('span');
        sel.className = 'remote-selection';
        sel.style.setProperty('--c', m.color);
        sel.textContent = text.slice(m.start, m.end);
        nodes.push(sel);
      }
      at = m.end;
    }
    nodes.push(document.createTextNode(text.slice(at) + '\u200b'));
    this.#mirror.replaceChildren(...nodes);
    this.#mirror.scrollTop = this.field.scrollTop;
  }
}
