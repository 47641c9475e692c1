/**
 * Search across the tenant's session titles and transcripts, on the dashboard: the hub searches
 * (`GET /v2/search`, bounded there), each result names the session and chat, shows a snippet with
 * the match marked, and opens the chat at that turn (`#turn=<id>`, see turn-links.ts). The query
 * is kept in the address (`?q=`) like the filters.
 */
import { ApiError, apiGet } from './api.js';
import type { AppContext } from './context.js';
import { el, replaceChildren } from './dom.js';
import { displayTitle, sessionIdOf } from './format.js';

interface SearchResult {
  session: string;
  sessionTitle: string;
  chat: string;
  chatTitle: string;
  turnId?: string;
  field: string;
  snippet: string;
  match: { start: number; length: number };
}

const FIELD_WORDS: Readonly<Record<string, string>> = {
  title: 'in the title',
  message: 'in a message',
  agent: 'in the agent’s text',
  tool: 'in a tool step',
  answer: 'in an answer',
};

/** The hub's query limit (server/sessions/search.ts); longer queries are refused there too. */
const QUERY_MAX = 200;

export class SearchBox {
  readonly el: HTMLElement;
  readonly #input: HTMLInputElement;
  readonly #results = el('ul', { class: 'search-results', attrs: { 'data-testid': 'search-results', 'aria-live': 'polite' } });
  readonly #note = el('p', { class: 'muted small', attrs: { 'data-testid': 'search-note', hidden: 'hidden' } });
  #asked = 0;

  constructor(private readonly ctx: AppContext) {
    this.#input = el('input', { attrs: { type: 'search', placeholder: 'Search titles and transcripts', 'aria-label': 'Search sessions', maxlength: String(QUERY_MAX), 'data-testid': 'search-input' } });
    const form = el(
      'form',
      {
        class: 'search-form',
        attrs: { role: 'search' },
        on: {
          submit: (e) => {
            e.preventDefault();
            void this.#search(this.#input.value.trim());
          },
        },
      },
      this.#input,
      el('button', { attrs: { type: 'submit', 'data-testid': 'search' }, text: 'Search' }),
    );
    this.el = el('section', { class: 'search' }, form, this.#note, this.#results);
    const q = new URLSearchParams(location.search).get('q');
    if (q) {
      this.#input.value = q;
      void this.#search(q);
    }
  }

  async #search(query: string): Promise<void> {
    const asked = ++this.#asked;
    this.#remember(query);
    if (query === '') {
      replaceChildren(this.#results);
      this.#note.hidden = true;
      return;
    }
    try {
      const res = await apiGet(this.ctx, `/v2/search?${new URLSearchParams({ q: query })}`);
      const answer = (await res.json()) as { results: SearchResult[]; truncated: boolean };
      if (asked !== this.#asked) return;
      replaceChildren(this.#results, ...answer.results.map((r) => this.#hit(r)));
      this.#say(answer.results.length === 0 ? `Nothing found for “${query}”.` : answer.truncated ? `The first ${answer.results.length} matches; narrow the search to see others.` : undefined);
    } catch (err) {
      if (asked !== this.#asked) return;
      replaceChildren(this.#results);
      this.#say(`Search failed: ${err instanceof ApiError ? err.message : (err as Error).message}`);
    }
  }

  #say(text: string | undefined): void {
    this.#note.textContent = text ?? '';
    this.#note.hidden = text === undefined;
  }

  #hit(r: SearchResult): HTMLElement {
    const href = `/s/${encodeURIComponent(sessionIdOf(r.session))}?chat=${encodeURIComponent(r.chat)}${r.turnId ? `#turn=${encodeURIComponent(r.turnId)}` : ''}`;
    const { start, length } = r.match;
    return el(
      'li',
      { class: 'card search-hit', attrs: { 'data-testid': 'search-hit', 'data-hit-session': r.session, 'data-hit-turn': r.turnId } },
      el('a', { attrs: { href, 'data-route': '' } }, el('strong', { text: displayTitle(r.sessionTitle) }), r.chatTitle && r.field !== 'title' ? ` · ${r.chatTitle}` : ''),
      el('span', { class: 'muted small', text: ` ${FIELD_WORDS[r.field] ?? ''}` }),
      el('span', { class: 'snippet small' }, r.snippet.slice(0, start), el('mark', { text: r.snippet.slice(start, start + length) }), r.snippet.slice(start + length)),
    );
  }

  /** Keeps the query in the address (replacing the entry), so back from a result returns to it. */
  #remember(query: string): void {
    const params = new URLSearchParams(location.search);
    if (query) params.set('q', query);
    else params.delete('q');
    const search = params.toString();
    history.replaceState(history.state, '', location.pathname + (search ? `?${search}` : '') + location.hash);
  }
}
