/**
 * The dashboard: every session of the tenant, live. The list comes from `listSessions` and is
 * kept current by the root channel's `root/sessionAdded|Removed|SummaryChanged` notifications;
 * notifications are not replayed, so the list is fetched again after every reconnect.
 */
import type { SessionSummary } from '../shared/protocol/state.js';
import { ROOT_URI } from '../shared/protocol/uris.js';
import { el, replaceChildren } from './dom.js';
import { awaitsSomeone, displayTitle, errorInWords, isArchived, relativeTime, sessionIdOf, shortSessionId, statusClass, statusLabel, type StatusLabel } from './format.js';
import { DashboardFilters } from './dashboard-filters.js';
import { SearchBox } from './search.js';
import type { ChatState, SessionState } from '../shared/client/ahp-client.js';
import type { AppContext } from './context.js';
import { markdownToText } from './markdown.js';
import { dashboardApproval } from './dashboard-approval.js';

interface InputNeededBrief {
  id: string;
  chat: string;
  kind: string;
  message?: string;
}

type Summary = SessionSummary & { inputNeededCount?: number };

const LABELS: StatusLabel[] = ['Needs input', 'In progress', 'Idle', 'Error'];

function briefsOf(s: Summary): InputNeededBrief[] {
  const raw = (s._meta as Record<string, unknown> | undefined)?.['hub/inputNeeded'];
  return Array.isArray(raw) ? (raw as InputNeededBrief[]).filter((b) => typeof b === 'object' && b !== null) : [];
}

function kindText(kind: string): string {
  switch (kind) {
    case 'chatInput':
      return 'asks';
    case 'toolConfirmation':
      return 'wants to run';
    case 'toolAuthentication':
      return 'needs sign-in for';
    default:
      return kind;
  }
}

export class DashboardView {
  readonly el: HTMLElement;
  readonly #sessions = new Map<string, Summary>();
  readonly #list = el('ul', { class: 'sessions', attrs: { 'data-testid': 'sessions', 'aria-live': 'polite' } });
  readonly #counts = el('div', { class: 'counts', attrs: { 'data-testid': 'counts' } });
  readonly #filters: DashboardFilters;
  readonly #error = el('p', { class: 'error', attrs: { hidden: 'hidden', role: 'alert' } });
  readonly #offs: Array<() => void> = [];
  readonly #ticker: number;
  /** What failed, per session in Error: read once from its default chat's last turn. */
  readonly #failures = new Map<string, { modifiedAt: string; text: string | undefined }>();
  readonly #next: HTMLButtonElement;
  #destroyed = false;

  constructor(private readonly ctx: AppContext) {
    this.#filters = new DashboardFilters(ctx.signedInAs, () => this.#render());
    const title = el('input', { attrs: { type: 'text', placeholder: 'New session title', 'aria-label': 'New session title', maxlength: '200', 'data-testid': 'new-session-title', disabled: ctx.canWrite ? undefined : 'disabled' } });
    this.#next = el('button', {
      class: 'primary next-waiting',
      attrs: { type: 'button', 'data-testid': 'next-needs-input', hidden: 'hidden' },
      text: 'Next chat that needs input →',
      on: { click: () => this.#openNextWaiting() },
    });
    const create = el('button', {
      attrs: { type: 'submit', 'data-testid': 'new-session', disabled: ctx.canWrite ? undefined : 'disabled' },
      title: ctx.canWrite ? 'Create a session' : 'Viewers cannot create sessions',
      text: 'New session',
    });
    const form = el(
      'form',
      {
        class: 'new-session',
        on: {
          submit: (e) => {
            e.preventDefault();
            void this.#create(title.value.trim(), create);
          },
        },
      },
      title,
      this.#provider,
      create,
    );
    this.el = el(
      'section',
      { class: 'dashboard' },
      el('div', { class: 'dash-head' }, el('h1', { text: 'Sessions' }), this.#counts, ctx.canWrite ? form : null),
      new SearchBox(ctx).el,
      el('div', { class: 'dash-tools' }, this.#filters.el, this.#next),
      this.#error,
      this.#list,
    );
    const client = ctx.client;
    this.#offs.push(
      client.onNotification('root/sessionAdded', (p) => {
        const summary = (p as { summary?: Summary }).summary;
        if (summary?.resource) this.#upsert(summary);
      }),
      client.onNotification('root/sessionRemoved', (p) => {
        const session = (p as { session?: string }).session;
        if (session && this.#sessions.delete(session)) this.#render();
      }),
      client.onNotification('root/sessionSummaryChanged', (p) => {
        const { session, changes } = p as { session?: string; changes?: Partial<Summary> };
        const prev = session ? this.#sessions.get(session) : undefined;
        if (prev && changes) this.#upsert({ ...prev, ...changes });
      }),
      client.onConnectionState((state, previous) => {
        if (state === 'open' && previous !== 'open') void this.#load();
      }),
    );
    this.#ticker = window.setInterval(() => this.#render(), 30_000);
    void this.#start();
  }

  /** The agent for a new session: the hub's providers from the root state (`remote` needs an external agent, so it is not offered). */
  readonly #provider = el('select', { attrs: { 'aria-label': 'Agent', 'data-testid': 'new-session-provider' } });

  #offerProviders(agents: ReadonlyArray<{ provider: string; displayName: string; description?: string | undefined }>): void {
    const offered = agents.filter((a) => a.provider !== 'remote');
    replaceChildren(this.#provider, ...offered.map((a) => el('option', { attrs: { value: a.provider }, title: a.description ?? '', text: a.displayName })));
    this.#provider.hidden = offered.length < 2;
  }

  async #start(): Promise<void> {
    try {
      const root = await this.ctx.client.subscribe(ROOT_URI);
      this.#offerProviders(root.state.agents);
    } catch (err) {
      this.#showError(`Could not follow the catalogue: ${(err as Error).message}`);
    }
    await this.#load();
  }

  async #load(): Promise<void> {
    try {
      const all: Summary[] = [];
      let cursor: string | undefined;
      do {
        const page = await this.ctx.client.listSessions({ limit: 200, ...(cursor !== undefined && { cursor }) });
        all.push(...page.items);
        cursor = page.nextCursor;
      } while (cursor !== undefined && all.length < 5_000);
      if (this.#destroyed) return;
      this.#sessions.clear();
      for (const s of all) this.#sessions.set(s.resource, s);
      this.#error.hidden = true;
      this.#render();
    } catch (err) {
      this.#showError(`Could not list sessions: ${(err as Error).message}`);
    }
  }

  async #create(title: string, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    try {
      const provider = this.#provider.value || undefined;
      const { session, defaultChat } = await this.ctx.client.createSession({ ...(title && { title }), ...(provider && { provider }) });
      this.ctx.navigate(`/s/${encodeURIComponent(sessionIdOf(session))}?chat=${encodeURIComponent(defaultChat)}`);
    } catch (err) {
      this.#showError(`Could not create a session: ${(err as Error).message}`);
      button.disabled = false;
    }
  }

  #showError(text: string): void {
    this.#error.textContent = text;
    this.#error.hidden = false;
  }

  #upsert(summary: Summary): void {
    this.#sessions.set(summary.resource, summary);
    this.#render();
  }

  #render(): void {
    if (this.#destroyed) return;
    const all = [...this.#sessions.values()].sort((a, b) => Date.parse(b.modifiedAt) - Date.parse(a.modifiedAt));
    const counts = new Map<StatusLabel, number>(LABELS.map((l) => [l, 0]));
    for (const s of all) counts.set(statusLabel(s.status), (counts.get(statusLabel(s.status)) ?? 0) + 1);
    replaceChildren(
      this.#counts,
      el('span', { class: 'count', text: `${all.length} session${all.length === 1 ? '' : 's'}` }),
      ...LABELS.map((l) => el('span', { class: statusClass(l) + ' count', attrs: { 'data-count': l }, text: `${l}: ${counts.get(l) ?? 0}` })),
    );
    this.ctx.setPageTitle('Sessions');
    this.#filters.setAgents(all.map((s) => s.provider));
    const waiting = all.filter((s) => awaitsSomeone(s.status));
    this.#next.hidden = waiting.length === 0;
    this.#next.textContent = waiting.length === 1 ? 'Open the chat that needs input →' : `Next chat that needs input (${waiting.length}) →`;
    const shown = all.filter((s) => this.#filters.matches(s));
    for (const s of all) if (statusLabel(s.status) === 'Error') this.#loadFailure(s);
    if (shown.length === 0) {
      const empty = this.#filters.attentionOnly
        ? 'Nothing needs attention right now.'
        : this.#filters.archivedView
          ? 'No archived sessions.'
          : this.#filters.narrowing
            ? 'No sessions match these filters.'
            : 'No sessions yet. Create one to talk to the demo agent.';
      replaceChildren(this.#list, el('li', { class: 'empty muted', text: empty }));
      return;
    }
    replaceChildren(this.#list, ...shown.map((s) => this.#card(s)));
  }

  #card(s: Summary): HTMLElement {
    const label = statusLabel(s.status);
    const href = `/s/${encodeURIComponent(sessionIdOf(s.resource))}`;
    const briefs = briefsOf(s);
    const chatCount = (s._meta as Record<string, unknown> | undefined)?.['hub/chatCount'];
    return el(
      'li',
      { class: 'session card', attrs: { 'data-session': s.resource, 'data-status': label } },
      el(
        'div',
        { class: 'session-head' },
        el('span', { class: statusClass(label), attrs: { 'data-testid': 'status' }, text: label + ((s.inputNeededCount ?? 0) > 1 ? ` (${s.inputNeededCount})` : '') }),
        isArchived(s.status) ? el('span', { class: 'status status-archived', attrs: { 'data-testid': 'archived' }, text: 'Archived' }) : null,
        el('h2', { class: 'card-title' }, el('a', { class: 'session-title', attrs: { href, 'data-route': '' }, title: s.title, text: displayTitle(s.title) })),
        el('span', { class: 'muted when', title: s.modifiedAt, text: relativeTime(s.modifiedAt) }),
      ),
      s.activity ? el('div', { class: 'activity muted', text: s.activity }) : null,
      label === 'Error'
        ? el(
            'div',
            { class: 'failure', attrs: { 'data-testid': 'failure' } },
            el('span', { text: this.#failures.get(s.resource)?.text ?? 'The last turn failed.' }),
            ' ',
            el('a', { attrs: { href, 'data-route': '' }, text: 'Open to retry or start a new turn' }),
          )
        : null,
      briefs.length > 0
        ? el(
            'ul',
            { class: 'briefs' },
            ...briefs.map((b) =>
              el(
                'li',
                { attrs: { 'data-testid': 'brief' } },
                el('a', { attrs: { href: `${href}?chat=${encodeURIComponent(b.chat)}`, 'data-route': '' }, text: `Agent ${kindText(b.kind)}` }),
                ': ',
                el('span', { class: 'brief-text', text: b.message ? markdownToText(b.message) : '(no description)' }),
                dashboardApproval(this.ctx.client, b, this.ctx),
              ),
            ),
          )
        : null,
      el(
        'div',
        { class: 'muted small facts' },
        el('span', { attrs: { 'data-testid': 'provider' } }, 'Agent: ', s.provider),
        typeof chatCount === 'number' && chatCount > 1 ? ` · ${chatCount} chats` : '',
        ' · id ',
        el('code', { class: 'session-id', title: sessionIdOf(s.resource), text: shortSessionId(sessionIdOf(s.resource)) }),
      ),
    );
  }

  /** Opens the session that has waited longest for someone (oldest change first). */
  #openNextWaiting(): void {
    const waiting = [...this.#sessions.values()].filter((s) => awaitsSomeone(s.status)).sort((a, b) => Date.parse(a.modifiedAt) - Date.parse(b.modifiedAt));
    const first = waiting[0];
    if (!first) return;
    const brief = briefsOf(first)[0];
    this.ctx.navigate(`/s/${encodeURIComponent(sessionIdOf(first.resource))}${brief ? `?chat=${encodeURIComponent(brief.chat)}` : ''}`);
  }

  /** Reads what failed from the session's default chat (summaries only carry the status). */
  #loadFailure(s: Summary): void {
    const known = this.#failures.get(s.resource);
    if (known && known.modifiedAt === s.modifiedAt) return;
    this.#failures.set(s.resource, { modifiedAt: s.modifiedAt, text: known?.text });
    void (async () => {
      const client = this.ctx.client;
      try {
        const session = (await client.subscribe(s.resource as `ahp-session:/${string}`)).state as SessionState;
        const chatUri = session.defaultChat ?? session.chats[0]?.resource;
        let text: string | undefined;
        if (chatUri) {
          const chat = (await client.subscribe(chatUri as `ahp-chat:/${string}`)).state as ChatState;
          const failed = [...chat.turns].reverse().find((t) => t.error);
          if (failed?.error) text = errorInWords(failed.error.errorType, failed.error.message);
          if (!this.#destroyed) client.unsubscribe(chatUri);
        }
        if (!this.#destroyed) client.unsubscribe(s.resource);
        if (text === undefined || this.#destroyed) return;
        this.#failures.set(s.resource, { modifiedAt: s.modifiedAt, text });
        this.#render();
      } catch {
        // Left as "The last turn failed."
      }
    })();
  }

  destroy(): void {
    this.#destroyed = true;
    window.clearInterval(this.#ticker);
    for (const off of this.#offs) off();
  }
}
