/**
 * The audit page (`/#/audit`): who approved or denied which tool, in which session, when and from
 * which surface, grouped by person; and every session's standing grants, with *Forget* where the
 * hub can revoke one (users only: viewers read, and the hub refuses their dispatches anyway).
 *
 * Everything is read from chat and session state over the ordinary AHP subscriptions, so it is
 * tenant-scoped by the hub and live; no store of its own. It is bounded: the most recently
 * changed `MAX_AUDIT_SESSIONS` sessions, `MAX_AUDIT_CHATS` chats each (the page says when more
 * exist), and chat state itself keeps a bounded number of turns.
 */
import type { ChannelView } from '../shared/client/channel-view.js';
import type { ChatState, SessionState, SessionSummary } from '../shared/protocol/state.js';
import { toolDecisionsOf, type ToolDecision } from '../shared/state/selectors.js';
import type { AppContext } from './context.js';
import { el, replaceChildren } from './dom.js';
import { answeredByText, displayTitle, personName, sessionIdOf } from './format.js';
import { grantRow, standingGrantsOf } from './standing-grants.js';

/** Sessions the page follows, newest change first. */
export const MAX_AUDIT_SESSIONS = 25;
/** Chats followed per session. */
export const MAX_AUDIT_CHATS = 10;

interface Followed {
  readonly summary: SessionSummary;
  readonly session: ChannelView<SessionState>;
  readonly chats: Array<ChannelView<ChatState>>;
}

interface AuditRow extends ToolDecision {
  readonly sessionTitle: string;
  readonly sessionUri: string;
  readonly chat: string;
}

export class AuditPage {
  readonly el: HTMLElement;
  readonly #approvals = el('section', { class: 'audit-approvals', attrs: { 'data-testid': 'audit-approvals' } });
  readonly #grants = el('section', { class: 'audit-grants', attrs: { 'data-testid': 'audit-grants' } });
  readonly #note = el('p', { class: 'muted small', attrs: { 'data-testid': 'audit-scope' } });
  readonly #error = el('p', { class: 'error', attrs: { hidden: 'hidden', role: 'alert' } });
  readonly #followed: Followed[] = [];
  readonly #offs: Array<() => void> = [];
  #pending = false;
  #destroyed = false;

  constructor(private readonly ctx: AppContext) {
    this.el = el(
      'section',
      { class: 'audit-page', attrs: { 'data-testid': 'audit-page' } },
      el('div', { class: 'chat-top' }, el('a', { class: 'back', attrs: { href: '/', 'data-route': '' }, text: '← All sessions' }), el('h1', { text: 'Audit: approvals and standing grants' })),
      this.#note,
      this.#error,
      this.#approvals,
      this.#grants,
    );
    ctx.setPageTitle('Audit');
    void this.#start();
  }

  async #start(): Promise<void> {
    try {
      const page = await this.ctx.client.listSessions({ limit: 200 });
      const newest = [...page.items].sort((a, b) => Date.parse(b.modifiedAt) - Date.parse(a.modifiedAt));
      const shown = newest.slice(0, MAX_AUDIT_SESSIONS);
      const more = newest.length > shown.length || page.nextCursor !== undefined;
      this.#note.textContent = `${more ? `The ${shown.length} most recently changed sessions` : `All ${shown.length} sessions`}, live. Approvals of tools that needed one; answers to questions are in each chat.`;
      for (const summary of shown) {
        if (this.#destroyed) return;
        await this.#follow(summary);
      }
      this.#render();
    } catch (err) {
      this.#error.textContent = `Could not read the sessions: ${(err as Error).message}`;
      this.#error.hidden = false;
    }
  }

  async #follow(summary: SessionSummary): Promise<void> {
    const client = this.ctx.client;
    const session = (await client.subscribe(summary.resource as `ahp-session:/${string}`)) as ChannelView<SessionState>;
    const followed: Followed = { summary, session, chats: [] };
    this.#followed.push(followed);
    this.#offs.push(session.onChange(() => this.#schedule()));
    for (const chat of session.state.chats.slice(0, MAX_AUDIT_CHATS)) {
      if (this.#destroyed) return;
      try {
        const view = (await client.subscribe(chat.resource as `ahp-chat:/${string}`)) as ChannelView<ChatState>;
        followed.chats.push(view);
        this.#offs.push(view.onChange(() => this.#schedule()));
      } catch {
        // A chat removed meanwhile has nothing to audit.
      }
    }
  }

  /** Changes arrive in bursts (a streaming turn): render once per frame. */
  #schedule(): void {
    if (this.#pending || this.#destroyed) return;
    this.#pending = true;
    requestAnimationFrame(() => {
      this.#pending = false;
      if (!this.#destroyed) this.#render();
    });
  }

  #rows(): AuditRow[] {
    const rows: AuditRow[] = [];
    for (const f of this.#followed) {
      const sessionTitle = displayTitle(f.session.state.title ?? f.summary.title);
      for (const chat of f.chats) {
        for (const d of toolDecisionsOf(chat.state)) rows.push({ ...d, sessionTitle, sessionUri: f.summary.resource, chat: chat.channel });
      }
    }
    // Newest first: the ISO stamps of one hub sort as text.
    return rows.sort((a, b) => (a.by.at < b.by.at ? 1 : a.by.at > b.by.at ? -1 : 0));
  }

  #render(): void {
    this.#renderApprovals(this.#rows());
    this.#renderGrants();
  }

  #renderApprovals(rows: AuditRow[]): void {
    const byPerson = new Map<string, AuditRow[]>();
    for (const row of rows) {
      const list = byPerson.get(row.by.user) ?? [];
      list.push(row);
      byPerson.set(row.by.user, list);
    }
    const people = [...byPerson.entries()].sort(([a], [b]) => a.localeCompare(b));
    replaceChildren(
      this.#approvals,
      el('h2', { text: 'Approvals by person' }),
      people.length === 0
        ? el('p', { class: 'muted', text: 'No tool has been approved or denied yet.' })
        : el(
            'div',
            {},
            ...people.map(([user, list]) =>
              el('div', { class: 'audit-person card', attrs: { 'data-person': user } }, el('h3', { text: `${personName(user, this.ctx.devMode)} (${list.length})` }), el('ul', {}, ...list.map((row) => this.#approvalRow(row)))),
            ),
          ),
    );
  }

  #approvalRow(row: AuditRow): HTMLLIElement {
    const href = `/s/${encodeURIComponent(sessionIdOf(row.sessionUri))}?chat=${encodeURIComponent(row.chat)}`;
    return el(
      'li',
      { attrs: { 'data-testid': 'audit-approval', 'data-tool': row.toolCallId } },
      el('strong', { text: row.approved ? 'Approved ' : 'Denied ' }),
      el('code', { text: row.toolName }),
      row.displayName && row.displayName !== row.toolName ? ` (${row.displayName})` : '',
      row.option ? ` — “${row.option}”` : '',
      ' · ',
      el('a', { attrs: { href, 'data-route': '' }, text: row.sessionTitle }),
      el('span', { class: 'muted small', text: ` · ${answeredByText(row.by, this.ctx.devMode)}` }),
    );
  }

  #renderGrants(): void {
    const sections = this.#followed
      .map((f) => ({ f, grants: standingGrantsOf(f.session.state) }))
      .filter((s) => s.grants.length > 0)
      .map(({ f, grants }) => {
        const forget = (toolName: string): void => void this.#forget(f.session, toolName);
        const options = { canWrite: this.ctx.canWrite, devMode: this.ctx.devMode, forget };
        const href = `/s/${encodeURIComponent(sessionIdOf(f.summary.resource))}`;
        return el(
          'div',
          { class: 'audit-session card', attrs: { 'data-session': f.summary.resource } },
          el('h3', {}, el('a', { attrs: { href, 'data-route': '' }, text: displayTitle(f.session.state.title ?? f.summary.title) })),
          el('ul', {}, ...grants.map((g) => grantRow(g, options))),
        );
      });
    replaceChildren(this.#grants, el('h2', { text: 'Standing grants' }), sections.length === 0 ? el('p', { class: 'muted', text: 'No standing grants.' }) : el('div', {}, ...sections));
  }

  async #forget(session: ChannelView<SessionState>, toolName: string): Promise<void> {
    const result = await session.dispatch({ type: 'x-session/toolChoiceForgotten', toolName });
    if (result.accepted) return;
    this.#error.textContent = `Could not forget the choice for ${toolName}: ${result.reason}`;
    this.#error.hidden = false;
  }

  destroy(): void {
    this.#destroyed = true;
    for (const off of this.#offs) off();
    for (const f of this.#followed) {
      for (const chat of f.chats) this.ctx.client.unsubscribe(chat.channel);
      this.ctx.client.unsubscribe(f.summary.resource);
    }
  }
}
