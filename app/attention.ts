/**
 * How many sessions need someone, for the whole app: the tab title reads "(n) need input · …"
 * on every page, and an optional browser notification says when a session starts waiting while
 * the tab is in the background (when this device has no Web Push: app/push-toggle.ts). Fed by `listSessions` and the root channel's notifications.
 */
import type { AhpClient } from '../shared/client/ahp-client.js';
import type { SessionSummary } from '../shared/protocol/state.js';
import { ROOT_URI } from '../shared/protocol/uris.js';
import { awaitsSomeone, displayTitle } from './format.js';

/** 'on': notify from this tab (below); 'push': this device gets Web Push instead (app/push-toggle.ts). */
export const NOTIFY_KEY = 'ahp-hub-notify';

export class Attention {
  readonly #waiting = new Map<string, string>();
  readonly #titles = new Map<string, string>();
  readonly #listeners = new Set<() => void>();
  #base = 'AHP Hub';

  constructor(private readonly client: AhpClient) {
    client.onNotification('root/sessionAdded', (p) => {
      const s = (p as { summary?: SessionSummary }).summary;
      if (s?.resource) this.#note(s.resource, s.status, s.title);
    });
    client.onNotification('root/sessionRemoved', (p) => {
      const session = (p as { session?: string }).session;
      if (session && this.#waiting.delete(session)) this.#changed();
    });
    client.onNotification('root/sessionSummaryChanged', (p) => {
      const { session, changes } = p as { session?: string; changes?: Partial<SessionSummary> };
      if (session && changes?.status !== undefined) this.#note(session, changes.status, changes.title ?? this.#titles.get(session));
      else if (session && changes?.title !== undefined) this.#titles.set(session, changes.title);
    });
    client.onConnectionState((state, previous) => {
      if (state === 'open' && previous !== 'open') void this.#load();
    });
    void client
      .subscribe(ROOT_URI)
      .catch(() => undefined)
      .then(() => this.#load());
  }

  /** Sessions that need input now (resource → title), most recent first. */
  get waiting(): ReadonlyMap<string, string> {
    return this.#waiting;
  }

  setBaseTitle(title: string): void {
    this.#base = title;
    this.#applyTitle();
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Tab notifications: on unless push delivers them (the header's switch, app/push-toggle.ts). */
  get notificationsOn(): boolean {
    return typeof Notification !== 'undefined' && Notification.permission === 'granted' && localStorage.getItem(NOTIFY_KEY) === 'on';
  }

  async #load(): Promise<void> {
    try {
      const page = await this.client.listSessions({ limit: 200 });
      this.#waiting.clear();
      for (const s of page.items) {
        this.#titles.set(s.resource, s.title);
        if (awaitsSomeone(s.status)) this.#waiting.set(s.resource, s.title);
      }
      this.#changed();
    } catch {
      // The title simply shows no count until the next reconnect.
    }
  }

  #note(session: string, status: number, title: string | undefined): void {
    if (title !== undefined) this.#titles.set(session, title);
    // An archived session is done with: it is not counted, however it ended.
    const needs = awaitsSomeone(status);
    if (needs === this.#waiting.has(session)) return;
    if (needs) {
      this.#waiting.set(session, title ?? '');
      if (this.notificationsOn && document.hidden) {
        try {
          new Notification('An agent needs your input', { body: displayTitle(title), tag: session });
        } catch {
          // notifications unavailable in this context
        }
      }
    } else this.#waiting.delete(session);
    this.#changed();
  }

  #changed(): void {
    this.#applyTitle();
    for (const l of [...this.#listeners]) l();
  }

  #applyTitle(): void {
    const n = this.#waiting.size;
    document.title = n > 0 ? `(${n}) need input · ${this.#base}` : this.#base;
  }
}
