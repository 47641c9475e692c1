/**
 * The app's sign-in session (issue 30) against a real OpenID provider in process: signed in
 * through the provider's own login and consent forms (posted without a browser, as one would),
 * the session cookie authenticates WebSocket and HTTP; it is refreshed with the refresh token
 * before its short-lived access token expires (the socket stays open past the first token's
 * expiry); a role changed at the provider closes the socket at the next refresh and applies to
 * new requests; a user removed at the provider ends the session at the next refresh: its socket
 * closes and new requests are refused.
 */
import WebSocket from 'ws';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OidcAuth } from '../../server/auth/oidc/oidc-auth.js';
import { silentLogger } from '../../server/log.js';
import { TOKEN_EXPIRED_CLOSE_CODE } from '../../shared/protocol/close-codes.js';
import { CLIENT_ID, CLIENT_SECRET, signInWithFetch, TestIdp } from '../helpers/oidc-provider.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

/** Access tokens live 3 s; sessions refresh with 2 s left. */
const TTL_S = 3;

describe('sign-in sessions', () => {
  let idp: TestIdp;
  let signIn: OidcAuth;
  let hub: TestServer;
  const sockets: WebSocket[] = [];

  beforeEach(async () => {
    idp = await TestIdp.listen();
    signIn = new OidcAuth({ logger: silentLogger, refreshMarginMs: 2_000, options: { issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, defaultTenant: 'acme' } });
    hub = await startTestServer({ auth: signIn.authenticator, signIn });
    await idp.configure({ hubUrl: hub.url, accessTokenTtl: TTL_S, accounts: { alice: { role: 'user' } } });
  });

  afterEach(async () => {
    for (const s of sockets) s.terminate();
    await hub?.stop();
    await idp?.stop();
  });

  const me = async (cookie: string): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(`${hub.url}/auth/session`, { headers: { cookie } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const search = async (cookie: string): Promise<number> => (await fetch(`${hub.url}/v2/search?q=x`, { headers: { cookie } })).status;
  const openSocket = async (cookie: string): Promise<{ ws: WebSocket; closed: Promise<number> }> => {
    const ws = new WebSocket(hub.wsUrl, { headers: { cookie } });
    sockets.push(ws);
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return { ws, closed };
  };

  it('refreshes the access token before it expires: the socket stays open and requests keep working', async () => {
    const cookie = await signInWithFetch(hub.url, 'alice');
    expect(await me(cookie)).toMatchObject({ status: 200, body: { oidc: true, signedIn: true, user: 'alice', tenant: 'acme', role: 'user' } });
    const { ws } = await openSocket(cookie);
    const session = signIn.sessions.get(cookie.split('=')[1])!;
    const [firstToken, firstExpiry] = [session.accessToken, session.expiresAt];
    await waitFor(() => Date.now() > firstExpiry + 500 || undefined, { what: 'the first access token to expire', timeoutMs: 10_000 });
    expect(session.accessToken).not.toBe(firstToken);
    expect(session.expiresAt).toBeGreaterThan(firstExpiry);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    expect(await search(cookie)).toBe(200);
  }, 20_000);

  it('a role changed at the provider closes the socket at the next refresh and applies to new requests', async () => {
    const cookie = await signInWithFetch(hub.url, 'alice');
    const { closed } = await openSocket(cookie);
    idp.setAccount('alice', { role: 'viewer' });
    expect(await closed).toBe(TOKEN_EXPIRED_CLOSE_CODE);
    expect(await me(cookie)).toMatchObject({ body: { signedIn: true, role: 'viewer' } });
  }, 20_000);

  it('a user removed at the provider is signed out at the next refresh: socket closed, requests refused', async () => {
    const cookie = await signInWithFetch(hub.url, 'alice');
    const { closed } = await openSocket(cookie);
    expect(await search(cookie)).toBe(200);
    idp.setAccount('alice', undefined);
    expect(await closed).toBe(TOKEN_EXPIRED_CLOSE_CODE);
    expect(await search(cookie)).toBe(401);
    expect(await me(cookie)).toMatchObject({ body: { signedIn: false } });
  }, 20_000);

  it('refuses a session cookie sent from another origin, and a callback not started in this browser', async () => {
    const cookie = await signInWithFetch(hub.url, 'alice');
    const cross = await fetch(`${hub.url}/v2/search?q=x`, { headers: { cookie, origin: 'https://evil.example' } });
    expect(cross.status).toBe(401);
    const forged = await fetch(`${hub.url}/auth/callback?code=abc&state=xyz`, { redirect: 'manual' });
    expect([forged.status, ((await forged.json()) as { code?: string }).code]).toEqual([502, 'sign_in_failed']);
  }, 20_000);
});
