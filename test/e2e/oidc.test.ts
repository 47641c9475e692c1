/**
 * Sign-in with OpenID Connect in the browser (issue 30): real headless Chromium, a real hub on
 * port 0 serving dist/app, and a real OpenID provider in process (`oidc-provider`, its own login
 * and consent pages). Alice signs in through the provider, answers a question, and signs out
 * (the app is signed out and the session cookie is gone, at the provider too); a viewer's role
 * claim makes the app read-only and the hub refuses its writes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { tokenAuthenticator } from '../../server/auth/auth.js';
import { OidcAuth } from '../../server/auth/oidc/oidc-auth.js';
import { silentLogger } from '../../server/log.js';
import { CLIENT_ID, CLIENT_SECRET, TestIdp } from '../helpers/oidc-provider.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { AUTH_FILE, startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { CHROMIUM, CHROMIUM_ARGS, ensureAppBuilt, sessionPath } from './support.js';

const T = { timeout: 15_000 };

describe('browser app: sign-in with the identity provider', () => {
  let idp: TestIdp;
  let hub: TestServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const clients: RpcClient[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    await ensureAppBuilt();
    idp = await TestIdp.listen();
    const signIn = new OidcAuth({ base: tokenAuthenticator(AUTH_FILE), logger: silentLogger, options: { issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, defaultTenant: 'acme' } });
    hub = await startTestServer({ auth: signIn.authenticator, signIn, staticDir: 'dist/app' });
    await idp.configure({ hubUrl: hub.url, accounts: { alice: { tenant: 'acme', role: 'user' }, olga: { tenant: 'acme', role: 'viewer' } } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 120_000);

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await Promise.all(clients.map((c) => c.close()));
    await hub?.stop();
    await idp?.stop();
  });

  /** Opens `path` signed out, then signs in as `login` through the provider's login and consent pages. */
  async function signInAs(login: string, path: string): Promise<{ page: Page; context: BrowserContext }> {
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(`${hub.url}${path}`);
    await page.locator('[data-testid=oidc-sign-in]').click(T);
    // The provider's own pages: the login form, then the consent form.
    await page.waitForURL((url) => url.href.startsWith(idp.issuer), T);
    await page.locator('input[name=login]').fill(login);
    await page.locator('input[name=password]').fill('any password');
    await page.locator('button[type=submit]').click();
    await page.locator('button[type=submit]', { hasText: 'Continue' }).click(T);
    await page.waitForURL((url) => url.href.startsWith(hub.url) && url.pathname === path, T);
    await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
    return { page, context };
  }

  async function questionSession(title: string): Promise<{ setup: RpcClient; session: string; chat: string }> {
    const setup = await RpcClient.open(hub.wsUrl, { token: await idp.mintAccessToken('alice') });
    clients.push(setup);
    const { session, chat } = await setup.createSession(title);
    await setup.subscribe(chat);
    const request = { id: 'req-oidc', message: 'Which **branch** should I release from?', questions: [{ id: 'branch', kind: 'text', title: 'Branch', message: 'Branch name?', required: true }] };
    await startScriptTurn(setup, chat, [{ ask: request }, { say: 'Releasing.' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    return { setup, session, chat };
  }

  it('alice signs in through the provider, answers a question, and signs out', async () => {
    const { setup, session } = await questionSession('Release from which branch?');
    const { page, context } = await signInAs('alice', sessionPath(session));
    await expect(page.locator('[data-testid=me]').textContent()).resolves.toBe('alice · user');
    const cookie = (await context.cookies(hub.url)).find((c) => c.name === 'ahp_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', secure: false });
    // The page never holds the provider's tokens: nothing in storage, the cookie is out of reach of scripts.
    await expect(page.evaluate<[string, number]>('[document.cookie, localStorage.length]')).resolves.toEqual(['', 0]);

    const form = page.locator('.input-request:not(.resolved)[data-request="req-oidc"]');
    await form.locator('[data-question=branch] textarea, [data-question=branch] input').first().fill('release/1.4');
    await form.locator('[data-response=accept]').click();
    const done = await setup.waitForEnvelope((e) => e.action.type === 'chat/inputCompleted', 'the answer');
    expect(done.rejectionReason).toBeUndefined();
    expect(done.action).toMatchObject({ requestId: 'req-oidc', _meta: { 'hub/answeredBy': expect.objectContaining({ user: 'alice' }) } });
    await page.locator('.input-request.resolved[data-request="req-oidc"][data-response=accept]').waitFor(T);

    // Sign out: the hub's session ends, then the provider's own sign-out page, then back signed out.
    await page.locator('[data-testid=sign-out]').click();
    await page.waitForURL((url) => url.href.startsWith(idp.issuer), T);
    await page.locator('button[name=logout][value=yes]').click(T);
    await page.waitForURL((url) => url.href === `${hub.url}/`, T);
    await page.locator('[data-testid=oidc-sign-in]').waitFor(T);
    await expect(page.locator('[data-testid=me]').count()).resolves.toBe(0);
    expect((await context.cookies(hub.url)).find((c) => c.name === 'ahp_session')).toBeUndefined();
    // The old cookie value no longer signs anyone in.
    const replay = await fetch(`${hub.url}/v2/search?q=release`, { headers: { cookie: `ahp_session=${cookie!.value}` } });
    expect(replay.status).toBe(401);
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it("a role claim of viewer makes the app read-only, and the hub refuses the viewer's writes", async () => {
    const { session } = await questionSession('Viewer watches');
    const { page } = await signInAs('olga', sessionPath(session));
    await expect(page.locator('[data-testid=me]').textContent()).resolves.toBe('olga · viewer');
    await page.locator('div[data-testid=read-only]').waitFor(T);
    const form = page.locator('.input-request:not(.resolved)[data-request="req-oidc"]');
    await form.waitFor(T);
    await expect(form.locator('[data-response=accept]').isDisabled()).resolves.toBe(true);
    await expect(page.locator('[data-testid=send]').isDisabled()).resolves.toBe(true);
    // A dispatch sent anyway, with the page's own cookie session, is refused by the hub.
    const refused = await page.evaluate(
      async (id) => {
        const res = await fetch(`/v2/sessions/${encodeURIComponent(id)}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: [{ type: 'text', text: 'hi' }] }) });
        return { status: res.status, body: (await res.json()) as { code?: string; message?: string } };
      },
      session.replace('ahp-session:/', ''),
    );
    expect(refused).toMatchObject({ status: 403, body: { code: 'permission_denied' } });
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it('a role lowered at the provider reaches the open app at the next refresh: it becomes read-only', async () => {
    // A second hub and provider whose sessions refresh every few seconds (their 300 s tokens always count as due).
    const otherIdp = await TestIdp.listen();
    try {
      const signInFast = new OidcAuth({ logger: silentLogger, refreshMarginMs: 299_000, options: { issuer: otherIdp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, defaultTenant: 'acme' } });
      const hub2 = await startTestServer({ auth: signInFast.authenticator, signIn: signInFast, staticDir: 'dist/app' });
      try {
        await otherIdp.configure({ hubUrl: hub2.url, accounts: { pia: { tenant: 'acme', role: 'user' } } });
        const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
        contexts.push(context);
        const page = await context.newPage();
        page.on('pageerror', (err) => pageErrors.push(err.message));
        await page.goto(`${hub2.url}/`);
        await page.locator('[data-testid=oidc-sign-in]').click(T);
        await page.locator('input[name=login]').fill('pia');
        await page.locator('input[name=password]').fill('any password');
        await page.locator('button[type=submit]').click();
        await page.locator('button[type=submit]', { hasText: 'Continue' }).click(T);
        await page.locator('[data-testid=me]', { hasText: 'pia · user' }).waitFor(T);
        await expect(page.locator('div[data-testid=read-only]').count()).resolves.toBe(0);
        otherIdp.setAccount('pia', { tenant: 'acme', role: 'viewer' });
        await page.locator('[data-testid=me]', { hasText: 'pia · viewer' }).waitFor({ timeout: 20_000 });
        await page.locator('div[data-testid=read-only]').waitFor(T);
        expect(pageErrors).toEqual([]);
      } finally {
        await hub2.stop();
      }
    } finally {
      await otherIdp.stop();
    }
  }, 60_000);
});
