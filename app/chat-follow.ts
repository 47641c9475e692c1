/**
 * Follows a chat the way chat apps do: while the person is at the end, new messages and streamed
 * text keep it in view; once they scroll up to read, nothing moves and "Jump to latest" appears.
 * After this tab submits answers, the next question is brought into view from its top.
 */
import { el } from './dom.js';

export class ChatFollow {
  readonly jump: HTMLButtonElement;
  /** Whether the person is at the end of the chat: new content then keeps them there. */
  #following = true;
  /** Set when this tab submits answers: the next question is brought into view. */
  #revealNext = false;
  /** New content was added this frame: the end is kept in view (or "Jump to latest" shown). */
  #grew = false;
  /** `document.documentElement.scrollHeight` when it was last read (by `#settle`). */
  #height = 0;
  #settleArmed = false;
  /**
   * A new question was scrolled to its top: it stays there, readable from its start (its own
   * fields may still grow), until new content comes, the window changes size or the person asks.
   */
  #questionHeld = false;
  readonly #seenRequests = new Set<string>();
  readonly #offs: Array<() => void> = [];

  constructor(private readonly transcript: HTMLElement) {
    this.jump = el('button', {
      class: 'jump-latest',
      attrs: { type: 'button', 'data-testid': 'jump-latest', hidden: 'hidden' },
      text: '↓ Jump to latest',
      on: { click: () => this.scrollToBottom('smooth') },
    });
    // Scroll events run at the start of a frame, before its DOM writes: layout is still clean.
    const onScroll = (): void => {
      this.#following = this.atBottom();
      if (this.#following) this.jump.hidden = true;
    };
    window.addEventListener('scroll', onScroll, { passive: true });
    this.#offs.push(() => window.removeEventListener('scroll', onScroll));
    // A shorter window (a turned phone, a resized desktop window) keeps the scroll offset, so
    // the end would slip under the sticky composer, last turn's buttons with it. The transcript's
    // size need not change (no resize observation), so the end is followed here: the resize event
    // runs before the frame's callbacks and paint, so no frame shows the end covered (one layout
    // read per resize, never on the streaming path).
    const onResize = (): void => this.#settle(true);
    window.addEventListener('resize', onResize);
    this.#offs.push(() => window.removeEventListener('resize', onResize));
    // Heights change with every render, every frame a long part draws on its own, a skipped turn
    // (content-visibility, app.css) laid out at its real size. Resize observations are delivered
    // after the frame's animation-frame callbacks and its layout, so the end is followed there:
    // once a frame, after all of its DOM writes, reading the height from a layout already done.
    this.#observer = new ResizeObserver((entries) => {
      for (const e of entries) {
        if (e.target === this.#composer) document.documentElement.style.setProperty('--composer-h', `${this.#composer.offsetHeight}px`);
      }
      this.#settle();
    });
    this.#observer.observe(transcript);
    this.#offs.push(() => this.#observer.disconnect());
  }

  readonly #observer: ResizeObserver;
  #composer: HTMLElement | undefined;

  /**
   * Keeps what scrolls into view clear of the sticky composer, however tall it is right now; a
   * composer that grows while the person follows the chat keeps the newest controls above it.
   */
  watchComposer(composer: HTMLElement): void {
    this.#composer = composer;
    this.#observer.observe(composer);
  }

  get following(): boolean {
    return this.#following;
  }

  /** Following, and not holding a new question at its top: the end is kept in view after layout. */
  get keepsEnd(): boolean {
    return this.#following && !this.#questionHeld;
  }

  /** The person went elsewhere in the chat (a turn link): stop keeping the end in view. */
  stopFollowing(): void {
    this.#following = false;
    this.#questionHeld = false;
  }

  /** This tab submitted answers: bring the next question (or the agent's reply) into view. */
  revealNextQuestion(): void {
    this.#revealNext = true;
  }

  /** True when the end of the chat is on screen (a few pixels of slack). Reads layout. */
  atBottom(): boolean {
    const doc = document.documentElement;
    this.#height = doc.scrollHeight;
    return window.innerHeight + window.scrollY >= this.#height - 48;
  }

  /** Scrolls to the end now (a person's click, a turn they started). */
  scrollToBottom(behavior: ScrollBehavior = 'auto'): void {
    this.#height = document.documentElement.scrollHeight;
    window.scrollTo({ top: this.#height, behavior });
    this.#questionHeld = false;
    this.#following = true;
    this.jump.hidden = true;
  }

  /**
   * Keeps the newest content in view the way chat apps do: while the person is at the end, new
   * messages and streamed text keep it there; when they have scrolled up to read, nothing moves
   * and a "Jump to latest" button appears instead. After this tab submits answers, a new question
   * is scrolled to its top so it can be read from the start. Called after the transcript was
   * brought up to date; reads no layout unless a new question is to be shown.
   */
  reveal(): void {
    const follow = this.#following;
    const openForms = [...this.transcript.querySelectorAll<HTMLElement>('.input-request:not(.resolved)[data-request]')];
    const fresh = openForms.filter((f) => !this.#seenRequests.has(f.dataset['request']!));
    for (const f of openForms) this.#seenRequests.add(f.dataset['request']!);
    // A new question (after this tab answered, or while following the chat) is shown from its
    // top, so it can be read from the start rather than from its buttons.
    if ((this.#revealNext || follow) && fresh.length > 0) {
      this.#revealNext = false;
      this.#grew = false;
      fresh[0]!.scrollIntoView({ block: 'start' });
      this.#following = this.atBottom();
      this.#questionHeld = this.#following;
      return;
    }
    if (this.#revealNext && openForms.length === 0) {
      // Answered and nothing else is asked yet: follow the agent's reply.
      this.#revealNext = false;
      this.#following = true;
      this.jump.hidden = true;
    }
    this.partGrew();
  }

  /** New content (a render, a frame a long part drew on its own): followed once this frame settles. */
  partGrew(): void {
    this.#grew = true;
    // Nothing changed size, so no resize observation comes: settle in the task after this frame,
    // when its layout is done (a timer set in a frame runs after the frame's rendering).
    if (this.#settleArmed) return;
    this.#settleArmed = true;
    window.setTimeout(() => {
      this.#settleArmed = false;
      if (this.#grew) this.#settle();
    }, 0);
  }

  /**
   * The one place that follows the end: one read of the height, one scroll at most. `resized`: the
   * window changed size, so a followed chat goes back to its end even with a question held.
   */
  #settle(resized = false): void {
    const grew = this.#grew;
    this.#grew = false;
    const before = this.#height;
    const height = document.documentElement.scrollHeight;
    this.#height = height;
    if (this.#following) {
      if (resized || (grew && height > before + 1)) this.#questionHeld = false;
      if (!this.#questionHeld && window.innerHeight + window.scrollY < height - 1) window.scrollTo({ top: height });
      this.jump.hidden = true;
    } else if (grew && height > before + 1) {
      this.jump.hidden = false;
    }
  }

  destroy(): void {
    for (const off of this.#offs) off();
  }
}
