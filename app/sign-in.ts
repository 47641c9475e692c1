/**
 * Sign-in with the team's identity provider (docs/sign-in.md), beside the token link: the hub
 * runs the OpenID Connect code flow itself and keeps the session in an HttpOnly cookie, so the
 * page never holds the provider's tokens. `GET /auth/session` says whether the hub offers it and
 * who the cookie signs in; a hub without it answers 404 (then only tokens sign in).
 */
import { el } from './dom.js';

export interface SignInStatus {
  /** The hub offers sign-in with an identity provider. */
  readonly oidc: boolean;
  /** This browser's cookie signs someone in. */
  readonly signedIn: boolean;
  readonly user?: string;
  readonly role?: string;
}

export async function signInStatus(): Promise<SignInStatus> {
  try {
    const res = await fetch('/auth/session', { headers: { accept: 'application/json' } });
    if (!res.ok) return { oidc: false, signedIn: false };
    const body = (await res.json()) as Partial<SignInStatus>;
    return { oidc: body.oidc === true, signedIn: body.signedIn === true, ...(typeof body.user === 'string' && { user: body.user }), ...(typeof body.role === 'string' && { role: body.role }) };
  } catch {
    return { oidc: false, signedIn: false };
  }
}

/** The "Sign in with your identity provider" block of the sign-in page; comes back to this page. */
export function providerSignIn(): HTMLElement {
  const back = location.pathname + location.search;
  return el(
    'div',
    { class: 'signin-provider' },
    el('a', { class: 'button', attrs: { href: `/auth/login?return=${encodeURIComponent(back)}`, 'data-testid': 'oidc-sign-in' }, text: 'Sign in' }),
    el('p', { class: 'muted', text: 'with your team’s identity provider — or paste an access token below.' }),
  );
}

/** Ends the hub's session (the cookie is cleared), then signs out at the provider when it offers that. */
export async function signOutSession(): Promise<void> {
  let next = '/';
  try {
    const res = await fetch('/auth/logout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const body = (await res.json()) as { endSessionUrl?: unknown };
    if (typeof body.endSessionUrl === 'string' && /^https?:\/\//.test(body.endSessionUrl)) next = body.endSessionUrl;
  } catch {
    // the hub is away: the page reloads signed out of nothing it can tell
  }
  location.href = next;
}
