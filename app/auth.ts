/**
 * Where the browser's token comes from: `?token=` in the link (then removed from the address bar
 * so it does not linger in history or screenshots), else the one remembered from before, else a
 * sign-in form. Without a token the app tries once anyway (a hub in dev mode needs none).
 */
import { AhpAuthError } from '../shared/client/errors.js';
import { el } from './dom.js';

const KEY = 'ahp-hub-token';

export function takeToken(): string | undefined {
  const url = new URL(location.href);
  const fromLink = url.searchParams.get('token');
  if (fromLink) {
    url.searchParams.delete('token');
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
    try {
      localStorage.setItem(KEY, fromLink);
    } catch {
      // storage disabled: the token lives for this page only
    }
    return fromLink;
  }
  try {
    return localStorage.getItem(KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

export function forgetToken(): void {
  try {
    localStorage.removeItem(KEY);
  } catch {
    // nothing stored
  }
}

export function rememberToken(token: string): void {
  try {
    localStorage.setItem(KEY, token);
  } catch {
    // storage disabled
  }
}

/**
 * What the sign-in page says after a failed connection: nothing on a first visit without a
 * token, "missing or invalid" when the hub refused the token (the SDK's AhpAuthError), and that
 * the hub cannot be reached otherwise — each with what to do next.
 */
export function signInProblem(err: unknown, hadToken: boolean): string | undefined {
  if (err instanceof AhpAuthError) return hadToken ? 'That token is missing or invalid. Paste the access token you were given (or ask whoever runs the hub for one) and sign in again.' : undefined;
  return 'The hub cannot be reached right now. Check that it is running and that this address is right, then sign in again.';
}

/** Renders the sign-in form (with the identity provider's button above it, when the hub offers one); resolves with the token the user entered. */
export function signInForm(root: HTMLElement, problem?: string, provider?: HTMLElement): Promise<string> {
  return new Promise((resolve) => {
    const input = el('input', { attrs: { type: 'password', name: 'token', autocomplete: 'current-password', required: 'required', placeholder: 'access token', 'aria-label': 'Access token' } });
    const form = el(
      'form',
      {
        class: 'signin card',
        on: {
          submit: (e) => {
            e.preventDefault();
            const token = input.value.trim();
            if (!token) return;
            rememberToken(token);
            resolve(token);
          },
        },
      },
      el('h1', { text: 'Sign in to the hub' }),
      provider ?? null,
      el('p', { class: 'muted', text: 'Paste the access token you were given, or open the link that carries it (…/?token=…).' }),
      problem ? el('p', { class: 'error', attrs: { role: 'alert' }, text: problem }) : null,
      el('label', {}, 'Token ', input),
      el('button', { attrs: { type: 'submit' }, text: 'Sign in' }),
    );
    root.replaceChildren(form);
    input.focus();
  });
}

/** A per-tab name in dev mode, so presence can be tried with several local tabs. */
export function devTabName(): string {
  const KEY = 'ahp-hub-dev-name';
  try {
    const known = sessionStorage.getItem(KEY);
    if (known) return known;
  } catch {
    // storage disabled: a fresh name per load
  }
  const animals = ['otter', 'heron', 'lynx', 'fox', 'wren', 'panda', 'koala', 'owl', 'ibex', 'seal', 'crane', 'hare'];
  const name = `dev-${animals[Math.floor(Math.random() * animals.length)]}-${crypto.randomUUID().slice(0, 4)}`;
  try {
    sessionStorage.setItem(KEY, name);
  } catch {
    // kept for this page only
  }
  return name;
}
