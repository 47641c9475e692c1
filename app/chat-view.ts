/**
 * One chat of a session: its status and viewers, the transcript of its turns (turn-view.ts),
 * built as a window over long chats, and the composer (composer.ts). Following the end of the
 * chat is chat-follow.ts, announcements for screen readers chat-announcer.ts, links to turns
 * turn-links.ts; the session page around it is chat-page.ts.
 */
import { CHAT_PRESENCE_DOC } from '../shared/protocol/collab.js';
import type { ChatState } from '../shared/client/ahp-client.js';
import type { ChannelView } from '../shared/client/channel-view.js';
import type { ActiveTurn, Turn } from '../shared/protocol/state.js';
import { SessionInputs } from '../shared/client/session-inputs.js';
import { CollabDoc, presenceName, type PresenceState } from './collab.js';
import { el, replaceChildren } from './dom.js';
import { colorFor, relativeTime, statusClass, statusLabel } from './format.js';
import type { AppContext } from './context.js';
import { AnswerStamps } from './answer-stamps.js';
import { ChatAnnouncer } from './chat-announcer.js';
import { ChatFollow } from './chat-follow.js';
import { Composer } from './composer.js';
import { emptyChat } from './empty-chat.js';
import { TurnLinks } from './turn-links.js';
import { TurnView, type TurnHandlers } from './turn-view.js';
import { nextFrame } from './markdown-stream.js';
import { warmMarkdown } from './markdown-warm.js';

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

export class ChatView {
  readonly el: HTMLElement;
  readonly #status = el('span', { class: 'status', attrs: { 'data-testid': 'chat-status' } });
  readonly #viewers = el('span', { class: 'viewers', attrs: { 'data-testid': 'viewers' } });
  readonly #activity = el('span', { class: 'muted small activity' });
  readonly #transcript = el('div', { class: 'transcript', attrs: { 'data-testid': 'transcript' } });
  readonly #turns = new Map<string, TurnView>();
  /** The oldest turn built (see TURN_WINDOW); undefined until a turn is shown. */
  #firstShownId: string | undefined;
  readonly #earlier: HTMLButtonElement;
  readonly #earlierObserver: IntersectionObserver;
  #view: ChannelView<ChatState> | undefined;
  /** Who answered each input request (kept beside the chat state by the hub). */
  #answers: AnswerStamps | undefined;
  #presence: CollabDoc | undefined;
  #offs: Array<() => void> = [];
  #renderScheduled = false;
  #destroyed = false;
  readonly #composer: Composer;
  readonly #follow: ChatFollow;
  readonly #announcer = new ChatAnnouncer();
  readonly #links: TurnLinks;

  constructor(
    private readonly ctx: AppContext,
    sessionUri: string,
    readonly uri: string,
    private readonly provider: string,
  ) {
    this.#follow = new ChatFollow(this.#transcript);
    this.#offs.push(() => this.#follow.destroy());
    this.#links = new TurnLinks(uri, this.#transcript, { showFrom: (id) => this.#showFrom(id), stopFollowing: () => this.#follow.stopFollowing() });
    this.#offs.push(() => this.#links.destroy());
    this.#composer = new Composer(
      ctx,
      uri,
      new SessionInputs(ctx.client, sessionUri),
      () => this.#view,
      () => this.#follow.scrollToBottom(),
      this.#follow.jump,
    );
    this.#offs.push(() => this.#composer.destroy());
    this.#earlier = el('button', { class: 'link earlier-turns', attrs: { type: 'button', 'data-testid': 'earlier-turns' }, on: { click: () => this.#showEarlier() } });
    this.#earlierObserver = new IntersectionObserver(
      (entries) => {
        if (!this.#filling && entries.some((e) => e.isIntersecting)) nextFrame(() => this.#showEarlier());
      },
      { rootMargin: '800px 0px 0px 0px' },
    );
    this.#earlierObserver.observe(this.#earlier);
    this.#offs.push(() => this.#earlierObserver.disconnect());
    this.el = el('div', { class: 'chat', attrs: { 'data-chat': uri } }, el('div', { class: 'chat-meta' }, this.#status, this.#activity, this.#viewers), this.#announcer.el, this.#transcript, this.#composer.el);
    // "just now" must not stay "just now": relative times are recomputed while the chat is open.
    const ticker = window.setInterval(() => {
      for (const span of this.el.querySelectorAll<HTMLElement>('.ago[data-at]')) span.textContent = ` · ${relativeTime(span.dataset['at'])}`;
    }, 15_000);
    this.#offs.push(() => window.clearInterval(ticker));
    this.#follow.watchComposer(this.#composer.el);
    warmMarkdown(); // while the snapshot is on its way
    void this.#start();
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
      onStop: () => void this.#composer.stop(),
      onRetry: (text) => void this.#composer.startTurn(text),
      onResume: (text, turnId) => void this.#composer.startTurn(text, { 'hub/resumes': turnId }),
      onNewTurn: () => {
        this.#composer.focus();
        this.#follow.scrollToBottom();
      },
      onFollowUp: (text) => this.#composer.sendAsTyped(text),
    });
    for (let index = first; index < wanted.length; index++) {
      const [turn, active] = wanted[index]!;
      let tv = this.#turns.get(turn.id);
      if (!tv) {
        tv = new TurnView(
          this.ctx,
          view,
          turn.id,
          () => this.#follow.revealNextQuestion(),
          () => this.#follow.partGrew(),
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
    this.#links.addButtons();
    this.#composer.render(chat);
    if (!this.#prepending) this.#follow.reveal(); // reads no layout: the end is followed once the frame settles
    this.#announcer.announce(chat);
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
   * was on screen (the new ones go above it, out of view), or the end in view while it is followed.
   */
  #showEarlier(count = EARLIER_TURNS): void {
    const view = this.#view;
    if (!view || this.#destroyed || !this.#earlier.isConnected) return;
    const turns = view.state.turns;
    const first = turns.findIndex((t) => t.id === this.#firstShownId);
    if (first <= 0) return;
    // While the person follows the end (the window filled after the open), the end is kept in view
    // once the frame is laid out (ChatFollow): measuring the anchor would force two layouts a frame.
    // A question just shown from its top is held there, so the turns above it are measured then.
    const anchor = this.#follow.keepsEnd ? undefined : this.#turns.get(this.#firstShownId!)?.el;
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

  #emptyChat(): HTMLElement {
    return emptyChat(this.provider, this.ctx.canWrite, { startTour: () => void this.#composer.startTurn('Show me the tour'), useScript: (script) => this.#composer.focus(script) });
  }

  destroy(): void {
    this.#destroyed = true;
    for (const off of this.#offs) off();
    for (const tv of this.#turns.values()) tv.destroy();
    this.#presence?.destroy();
  }
}
