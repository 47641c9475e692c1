import { describe, expect, it } from 'vitest';
import { codeLanguage, renderMarkdown, safeHref, markdownToText, type MarkdownDocument, type MarkdownElement } from '../../app/markdown.js';

/** A fake DOM that records every element and attribute the renderer creates. */
class FakeNode implements MarkdownElement {
  readonly children: Array<FakeNode | string> = [];
  readonly attrs = new Map<string, string>();
  constructor(readonly tag: string) {}
  appendChild(child: never): unknown {
    this.children.push(child as FakeNode | string);
    return child;
  }
  setAttribute(name: string, value: string): void {
    this.attrs.set(name, value);
  }
  toString(): string {
    const inner = this.children.map((c) => (typeof c === 'string' ? c : c.toString())).join('');
    if (this.tag === '#fragment') return inner;
    const attrs = [...this.attrs].map(([k, v]) => ` ${k}="${v}"`).join('');
    return `<${this.tag}${attrs}>${inner}</${this.tag}>`;
  }
}

class FakeDoc implements MarkdownDocument {
  readonly created: FakeNode[] = [];
  createElement(tag: string): FakeNode {
    const n = new FakeNode(tag);
    this.created.push(n);
    return n;
  }
  createTextNode(text: string): string {
    return text;
  }
  createDocumentFragment(): FakeNode {
    return new FakeNode('#fragment');
  }
}

function render(src: string): { html: string; doc: FakeDoc } {
  const doc = new FakeDoc();
  const frag = renderMarkdown(src, doc);
  return { html: frag.toString(), doc };
}

const ALLOWED_TAGS = new Set(['div', 'button', 'p', 'h3', 'h4', 'h5', 'h6', 'pre', 'code', 'blockquote', 'ul', 'ol', 'li', 'hr', 'strong', 'em', 'del', 'br', 'a', 'span', 'table', 'thead', 'tbody', 'tr', 'th', 'td']);
const ALLOWED_ATTRS = new Set(['type', 'href', 'target', 'rel', 'class', 'title', 'data-lang', 'start']);

describe('safeHref', () => {
  it('allows http, https and mailto only', () => {
    expect(safeHref('https://example.com/a?b=1')).toBe('https://example.com/a?b=1');
    expect(safeHref('http://x.org')).toBe('http://x.org/');
    expect(safeHref('mailto:a@b.c')).toBe('mailto:a@b.c');
    for (const bad of [
      'javascript:alert(1)',
      'JAVASCRIPT:alert(1)',
      ' javascript:alert(1)',
      'java\nscript:alert(1)',
      'java\tscript:x',
      'data:text/html,<script>',
      'vbscript:x',
      '/relative',
      '//evil.com',
      'https://exa mple.com',
      '',
      'https://',
    ]) {
      expect(safeHref(bad), bad).toBeUndefined();
    }
  });
});

describe('markdown structure', () => {
  it('renders blocks: headings, paragraphs, lists, fenced code, quotes, rules and tables', () => {
    const { html } = render('# Title\n\npara one\nline two\n\n- a\n- b\n\n1. x\n2. y\n\n```ts\nconst a = 1;\n```\n\n> quoted\n\n---\n\n| k | v |\n|---|--:|\n| a | 1 |');
    expect(html).toBe(
      '<h3>Title</h3><p>para one\nline two</p><ul><li>a</li><li>b</li></ul><ol><li>x</li><li>y</li></ol>' +
        '<div class="md-code"><div class="md-code-head"><span class="md-code-lang">ts</span><button type="button" class="md-copy" title="Copy the code to the clipboard">Copy</button></div>' +
        '<pre><code data-lang="ts">const a = 1;</code></pre></div><blockquote><p>quoted</p></blockquote><hr></hr>' +
        '<table><thead><tr><th>k</th><th class="md-align-right">v</th></tr></thead><tbody><tr><td>a</td><td class="md-align-right">1</td></tr></tbody></table>',
    );
  });

  it('keeps an unterminated fence open while streaming', () => {
    expect(render('```\npartial').html).toBe('<div class="md-code"><div class="md-code-head"><button type="button" class="md-copy" title="Copy the code to the clipboard">Copy</button></div><pre><code>partial</code></pre></div>');
  });

  it('labels a code block with the first word of its fence info string, as text', () => {
    const label = (src: string): string | undefined =>
      render(src)
        .doc.created.find((n) => n.attrs.get('class') === 'md-code-lang')
        ?.children.join('');
    expect(label('```python title="x.py"\nprint(1)\n```')).toBe('python');
    expect(label('```c++\nint x;\n```')).toBe('c++');
    expect(label('```\nplain\n```')).toBeUndefined();
    expect(label('    indented code')).toBeUndefined();
    // Markup in the info string is a label's text, never an element or an attribute.
    const hostile = render('```<img/src=x/onerror=alert(1)>\ncode\n```');
    expect(hostile.doc.created.map((n) => n.tag)).toEqual(['div', 'div', 'span', 'button', 'pre', 'code']);
    expect(hostile.doc.created.find((n) => n.tag === 'code')!.attrs.has('data-lang')).toBe(false);
    expect(label('```<img/src=x/onerror=alert(1)>\ncode\n```')).toBe('<img/src=x/onerror=aler…');
    expect(codeLanguage('a'.repeat(100))).toHaveLength(24);
    expect(codeLanguage('  ts  ')).toBe('ts');
  });

  it('renders inline marks, code, links and escapes', () => {
    expect(render('a **b** *c* ~~d~~ `e*f*` \\*g\\*').html).toBe('<p>a <strong>b</strong> <em>c</em> <del>d</del> <code>e*f*</code> *g*</p>');
    expect(render('see [docs](https://x.dev/a_(b)) and https://y.dev/p.').html).toBe(
      '<p>see <a href="https://x.dev/a_(b)" target="_blank" rel="noopener noreferrer nofollow">docs</a> and ' + '<a href="https://y.dev/p" target="_blank" rel="noopener noreferrer nofollow">https://y.dev/p</a>.</p>',
    );
    expect(render('snake_case_name stays').html).toBe('<p>snake_case_name stays</p>');
  });

  it('gives plain text for previews', () => {
    expect(markdownToText('# Hi\n\n**bold** [x](javascript:y)')).toBe('Hi bold x');
  });
});

describe('renderMarkdown', () => {
  it('renders structure with DOM nodes', () => {
    const { html } = render('## Plan\n\nDo **this** then `that`.\n\n- one\n- two [link](https://ex.com)');
    expect(html).toBe('<h4>Plan</h4><p>Do <strong>this</strong> then <code>that</code>.</p>' + '<ul><li>one</li><li>two <a href="https://ex.com/" target="_blank" rel="noopener noreferrer nofollow">link</a></li></ul>');
  });

  it('renders raw HTML as text and never creates elements or handlers from it', () => {
    const src = 'Look: <img src=x onerror="alert(1)"> <script>alert(2)</script> <a href="javascript:alert(3)">x</a>\n\n<iframe src=//evil></iframe>';
    const { html, doc } = render(src);
    for (const node of doc.created) {
      expect(ALLOWED_TAGS.has(node.tag), node.tag).toBe(true);
      for (const name of node.attrs.keys()) expect(ALLOWED_ATTRS.has(name), name).toBe(true);
    }
    expect(doc.created.map((n) => n.tag)).toEqual(['p', 'p']);
    expect(html).toContain('<img src=x onerror="alert(1)">');
  });

  it('renders javascript: and other unsafe links inert', () => {
    const { doc } = render('[click](javascript:alert(1)) [d](data:text/html;base64,PHNjcmlwdD4=) ![pic](javascript:x) <javascript:alert(1)> [ok](https://ok.dev)');
    const anchors = doc.created.filter((n) => n.tag === 'a');
    expect(anchors).toHaveLength(1);
    expect(anchors[0]!.attrs.get('href')).toBe('https://ok.dev/');
    const inert = doc.created.filter((n) => n.tag === 'span');
    // Four inert links: the three bracket links and the `<javascript:…>` autolink (CommonMark).
    expect(inert).toHaveLength(4);
    for (const n of doc.created) {
      const href = n.attrs.get('href');
      if (href !== undefined) expect(href).toMatch(/^(https?:|mailto:)/);
      expect([...n.attrs.keys()].some((k) => k.startsWith('on'))).toBe(false);
    }
  });

  it('never creates img elements, even for safe image URLs', () => {
    const { doc } = render('![cat](https://example.com/cat.png)');
    expect(doc.created.some((n) => n.tag === 'img')).toBe(false);
    expect(doc.created.find((n) => n.tag === 'a')!.attrs.get('href')).toBe('https://example.com/cat.png');
  });

  it('bounds nesting depth', () => {
    const deep = '>'.repeat(200) + ' x';
    expect(() => render(deep)).not.toThrow();
    const stars = '*'.repeat(5000);
    expect(() => render(stars)).not.toThrow();
  });
});
