/**
 * A chat's composer: one text box that starts a turn when the chat is idle and adds to the
 * running turn otherwise (turn-additions.ts), its unsent text kept across reloads, and the
 * turn commands the transcript offers (retry, resume, stop, a follow-up typed for the person).
 */
import type { ChatState } from '../shared/client/ahp-client.js';
import type { ChannelView } from '../shared/client/channel-view.js';
import type { SessionInputs } from '../shared/client/session-inputs.js';
import { turnDuration } from '../shared/state/selectors.js';
import { composerSends, SEND_HINT } from './composer-keys.js';
import type { AppContext } from './context.js';
import { el, replaceChildren } from './dom.js';
import { newId } from './format.js';
import type { FollowUpResult } from './kept-text.js';
import { TurnAdditions } from './turn-additions.js';
import { stoppedHere } from './turn-view.js';

export class Composer {
  readonly el: HTMLFormElement;
  readonly #pending = el('div', { class: 'pending-inputs' });
  readonly #note = el('div', { class: 'muted small composer-note' });
  readonly #error = el('div', { class: 'error composer-error', attrs: { role: 'alert' } });
  readonly #textarea: HTMLTextAreaElement;
  readonly #send: HTMLButtonElement;
  readonly #additions: TurnAdditions;
  #sending = false;

  constructor(
    private readonly ctx: AppContext,
    /** The chat's URI: where its unsent text is kept. */
    private readonly uri: string,
    steering: SessionInputs,
    /** The chat, once subscribed. */
    private readonly view: () => ChannelView<ChatState> | undefined,
    /** Brings the end of the chat into view (after a turn started). */
    private readonly toLatest: () => void,
    /** Shown above the composer ("Jump to latest", chat-follow.ts). */
    jump: HTMLElement,
  ) {
    this.#additions = new TurnAdditions(steering, {
      refused: (text, detail) => {
        this.#error.textContent = text;
        if (detail !== undefined) this.#error.title = detail;
      },
      taken: () => {
        this.#textarea.value = '';
        this.#fit();
        this.#saveUnsent();
      },
      changed: () => {
        const v = this.view();
        if (v) this.render(v.state);
      },
    });
    this.#textarea = el('textarea', {
      attrs: { rows: '1', placeholder: 'Message the agent…', 'aria-label': 'Message', 'data-testid': 'composer', maxlength: '100000', disabled: ctx.canWrite ? undefined : 'disabled' },
      on: {
        keydown: (e) => {
          if (composerSends(e)) {
            e.preventDefault();
            void this.#submit();
          }
        },
        // Compact until used: one line while empty, room to write once it holds text. Focus and
        // blur never change its size: a press on a button above would blur it, and a composer
        // shrinking between mousedown and mouseup moves that button away from the pointer.
        input: () => {
          this.#fit();
          this.#saveUnsent();
        },
      },
    });
    this.#send = el('button', { class: 'primary', attrs: { type: 'submit', 'data-testid': 'send', disabled: ctx.canWrite ? undefined : 'disabled' }, text: 'Send' });
    this.el = el(
      'form',
      {
        class: 'composer card',
        attrs: { 'data-testid': 'composer-form' },
        on: {
          submit: (e) => {
            e.preventDefault();
            void this.#submit();
          },
        },
      },
      jump,
      this.#pending,
      el('div', { class: 'composer-main' }, this.#textarea, this.#send),
      this.#note,
      this.#error,
    );
    this.#restoreUnsent();
  }

  /** Where this chat's unsent composer text is kept, so a reload does not lose it. */
  get #unsentKey(): string {
    return `ahp-hub-unsent:${this.uri}`;
  }

  #saveUnsent(): void {
    try {
      if (this.#textarea.value === '') localStorage.removeItem(this.#unsentKey);
      else localStorage.setItem(this.#unsentKey, this.#textarea.value);
    } catch {
      // storage disabled: the text lives as long as the page
    }
  }

  #restoreUnsent(): void {
    try {
      const text = localStorage.getItem(this.#unsentKey);
      if (text && this.#textarea.value === '' && this.ctx.canWrite) this.#textarea.value = text;
    } catch {
      // nothing kept
    }
    this.#fit();
  }

  #fit(): void {
    this.el.classList.toggle('expanded', this.#textarea.value !== '');
  }

  /** Puts the caret in the composer (optionally with `text` to edit first). */
  focus(text?: string): void {
    if (text !== undefined) {
      this.#textarea.value = text;
      this.#fit();
    }
    this.#textarea.focus();
  }

  render(chat: ChatState): void {
    const running = chat.activeTurn !== undefined;
    const blocked = this.#additions.blockedReason(chat);
    this.#send.textContent = running ? 'Add to turn' : 'Send';
    this.#send.title = running ? 'Add this to the running turn (the agent picks it up between steps)' : 'Send (Enter)';
    this.#send.disabled = !this.ctx.canWrite || this.#sending || blocked !== undefined;
    this.#textarea.disabled = !this.ctx.canWrite || blocked !== undefined;
    this.#textarea.placeholder = running ? 'Add to the running turn…' : 'Message the agent…';
    this.#note.textContent = blocked ? blocked : running ? 'Extra context for the running turn. It never approves a tool or answers a question — use the buttons above.' : SEND_HINT;
    replaceChildren(this.#pending, ...this.#additions.receipts(chat));
  }

  async startTurn(text: string, meta?: Record<string, string>): Promise<boolean> {
    const view = this.view();
    if (!view || !this.ctx.canWrite) return false;
    const result = await view.dispatch({
      type: 'chat/turnStarted',
      turnId: newId(),
      startedAt: new Date().toISOString(),
      message: { text, origin: { kind: 'user' }, ...(meta ? { _meta: meta } : {}) },
    });
    if (!result.accepted) {
      // The hub's reason names ids; it stays on hover for bug reports.
      this.#error.textContent = view.state.activeTurn ? 'Not sent: another turn started first. Send it again to add it to that turn.' : 'Not sent: the hub refused this message. Try again, or reload the page.';
      this.#error.title = result.reason;
    } else this.toLatest();
    return result.accepted;
  }

  async #submit(): Promise<void> {
    const view = this.view();
    const text = this.#textarea.value;
    if (!view || !this.ctx.canWrite || this.#sending || text.trim() === '') return;
    this.#error.textContent = '';
    this.#sending = true;
    this.#send.disabled = true;
    try {
      if (view.state.activeTurn) await this.#additions.add(text);
      else if (await this.startTurn(text)) {
        this.#textarea.value = '';
        this.#fit();
        this.#saveUnsent();
      }
    } finally {
      this.#sending = false;
      this.render(view.state);
    }
  }

  /** Sends `text` as if typed in the composer; a message already being written there gets it appended instead. */
  async sendAsTyped(text: string): Promise<FollowUpResult> {
    const own = this.#textarea.value.trim() !== '';
    this.#textarea.value = own ? `${this.#textarea.value}\n\n${text}` : text;
    if (own) this.#textarea.focus();
    else await this.#submit();
    return own ? 'added' : this.#textarea.value === '' ? 'sent' : 'failed';
  }

  async stop(): Promise<void> {
    const view = this.view();
    const turn = view?.state.activeTurn;
    if (!view || !turn || !this.ctx.canWrite) return;
    stoppedHere.add(turn.id);
    const result = await view.dispatch({ type: 'chat/turnCancelled', turnId: turn.id, duration: turnDuration(turn.startedAt, Date.now()) });
    if (!result.accepted) {
      stoppedHere.delete(turn.id);
      this.#error.textContent = 'Could not stop: the turn had already ended.';
      this.#error.title = result.reason;
    }
  }

  destroy(): void {
    this.#additions.destroy();
  }
}
