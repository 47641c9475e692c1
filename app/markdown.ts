/**
 * A small, safe markdown renderer for agent text.
 *
 * Two steps: `parseMarkdown` turns source into a tree of plain objects (no DOM), and
 * `renderMarkdown` builds DOM nodes from that tree with `createElement` + text nodes only. Raw
 * HTML in the source is never interpreted: `<img onerror=…>` stays literal text. The only
 * attribute that carries source text is `href`, and only for http(s) and mailto URLs; any other
 * link (javascript:, data:, relative, malformed) renders as inert text. Images are shown as
 * links, never loaded.
 *
 * Supported: paragraphs, ATX headings, fenced and indented code, block quotes, bullet and numbered
 * lists (one level, with nested content as text), horizontal rules, `code`, **strong**, *em*,
 * ~~strike~~, [links](url), <autolinks>, bare http(s) URLs, backslash escapes, hard line breaks.
 */

export type Inline =
  | { readonly t: 'text'; readonly v: string }
  | { readonly t: 'code'; readonly v: string }
  | { readonly t: 'strong' | 'em' | 'del'; readonly c: Inline[] }
  | { readonly t: 'link'; readonly href: string | undefined; readonly c: Inline[] }
  | { readonly t: 'br' };

export type Block =
  | { readonly t: 'p'; readonly c: Inline[] }
  | { readonly t: 'h'; readonly level: number; readonly c: Inline[] }
  | { readonly t: 'code'; readonly lang: string; readonly v: string }
  | { readonly t: 'quote'; readonly c: Block[] }
  | { readonly t: 'list'; readonly ordered: boolean; readonly start: number; readonly items: Block[][] }
  | { readonly t: 'hr' };

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

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

// ─── Blocks ──────────────────────────────────────────────────────────────────

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const HR = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const BULLET = /^ {0,3}[-*+]\s+(.*)$/;
const ORDERED = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const BLANK = /^\s*$/;

export function parseMarkdown(source: string, depth = 0): Block[] {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (BLANK.test(line)) {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1]!;
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i]!.trimStart().startsWith(marker)) body.push(lines[i++]!);
      i++; // closing fence (or end of input while streaming)
      blocks.push({ t: 'code', lang: fence[2] ?? '', v: body.join('\n') });
      continue;
    }
    if (/^( {4}|\t)/.test(line)) {
      const body: string[] = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]!) || (BLANK.test(lines[i]!) && /^( {4}|\t)/.test(lines[i + 1] ?? '')))) {
        body.push(lines[i++]!.replace(/^( {4}|\t)/, ''));
      }
      blocks.push({ t: 'code', lang: '', v: body.join('\n') });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      blocks.push({ t: 'h', level: heading[1]!.length, c: parseInline(heading[2] ?? '') });
      i++;
      continue;
    }
    if (HR.test(line)) {
      blocks.push({ t: 'hr' });
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const body: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i]!)) body.push(QUOTE.exec(lines[i++]!)![1]!);
      // Bounded nesting: deeper quotes are shown as text.
      blocks.push(depth < 8 ? { t: 'quote', c: parseMarkdown(body.join('\n'), depth + 1) } : { t: 'p', c: [{ t: 'text', v: body.join('\n') }] });
      continue;
    }
    const bullet = BULLET.exec(line);
    const ordered = bullet ? undefined : ORDERED.exec(line);
    if (bullet || ordered) {
      const isOrdered = ordered !== undefined && ordered !== null;
      const itemRe = isOrdered ? ORDERED : BULLET;
      const items: string[][] = [];
      while (i < lines.length) {
        const l = lines[i]!;
        const m = itemRe.exec(l);
        if (m) {
          items.push([isOrdered ? m[2]! : m[1]!]);
          i++;
        } else if (!BLANK.test(l) && /^\s{2,}/.test(l) && items.length > 0) {
          items[items.length - 1]!.push(l.trim());
          i++;
        } else if (BLANK.test(l) && itemRe.test(lines[i + 1] ?? '')) {
          i++;
        } else break;
      }
      blocks.push({
        t: 'list',
        ordered: isOrdered,
        start: isOrdered ? Number(ordered![1]) : 1,
        items: items.map((item) => (depth < 8 ? parseMarkdown(item.join('\n'), depth + 1) : [{ t: 'p', c: [{ t: 'text', v: item.join('\n') }] }])),
      });
      continue;
    }
    // Paragraph: until a blank line or the start of another block.
    const body: string[] = [];
    while (i < lines.length) {
      const l = lines[i]!;
      if (BLANK.test(l) || (body.length > 0 && (FENCE.test(l) || HEADING.test(l) || HR.test(l) || QUOTE.test(l) || BULLET.test(l) || ORDERED.test(l)))) break;
      body.push(l);
      i++;
    }
    blocks.push({ t: 'p', c: parseParagraph(body) });
  }
  return blocks;
}

/** Lines of a paragraph: joined with a space, or a hard break after two trailing spaces / a backslash. */
function parseParagraph(lines: string[]): Inline[] {
  const out: Inline[] = [];
  lines.forEach((line, index) => {
    const last = index === lines.length - 1;
    const hard = !last && (/ {2,}$/.test(line) || /\\$/.test(line));
    const text = hard ? line.replace(/( {2,}|\\)$/, '') : line.trim();
    out.push(...parseInline(text.trim()));
    if (!last) out.push(hard ? { t: 'br' } : { t: 'text', v: ' ' });
  });
  return mergeText(out);
}

// ─── Inlines ─────────────────────────────────────────────────────────────────

const ESCAPABLE = /[\\`*_{}[\]()#+\-.!<>~|"']/;
const BARE_URL = /^https?:\/\/[^\s<>]*[^\s<>.,:;"')\]!?*_~]/;
const AUTOLINK = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i;

export function parseInline(s: string, depth = 0): Inline[] {
  const out: Inline[] = [];
  let text = '';
  const flush = (): void => {
    if (text) out.push({ t: 'text', v: text });
    text = '';
  };
  const nested = (inner: string): Inline[] => (depth < 16 ? parseInline(inner, depth + 1) : [{ t: 'text', v: inner }]);
  let i = 0;
  while (i < s.length) {
    const ch = s[i]!;
    const rest = s.slice(i);
    if (ch === '\\' && i + 1 < s.length && ESCAPABLE.test(s[i + 1]!)) {
      text += s[i + 1];
      i += 2;
      continue;
    }
    if (ch === '`') {
      const run = /^`+/.exec(rest)![0];
      const close = s.indexOf(run, i + run.length);
      if (close > 0) {
        flush();
        out.push({ t: 'code', v: s.slice(i + run.length, close).replace(/^ (.*) $/, '$1') });
        i = close + run.length;
        continue;
      }
      text += run;
      i += run.length;
      continue;
    }
    const delim = rest.startsWith('**') ? '**' : rest.startsWith('__') ? '__' : rest.startsWith('~~') ? '~~' : ch === '*' || ch === '_' ? ch : undefined;
    if (delim && !/\s/.test(s[i + delim.length] ?? ' ') && !(ch === '_' && /\w/.test(s[i - 1] ?? ''))) {
      const close = findClose(s, delim, i + delim.length);
      if (close > 0) {
        flush();
        const kind = delim === '~~' ? 'del' : delim.length === 2 ? 'strong' : 'em';
        out.push({ t: kind, c: nested(s.slice(i + delim.length, close)) });
        i = close + delim.length;
        continue;
      }
    }
    if (ch === '!' && s[i + 1] === '[') {
      const link = readLink(s, i + 1);
      if (link) {
        flush();
        // Never load images from agent text: show them as a link to the image.
        out.push({ t: 'link', href: safeHref(link.url), c: [{ t: 'text', v: `image: ${link.label || link.url}` }] });
        i = link.end;
        continue;
      }
    }
    if (ch === '[') {
      const link = readLink(s, i);
      if (link) {
        flush();
        out.push({ t: 'link', href: safeHref(link.url), c: nested(link.label) });
        i = link.end;
        continue;
      }
    }
    if (ch === '<') {
      const auto = AUTOLINK.exec(rest);
      if (auto) {
        flush();
        out.push({ t: 'link', href: safeHref(auto[1]!), c: [{ t: 'text', v: auto[1]! }] });
        i += auto[0].length;
        continue;
      }
    }
    if ((ch === 'h' || ch === 'H') && !/\w/.test(s[i - 1] ?? '')) {
      const bare = BARE_URL.exec(rest);
      if (bare) {
        flush();
        out.push({ t: 'link', href: safeHref(bare[0]), c: [{ t: 'text', v: bare[0] }] });
        i += bare[0].length;
        continue;
      }
    }
    text += ch;
    i++;
  }
  flush();
  return mergeText(out);
}

function findClose(s: string, delim: string, from: number): number {
  let j = from;
  while (j < s.length) {
    if (s[j] === '\\') {
      j += 2;
      continue;
    }
    if (s[j] === '`') {
      const run = /^`+/.exec(s.slice(j))![0];
      const close = s.indexOf(run, j + run.length);
      j = close > 0 ? close + run.length : j + run.length;
      continue;
    }
    if (s.startsWith(delim, j) && j > from && !/\s/.test(s[j - 1]!)) {
      // `**` must not be taken for the end of an `*` span.
      if (delim.length === 1 && s[j + 1] === delim) {
        j += 2;
        continue;
      }
      if (delim === '_' && /\w/.test(s[j + 1] ?? '')) {
        j++;
        continue;
      }
      return j;
    }
    j++;
  }
  return -1;
}

/** `[label](url "title")` starting at `start` (the `[`). */
function readLink(s: string, start: number): { label: string; url: string; end: number } | undefined {
  let depth = 0;
  let j = start;
  for (; j < s.length; j++) {
    if (s[j] === '\\') {
      j++;
      continue;
    }
    if (s[j] === '[') depth++;
    else if (s[j] === ']' && --depth === 0) break;
  }
  if (j >= s.length || s[j + 1] !== '(') return undefined;
  const label = s.slice(start + 1, j);
  let k = j + 2;
  let parens = 1;
  for (; k < s.length; k++) {
    if (s[k] === '(') parens++;
    else if (s[k] === ')' && --parens === 0) break;
  }
  if (k >= s.length) return undefined;
  const inside = s.slice(j + 2, k).trim();
  const url = /^<([^>]*)>/.exec(inside)?.[1] ?? inside.split(/\s+/)[0] ?? '';
  return { label, url, end: k + 1 };
}

function mergeText(parts: Inline[]): Inline[] {
  const out: Inline[] = [];
  for (const p of parts) {
    const prev = out[out.length - 1];
    if (p.t === 'text' && prev?.t === 'text') out[out.length - 1] = { t: 'text', v: prev.v + p.v };
    else out.push(p);
  }
  return out;
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

type Append = (parent: MarkdownNode, child: unknown) => void;
const appendTo: Append = (parent, child) => {
  (parent.appendChild as (c: unknown) => unknown)(child);
};

/** Renders markdown into a fragment of elements and text nodes. */
export function renderMarkdown<F extends MarkdownNode>(source: string, doc: MarkdownDocument<F>): F {
  const fragment = doc.createDocumentFragment();
  for (const block of parseMarkdown(source)) appendTo(fragment, renderBlock(block, doc));
  return fragment;
}

function renderBlock(block: Block, doc: MarkdownDocument): MarkdownElement {
  switch (block.t) {
    case 'p':
      return withInlines(doc.createElement('p'), block.c, doc);
    case 'h':
      // Agent headings sit inside a message: keep them below the page's own headings.
      return withInlines(doc.createElement(`h${Math.min(6, block.level + 2)}`), block.c, doc);
    case 'code': {
      const pre = doc.createElement('pre');
      const code = doc.createElement('code');
      if (block.lang && /^[\w+-]{1,32}$/.test(block.lang)) code.setAttribute('data-lang', block.lang);
      appendTo(code, doc.createTextNode(block.v));
      appendTo(pre, code);
      return pre;
    }
    case 'quote': {
      const q = doc.createElement('blockquote');
      for (const b of block.c) appendTo(q, renderBlock(b, doc));
      return q;
    }
    case 'list': {
      const list = doc.createElement(block.ordered ? 'ol' : 'ul');
      if (block.ordered && block.start !== 1) list.setAttribute('start', String(block.start));
      for (const item of block.items) {
        const li = doc.createElement('li');
        // A single paragraph item renders without the <p> wrapper (tight list).
        if (item.length === 1 && item[0]!.t === 'p') withInlines(li, item[0]!.c, doc);
        else for (const b of item) appendTo(li, renderBlock(b, doc));
        appendTo(list, li);
      }
      return list;
    }
    case 'hr':
      return doc.createElement('hr');
  }
}

function withInlines(parent: MarkdownElement, inlines: readonly Inline[], doc: MarkdownDocument): MarkdownElement {
  for (const inline of inlines) appendTo(parent, renderInline(inline, doc));
  return parent;
}

function renderInline(inline: Inline, doc: MarkdownDocument): unknown {
  switch (inline.t) {
    case 'text':
      return doc.createTextNode(inline.v);
    case 'code': {
      const code = doc.createElement('code');
      appendTo(code, doc.createTextNode(inline.v));
      return code;
    }
    case 'strong':
    case 'em':
    case 'del':
      return withInlines(doc.createElement(inline.t), inline.c, doc);
    case 'br':
      return doc.createElement('br');
    case 'link': {
      if (inline.href === undefined) {
        const span = doc.createElement('span');
        span.setAttribute('class', 'md-inert-link');
        span.setAttribute('title', 'link disabled: only http(s) and mailto links are allowed');
        return withInlines(span, inline.c, doc);
      }
      const a = doc.createElement('a');
      a.setAttribute('href', inline.href);
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer nofollow');
      return withInlines(a, inline.c, doc);
    }
  }
}

/** Plain text of a markdown source (for previews). */
export function markdownToText(source: string): string {
  const inlineText = (c: readonly Inline[]): string => c.map((i) => (i.t === 'text' || i.t === 'code' ? i.v : i.t === 'br' ? ' ' : inlineText(i.c))).join('');
  const blockText = (b: Block): string =>
    b.t === 'p' || b.t === 'h' ? inlineText(b.c) : b.t === 'code' ? b.v : b.t === 'quote' ? b.c.map(blockText).join(' ') : b.t === 'list' ? b.items.map((it) => it.map(blockText).join(' ')).join(' ') : '';
  return parseMarkdown(source).map(blockText).join(' ');
}
