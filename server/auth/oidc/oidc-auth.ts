/**
 * Sign-in with OpenID Connect beside the token file (docs/sign-in.md). Two ways in:
 *
 * - a bearer JWT (the provider's access token) on WebSocket, HTTP, SSE and the CLI, verified
 *   asynchronously at the connection or request edge (`resolve`), then handed inward as a
 *   principal like a token file's;
 * - the app's session cookie, set by the sign-in routes (`sign-in-routes.ts`) after the
 *   authorization code flow, whose access token is refreshed before it expires.
 *
 * `authenticator` is the synchronous `Authenticator` the rest of the hub uses: the token file's
 * tokens first (unchanged), then bearer JWTs this edge has verified already, until their expiry
 * (a bounded cache), so routers and the token-reload sweep keep working as they did.
 */
import { createHash } from 'node:crypto';
import * as oidc from 'openid-client';
import type { ErrorKind } from '../../../shared/protocol/error-kinds.js';
import type { Authenticator, Principal } from '../auth.js';
import type { Logger } from '../../log.js';
import { errorFields } from '../../log.js';
import { SessionStore, type SignInSession } from './sessions.js';
import { looksLikeJwt, oidcTenants, TokenVerifier, type OidcOptions } from './token-verifier.js';

export type EdgeAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'ok'; readonly principal: Principal; readonly expiresAt?: number | undefined; readonly session?: string | undefined }
  | { readonly kind: 'refused'; readonly error: ErrorKind; readonly message: string };

/** Verified bearer JWTs kept for the synchronous path; the oldest leave first. */
const MAX_VERIFIED_TOKENS = 10_000;
/** A session's access token is refreshed when it has less than this left. */
export const REFRESH_MARGIN_MS = 30_000;
/** How often sessions with open sockets are checked for a refresh. */
const SWEEP_MS = 5_000;

export const SESSION_COOKIE = 'ahp_session';

export interface OidcAuthInit {
  readonly options: OidcOptions;
  /** The token file's authenticator, kept as it is; undefined when only OpenID users sign in. */
  readonly base?: Authenticator | undefined;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Refresh a session's access token when it has less than this left (default 30 s; tests shorten it). */
  readonly refreshMarginMs?: number;
}

export class OidcAuth {
  readonly verifier: TokenVerifier;
  readonly sessions: SessionStore;
  readonly authenticator: Authenticator;
  readonly #verified = new Map<string, { principal: Principal; expiresAt: number }>();
  readonly #seenUsers = new Map<string, true>();
  readonly #ended = new Set<(session: SignInSession, reason: string) => void>();
  readonly #now: () => number;
  readonly #logger: Logger;
  readonly #sweep: NodeJS.Timeout;
  readonly #margin: number;

  constructor(init: OidcAuthInit) {
    this.verifier = new TokenVerifier(init.options);
    this.#now = init.now ?? Date.now;
    this.#logger = init.logger;
    this.sessions = new SessionStore(this.#now, (s) => this.#emitEnded(s, 'your sign-in session ended: sign in again'));
    const base = init.base;
    const tenants = [...new Set([...(base?.tenants ?? []), ...oidcTenants(init.options)])];
    this.authenticator = {
      enforced: true,
      tenants,
      authenticate: (token) => base?.authenticate(token) ?? this.#cached(token),
      knowsUser: (tenant, user) => (base?.knowsUser?.(tenant, user) ?? false) || this.#seenUsers.has(JSON.stringify([tenant, user])),
    };
    this.#margin = init.refreshMarginMs ?? REFRESH_MARGIN_MS;
    this.#sweep = setInterval(() => void this.#refreshDue(), Math.max(100, Math.min(SWEEP_MS, this.#margin / 2)));
    this.#sweep.unref();
  }

  get options(): OidcOptions {
    return this.verifier.options;
  }

  /** Told when a session ends or its principal changes (its sockets must close). */
  onSessionEnded(fn: (session: SignInSession, reason: string) => void): void {
    this.#ended.add(fn);
  }

  close(): void {
    clearInterval(this.#sweep);
  }

  /**
   * Who a request or upgrade is, when the token file did not say: a bearer JWT, else the session
   * cookie (only from this hub's own pages: a cross-origin `Origin` never rides on the cookie).
   */
  async resolve(token: string | undefined, headers: { cookie?: string | undefined; origin?: string | undefined; host?: string | undefined }): Promise<EdgeAuth> {
    if (token !== undefined) {
      if (!looksLikeJwt(token)) return { kind: 'none' };
      return this.verifyBearer(token);
    }
    const id = cookieValue(headers.cookie, SESSION_COOKIE);
    if (id === undefined || !sameOrigin(headers.origin, headers.host)) return { kind: 'none' };
    const session = this.sessions.get(id);
    if (!session) return { kind: 'none' };
    session.lastUsedAt = this.#now();
    if (session.expiresAt - this.#now() < this.#margin && !(await this.refresh(session))) {
      return { kind: 'refused', error: 'token_expired', message: 'your sign-in has expired: sign in again' };
    }
    return { kind: 'ok', principal: session.principal, session: session.id };
  }

  async verifyBearer(token: string): Promise<EdgeAuth> {
    const key = digest(token);
    const known = this.#verified.get(key);
    if (known && known.expiresAt > this.#now()) return { kind: 'ok', principal: known.principal, expiresAt: known.expiresAt };
    const verified = await this.verifier.verify(token);
    if (!verified.ok) return { kind: 'refused', error: verified.kind, message: verified.message };
    if (verified.expiresAt <= this.#now()) return { kind: 'refused', error: 'token_expired', message: 'the access token has expired: get a new one from the identity provider (or sign in again)' };
    this.#remember(key, verified.principal, verified.expiresAt);
    return { kind: 'ok', principal: verified.principal, expiresAt: verified.expiresAt };
  }

  /** Refreshes a session's access token; false (and the session ended) when it cannot be. */
  refresh(session: SignInSession): Promise<boolean> {
    session.refreshing ??= this.#refresh(session).finally(() => (session.refreshing = undefined));
    return session.refreshing;
  }

  async #refresh(session: SignInSession): Promise<boolean> {
    if (!session.refreshToken) {
      if (session.expiresAt <= this.#now()) this.sessions.end(session.id);
      return session.expiresAt > this.#now();
    }
    try {
      const config = await this.verifier.configuration();
      const resource = this.options.resource;
      const tokens = await oidc.refreshTokenGrant(config, session.refreshToken, resource ? { resource } : undefined);
      const verified = await this.verifier.verify(tokens.access_token);
      if (!verified.ok) throw new Error(`the refreshed access token was refused: ${verified.message}`);
      const before = session.principal;
      session.accessToken = tokens.access_token;
      session.refreshToken = tokens.refresh_token ?? session.refreshToken;
      session.idToken = tokens.id_token ?? session.idToken;
      session.expiresAt = verified.expiresAt;
      session.principal = verified.principal;
      this.#seen(verified.principal);
      if (before.role !== verified.principal.role || before.tenant !== verified.principal.tenant) this.#emitEnded(session, 'your role changed at the identity provider: reconnect');
      return true;
    } catch (err) {
      this.#logger.info('a sign-in session could not be refreshed and ends', { user: session.principal.user, ...errorFields(err) });
      this.sessions.end(session.id);
      return false;
    }
  }

  /** A new session after a code exchange (the sign-in routes call it). */
  startSession(tokens: { access_token: string; refresh_token?: string | undefined; id_token?: string | undefined }, principal: Principal, expiresAt: number): SignInSession {
    this.#seen(principal);
    return this.sessions.create({ principal, accessToken: tokens.access_token, refreshToken: tokens.refresh_token, idToken: tokens.id_token, expiresAt });
  }

  socketOpened(session: string): void {
    const s = this.sessions.get(session);
    if (s) s.sockets++;
  }

  socketClosed(session: string): void {
    const s = this.sessions.get(session);
    if (s) {
      s.sockets = Math.max(0, s.sockets - 1);
      s.lastUsedAt = this.#now();
    }
  }

  async #refreshDue(): Promise<void> {
    for (const session of this.sessions.sweep(this.#now() + this.#margin)) {
      // Sessions without a socket refresh on their next request; these keep a live page's sockets open.
      if (session.sockets > 0) await this.refresh(session);
    }
  }

  #cached(token: string | undefined): Principal | undefined {
    if (!looksLikeJwt(token)) return undefined;
    const known = this.#verified.get(digest(token));
    return known && known.expiresAt > this.#now() ? known.principal : undefined;
  }

  #remember(key: string, principal: Principal, expiresAt: number): void {
    if (this.#verified.size >= MAX_VERIFIED_TOKENS) {
      const at = this.#now();
      for (const [k, v] of this.#verified) if (v.expiresAt <= at) this.#verified.delete(k);
      while (this.#verified.size >= MAX_VERIFIED_TOKENS) this.#verified.delete(this.#verified.keys().next().value!);
    }
    this.#verified.set(key, { principal, expiresAt });
    this.#seen(principal);
  }

  /** Users seen signed in, so a token reload does not end their agents' turns as if their token were gone. */
  #seen(principal: Principal): void {
    const key = JSON.stringify([principal.tenant, principal.user]);
    this.#seenUsers.delete(key);
    this.#seenUsers.set(key, true);
    if (this.#seenUsers.size > MAX_VERIFIED_TOKENS) this.#seenUsers.delete(this.#seenUsers.keys().next().value!);
  }

  #emitEnded(session: SignInSession, reason: string): void {
    for (const fn of this.#ended) fn(session, reason);
  }
}

function digest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64');
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** No Origin (not a browser's cross-site request) or the same host as the request. */
function sameOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}
