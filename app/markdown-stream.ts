/**
 * Incremental markdown for streamed parts. A part's text only grows while an agent streams it, so
 * what is on screen is split in two: blocks that are finished (followed by another block, so no
 * later text can change how they parse) are rendered once and never touched again; only the
 * unfinished tail block is lexed and rendered again, at most once per animation frame. A delta
 * therefore costs the length of the tail, not of the whole part, and the main thread never
 * re-parses a long answer per delta.
 *
 * Text that does not extend what was shown (an edit, a truncation) is rendered from scratch.
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

export class StreamingMarkdown {
  /** Finished blocks, rendered once. */
  readonly #stable: HTMLElement;
  /** The unfinished tail block(s), rendered again on each frame with new text. */
  readonly #tail: HTMLElement;
  /** The text the stable blocks were rendered from (a prefix of `#source`). */
  #stableLength = 0;
  /** Latest text asked for, and the text currently on screen. */
  #source = '';
  #shown = '';
  #scheduled = false;

  constructor(readonly el: HTMLElement, private readonly schedule: Schedule = nextFrame) {
    this.#stable = document.createElement('div');
    this.#tail = document.createElement('div');
    this.#stable.className = 'md-blocks';
    this.#tail.className = 'md-blocks';
    el.replaceChildren(this.#stable, this.#tail);
  }

  /** The full text of the part now; rendered on the next frame (or now, with `immediately`). */
  set(source: string, immediately = false): void {
    if (source === this.#source && (!immediately || source === this.#shown)) return;
    this.#source = source;
    if (immediately) {
      this.flush();
      return;
    }
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.schedule(() => this.flush());
  }

  /** Renders whatever was set and is not yet on screen. */
  flush(): void {
    this.#scheduled = false;
    const source = this.#source;
    if (source === this.#shown) return;
    if (!source.startsWith(this.#shown.slice(0, this.#stableLength))) {
      this.#stable.replaceChildren();
      this.#stableLength = 0;
    }
    const rest = source.slice(this.#stableLength);
    const tokens = lexMarkdown(rest);
    // Every block followed by a non-blank block is finished; trailing blank tokens stay with the tail.
    let finished = tokens.length - 1;
    while (finished > 0 && tokens[finished]!.type === 'space') finished--;
    let consumed = 0;
    for (let i = 0; i < finished; i++) consumed += tokens[i]!.raw.length;
    // The lexer's blocks cover the text exactly; if not, keep everything in the tail (correct, slower).
    if (finished > 0 && rest.startsWith(tokens.slice(0, finished).map((t) => t.raw).join(''))) {
      this.#stable.append(renderTokens(tokens.slice(0, finished), document));
      this.#stableLength += consumed;
      this.#tail.replaceChildren(renderTokens(tokens.slice(finished), document));
    } else {
      this.#tail.replaceChildren(renderTokens(tokens, document));
    }
    this.#shown = source;
    // How much of the part is on screen: read by `npm run bench:app` to time "fully shown".
    this.el.dataset['shownChars'] = String(source.length);
  }
}
