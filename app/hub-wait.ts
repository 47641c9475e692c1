/**
 * Starting while the hub is down (the installed app opened offline, or a reload during a hub
 * restart): instead of the sign-in form, the page shows the header's "Reconnecting…" state and
 * the banner the app shows for a lost connection, and tries again with backoff (250 ms doubling
 * to 5 s, at once when the browser comes back online) until the hub answers. A refused token or
 * a protocol mismatch is not retried: it reaches the caller, which asks to sign in.
 */
import { AhpAuthError, AhpProtocolError } from '../shared/client/errors.js';
import { el } from './dom.js';

const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;

function retryable(err: unknown): boolean {
  return !(err instanceof AhpAuthError) && !(err instanceof AhpProtocolError);
}

/** Resolves with the first successful `attempt()`; shows the reconnecting page while it fails. */
export async function connectOrWait<T>(root: HTMLElement, attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    if (!retryable(err)) throw err;
  }
  root.replaceChildren(waitingPage());
  let delay = FIRST_DELAY_MS;
  for (;;) {
    await pause(delay);
    delay = Math.min(delay * 2, MAX_DELAY_MS);
    try {
      return await attempt();
    } catch (err) {
      if (!retryable(err)) throw err;
    }
  }
}

/** Waits `ms`, or less when the browser reports it is back online. */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      window.clearTimeout(timer);
      window.removeEventListener('online', done);
      resolve();
    };
    const timer = window.setTimeout(done, ms);
    window.addEventListener('online', done);
  });
}

/** The same header status and banner as a connection lost later (main.ts), before any data. */
function waitingPage(): DocumentFragment {
  const page = document.createDocumentFragment();
  page.append(
    el(
      'header',
      { class: 'topbar' },
      el('a', { class: 'brand', attrs: { href: '/' }, text: 'AHP Hub' }),
      el('span', { class: 'spacer' }),
      el('span', { class: 'conn conn-reconnecting', attrs: { 'data-testid': 'connection', role: 'status', 'aria-live': 'polite' }, text: 'Reconnecting…' }),
    ),
    el('div', {
      class: 'banner banner-warn',
      attrs: { role: 'alert', 'data-testid': 'offline-start' },
      text: 'Connection to the hub lost — reconnecting automatically. The app opens as soon as the hub answers again.',
    }),
    el('main', { attrs: { id: 'view' } }, el('p', { class: 'boot muted', text: 'Waiting for the hub…' })),
  );
  return page;
}
