/**
 * Safe markdown for agent text: `marked`'s lexer (CommonMark + GitHub tables, task lists,
 * strikethrough, autolinks) turns source into tokens, and this file builds DOM from them with
 * `createElement` and text nodes only. No HTML string is ever produced or parsed, so no sanitizer
 * is needed: raw HTML in the source (`<img onerror=…>`, `<script>`) stays literal text. The only
 * attribute that carries source text is `href`, and only for http(s) and mailto URLs; any other
 * link (javascript:, data:, relative, malformed) renders as inert text. Images are shown as links,
 * never loaded.
 *
 * `renderTokens` renders a slice of tokens, which is what the streaming renderer
 * (`markdown-stream.ts`) uses to re-render only the unfinished tail of a part.
 */
import { Lexer, type Token, type Tokens } from 'marked';

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);
/** Deeper block nesting than this renders as plain text (a hostile `>>>>…` cannot blow the stack). */
const MAX_DEPTH = 32;

/** The URL to put in `href`, or undefined when the link must stay inert. */
export function safeHref(raw: string): string | undefined {
  const url = raw.trim();
  // Browsers strip tabs/newlines inside URLs ("java\nscript:"); refuse anything of the sort.
  // eslint-disable-next-line no-control-regex
  if (url === '' || /[\u0000-\u0020\u007f-\u009f\s]/.test(url)) return undefined;
  if (!/^(https?:\/\/|mailto:)/i.test(url)) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  return SAFE_PROTOCOLS.has(parsed.protocol) ? parsed.href : undefined;
}

/** Block tokens of a markdown source (GFM). */
export function lexMarkdown(source: string): Token[] {
  return Lexer.lex(source, { gfm: true });
}

// ─── DOM ─────────────────────────────────────────────────────────────────────

/** The slice of `Document` the renderer uses (tests pass a fake). */
export interface MarkdownDocument<F extends MarkdownNode = MarkdownNode> {
  createElement(tag: string): MarkdownElement;
  createTextNode(text: string): unknown;
  createDocumentFragment(): F;
}

export interface MarkdownNode {
  appendChild(child: never): unknown;
}

export interface MarkdownElement extends MarkdownNode {
  setAttribute(name: string, value: string): void;
}

const appendTo = (parent: MarkdownNode, child: unknown): void => {
  (parent.appendChild as (c: unknown) => unknown)(child);
};

/** Renders markdown into a fragment of elements and text nodes. */
export function renderMarkdown<F extends MarkdownNode>(source: string, doc: MarkdownDocument<F>): F {
  return renderTokens(lexMarkdown(source), doc);
}

/** Renders block tokens (from `lexMarkdown`) into a fragment. */
export function renderTokens<F extends MarkdownNode>(tokens: readonly Token[], doc: MarkdownDocument<F>): F {
  const fragment = doc.createDocumentFragment();
  renderBlocks(fragment, tokens, doc, 0);
  return fragment;
}

function renderBlocks(parent: MarkdownNode, tokens: readonly Token[], doc: MarkdownDocument, depth: number): void {
  for (const token of tokens) {
    const node = renderBlock(token, doc, depth);
    if (node !== undefined) appendTo(parent, node);
  }
}

function renderBlock(token: Token, doc: MarkdownDocument, depth: number): unknown {
  if (depth > MAX_DEPTH) return doc.createTextNode(token.raw);
  const t = token as Tokens.Generic;
  switch (t.type) {
    case 'space':
    case 'def':
      return undefined;
    case 'paragraph':
      return inlinesInto(doc.createElement('p'), (t as Tokens.Paragraph).tokens, doc, depth);
    case 'heading':
      // Agent headings sit inside a message: keep them below the page's own headings.
      return inlinesInto(doc.createElement(`h${Math.min(6, (t as Tokens.Heading).depth + 2)}`), (t as Tokens.Heading).tokens, doc, depth);
    case 'code':
      return renderCodeBlock(t as Tokens.Code, doc);
    case 'blockquote': {
      const quote = doc.createElement('blockquote');
      renderBlocks(quote, (t as Tokens.Blockquote).tokens, doc, depth + 1);
      return quote;
    }
    case 'list': {
      const block = t as Tokens.List;
      const list = doc.createElement(block.ordered ? 'ol' : 'ul');
      if (block.ordered && typeof block.start === 'number' && block.start !== 1) list.setAttribute('start', String(block.start));
      for (const item of block.items) {
        const li = doc.createElement('li');
        renderListItem(li, item, doc, depth + 1);
        appendTo(list, li);
      }
      return list;
    }
    case 'table':
      return renderTable(t as Tokens.Table, doc, depth);
    case 'hr':
      return doc.createElement('hr');
    case 'text': {
      // A text block (list items without a paragraph): its inline tokens, or its text.
      const text = t as Tokens.Text;
      return text.tokens ? inlinesInto(doc.createDocumentFragment() as unknown as MarkdownElement, text.tokens, doc, depth) : doc.createTextNode(text.text);
    }
    case 'html':
      // Raw HTML is shown as the text it is, never interpreted.
      return inlinesInto(doc.createElement('p'), [{ type: 'text', raw: t.raw, text: t.raw.replace(/\n+$/, '') }], doc, depth);
    default:
      return doc.createTextNode(t.raw);
  }
}

/** The longest language label shown; a longer info string is cut (it is a label, not content). */
const MAX_LANG_LABEL = 24;

/**
 * The language of a fenced block as a label: the first word of the fence's info string
 * (```` ```ts title="x" ```` → `ts`), or undefined for an indented block or a bare fence.
 */
export function codeLanguage(info: string | undefined): string | undefined {
  const word = /^\S+/.exec((info ?? '').trim())?.[0];
  if (word === undefined) return undefined;
  return word.length > MAX_LANG_LABEL ? `${word.slice(0, MAX_LANG_LABEL - 1)}…` : word;
}

/**
 * A code block with a header: the language label when the fence names one (a text node, whatever
 * the info string holds) and a Copy button. The button carries no handler: one listener on the document copies from the
 * block the button sits in (`code-copy.ts`), so blocks re-rendered per frame while a part streams
 * copy what is on screen now.
 */
function renderCodeBlock(block: Tokens.Code, doc: MarkdownDocument): MarkdownElement {
  const figure = doc.createElement('div');
  figure.setAttribute('class', 'md-code');
  const head = doc.createElement('div');
  head.setAttribute('class', 'md-code-head');
  const lang = codeLanguage(block.lang);
  if (lang !== undefined) {
    const label = doc.createElement('span');
    label.setAttribute('class', 'md-code-lang');
    appendTo(label, doc.createTextNode(lang));
    appendTo(head, label);
  }
  const copy = doc.createElement('button');
  copy.setAttribute('type', 'button');
  copy.setAttribute('class', 'md-copy');
  copy.setAttribute('title', 'Copy the code to the clipboard');
  appendTo(copy, doc.createTextNode('Copy'));
  appendTo(head, copy);
  const pre = doc.createElement('pre');
  const code = doc.createElement('code');
  if (lang !== undefined && /^[\w+#.-]{1,32}$/.test(lang)) code.setAttribute('data-lang', lang);
  appendTo(code, doc.createTextNode(block.text));
  appendTo(pre, code);
  appendTo(figure, head);
  appendTo(figure, pre);
  return figure;
}

function renderListItem(li: MarkdownElement, item: Tokens.ListItem, doc: MarkdownDocument, depth: number): void {
  for (const token of item.tokens) {
    if (token.type === 'checkbox') {
      // A task box as text, not an input element: nothing here is interactive.
      appendTo(li, doc.createTextNode((token as Tokens.Checkbox).checked ? '☑ ' : '☐ '));
      continue;
    }
    const node = renderBlock(token, doc, depth);
    if (node !== undefined) appendTo(li, node);
  }
}

function renderTable(table: Tokens.Table, doc: MarkdownDocument, depth: number): MarkdownElement {
  const node = doc.createElement('table');
  const head = doc.createElement('thead');
  const headRow = doc.createElement('tr');
  for (const cell of table.header) appendTo(headRow, cellInto(doc.createElement('th'), cell, doc, depth));
  appendTo(head, headRow);
  appendTo(node, head);
  if (table.rows.length > 0) {
    const body = doc.createElement('tbody');
    for (const row of table.rows) {
      const tr = doc.createElement('tr');
      for (const cell of row) appendTo(tr, cellInto(doc.createElement('td'), cell, doc, depth));
      appendTo(body, tr);
    }
    appendTo(node, body);
  }
  return node;
}

function cellInto(cell: MarkdownElement, token: Tokens.TableCell, doc: MarkdownDocument, depth: number): MarkdownElement {
  if (token.align) cell.setAttribute('class', `md-align-${token.align}`);
  return inlinesInto(cell, token.tokens, doc, depth);
}

function inlinesInto(parent: MarkdownElement, tokens: readonly Token[], doc: MarkdownDocument, depth: number): MarkdownElement {
  for (const token of tokens) appendTo(parent, renderInline(token, doc, depth + 1));
  return parent;
}

function renderInline(token: Token, doc: MarkdownDocument, depth: number): unknown {
  const t = token as Tokens.Generic;
  if (depth > MAX_DEPTH) return doc.createTextNode(t.raw);
  switch (t.type) {
    case 'text':
      return (t as Tokens.Text).tokens ? inlinesInto(doc.createDocumentFragment() as unknown as MarkdownElement, (t as Tokens.Text).tokens!, doc, depth) : doc.createTextNode((t as Tokens.Text).text);
    case 'escape':
      return doc.createTextNode((t as Tokens.Escape).text);
    case 'codespan': {
      const code = doc.createElement('code');
      appendTo(code, doc.createTextNode((t as Tokens.Codespan).text));
      return code;
    }
    case 'strong':
    case 'em':
    case 'del':
      return inlinesInto(doc.createElement(t.type), (t as Tokens.Strong).tokens, doc, depth);
    case 'br':
      return doc.createElement('br');
    case 'link':
    case 'image': {
      const link = t as Tokens.Link | Tokens.Image;
      const href = safeHref(link.href);
      if (href === undefined) {
        const span = doc.createElement('span');
        span.setAttribute('class', 'md-inert-link');
        span.setAttribute('title', 'link disabled: only http(s) and mailto links are allowed');
        return t.type === 'image' ? inlinesInto(span, [{ type: 'text', raw: link.text, text: link.text }], doc, depth) : inlinesInto(span, link.tokens, doc, depth);
      }
      const a = doc.createElement('a');
      a.setAttribute('href', href);
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer nofollow');
      // An image is a link to it, labelled with its alt text: never loaded.
      return t.type === 'image' ? inlinesInto(a, [{ type: 'text', raw: link.text, text: link.text || href }], doc, depth) : inlinesInto(a, link.tokens, doc, depth);
    }
    default:
      // Inline HTML (`<b>`, `<img …>`) and anything unknown: the source text, as text.
      return doc.createTextNode(t.raw);
  }
}

/** Plain text of a markdown source (for previews). */
export function markdownToText(source: string): string {
  const inline = (tokens: readonly Token[] | undefined): string =>
    (tokens ?? [])
      .map((t) => {
        const g = t as Tokens.Generic;
        if (g.type === 'br') return ' ';
        if (g.tokens) return inline(g.tokens);
        return g.type === 'html' ? g.raw : typeof g['text'] === 'string' ? (g['text'] as string) : '';
      })
      .join('');
  const block = (t: Token): string => {
    const g = t as Tokens.Generic;
    switch (g.type) {
      case 'code':
        return (g as Tokens.Code).text;
      case 'list':
        return (g as Tokens.List).items.map((item) => item.tokens.map(block).join(' ')).join(' ');
      case 'blockquote':
        return (g as Tokens.Blockquote).tokens.map(block).join(' ');
      case 'table':
        return [(g as Tokens.Table).header, ...(g as Tokens.Table).rows].map((row) => row.map((c) => inline(c.tokens)).join(' ')).join(' ');
      case 'space':
      case 'def':
      case 'hr':
      case 'checkbox':
        return '';
      default:
        return g.tokens ? inline(g.tokens) : typeof g['text'] === 'string' ? (g['text'] as string) : '';
    }
  };
  return lexMarkdown(source)
    .map(block)
    .filter((s) => s !== '')
    .join(' ');
}
