/**
 * The chat page of a session: its title, facts (agent, session id), session actions, standing
 * grants and its chats as tabs, with the chosen chat below (chat-view.ts).
 */
import type { SessionState } from '../shared/client/ahp-client.js';
import type { ChannelView } from '../shared/client/channel-view.js';
import { AhpRequestError } from '../shared/client/errors.js';
import { ErrorCode } from '../shared/protocol/errors.js';
import { ChatView } from './chat-view.js';
import type { AppContext } from './context.js';
import { copyButton } from './copy-button.js';
import { el, replaceChildren } from './dom.js';
import { displayTitle, sessionIdOf, statusClass, statusLabel } from './format.js';
import { SessionActions } from './session-actions.js';
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
