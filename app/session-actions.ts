/**
 * What a person can do with a whole session from its page: rename it (`session/titleChanged`),
 * archive or unarchive it (`session/isArchivedChanged`: archived sessions leave the default
 * dashboard and "Next chat that needs input"), delete it after a confirmation (`disposeSession`,
 * which the hub allows to the session's owner and admins only), and export the open chat's
 * transcript as Markdown or JSON (`GET /v2/sessions/{id}/export`). Viewers only export.
 */
import type { ChannelView } from '../shared/client/channel-view.js';
import type { SessionState } from '../shared/client/ahp-client.js';
import { ApiError, apiGet } from './api.js';
import type { AppContext } from './context.js';
import { el, replaceChildren } from './dom.js';
import { displayTitle, isArchived, sessionIdOf } from './format.js';

/** The longest title the rename field takes (the new-session form's limit; the hub allows more). */
const TITLE_MAX = 200;

export class SessionActions {
  readonly el: HTMLElement;
  readonly #archive: HTMLButtonElement;
  /** Shown to the session's owner and admins only (the hub refuses everyone else anyway). */
  readonly #deleteButton: HTMLButtonElement;
  readonly #badge = el('span', { class: 'status status-archived', attrs: { 'data-testid': 'archived-badge', hidden: 'hidden' }, text: 'Archived' });
  readonly #panel = el('div', { class: 'session-panel', attrs: { hidden: 'hidden' } });
  readonly #problem = el('p', { class: 'error', attrs: { role: 'alert', hidden: 'hidden', 'data-testid': 'session-action-error' } });
  #view: ChannelView<SessionState> | undefined;

  constructor(
    private readonly ctx: AppContext,
    private readonly sessionUri: string,
    /** The chat whose transcript an export takes (the open tab). */
    private readonly currentChat: () => string | undefined,
  ) {
    const writer = ctx.canWrite;
    const button = (testid: string, text: string, onClick: () => void, title?: string): HTMLButtonElement =>
      el('button', { class: 'link small', attrs: { type: 'button', 'data-testid': testid }, text, ...(title !== undefined && { title }), on: { click: onClick } });
    this.#deleteButton = button('delete-session', 'Delete…', () => this.#showDelete(), 'Only the session’s owner or an admin can delete it');
    this.#deleteButton.hidden = true;
    this.#archive = button('archive-session', 'Archive', () => void this.#toggleArchived(), 'Archived sessions leave the dashboard’s default view and “Next chat that needs input”');
    this.el = el(
      'div',
      { class: 'session-actions', attrs: { 'data-testid': 'session-actions' } },
      el(
        'div',
        { class: 'session-action-row small' },
        this.#badge,
        writer ? button('rename-session', 'Rename', () => this.#showRename()) : null,
        writer ? this.#archive : null,
        writer ? this.#deleteButton : null,
        el('span', { class: 'muted', text: 'Export:' }),
        button('export-markdown', 'Markdown', () => void this.#export('markdown')),
        button('export-json', 'JSON', () => void this.#export('json')),
      ),
      this.#panel,
      this.#problem,
    );
  }

  /** Brings the archive toggle and badge in line with the session's state. */
  update(view: ChannelView<SessionState>): void {
    this.#view = view;
    const archived = isArchived(view.state.status);
    this.#archive.textContent = archived ? 'Unarchive' : 'Archive';
    this.#badge.hidden = !archived;
    // The hub sends who created the session beside its snapshot (`_meta["hub/owner"]`).
    const owner = view.snapshotMeta?.['hub/owner'];
    this.#deleteButton.hidden = !(this.ctx.role === 'admin' || (typeof owner === 'string' && owner === this.ctx.signedInAs));
  }

  #say(text: string | undefined): void {
    this.#problem.textContent = text ?? '';
    this.#problem.hidden = text === undefined;
  }

  #closePanel(): void {
    this.#panel.hidden = true;
    replaceChildren(this.#panel);
  }

  #showRename(): void {
    this.#say(undefined);
    const current = this.#view?.state.title ?? '';
    const input = el('input', { attrs: { type: 'text', 'aria-label': 'Session title', maxlength: String(TITLE_MAX), 'data-testid': 'rename-input', value: current } });
    const form = el(
      'form',
      {
        class: 'rename-form',
        on: {
          submit: (e) => {
            e.preventDefault();
            void this.#rename(input.value);
          },
        },
      },
      input,
      el('button', { class: 'primary', attrs: { type: 'submit', 'data-testid': 'rename-save' }, text: 'Save' }),
      el('button', { attrs: { type: 'button' }, text: 'Cancel', on: { click: () => this.#closePanel() } }),
    );
    replaceChildren(this.#panel, form);
    this.#panel.hidden = false;
    input.focus();
    input.select();
  }

  async #rename(raw: string): Promise<void> {
    const title = raw.trim();
    if (title === '') return this.#say('Enter a title: a session cannot be renamed to nothing.');
    const result = await this.#view?.dispatch({ type: 'session/titleChanged', title });
    if (result && !result.accepted) return this.#say(`Could not rename the session: ${result.reason}`);
    this.#closePanel();
  }

  async #toggleArchived(): Promise<void> {
    this.#say(undefined);
    const view = this.#view;
    if (!view) return;
    const result = await view.dispatch({ type: 'session/isArchivedChanged', isArchived: !isArchived(view.state.status) });
    if (!result.accepted) this.#say(`Could not change the archive flag: ${result.reason}`);
  }

  #showDelete(): void {
    this.#say(undefined);
    const title = displayTitle(this.#view?.state.title);
    replaceChildren(
      this.#panel,
      el(
        'div',
        { class: 'confirm card', attrs: { role: 'alertdialog', 'aria-label': 'Delete this session?', 'data-testid': 'delete-confirm' } },
        el('p', {}, 'Delete ', el('strong', { text: `“${title}”` }), ' for everyone? Its chats and transcripts are removed from the hub. This cannot be undone; archive it instead to keep it.'),
        el('button', { class: 'danger', attrs: { type: 'button', 'data-testid': 'delete-confirm-yes' }, text: 'Delete session', on: { click: () => void this.#delete() } }),
        ' ',
        el('button', { attrs: { type: 'button', 'data-testid': 'delete-cancel' }, text: 'Keep it', on: { click: () => this.#closePanel() } }),
      ),
    );
    this.#panel.hidden = false;
  }

  async #delete(): Promise<void> {
    try {
      await this.ctx.client.disposeSession(this.sessionUri);
      this.ctx.navigate('/');
    } catch (err) {
      this.#closePanel();
      this.#say(`Could not delete the session: ${(err as Error).message}`);
    }
  }

  /** Fetches the export with this tab's token and hands it to the browser as a download. */
  async #export(format: 'markdown' | 'json'): Promise<void> {
    this.#say(undefined);
    const chat = this.currentChat();
    const query = new URLSearchParams({ format, ...(chat !== undefined && { chat }) });
    try {
      const res = await apiGet(this.ctx, `/v2/sessions/${encodeURIComponent(sessionIdOf(this.sessionUri))}/export?${query}`);
      const blob = await res.blob();
      const url = URL.createObjectURL(blob);
      const name =
        (displayTitle(this.#view?.state.title)
          .replace(/[^\p{L}\p{N}]+/gu, '-')
          .replace(/^-|-$/g, '') || 'transcript') + (format === 'markdown' ? '.md' : '.json');
      const a = el('a', { attrs: { href: url, download: name, hidden: 'hidden' } });
      document.body.append(a);
      a.click();
      a.remove();
      window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      this.#say(`Could not export the transcript: ${err instanceof ApiError ? err.message : (err as Error).message}`);
    }
  }
}
