/**
 * The chat page of a session: its chats as tabs, the transcript (completed turns and the active
 * turn with streaming markdown, tool calls and input requests in stream order), who is viewing,
 * and a composer that starts a turn when idle or adds a steering input to the running turn.
 */
import { CHAT_PRESENCE_DOC } from '../shared/protocol/collab.js';
import type { ChatState, SessionState } from '../shared/client/ahp-client.js';
import type { ChannelView } from '../shared/client/channel-view.js';
import type { ActiveTurn, InputRequestPart, ResponsePart, ToolCallState, Turn } from '../shared/protocol/state.js';
import { SessionInputs, type InputReceipt, type InputTarget } from '../shared/client/session-inputs.js';
import { CollabDoc, presenceName, type PresenceState } from './collab.js';
import { composerSends, SEND_HINT } from './composer-keys.js';
import { el, markdownInto, replaceChildren } from './dom.js';
import { colorFor, displayTitle, endedAt, errorInWords, inputIdOf, newId, personName, receiptInWords, relativeTime, sessionIdOf, statusClass, statusLabel, type AnsweredBy } from './format.js';
import { AhpRequestError } from '../shared/client/errors.js';
import { ErrorCode } from '../shared/protocol/errors.js';
import type { AppContext } from './context.js';
import { createPartView, type PartView } from './parts.js';
import type { FollowUpResult } from './kept-text.js';
import { AnswerStamps } from './answer-stamps.js';
import { copyButton } from './copy-button.js';
import { SessionActions } from './session-actions.js';
import { TurnLinks } from './turn-links.js';
import { nextFrame } from './markdown-stream.js';
import { turnDuration } from '../shared/state/selectors.js';
import { grantRow, standingGrantsOf } from './standing-grants.js';

export class ChatPage {
  readonly el: HTMLElement;
  readonly #title = el('h1', { class: 'session-title', text: 'Loading…' });
  readonly #facts = el('div', { class: 'session-facts muted small' });
  readonly #actions: SessionActions;
  readonly #remembered = el('div', { class: 'remembered', attrs: { 'data-testid': 'remembered-choices', hidden: 'hidden' } });
  readonly #tabs = el('nav', { class: 'chat-tabs' });
  readonly #body = el('div', { class: 'chat-body' });
  readonly #error = el('p', { class: 'error', attrs: { hidden: 'hidden', role: 'alert' } });
  #session: ChannelView<SessionState> | undefined;
  #chatView: ChatView | undefined;
  #chatUri: string | undefined;
  #offs: Array<() => void> = [];
  #destroyed = false;

  constructor(
    private readonly ctx: AppContext,
    readonly sessionUri: string,
    chat: string | undefined,
  ) {
    this.#chatUri = chat;
    this.#actions = new SessionActions(ctx, sessionUri, () => this.#chatView?.uri);
    this.el = el(
      'section',
      { class: 'chat-page' },
      el('div', { class: 'chat-top' }, el('a', { class: 'back', attrs: { href: '/', 'data-route': '' }, text: '← All sessions' }), this.#title),
      // Above the facts: the row above the chat can sit under the sticky bar (a question in view).
      this.#actions.el,
      this.#facts,
      this.#remembered,
      this.#tabs,
      this.#error,
      this.#body,
    );
    void this.#start();
  }

  async #start(): Promise<void> {
    try {
      const session = (await this.ctx.client.subscribe(this.sessionUri as `ahp-session:/${string}`)) as ChannelView<SessionState>;
      if (this.#destroyed) return;
      this.#session = session;
      this.#offs.push(session.onChange(() => this.#renderSession()));
      this.#offs.push(session.onGone(() => this.#fail('This session is no longer available: it was deleted or closed. Go back to all sessions to pick another.')));
      this.#renderSession();
    } catch (err) {
      const missing = err instanceof AhpRequestError && err.code === ErrorCode.SessionNotFound;
      this.#title.textContent = missing ? 'Session not found' : 'Could not open this session';
      this.ctx.setPageTitle(this.#title.textContent);
      this.#fail(missing ? 'There is no such session here: it may have been deleted, or the link is mistyped. Go back to all sessions to pick one.' : 'The hub did not open this session. Check the connection and reload the page.');
    }
  }

  #fail(text: string): void {
    this.#error.textContent = text;
    this.#error.hidden = false;
  }

  #renderSession(): void {
    const s = this.#session?.state;
    if (!s || this.#destroyed) return;
    const title = displayTitle(s.title);
    this.#title.textContent = title;
    this.#title.title = s.title || '';
    this.ctx.setPageTitle(title);
    this.#renderFacts(s);
    this.#actions.update(this.#session!);
    this.#renderRemembered(s);
    const chats = s.chats;
    const current = this.#chatUri && chats.some((c) => c.resource === this.#chatUri) ? this.#chatUri : (s.defaultChat ?? chats[0]?.resource);
    replaceChildren(
      this.#tabs,
      ...(chats.length > 1
        ? chats.map((c) => {
            const label = statusLabel(c.status);
            return el(
              'a',
              {
                class: 'tab' + (c.resource === current ? ' active' : ''),
                attrs: { href: `/s/${encodeURIComponent(sessionIdOf(this.sessionUri))}?chat=${encodeURIComponent(c.resource)}`, 'data-route': '' },
              },
              c.title,
              ' ',
              el('span', { class: statusClass(label), text: label }),
            );
          })
        : []),
    );
    if (current && current !== this.#chatView?.uri) {
      this.#chatView?.destroy();
      this.#chatView = new ChatView(this.ctx, this.sessionUri, current, s.provider);
      this.#body.replaceChildren(this.#chatView.el);
    }
  }

  /** Agent (provider) and the session id, which people paste into the CLI, curl or a bug report. */
  #renderFacts(s: SessionState): void {
    const id = sessionIdOf(this.sessionUri);
    if (this.#facts.dataset['for'] === `${s.provider}|${id}`) return;
    this.#facts.dataset['for'] = `${s.provider}|${id}`;
    const code = el('code', { class: 'session-id', attrs: { 'data-testid': 'session-id' }, text: id });
    const copy = copyButton(() => id, { testid: 'copy-session-id', ariaLabel: 'Copy session id', shown: () => code });
    replaceChildren(this.#facts, el('span', {}, 'Agent: ', el('strong', { attrs: { 'data-testid': 'provider' }, text: s.provider })), el('span', {}, 'Session id: ', code, ' ', copy));
  }

  /**
   * The session's standing grants (hub-kept, with Forget for users; agent-kept, which only the
   * agent can forget), each with who chose it: `app/standing-grants.ts`.
   */
  #renderRemembered(s: SessionState): void {
    const grants = standingGrantsOf(s);
    const key = JSON.stringify(grants);
    if (this.#remembered.dataset['for'] === key) return;
    this.#remembered.dataset['for'] = key;
    this.#remembered.hidden = grants.length === 0;
    const options = { canWrite: this.ctx.canWrite, devMode: this.ctx.devMode, forget: (tool: string) => void this.#forget(tool) };
    replaceChildren(this.#remembered, el('span', { class: 'muted small', text: 'Standing grants: ' }), el('ul', {}, ...grants.map((g) => grantRow(g, options))));
  }

  async #forget(toolName: string): Promise<void> {
    const result = await this.#session?.dispatch({ type: 'x-session/toolChoiceForgotten', toolName });
    if (result && !result.accepted) this.#fail(`Could not forget the choice for ${toolName}: ${result.reason}`);
  }

  destroy(): void {
    this.#destroyed = true;
    for (const off of this.#offs) off();
    this.#chatView?.destroy();
  }
}

/**
 * Turns this tab stopped, so their footer says "Stopped by you" at once. Other tabs read who
 * stopped it from the hub's stamp (`AnswerStamps.stoppedBy`).
 */
const stoppedHere = new Set<string>();

class TurnView {
  readonly el: HTMLElement;
  readonly #message = el('div', { class: 'user-message' });
  readonly #parts = el('div', { class: 'parts' });
  readonly #footer = el('div', { class: 'turn-footer muted small' });
  readonly #partViews: PartView[] = [];
  #lastTurn: Turn | ActiveTurn | undefined;
  #lastActive: boolean | undefined;
  #lastIsLast: boolean | undefined;
  #lastStoppedBy: AnsweredBy | undefined;

  constructor(
    private readonly ctx: AppContext,
    private readonly chat: ChannelView<ChatState>,
    readonly id: string,
    private readonly onAnswered: () => void,
    private readonly onGrew: () => void,
  ) {
    this.el = el('article', { class: 'turn', attrs: { 'data-turn': id } }, this.#message, this.#parts, this.#footer);
  }

  update(turn: Turn | ActiveTurn, active: boolean, handlers: TurnHandlers): void {
    const isLast = handlers.isLast;
    if (turn === this.#lastTurn && active === this.#lastActive && isLast === this.#lastIsLast && handlers.stoppedBy === this.#lastStoppedBy) return;
    this.#lastIsLast = isLast;
    this.#lastStoppedBy = handlers.stoppedBy;
    if (turn.message !== this.#lastTurn?.message) this.#renderMessage(turn.message.text);
    this.#lastTurn = turn;
    this.#lastActive = active;
    this.el.classList.toggle('active', active);
    const parts: readonly ResponsePart[] = turn.responseParts;
    // Parts are append-only (updated in place by index); a truncation replaces the turn view.
    parts.forEach((part, i) => {
      let view = this.#partViews[i];
      if (!view || view.el.dataset['kind'] !== part.kind) {
        view?.destroy();
        view = createPartView(part, { app: this.ctx, chat: this.chat, turnId: turn.id, onAnswered: this.onAnswered, onGrew: this.onGrew, sendFollowUp: handlers.onFollowUp }, active);
        view.el.dataset['kind'] = part.kind;
        if (this.#partViews[i]) this.#parts.replaceChild(view.el, this.#partViews[i]!.el);
        else this.#parts.append(view.el);
        this.#partViews[i] = view;
      }
      view.update(part, active);
    });
    while (this.#partViews.length > parts.length) {
      const v = this.#partViews.pop()!;
      v.destroy();
      v.el.remove();
    }
    if (active) {
      const stop = el('button', {
        class: 'link danger',
        attrs: { type: 'button', 'data-testid': 'stop', disabled: this.ctx.canWrite ? undefined : 'disabled' },
        text: 'Stop',
        on: { click: handlers.onStop },
      });
      replaceChildren(this.#footer, el('span', { class: 'spinner', attrs: { 'aria-hidden': 'true' } }), ' Working… ', stop);
    } else {
      const t = turn as Turn;
      const state = t.state === 'complete' ? 'Completed' : t.state === 'cancelled' ? this.#stoppedText(t.id, handlers.stoppedBy) : 'Failed';
      const ended = endedAt(t);
      const duration = typeof t.duration === 'number' ? ` ${t.state === 'cancelled' ? 'after' : 'in'} ${(t.duration / 1000).toFixed(1)} s` : '';
      // A failed last turn says what happened in words and offers the next step.
      // A turn a restart stopped is resumed: a new turn whose questions start with the answers given.
      const restarted = t.error?.errorType === 'hubRestarted';
      const nextSteps =
        t.error && isLast && this.ctx.canWrite
          ? el(
              'div',
              { class: 'actions' },
              restarted
                ? el('button', { class: 'primary', attrs: { type: 'button', 'data-testid': 'resume' }, text: 'Resume', on: { click: () => handlers.onResume(t.message.text, t.id) } })
                : el('button', { class: 'primary', attrs: { type: 'button', 'data-testid': 'retry' }, text: 'Retry', on: { click: () => handlers.onRetry(t.message.text) } }),
              el('button', { attrs: { type: 'button', 'data-testid': 'new-turn' }, text: 'Write a new message', on: { click: handlers.onNewTurn } }),
            )
          : null;
      replaceChildren(
        this.#footer,
        `${state}${duration}`,
        ended ? el('span', { class: 'ago', title: ended, attrs: { 'data-at': ended }, text: ` · ${relativeTime(ended)}` }) : null,
        t.error
          ? el(
              'div',
              { class: 'turn-error', attrs: { role: 'alert', 'data-testid': 'turn-error' } },
              // The error part (when the agent sent one) already says what failed.
              t.responseParts.some((p) => p.kind === 'error') ? null : el('div', { class: 'error-words', text: errorInWords(t.error.errorType, t.error.message) }),
              el('div', {
                class: 'muted small',
                text: restarted ? 'Nothing you sent was lost. Resume runs it again with the answers already given, or write a new message.' : 'Retry runs the same message again as a new turn; or write a new message.',
              }),
              nextSteps,
            )
          : null,
      );
    }
  }

  /** "Stopped by bob": this tab, or the hub's stamp of who stopped it; "Stopped" without one. */
  #stoppedText(turnId: string, by: AnsweredBy | undefined): string {
    if (stoppedHere.has(turnId) || (by && by.user === this.ctx.user)) return 'Stopped by you';
    return by ? `Stopped by ${personName(by.user, this.ctx.devMode)}` : 'Stopped';
  }

  #renderMessage(text: string): void {
    // A demo-agent script is JSON: show it as code rather than as a paragraph of braces.
    const trimmed = text.trim();
    if (trimmed.startsWith('{"script"')) {
      let steps = '';
      try {
        const parsed = JSON.parse(trimmed) as { script?: unknown[] };
        if (Array.isArray(parsed.script)) steps = ` (${parsed.script.length} step${parsed.script.length === 1 ? '' : 's'})`;
      } catch {
        // shown as text below
      }
      replaceChildren(this.#message, el('details', { class: 'script' }, el('summary', { text: `Demo-agent script${steps}` }), el('pre', {}, el('code', { text: trimmed.length > 4000 ? trimmed.slice(0, 4000) + '…' : trimmed }))));
    } else {
      const body = el('div', { class: 'markdown' });
      markdownInto(body, text);
      replaceChildren(this.#message, body);
    }
  }

  destroy(): void {
    for (const v of this.#partViews) v.destroy();
  }
}

interface TurnHandlers {
  readonly isLast: boolean;
  /** Who stopped the turn (the hub's stamp), if it was stopped and the hub knows. */
  readonly stoppedBy: AnsweredBy | undefined;
  onStop(): void;
  onRetry(text: string): void;
  /** Starts a new turn that resumes `turnId` (its questions start with the answers given there). */
  onResume(text: string, turnId: string): void;
  onNewTurn(): void;
  onFollowUp(text: string): Promise<FollowUpResult>;
}

interface TrackedInput {
  readonly inputId: string;
  readonly text: string;
  readonly target: InputTarget;
  receipt?: InputReceipt;
  problem?: string;
}

/**
 * Long transcripts: a chat opens with only its last `TURN_WINDOW` turns built; older turns are
 * built `EARLIER_TURNS` at a time when the "earlier turns" button at the top of the transcript
 * comes near the viewport (or is pressed), keeping what is on screen where it was. Whole turns, so
 * a turn is never half there; turns built once stay (scrolling back down costs nothing). A small
 * batch keeps the frame that builds it short while someone scrolls up (40 at once: 67 ms frames).
 * The task that receives the chat's snapshot builds only the newest `OPEN_TURNS`; the rest of the
 * window follows on the next frames, a batch each (the 1,000-turn cold open had one 105-136 ms
 * task: the snapshot parsed and 40 turns built).
 */
const TURN_WINDOW = 40;
const EARLIER_TURNS = 12;
const OPEN_TURNS = 8;

class ChatView {
  readonly el: HTMLElement;
  readonly #status = el('span', { class: 'status', attrs: { 'data-testid': 'chat-status' } });
  readonly #viewers = el('span', { class: 'viewers', attrs: { 'data-testid': 'viewers' } });
  readonly #activity = el('span', { class: 'muted small activity' });
  readonly #transcript = el('div', { class: 'transcript', attrs: { 'data-testid': 'transcript' } });
  readonly #pending = el('div', { class: 'pending-inputs' });
  readonly #composerNote = el('div', { class: 'muted small composer-note' });
  readonly #composerError = el('div', { class: 'error composer-error', attrs: { role: 'alert' } });
  readonly #textarea: HTMLTextAreaElement;
  readonly #send: HTMLButtonElement;
  readonly #turns = new Map<string, TurnView>();
  /** The oldest turn built (see TURN_WINDOW); undefined until a turn is shown. */
  #firstShownId: string | undefined;
  readonly #earlier: HTMLButtonElement;
  readonly #earlierObserver: IntersectionObserver;
  readonly #inputs: TrackedInput[] = [];
  #view: ChannelView<ChatState> | undefined;
  /** Who answered each input request (kept beside the chat state by the hub). */
  #answers: AnswerStamps | undefined;
  #presence: CollabDoc | undefined;
  #offs: Array<() => void> = [];
  #poll: number | undefined;
  #renderScheduled = false;
  #destroyed = false;
  #sending = false;
  readonly #steering: SessionInputs;
  readonly #composer: HTMLFormElement;
  readonly #jump: HTMLButtonElement;
  /** Whether the person is at the end of the chat: new content then keeps them there. */
  #following = true;
  /** Set when this tab submits answers: the next question is brought into view. */
  #revealNext = false;
  readonly #seenRequests = new Set<string>();
  /** Polite announcements for screen readers: a new question, a tool waiting, a turn's end. */
  readonly #announcer = el('div', { class: 'sr-only', attrs: { role: 'status', 'aria-live': 'polite', 'data-testid': 'announcer' } });
  readonly #announced = new Set<string>();
  readonly #links: TurnLinks;

  constructor(
    private readonly ctx: AppContext,
    sessionUri: string,
    readonly uri: string,
    private readonly provider: string,
  ) {
    this.#steering = new SessionInputs(ctx.client, sessionUri);
    this.#links = new TurnLinks(uri, this.#transcript, { showFrom: (id) => this.#showFrom(id), stopFollowing: () => (this.#following = false) });
    this.#offs.push(() => this.#links.destroy());
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
          this.#fitComposer();
          this.#saveUnsent();
        },
      },
    });
    this.#send = el('button', { class: 'primary', attrs: { type: 'submit', 'data-testid': 'send', disabled: ctx.canWrite ? undefined : 'disabled' }, text: 'Send' });
    this.#jump = el('button', {
      class: 'jump-latest',
      attrs: { type: 'button', 'data-testid': 'jump-latest', hidden: 'hidden' },
      text: '↓ Jump to latest',
      on: { click: () => this.#scrollToBottom('smooth') },
    });
    this.#composer = el(
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
      this.#jump,
      this.#pending,
      el('div', { class: 'composer-main' }, this.#textarea, this.#send),
      this.#composerNote,
      this.#composerError,
    );
    this.#earlier = el('button', { class: 'link earlier-turns', attrs: { type: 'button', 'data-testid': 'earlier-turns' }, on: { click: () => this.#showEarlier() } });
    this.#earlierObserver = new IntersectionObserver(
      (entries) => {
        if (!this.#filling && entries.some((e) => e.isIntersecting)) nextFrame(() => this.#showEarlier());
      },
      { rootMargin: '800px 0px 0px 0px' },
    );
    this.#earlierObserver.observe(this.#earlier);
    this.#offs.push(() => this.#earlierObserver.disconnect());
    this.el = el('div', { class: 'chat', attrs: { 'data-chat': uri } }, el('div', { class: 'chat-meta' }, this.#status, this.#activity, this.#viewers), this.#announcer, this.#transcript, this.#composer);
    const onScroll = (): void => {
      this.#following = this.#atBottom();
      if (this.#following) this.#jump.hidden = true;
    };
    window.addEventListener('scroll', onScroll, { passive: true });
    // "just now" must not stay "just now": relative times are recomputed while the chat is open.
    const ticker = window.setInterval(() => {
      for (const span of this.el.querySelectorAll<HTMLElement>('.ago[data-at]')) span.textContent = ` · ${relativeTime(span.dataset['at'])}`;
    }, 15_000);
    this.#offs.push(() => window.clearInterval(ticker));
    this.#offs.push(() => window.removeEventListener('scroll', onScroll));
    // Keep what scrolls into view clear of the sticky composer, however tall it is right now; a
    // composer that grows while the person follows the chat keeps the newest controls above it.
    const resize = new ResizeObserver(() => {
      document.documentElement.style.setProperty('--composer-h', `${this.#composer.offsetHeight}px`);
      if (this.#following) this.#scrollToBottom();
    });
    resize.observe(this.#composer);
    this.#offs.push(() => resize.disconnect());
    // Heights also change without a render: a skipped turn (content-visibility, app.css) laid out
    // at its real size, a chunk of a long part drawn as it nears the viewport. While the person
    // follows the chat, the end is brought back into view once layout has settled.
    const settled = new ResizeObserver(() => {
      if (this.#following && !this.#atBottom()) this.#scrollToBottom();
    });
    settled.observe(this.#transcript);
    this.#offs.push(() => settled.disconnect());
    this.#restoreUnsent();
    void this.#start();
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
    this.#fitComposer();
  }

  #fitComposer(): void {
    this.#composer.classList.toggle('expanded', this.#textarea.value !== '');
  }

  /** True when the end of the chat is on screen (a few pixels of slack). */
  #atBottom(): boolean {
    const doc = document.documentElement;
    return window.innerHeight + window.scrollY >= doc.scrollHeight - 48;
  }

  #scrollToBottom(behavior: ScrollBehavior = 'auto'): void {
    window.scrollTo({ top: document.documentElement.scrollHeight, behavior });
    this.#following = true;
    this.#jump.hidden = true;
  }

  async #start(): Promise<void> {
    try {
      const view = (await this.ctx.client.subscribe(this.uri as `ahp-chat:/${string}`)) as ChannelView<ChatState>;
      if (this.#destroyed) return;
      this.#view = view;
      this.#answers = new AnswerStamps(view.snapshotMeta);
      // Envelopes arrive far faster than frames: the stamps are noted per change (each carries
      // its own action), the transcript is brought up to date once per frame.
      this.#offs.push(
        view.onChange((v, change) => {
          this.#answers?.note(change, v.snapshotMeta);
          this.#scheduleRender();
        }),
      );
      this.#render();
    } catch (err) {
      replaceChildren(this.#transcript, el('p', { class: 'error', text: `Could not open this chat: ${(err as Error).message}` }));
      return;
    }
    const presence = new CollabDoc(this.ctx.client, this.uri, CHAT_PRESENCE_DOC);
    this.#presence = presence;
    // `visible` tells the hub not to push this chat's requests to this person's devices (docs/notifications.md).
    const setVisible = (): void => presence.setPresence({ user: { name: this.ctx.user }, visible: document.visibilityState === 'visible' });
    setVisible();
    document.addEventListener('visibilitychange', setVisible);
    this.#offs.push(() => document.removeEventListener('visibilitychange', setVisible));
    this.#offs.push(presence.onChange(() => this.#renderViewers()));
    presence.join().catch(() => {
      // presence is optional
    });
    this.#renderViewers();
  }

  #renderViewers(): void {
    const others = this.#presence?.others() ?? [];
    const names = others.map(([, s]: [number, PresenceState]) => presenceName(s, this.ctx.devMode));
    replaceChildren(
      this.#viewers,
      'Viewing: ',
      el('span', { class: 'chip me-chip', attrs: { style: `--c:${colorFor(this.ctx.user)}`, 'data-testid': 'me-chip' }, text: `${this.ctx.user} (you)` }),
      ...names.map((n) => el('span', { class: 'chip', attrs: { style: `--c:${colorFor(n)}`, 'data-user': n }, text: n })),
    );
  }

  #scheduleRender(): void {
    if (this.#renderScheduled) return;
    this.#renderScheduled = true;
    nextFrame(() => {
      this.#renderScheduled = false;
      this.#render();
    });
  }

  #render(): void {
    const view = this.#view;
    if (!view || this.#destroyed) return;
    const chat = view.state;
    const label = statusLabel(chat.status);
    this.#status.className = statusClass(label);
    this.#status.textContent = label;
    this.#status.setAttribute('data-status', label);
    this.#activity.textContent = chat.activity ?? '';
    const shown = this.#answers;
    const decorate = <T extends Turn | ActiveTurn>(t: T): T => (shown ? shown.decorate(t) : t);
    const wanted: Array<[Turn | ActiveTurn, boolean]> = chat.turns.map((t) => [decorate(t), false]);
    if (chat.activeTurn) wanted.push([decorate(chat.activeTurn), true]);
    const opening = this.#firstShownId === undefined;
    let first = opening ? -1 : wanted.findIndex(([t]) => t.id === this.#firstShownId);
    if (first < 0) first = Math.max(0, wanted.length - (opening ? OPEN_TURNS : TURN_WINDOW));
    if (opening && first > 0) this.#fillWindow();
    this.#firstShownId = wanted[first]?.[0].id;
    const keep = new Set(wanted.slice(first).map(([t]) => t.id));
    for (const [id, tv] of this.#turns) {
      if (!keep.has(id)) {
        tv.destroy();
        tv.el.remove();
        this.#turns.delete(id);
      }
    }
    // Measured before the DOM grows: were we at the end a moment ago?
    const follow = this.#following || this.#atBottom();
    const heightBefore = document.documentElement.scrollHeight;
    let previous: HTMLElement | undefined;
    if (first > 0) {
      this.#earlier.textContent = `Show ${first} earlier turn${first === 1 ? '' : 's'}`;
      if (this.#transcript.firstChild !== this.#earlier) this.#transcript.prepend(this.#earlier);
      previous = this.#earlier;
    } else {
      this.#earlier.remove();
    }
    const handlers = (isLast: boolean, turnId: string): TurnHandlers => ({
      isLast,
      stoppedBy: this.#answers?.stoppedBy(turnId),
      onStop: () => void this.#stop(),
      onRetry: (text) => void this.#startTurn(text),
      onResume: (text, turnId) => void this.#startTurn(text, { 'hub/resumes': turnId }),
      onNewTurn: () => {
        this.#textarea.focus();
        this.#scrollToBottom();
      },
      onFollowUp: (text) => this.#sendAsTyped(text),
    });
    for (let index = first; index < wanted.length; index++) {
      const [turn, active] = wanted[index]!;
      let tv = this.#turns.get(turn.id);
      if (!tv) {
        tv = new TurnView(
          this.ctx,
          view,
          turn.id,
          () => (this.#revealNext = true),
          () => this.#afterPartGrew(),
        );
        this.#turns.set(turn.id, tv);
      }
      tv.update(turn, active, handlers(index === wanted.length - 1, turn.id));
      const expectedPosition = previous ? previous.nextSibling : this.#transcript.firstChild;
      if (expectedPosition !== tv.el) this.#transcript.insertBefore(tv.el, expectedPosition);
      previous = tv.el;
    }
    if (wanted.length === 0) {
      if (!this.#transcript.querySelector('.empty')) this.#transcript.append(this.#emptyChat());
    } else {
      this.#transcript.querySelector('.empty')?.remove();
    }
    this.#links.addButtons(); // before the reveal measures the end
    this.#renderComposer(chat);
    if (!this.#prepending) this.#reveal(follow, heightBefore);
    this.#announce(chat);
    this.#links.afterRender(chat);
  }

  /** Builds the turns back to `turnId` (a link to an older turn than the window holds). */
  #showFrom(turnId: string): void {
    if (this.#turns.has(turnId)) return;
    this.#firstShownId = turnId;
    this.#render();
  }

  #prepending = false;
  /** While the window is built after the open (`OPEN_TURNS`), the button's observer waits. */
  #filling = false;

  /** Builds the rest of the opening window, `EARLIER_TURNS` a frame, up to `TURN_WINDOW` turns. */
  #fillWindow(): void {
    this.#filling = true;
    nextFrame(() => {
      if (this.#destroyed) return;
      if (this.#turns.size < TURN_WINDOW && this.#earlier.isConnected) {
        this.#showEarlier(Math.min(EARLIER_TURNS, TURN_WINDOW - this.#turns.size));
        if (this.#turns.size < TURN_WINDOW && this.#earlier.isConnected) return this.#fillWindow();
      }
      this.#filling = false;
      // Observed again, so a button that is near the viewport now builds more, as it would have.
      this.#earlierObserver.unobserve(this.#earlier);
      this.#earlierObserver.observe(this.#earlier);
    });
  }

  /**
   * Builds the `count` turns before the oldest one shown, keeping the turn that was first where it
   * was on screen (the new ones go above it, out of view).
   */
  #showEarlier(count = EARLIER_TURNS): void {
    const view = this.#view;
    if (!view || this.#destroyed || !this.#earlier.isConnected) return;
    const turns = view.state.turns;
    const first = turns.findIndex((t) => t.id === this.#firstShownId);
    if (first <= 0) return;
    const anchor = this.#turns.get(this.#firstShownId!)?.el;
    const before = anchor?.getBoundingClientRect().top;
    this.#firstShownId = turns[Math.max(0, first - count)]!.id;
    this.#prepending = true;
    try {
      this.#render();
    } finally {
      this.#prepending = false;
    }
    if (anchor && before !== undefined) {
      const moved = anchor.getBoundingClientRect().top - before;
      if (Math.abs(moved) >= 1) window.scrollBy(0, moved);
    }
  }

  /**
   * Says what newly needs someone, once each: questions and tools waiting for approval (what a
   * sighted person notices on screen), and a turn's end. Streaming text is not read out.
   */
  #announce(chat: ChatState): void {
    const news: string[] = [];
    const once = (key: string, text: string): void => {
      if (this.#announced.has(key)) return;
      this.#announced.add(key);
      news.push(text);
    };
    if (!this.#primed) {
      // What had happened before the page opened is history, not news.
      this.#primed = true;
      for (const t of chat.turns) this.#announced.add(`e:${t.id}`);
    }
    for (const part of chat.activeTurn?.responseParts ?? []) {
      if (part.kind === 'inputRequest') {
        const p = part as InputRequestPart;
        if (p.response === undefined) once(`q:${p.request.id}`, `The agent asks: ${p.request.message ?? 'a question'}`);
      } else if (part.kind === 'toolCall') {
        const tool = (part as { toolCall: ToolCallState }).toolCall;
        if (tool.status === 'pending-confirmation') once(`t:${tool.toolCallId}`, `The agent wants to run ${tool.displayName || tool.toolName} and waits for approval.`);
      }
    }
    for (const t of chat.turns.slice(-3)) once(`e:${t.id}`, t.state === 'complete' ? 'The agent finished.' : t.state === 'cancelled' ? 'The turn was stopped.' : 'The turn failed.');
    if (news.length > 0) this.#announcer.textContent = news.join(' ');
  }

  #primed = false;

  /**
   * Keeps the newest content in view the way chat apps do: while the person is at the end, new
   * messages and streamed text keep it there; when they have scrolled up to read, nothing moves
   * and a "Jump to latest" button appears instead. After this tab submits answers, a new question
   * is scrolled to its top so it can be read from the start.
   */
  #reveal(follow: boolean, heightBefore: number): void {
    const openForms = [...this.#transcript.querySelectorAll<HTMLElement>('.input-request:not(.resolved)[data-request]')];
    const fresh = openForms.filter((f) => !this.#seenRequests.has(f.dataset['request']!));
    for (const f of openForms) this.#seenRequests.add(f.dataset['request']!);
    // A new question (after this tab answered, or while following the chat) is shown from its
    // top, so it can be read from the start rather than from its buttons.
    if ((this.#revealNext || follow) && fresh.length > 0) {
      this.#revealNext = false;
      fresh[0]!.scrollIntoView({ block: 'start' });
      this.#following = this.#atBottom();
      return;
    }
    if (this.#revealNext && openForms.length === 0) {
      // Answered and nothing else is asked yet: follow the agent's reply.
      this.#scrollToBottom();
      return;
    }
    const grew = document.documentElement.scrollHeight > heightBefore + 1;
    if (!grew) return;
    if (follow) this.#scrollToBottom();
    else this.#jump.hidden = false;
  }

  /** A long part rendered more of itself on a frame of its own: it is followed like new content. */
  #afterPartGrew(): void {
    if (this.#following) this.#scrollToBottom();
    else this.#jump.hidden = false;
  }

  /** An empty chat says what this agent can do, and offers the demo tour in one click. */
  #emptyChat(): HTMLElement {
    if (this.provider !== 'demo') return el('p', { class: 'empty muted', text: 'No messages yet. Write a message below to start a turn.' });
    const example = JSON.stringify(
      {
        script: [
          { say: 'Checking the release…' },
          { ask: { id: 'confirm', message: 'Ship it?', questions: [{ id: 'ship', kind: 'boolean', title: 'Ship now', message: 'Ship the release now?', required: true }] } },
          { tool: { id: 'deploy', name: 'deploy', confirm: true } },
          { say: 'Done.' },
        ],
      },
      null,
      1,
    ).replace(/\n\s*/g, ' ');
    return el(
      'div',
      { class: 'empty card', attrs: { 'data-testid': 'empty-chat' } },
      el('strong', { text: 'This chat talks to the demo agent.' }),
      el('p', { class: 'muted', text: 'Send any message for a short tour: it asks one question of every kind (text, email, numbers, yes/no, choices), asks you to open a link, and waits for your approval before running a tool.' }),
      el(
        'div',
        { class: 'actions' },
        el('button', {
          class: 'primary',
          attrs: { type: 'button', 'data-testid': 'start-tour', disabled: this.ctx.canWrite ? undefined : 'disabled' },
          text: 'Start the demo tour',
          on: { click: () => void this.#startTurn('Show me the tour') },
        }),
        el('button', {
          attrs: { type: 'button', 'data-testid': 'use-script', disabled: this.ctx.canWrite ? undefined : 'disabled' },
          text: 'Try a script',
          on: {
            click: () => {
              this.#textarea.value = example;
              this.#fitComposer();
              this.#textarea.focus();
            },
          },
        }),
      ),
      el(
        'details',
        { class: 'script-help' },
        el('summary', { text: 'Script format' }),
        el('p', { class: 'small', text: 'A message that is JSON with a "script" list runs its steps in order:' }),
        el(
          'ul',
          { class: 'small' },
          el('li', {}, el('code', { text: '{"say": "text"}' }), ' streams text'),
          el('li', {}, el('code', { text: '{"ask": {"id", "message", "questions": [...]}}' }), ' asks for input and waits'),
          el('li', {}, el('code', { text: '{"tool": {"id", "name", "confirm": true}}' }), ' runs a tool after approval'),
          el('li', {}, el('code', { text: '{"sleep": 1000}' }), ' waits, ', el('code', { text: '{"fail": "why"}' }), ' ends with an error'),
        ),
        el('pre', {}, el('code', { text: example })),
      ),
    );
  }

  /** Why the running turn takes no additions (its agent has no mid-turn channel), checked once per turn. */
  #steeringBlocked: { turnId: string; reason: string | undefined } | undefined;

  #checkSteering(turnId: string): void {
    if (this.#steeringBlocked?.turnId === turnId) return;
    this.#steeringBlocked = { turnId, reason: undefined };
    void this.#steering.inputCapabilities().then(
      (caps) => {
        if (this.#steeringBlocked?.turnId !== turnId || !caps.targetUnavailable) return;
        this.#steeringBlocked = { turnId, reason: caps.targetUnavailable.message };
        if (this.#view) this.#renderComposer(this.#view.state);
      },
      () => undefined,
    );
  }

  #renderComposer(chat: ChatState): void {
    const running = chat.activeTurn !== undefined;
    if (chat.activeTurn) this.#checkSteering(chat.activeTurn.id);
    const blocked = running && this.#steeringBlocked?.turnId === chat.activeTurn?.id ? this.#steeringBlocked?.reason : undefined;
    this.#send.textContent = running ? 'Add to turn' : 'Send';
    this.#send.title = running ? 'Add this to the running turn (the agent picks it up between steps)' : 'Send (Enter)';
    this.#send.disabled = !this.ctx.canWrite || this.#sending || blocked !== undefined;
    this.#textarea.disabled = !this.ctx.canWrite || blocked !== undefined;
    this.#textarea.placeholder = running ? 'Add to the running turn…' : 'Message the agent…';
    this.#composerNote.textContent = blocked ? blocked : running ? 'Extra context for the running turn. It never approves a tool or answers a question — use the buttons above.' : SEND_HINT;
    const pendingSteering = [...(chat.steeringMessages ?? []), ...(chat.steeringMessage ? [chat.steeringMessage] : [])];
    const mine = new Set(this.#inputs.map((i) => i.inputId));
    const others = pendingSteering.filter((p) => !mine.has(inputIdOf(p)));
    const receipt = (i: TrackedInput): HTMLElement => {
      const state = i.problem ? 'not added' : (i.receipt?.state ?? 'sending');
      const words = receiptInWords(state, i.receipt?.reason);
      return el(
        'div',
        { class: `receipt receipt-${state.replace(/\s/g, '-')}`, attrs: { 'data-input': i.inputId, 'data-state': state } },
        el('span', { class: 'badge', text: words.badge }),
        ' ',
        el('span', { class: 'receipt-text', text: i.text.length > 140 ? i.text.slice(0, 140) + '…' : i.text }),
        i.problem ? el('span', { class: 'error small', text: ` — ${i.problem}` }) : words.why ? el('span', { class: 'muted small', text: ` — ${words.why}` }) : null,
      );
    };
    // Receipts of the latest turn (running or just ended) stay in view; once another turn has
    // started, older ones fold into one line.
    const latestTurn = chat.activeTurn?.id ?? chat.turns.at(-1)?.id;
    const current = this.#inputs.filter((i) => i.target.turnId === latestTurn);
    const ended = this.#inputs.filter((i) => !current.includes(i)).slice(-5);
    replaceChildren(
      this.#pending,
      ended.length > 0
        ? el('details', { class: 'earlier-receipts small muted', attrs: { 'data-testid': 'earlier-receipts' } }, el('summary', { text: `${ended.length} addition${ended.length === 1 ? '' : 's'} to earlier turns` }), ...ended.map(receipt))
        : null,
      ...current.slice(-5).map(receipt),
      ...others.map((p) => el('div', { class: 'receipt receipt-accepted' }, el('span', { class: 'badge', text: 'pending (another tab)' }), ' ', el('span', { text: p.message.text }))),
    );
  }

  async #startTurn(text: string, meta?: Record<string, string>): Promise<boolean> {
    const view = this.#view;
    if (!view || !this.ctx.canWrite) return false;
    const result = await view.dispatch({
      type: 'chat/turnStarted',
      turnId: newId(),
      startedAt: new Date().toISOString(),
      message: { text, origin: { kind: 'user' }, ...(meta ? { _meta: meta } : {}) },
    });
    if (!result.accepted) {
      // The hub's reason names ids; it stays on hover for bug reports.
      this.#composerError.textContent = view.state.activeTurn ? 'Not sent: another turn started first. Send it again to add it to that turn.' : 'Not sent: the hub refused this message. Try again, or reload the page.';
      this.#composerError.title = result.reason;
    } else this.#scrollToBottom();
    return result.accepted;
  }

  async #submit(): Promise<void> {
    const view = this.#view;
    const text = this.#textarea.value;
    if (!view || !this.ctx.canWrite || this.#sending || text.trim() === '') return;
    this.#composerError.textContent = '';
    this.#sending = true;
    this.#send.disabled = true;
    try {
      if (view.state.activeTurn) await this.#steer(text);
      else if (await this.#startTurn(text)) {
        this.#textarea.value = '';
        this.#fitComposer();
        this.#saveUnsent();
      }
    } finally {
      this.#sending = false;
      this.#renderComposer(view.state);
    }
  }

  /** Sends `text` as if typed in the composer; a message already being written there gets it appended instead. */
  async #sendAsTyped(text: string): Promise<FollowUpResult> {
    const own = this.#textarea.value.trim() !== '';
    this.#textarea.value = own ? `${this.#textarea.value}\n\n${text}` : text;
    if (own) this.#textarea.focus();
    else await this.#submit();
    return own ? 'added' : this.#textarea.value === '' ? 'sent' : 'failed';
  }

  /** Adds `text` to the running turn through the steering input contract, then follows its receipt. */
  async #steer(text: string): Promise<void> {
    let target: InputTarget | null;
    try {
      target = await this.#steering.getInputTarget();
    } catch (err) {
      this.#composerError.textContent = 'Cannot add to the running turn right now (the hub did not answer). Try again in a moment.';
      this.#composerError.title = (err as Error).message;
      return;
    }
    if (!target) {
      this.#composerError.textContent = 'The turn ended before your addition was sent; nothing was added. Send it again to start a new turn.';
      return;
    }
    // The id is minted once, with the target, before the first attempt (retry discipline).
    const tracked: TrackedInput = { inputId: newId(), text, target };
    this.#inputs.push(tracked);
    this.#textarea.value = '';
    this.#fitComposer();
    this.#saveUnsent();
    this.#renderComposer(this.#view!.state);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const result = await this.#steering.submitInput({ inputId: tracked.inputId, target, content: { text } });
        if (result.outcome === 'accepted') tracked.receipt = result.receipt;
        else tracked.problem = result.outcome === 'closed' ? 'the turn had already ended; send it again to start a new turn' : `the hub did not take it: ${result.message}`;
        break;
      } catch {
        // Unknown outcome: ask first, resend the identical request only if the hub has no receipt.
        const known = await this.#steering.getInputStatus(tracked.inputId, target).catch(() => null);
        if (known) {
          tracked.receipt = known;
          break;
        }
        if (attempt === 2) tracked.problem = 'not confirmed (the connection failed); check the chat before sending it again';
      }
    }
    this.#renderComposer(this.#view!.state);
    this.#schedulePoll();
  }

  #schedulePoll(): void {
    if (this.#poll !== undefined || this.#destroyed) return;
    this.#poll = window.setTimeout(() => void this.#pollReceipts(), 600);
  }

  async #pollReceipts(): Promise<void> {
    this.#poll = undefined;
    const open = this.#inputs.filter((i) => i.receipt && i.receipt.state === 'accepted');
    for (const i of open) {
      const receipt = await this.#steering.getInputStatus(i.inputId, i.target).catch(() => undefined);
      if (receipt) i.receipt = receipt;
    }
    if (this.#destroyed) return;
    if (this.#view) this.#renderComposer(this.#view.state);
    if (this.#inputs.some((i) => i.receipt?.state === 'accepted')) this.#schedulePoll();
  }

  async #stop(): Promise<void> {
    const turn = this.#view?.state.activeTurn;
    if (!turn || !this.ctx.canWrite) return;
    stoppedHere.add(turn.id);
    const result = await this.#view!.dispatch({ type: 'chat/turnCancelled', turnId: turn.id, duration: turnDuration(turn.startedAt, Date.now()) });
    if (!result.accepted) {
      stoppedHere.delete(turn.id);
      this.#composerError.textContent = 'Could not stop: the turn had already ended.';
      this.#composerError.title = result.reason;
    }
  }

  destroy(): void {
    this.#destroyed = true;
    window.clearTimeout(this.#poll);
    for (const off of this.#offs) off();
    for (const tv of this.#turns.values()) tv.destroy();
    this.#presence?.destroy();
  }
}
