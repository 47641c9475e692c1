/**
 * Incremental markdown for streamed parts. A part's text only grows while an agent streams it, so
 * what is on screen is split in two: blocks that are finished (followed by another block, so no
 * later text can change how they parse) are rendered once and never touched again; only the
 * unfinished tail block is lexed and rendered again. A delta therefore costs the length of the
 * tail, not of the whole part, and the main thread never re-parses a long answer per delta.
 *
 * A frame renders at most `SLICE_CHARS` of new text (more only when one block is longer): a page
 * that falls behind (a fast agent, a cold open of a 1,000,000-character answer) catches up over
 * several frames instead of in one task that freezes the tab. The same rule that makes streaming
 * safe makes this safe: a prefix of the text is exactly what a slower stream would have shown.
 *
 * Text that does not extend what was shown (an edit, a truncation) is rendered from scratch.
 *
 * Text the formatter has not reached yet is never missing from the page: it waits after the
 * formatted blocks as plain text (`RawBacklog`), so a page that is behind shows the whole answer
 * at once — find-in-page and screen readers see all of it — and each frame turns another slice of
 * it into formatted blocks. A page that keeps up (a model's pace) never shows raw text.
 */
import { lexMarkdown, renderTokens } from './markdown.js';

type Schedule = (fn: () => void) => void;
/** The next animation frame, or 100 ms when frames do not run (a hidden tab). */
export const nextFrame: Schedule = (fn) => {
  let done = false;
  const run = (): void => {
    if (done) return;
    done = true;
    fn();
  };
  requestAnimationFrame(run);
  setTimeout(run, 100);
};

/**
 * New text rendered per frame. ~6k characters of agent markdown are ~500 DOM nodes: lexing,
 * building and laying them out, with the frame's other work, stays under a 50 ms task on a slow
 * machine. At 16k the 100,000-character bench run had frames of 45 ms script + 25 ms layout of CPU
 * (116 ms wall on a quiet machine); a tab that is behind now catches up in more, shorter frames.
 */
export const SLICE_CHARS = 6_144;

/**
 * Finished blocks are grouped into chunks of about this much text; a full chunk becomes
 * `content-visibility: auto` (app.css `.md-lazy`): the browser lays out and paints only the chunks near the viewport,
 * so a frame's cost does not grow with the length of the part, and a 1,000,000-character answer
 * scrolls like a short one.
 */
export const CHUNK_CHARS = 4_096;

export class StreamingMarkdown {
  /** Finished blocks, rendered once. */
  readonly #stable: HTMLElement;
  /** The unfinished tail block(s), rendered again on each frame with new text. */
  readonly #tail: HTMLElement;
  /** The text the stable blocks were rendered from (a prefix of `#source`). */
  #stableText = '';
  /** Latest text asked for, and how much of it is on screen (stable blocks and tail). */
  #source = '';
  #shownLength = 0;
  #scheduled = false;
  /** The chunk finished blocks are appended to, and how much text it holds. */
  #chunk: HTMLElement | undefined;
  #chunkChars = 0;
  /** Text after what is formatted, as plain text, while the formatter is behind. */
  readonly #backlog: RawBacklog;

  /**
   * @param onGrew called after a frame of its own rendered more text (the chat view keeps the end
   *   of the chat in view while a part catches up over several frames).
   */
  constructor(
    readonly el: HTMLElement,
    private readonly onGrew: () => void = () => undefined,
    private readonly schedule: Schedule = nextFrame,
  ) {
    this.#stable = document.createElement('div');
    this.#tail = document.createElement('div');
    this.#stable.className = 'md-blocks';
    this.#tail.className = 'md-blocks';
    this.#backlog = new RawBacklog();
    el.replaceChildren(this.#stable, this.#tail, this.#backlog.el);
  }

  /**
   * The full text of the part now. With `now`, a slice of it is rendered at once (the caller is
   * already in a frame); the rest, and everything without `now`, on the next frames.
   */
  set(source: string, now = false): void {
    if (source === this.#source && this.#shownLength === source.length) return;
    this.#source = source;
    if (now && !this.#scheduled) {
      this.#renderSlice();
      if (this.#shownLength < this.#source.length) this.#later();
      return;
    }
    // Behind the formatter already: the new text joins the plain-text backlog at once.
    if (this.#backlog.active) this.#showBacklog();
    this.#later();
  }

  #later(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.schedule(() => {
      this.#scheduled = false;
      this.#renderSlice();
      if (this.#shownLength < this.#source.length) this.#later();
      this.onGrew();
    });
  }

  /** Renders up to `SLICE_CHARS` of text that is not yet on screen. */
  #renderSlice(): void {
    const source = this.#source;
    if (!source.startsWith(this.#stableText)) {
      this.#stable.replaceChildren();
      this.#stableText = '';
      this.#chunk = undefined;
    }
    const rest = source.slice(this.#stableText.length);
    // Lex a window of the rest; widen it when no block ends inside it (one very long block).
    let window = Math.min(rest.length, SLICE_CHARS);
    let tokens = lexMarkdown(rest.slice(0, window));
    let finished = finishedBlocks(tokens);
    while (finished === 0 && window < rest.length) {
      window = Math.min(rest.length, window * 4);
      tokens = lexMarkdown(rest.slice(0, window));
      finished = finishedBlocks(tokens);
    }
    const done = tokens
      .slice(0, finished)
      .map((t) => t.raw)
      .join('');
    this.#shownLength = this.#stableText.length + window;
    // The lexer's blocks cover the text exactly; if not, keep everything in the tail (correct, slower).
    if (finished > 0 && rest.startsWith(done)) {
      this.#appendFinished(renderTokens(tokens.slice(0, finished), document), done.length);
      this.#stableText = source.slice(0, this.#stableText.length + done.length);
      this.#tail.replaceChildren(renderTokens(tokens.slice(finished), document));
    } else {
      this.#tail.replaceChildren(renderTokens(tokens, document));
    }
    // How much of the part is formatted on screen: read by `npm run bench:app` and the e2e tests.
    this.el.dataset['shownChars'] = String(this.#shownLength);
    this.#showBacklog();
  }

  /** The text after what is formatted, as plain text; `data-text-chars` counts all text in the page. */
  #showBacklog(): void {
    const source = this.#source;
    if (this.#shownLength >= source.length || !source.startsWith(this.#stableText)) this.#backlog.clear();
    else this.#backlog.show(source, this.#shownLength);
    this.el.dataset['textChars'] = String(this.#backlog.active ? source.length : this.#shownLength);
  }

  #appendFinished(blocks: DocumentFragment, chars: number): void {
    if (!this.#chunk || this.#chunkChars >= CHUNK_CHARS) {
      if (this.#chunk) skipWhenOffScreen(this.#chunk);
      this.#chunk = document.createElement('div');
      this.#chunk.className = 'md-chunk';
      this.#stable.append(this.#chunk);
      this.#chunkChars = 0;
    }
    this.#chunk.append(blocks);
    this.#chunkChars += chars;
  }
}

/** Characters of plain backlog per piece; each piece is skipped by layout while off screen. */
const BACKLOG_PIECE_CHARS = 16_384;

/**
 * The unformatted rest of a part, `[from, to)` of its text, kept in pieces of plain text so that a
 * frame's update costs what changed (the front the formatter took, the end the agent added), not
 * the length of the backlog. Pieces are `content-visibility: auto` (app.css `.md-backlog`): off
 * screen they are neither laid out nor painted, yet their text stays in the page.
 */
class RawBacklog {
  readonly el: HTMLElement;
  /** Pieces in order, each a text node in its own block. */
  readonly #pieces: Text[] = [];
  #from = 0;
  #to = 0;

  constructor() {
    this.el = document.createElement('div');
    this.el.className = 'md-backlog';
    this.el.hidden = true;
  }

  get active(): boolean {
    return this.#to > this.#from;
  }

  /** Shows `source.slice(from)`; `source` extends the text last shown (the caller checked). */
  show(source: string, from: number): void {
    if (from < this.#from || from > this.#to) this.clear();
    if (!this.active) {
      this.#from = from;
      this.#to = from;
    }
    // Drop what the formatter took from the front.
    let cut = from - this.#from;
    while (cut > 0 && this.#pieces.length > 0) {
      const first = this.#pieces[0]!;
      if (first.length <= cut) {
        cut -= first.length;
        first.parentElement!.remove();
        this.#pieces.shift();
      } else {
        first.deleteData(0, cut);
        cut = 0;
      }
    }
    this.#from = from;
    // Add what the agent appended at the end.
    let at = this.#to;
    while (at < source.length) {
      let last = this.#pieces[this.#pieces.length - 1];
      if (!last || last.length >= BACKLOG_PIECE_CHARS) {
        const block = document.createElement('div');
        last = document.createTextNode('');
        block.append(last);
        this.el.append(block);
        this.#pieces.push(last);
      }
      const take = Math.min(source.length - at, BACKLOG_PIECE_CHARS - last.length);
      last.appendData(source.slice(at, at + take));
      at += take;
    }
    this.#to = source.length;
    this.el.hidden = !this.active;
  }

  clear(): void {
    this.#pieces.length = 0;
    this.el.replaceChildren();
    this.el.hidden = true;
    this.#from = 0;
    this.#to = 0;
  }
}

/**
 * Lets the browser skip a full chunk while it is off screen (`.md-lazy`), two frames after its last
 * block: by then it has been laid out once and its real height is remembered
 * (`contain-intrinsic-block-size: auto`). A chunk made lazy before its first layout would stand in
 * at the 20em estimate, and a question below it scrolled into view would then be pushed down as
 * the chunks above it are drawn (`test/e2e/first-hour.test.ts`). Frames only: a hidden tab keeps
 * its chunks as they are until it is shown.
 */
function skipWhenOffScreen(chunk: HTMLElement): void {
  requestAnimationFrame(() => requestAnimationFrame(() => chunk.classList.add('md-lazy')));
}

/** Every block followed by a non-blank block is finished; trailing blank tokens stay with the tail. */
function finishedBlocks(tokens: readonly { type: string }[]): number {
  let finished = tokens.length - 1;
  while (finished > 0 && tokens[finished]!.type === 'space') finished--;
  return Math.max(0, finished);
}
