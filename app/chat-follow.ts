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
  readonly #seenRequests = new Set<string>();
  readonly #offs: Array<() => void> = [];

  constructor(private readonly transcript: HTMLElement) {
    this.jump = el('button', {
      class: 'jump-latest',
      attrs: { type: 'button', 'data-testid': 'jump-latest', hidden: 'hidden' },
      text: '↓ Jump to latest',
      on: { click: () => this.scrollToBottom('smooth') },
    });
    const onScroll = (): void => {
      this.#following = this.atBottom();
      if (this.#following) this.jump.hidden = true;
    };
    window.addEventListener('scroll', onScroll, { passive: true });
    this.#offs.push(() => window.removeEventListener('scroll', onScroll));
    // Heights also change without a render: a skipped turn (content-visibility, app.css) laid out
    // at its real size, a chunk of a long part drawn as it nears the viewport. While the person
    // follows the chat, the end is brought back into view once layout has settled.
    const settled = new ResizeObserver(() => {
      if (this.#following && !this.atBottom()) this.scrollToBottom();
    });
    settled.observe(transcript);
    this.#offs.push(() => settled.disconnect());
  }

  /**
   * Keeps what scrolls into view clear of the sticky composer, however tall it is right now; a
   * composer that grows while the person follows the chat keeps the newest controls above it.
   */
  watchComposer(composer: HTMLElement): void {
    const resize = new ResizeObserver(() => {
      document.documentElement.style.setProperty('--composer-h', `${composer.offsetHeight}px`);
      if (this.#following) this.scrollToBottom();
    });
    resize.observe(composer);
    this.#offs.push(() => resize.disconnect());
  }

  get following(): boolean {
    return this.#following;
  }

  /** The person went elsewhere in the chat (a turn link): stop keeping the end in view. */
  stopFollowing(): void {
    this.#following = false;
  }

  /** This tab submitted answers: bring the next question (or the agent's reply) into view. */
  revealNextQuestion(): void {
    this.#revealNext = true;
  }

  /** True when the end of the chat is on screen (a few pixels of slack). */
  atBottom(): boolean {
    const doc = document.documentElement;
    return window.innerHeight + window.scrollY >= doc.scrollHeight - 48;
  }

  scrollToBottom(behavior: ScrollBehavior = 'auto'): void {
    window.scrollTo({ top: document.documentElement.scrollHeight, behavior });
    this.#following = true;
    this.jump.hidden = true;
  }

  /**
   * Keeps the newest content in view the way chat apps do: while the person is at the end, new
   * messages and streamed text keep it there; when they have scrolled up to read, nothing moves
   * and a "Jump to latest" button appears instead. After this tab submits answers, a new question
   * is scrolled to its top so it can be read from the start.
   */
  reveal(follow: boolean, heightBefore: number): void {
    const openForms = [...this.transcript.querySelectorAll<HTMLElement>('.input-request:not(.resolved)[data-request]')];
    const fresh = openForms.filter((f) => !this.#seenRequests.has(f.dataset['request']!));
    for (const f of openForms) this.#seenRequests.add(f.dataset['request']!);
    // A new question (after this tab answered, or while following the chat) is shown from its
    // top, so it can be read from the start rather than from its buttons.
    if ((this.#revealNext || follow) && fresh.length > 0) {
      this.#revealNext = false;
      fresh[0]!.scrollIntoView({ block: 'start' });
      this.#following = this.atBottom();
      return;
    }
    if (this.#revealNext && openForms.length === 0) {
      // Answered and nothing else is asked yet: follow the agent's reply.
      this.scrollToBottom();
      return;
    }
    const grew = document.documentElement.scrollHeight > heightBefore + 1;
    if (!grew) return;
    if (follow) this.scrollToBottom();
    else this.jump.hidden = false;
  }

  /** A long part rendered more of itself on a frame of its own: it is followed like new content. */
  partGrew(): void {
    if (this.#following) this.scrollToBottom();
    else this.jump.hidden = false;
  }

  destroy(): void {
    for (const off of this.#offs) off();
  }
}
