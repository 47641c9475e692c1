/**
 * The dashboard's filters: mine (sessions I created), needs attention (input or error), archived
 * (only archived sessions; without it archived ones are left out) and by agent. They are kept in
 * the address (`/?mine=1&attention=1&archived=1&agent=demo`), so a reload, the back button or a
 * link shared with a teammate shows the same list.
 */
import type { SessionSummary } from '../shared/protocol/state.js';
import { el, replaceChildren } from './dom.js';
import { isArchived, statusLabel } from './format.js';

type Summary = SessionSummary & { inputNeededCount?: number };

/** Who created a session, as the hub's root summary says (`_meta["hub/owner"]`). */
export function ownerOf(s: Summary): string | undefined {
  const owner = (s._meta as Record<string, unknown> | undefined)?.['hub/owner'];
  return typeof owner === 'string' ? owner : undefined;
}

export function needsAttention(s: Summary): boolean {
  const label = statusLabel(s.status);
  return label === 'Needs input' || label === 'Error' || (s.inputNeededCount ?? 0) > 0;
}

export class DashboardFilters {
  readonly el: HTMLElement;
  readonly #mine: HTMLInputElement;
  readonly #attention: HTMLInputElement;
  readonly #archived: HTMLInputElement;
  readonly #agent = el('select', { attrs: { 'aria-label': 'Agent', 'data-testid': 'filter-agent' } });
  #agents: string[] = [];

  constructor(
    /** The signed-in user as the hub records owners. */
    private readonly me: string,
    private readonly changed: () => void,
  ) {
    const params = new URLSearchParams(location.search);
    const box = (testid: string, key: string): HTMLInputElement => el('input', { attrs: { type: 'checkbox', 'data-testid': testid, checked: params.get(key) === '1' ? 'checked' : undefined }, on: { change: () => this.#apply() } });
    this.#mine = box('filter-mine', 'mine');
    this.#attention = box('filter-needs-input', 'attention');
    this.#archived = box('filter-archived', 'archived');
    this.#agent.addEventListener('change', () => this.#apply());
    this.#setAgentOptions(params.get('agent') ?? '');
    this.el = el(
      'div',
      { class: 'dash-filters', attrs: { 'data-testid': 'filters' } },
      el('label', { class: 'filter' }, this.#mine, ' Mine'),
      el('label', { class: 'filter' }, this.#attention, ' Only sessions that need attention (input or error)'),
      el('label', { class: 'filter' }, this.#archived, ' Archived'),
      this.#agent,
    );
  }

  /** Offers every agent the listed sessions use (plus the chosen one, so a link's choice stays). */
  setAgents(providers: Iterable<string>): void {
    const next = [...new Set(providers)].sort();
    if (next.join('\n') === this.#agents.join('\n')) return;
    this.#agents = next;
    this.#setAgentOptions(this.#agent.value);
  }

  get archivedView(): boolean {
    return this.#archived.checked;
  }

  get attentionOnly(): boolean {
    return this.#attention.checked;
  }

  /** True when any filter narrows the default view (non-archived, every agent). */
  get narrowing(): boolean {
    return this.#mine.checked || this.#attention.checked || this.#archived.checked || this.#agent.value !== '';
  }

  matches(s: Summary): boolean {
    if (isArchived(s.status) !== this.#archived.checked) return false;
    if (this.#mine.checked && ownerOf(s) !== this.me) return false;
    if (this.#attention.checked && !needsAttention(s)) return false;
    return this.#agent.value === '' || s.provider === this.#agent.value;
  }

  #setAgentOptions(chosen: string): void {
    const agents = chosen && !this.#agents.includes(chosen) ? [...this.#agents, chosen] : this.#agents;
    replaceChildren(this.#agent, el('option', { attrs: { value: '' }, text: 'All agents' }), ...agents.map((a) => el('option', { attrs: { value: a }, text: `Agent: ${a}` })));
    this.#agent.value = chosen;
  }

  /** Writes the filters into the address (replacing the entry: filtering is not navigation) and re-renders. */
  #apply(): void {
    const params = new URLSearchParams(location.search);
    const set = (key: string, on: boolean): void => (on ? params.set(key, '1') : params.delete(key));
    set('mine', this.#mine.checked);
    set('attention', this.#attention.checked);
    set('archived', this.#archived.checked);
    if (this.#agent.value) params.set('agent', this.#agent.value);
    else params.delete('agent');
    const query = params.toString();
    history.replaceState(history.state, '', location.pathname + (query ? `?${query}` : '') + location.hash);
    this.changed();
  }
}
