/**
 * The app's sign-in routes (docs/sign-in.md), public and on the server's own router:
 *
 * - `GET /auth/login?return=/path` → the provider's authorization endpoint (code flow + PKCE,
 *   `state` bound to this browser by a short-lived HttpOnly cookie);
 * - `GET /auth/callback` → the code exchanged (openid-client), the access token verified like any
 *   bearer JWT, a session made, its id set in the `ahp_session` cookie, back to `return`;
 * - `POST /auth/logout` → the session ended and its cookie cleared; answers the provider's
 *   end-session URL (RP-initiated logout) when it has one, for the app to go to;
 * - `GET /auth/session` → who the cookie signs in (`{oidc: true, signedIn, user, tenant, role}`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as oidc from 'openid-client';
import { ProtocolError, redirect as redirectTo, sendJson, startOk, type HttpRouter } from '../../transport/http-router.js';
import type { Logger } from '../../log.js';
import { errorFields } from '../../log.js';
import { cookieValue, SESSION_COOKIE, type OidcAuth } from './oidc-auth.js';

const LOGIN_COOKIE = 'ahp_login';

export function registerSignInRoutes(router: HttpRouter, auth: OidcAuth, publicUrl: () => string, logger: Logger): void {
  const secure = (): boolean => publicUrl().startsWith('https:');
  const redirectUri = (): string => new URL('/auth/callback', publicUrl()).href;
  const cookie = (name: string, value: string, maxAgeS: number): string => `${name}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeS}${secure() ? '; Secure' : ''}`;
  const configuration = async (): Promise<oidc.Configuration> => {
    try {
      return await auth.verifier.configuration();
    } catch (err) {
      logger.warn('the identity provider cannot be reached', { issuer: auth.options.issuer, ...errorFields(err) });
      throw new ProtocolError('sign_in_failed', `the identity provider (${auth.options.issuer}) cannot be reached right now; try again later`);
    }
  };

  router.add(
    'GET',
    '/auth/login',
    async (_req, res, { url }) => {
      const config = await configuration();
      const codeVerifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      auth.sessions.addPending(state, { codeVerifier, nonce, returnTo: safeReturn(url.searchParams.get('return')), createdAt: Date.now() });
      const target = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri(),
        scope: auth.options.scope ?? 'openid profile offline_access',
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
        // offline_access needs consent to be asked for (OpenID Connect Core §11).
        prompt: 'consent',
        ...(auth.options.resource ? { resource: auth.options.resource } : {}),
      });
      redirect(res, target.href, [cookie(LOGIN_COOKIE, state, 600)]);
    },
    { public: true },
  );

  router.add(
    'GET',
    '/auth/callback',
    async (req, res, { url }) => {
      const state = url.searchParams.get('state') ?? '';
      const providerError = url.searchParams.get('error');
      if (providerError) throw new ProtocolError('sign_in_failed', `the identity provider did not sign you in (${providerError.slice(0, 100)}): go back to the hub and sign in again`);
      if (!state || cookieValue(req.headers.cookie, LOGIN_COOKIE) !== state) {
        throw new ProtocolError('sign_in_failed', 'this sign-in was not started in this browser (or took longer than 10 minutes): go back to the hub and sign in again');
      }
      const pending = auth.sessions.takePending(state);
      if (!pending) throw new ProtocolError('sign_in_failed', 'this sign-in has expired or was already used: go back to the hub and sign in again');
      const config = await configuration();
      let tokens: oidc.TokenEndpointResponse;
      try {
        const current = new URL(url.pathname + url.search, publicUrl());
        const resource = auth.options.resource;
        tokens = await oidc.authorizationCodeGrant(config, current, { pkceCodeVerifier: pending.codeVerifier, expectedState: state, expectedNonce: pending.nonce, idTokenExpected: true }, resource ? { resource } : undefined);
      } catch (err) {
        logger.warn('a sign-in code exchange failed', errorFields(err));
        throw new ProtocolError('sign_in_failed', 'the identity provider did not accept the sign-in (the code exchange failed): sign in again');
      }
      const verified = await auth.verifier.verify(tokens.access_token);
      if (!verified.ok) throw new ProtocolError(verified.kind, verified.message);
      const session = auth.startSession(tokens, verified.principal, verified.expiresAt);
      redirect(res, pending.returnTo, [cookie(SESSION_COOKIE, session.id, Math.floor(auth.sessions.limits.maxAgeMs / 1000)), cookie(LOGIN_COOKIE, '', 0)]);
    },
    { public: true },
  );

  router.add(
    'POST',
    '/auth/logout',
    async (req, res) => {
      const session = auth.sessions.end(cookieValue(req.headers.cookie, SESSION_COOKIE) ?? '');
      let endSessionUrl: string | undefined;
      if (session) {
        const config = await auth.verifier.configuration().catch(() => undefined);
        if (config?.serverMetadata().end_session_endpoint) {
          endSessionUrl = oidc.buildEndSessionUrl(config, { post_logout_redirect_uri: new URL('/', publicUrl()).href, ...(session.idToken ? { id_token_hint: session.idToken } : {}) }).href;
        }
      }
      const body = JSON.stringify({ signedOut: true, ...(endSessionUrl ? { endSessionUrl } : {}) });
      startOk(res, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'set-cookie': cookie(SESSION_COOKIE, '', 0), 'content-length': Buffer.byteLength(body) }).end(body);
    },
    { public: true },
  );

  router.add(
    'GET',
    '/auth/session',
    async (req: IncomingMessage, res: ServerResponse) => {
      const edge = await auth.resolve(undefined, { cookie: req.headers.cookie, origin: req.headers.origin, host: req.headers.host });
      if (edge.kind !== 'ok') return sendJson(res, { oidc: true, signedIn: false });
      sendJson(res, { oidc: true, signedIn: true, user: edge.principal.user, tenant: edge.principal.tenant, role: edge.principal.role });
    },
    { public: true },
  );
}

/** Only a path of this hub (never `//host` or a full URL): no open redirect. */
function safeReturn(value: string | null): string {
  return value?.startsWith('/') && !value.startsWith('//') && !value.includes('\\') ? value : '/';
}

function redirect(res: ServerResponse, location: string, cookies: string[]): void {
  redirectTo(res, location, { 'set-cookie': cookies, 'cache-control': 'no-store' });
}
