/**
 * A tiny element builder. Every piece of text goes through `textContent` / text nodes; nothing in
 * the app ever assigns `innerHTML`, so text from agents or other users cannot become markup.
 */
import { renderMarkdown } from './markdown.js';

export type Child = Node | string | number | false | null | undefined;

export interface Props {
  readonly class?: string;
  readonly text?: string;
  readonly title?: string;
  readonly attrs?: Readonly<Record<string, string | undefined | false>>;
  readonly on?: { readonly [K in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[K]) => void };
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.title) node.title = props.title;
  if (props.attrs) for (const [k, v] of Object.entries(props.attrs)) if (v !== undefined && v !== false) node.setAttribute(k, v);
  if (props.on) {
    for (const [type, handler] of Object.entries(props.on)) node.addEventListener(type, handler as EventListener);
  }
  if (props.text !== undefined) node.textContent = props.text;
  append(node, ...children);
  return node;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function clear(node: Node): void {
  while (node.firstChild) node.removeChild(node.firstChild);
}

/** Replaces all children of `node`. */
export function replaceChildren(node: Node, ...children: Child[]): void {
  clear(node);
  append(node, ...children);
}

/** Replaces the children of `target` with `source` rendered by the safe markdown renderer. */
export function markdownInto(target: HTMLElement, source: string): void {
  target.replaceChildren(renderMarkdown(source, document));
}
