/**
 * The installable app and its service worker (issue 30), in Debian's headless Chromium against a
 * real hub on port 0: the app registers `/sw.js`; the manifest parses and the page is installable
 * by the DevTools protocol's own checks (`Page.getAppManifest`, `Page.getInstallabilityErrors`,
 * in a persistent profile: an incognito one is never installable); hub payloads delivered with
 * `ServiceWorker.deliverPushMessage` show and withdraw notifications (read back with
 * `registration.getNotifications()`), and Approve sends the push's token to `/api/push/actions`;
 * with the hub stopped, a reload shows the app shell in its reconnecting state, which connects
 * once the hub is back; the "Notifications on this device" switch subscribes and unsubscribes,
 * says why when push is not available, and passes axe-core.
 *
 * What stands in for what is outside the machine: the browser's push service (Chromium's
 * `PushManager.subscribe` asks Google's FCM, which a test cannot reach) is replaced in the page
 * by a subscription object; the hub's push routes are served by the test's request handler
 * (`page.route`) where the hub of this branch has none.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, type BrowserContext, chromium, type Page, type Worker } from 'playwright-core';
import { startTestServer, TOKENS, type TestServer, tempDir } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { CHROMIUM, CHROMIUM_ARGS, ensureAppBuilt } from './support.js';

const T = { timeout: 15_000 };
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** A payload in the shape the hub pushes (docs/app.md, "Install and notifications"). */
function requestPush(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    v: 1,
    kind: 'request',
    tag: 'chat:ahp-chat:/s-release/main',
    title: 'Release notes: run deploy?',
    body: 'The agent wants to run deploy',
    url: '/s/s-release?chat=ahp-chat%3A%2Fs-release%2Fmain#input=tool-1',
    session: 'ahp-session:/s-release',
    chat: 'ahp-chat:/s-release/main',
    requestId: 'tool-1',
    requestKind: 'permission',
    tool: 'deploy',
    actions: [
      { action: 'approve', title: 'Approve' },
      { action: 'deny', title: 'Deny' },
    ],
    actionToken: 'push-action-token-1',
    ...over,
  };
}

interface Shown {
  title: string;
  body: string;
  tag: string;
  requireInteraction: boolean;
  actions: Array<{ action: string; title: string }>;
  data: unknown;
}

const NOTIFICATIONS = `navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((ns) => ns.map((n) => ({ title: n.title, body: n.body, tag: n.tag, requireInteraction: n.requireInteraction, actions: n.actions.map((a) => ({ action: a.action, title: a.title })), data: n.data })))`;

describe('installable app and service worker', () => {
  let server: TestServer;
  let profile: string;
  let context: BrowserContext;
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    await ensureAppBuilt();
    server = await startTestServer({ withAuth: true, staticDir: 'dist/app' });
    profile = mkdtempSync(join(tmpdir(), 'pwa-profile-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, viewport: { width: 1100, height: 900 } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await server?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  const watch = (page: Page): Page => {
    page.on('pageerror', (err) => pageErrors.push(err.message));
    return page;
  };

  /** Opens the app signed in as alice and waits until its service worker controls the page. */
  async function openControlled(ctx: BrowserContext, origin: string): Promise<Page> {
    const page = watch(await ctx.newPage());
    await page.goto(`${origin}/?token=${TOKENS.alice}`);
    await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
    // Polled from here: the app's CSP (no 'unsafe-eval') refuses waitForFunction's string.
    await waitFor(() => page.evaluate<boolean>('navigator.serviceWorker.controller !== null'), { what: 'the page controlled by the service worker', timeoutMs: 15_000 });
    return page;
  }

  async function worker(ctx: BrowserContext): Promise<Worker> {
    return waitFor(() => ctx.serviceWorkers().find((w) => w.url().endsWith('/sw.js')), { what: 'the service worker', timeoutMs: 15_000 });
  }

  it('registers its service worker and is installable (DevTools protocol)', async () => {
    const page = await openControlled(context, server.url);
    const scope = await page.evaluate<string>('navigator.serviceWorker.ready.then((r) => r.scope)');
    expect(scope).toBe(`${server.url}/`);
    const cdp = await context.newCDPSession(page);
    const manifest = (await cdp.send('Page.getAppManifest')) as unknown as { url: string; errors: unknown[]; manifest?: { name?: string; display?: string; startUrl?: string } };
    expect(manifest.url).toBe(`${server.url}/manifest.webmanifest`);
    expect(manifest.errors).toEqual([]);
    expect(manifest.manifest).toMatchObject({ name: 'AHP Hub', display: 'kStandalone', startUrl: `${server.url}/` });
    const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
    expect(installabilityErrors).toEqual([]);

    // The worker's script may control the whole origin and is revalidated on every load; the
    // manifest has its own type.
    const sw = await fetch(`${server.url}/sw.js`);
    expect(sw.headers.get('service-worker-allowed')).toBe('/');
    expect(sw.headers.get('cache-control')).toBe('no-cache');
    expect((await fetch(`${server.url}/manifest.webmanifest`)).headers.get('content-type')).toBe('application/manifest+json; charset=utf-8');

    // One versioned cache, holding the shell and nothing of the API.
    const cached = await page.evaluate<Record<string, string[]>>(
      '(async () => { const out = {}; for (const k of await caches.keys()) out[k] = (await (await caches.open(k)).keys()).map((r) => new URL(r.url).pathname).sort(); return out; })()',
    );
    const names = Object.keys(cached);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(/^ahp-hub-shell-[0-9a-f]{16}$/);
    expect(cached[names[0]!]).toEqual(expect.arrayContaining(['/index.html', '/app.js', '/app.css', '/theme-boot.js', '/manifest.webmanifest', '/icon-192.png', '/icon-512.png']));
    expect(cached[names[0]!]!.filter((p) => p.startsWith('/api') || p.startsWith('/v2') || p === '/ahp')).toEqual([]);
    await page.close();
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it('a request push shows a notification with its actions; a resolved push with its tag closes it', async () => {
    await context.grantPermissions(['notifications'], { origin: server.url });
    const page = await openControlled(context, server.url);
    const cdp = await context.newCDPSession(page);
    const registrations: Array<{ registrationId: string; scopeURL: string; isDeleted: boolean }> = [];
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations));
    await cdp.send('ServiceWorker.enable');
    const registrationId = await waitFor(() => registrations.find((r) => r.scopeURL === `${server.url}/` && !r.isDeleted)?.registrationId, { what: 'the registration id' });
    const push = (payload: unknown) => cdp.send('ServiceWorker.deliverPushMessage', { origin: `${server.url}/`, registrationId, data: JSON.stringify(payload) });
    const shown = async (count: number, what: string): Promise<Shown[]> =>
      waitFor(
        async () => {
          const ns = await page.evaluate<Shown[]>(NOTIFICATIONS);
          return ns.length === count ? ns : undefined;
        },
        { what },
      );

    await push(requestPush());
    const [first] = await shown(1, 'the permission notification');
    expect(first).toMatchObject({
      title: 'Release notes: run deploy?',
      body: 'The agent wants to run deploy',
      tag: 'chat:ahp-chat:/s-release/main',
      requireInteraction: true,
      actions: [
        { action: 'approve', title: 'Approve' },
        { action: 'deny', title: 'Deny' },
      ],
      data: { url: '/s/s-release?chat=ahp-chat%3A%2Fs-release%2Fmain#input=tool-1', actionToken: 'push-action-token-1' },
    });

    // A second request of the same chat replaces it (one notification per chat); a question has no buttons.
    await push(requestPush({ title: 'Release notes: a question', body: 'Which branch?', requestId: 'q-1', requestKind: 'question', actions: [], actionToken: undefined, url: '/s/s-release#input=q-1' }));
    await waitFor(async () => ((await page.evaluate<Shown[]>(NOTIFICATIONS))[0]?.title === 'Release notes: a question' ? true : undefined), { what: 'the question replacing the permission' });
    const [question] = await shown(1, 'one notification for the chat');
    expect(question).toMatchObject({ body: 'Which branch?', actions: [] });

    // Another chat's request is a notification of its own.
    await push(requestPush({ tag: 'chat:ahp-chat:/s-other/main', title: 'Other: run tests?' }));
    await shown(2, 'two chats, two notifications');

    // Resolved anywhere: the withdrawal push closes that chat's notification only.
    await push({ v: 1, kind: 'resolved', tag: 'chat:ahp-chat:/s-release/main' });
    const [left] = await shown(1, 'the resolved chat withdrawn');
    expect(left?.tag).toBe('chat:ahp-chat:/s-other/main');

    // Approve on the notification sends its one-request token to the hub's action route.
    const posted: unknown[] = [];
    await context.route(`${server.url}/api/push/actions`, async (route) => {
      posted.push({ method: route.request().method(), type: route.request().headers()['content-type'], body: route.request().postDataJSON() });
      await route.fulfill({ status: 200, contentType: 'application/json', body: '{"ok":true}' });
    });
    const sw = await worker(context);
    await sw.evaluate(`(async () => {
      const [n] = await self.registration.getNotifications({ tag: 'chat:ahp-chat:/s-other/main' });
      const waits = [];
      const event = new NotificationEvent('notificationclick', { notification: n, action: 'approve' });
      // A synthetic event cannot extend its own lifetime: collect what the handler waits for.
      Object.defineProperty(event, 'waitUntil', { value: (p) => waits.push(p) });
      self.dispatchEvent(event);
      await Promise.all(waits);
    })()`);
    expect(posted).toEqual([{ method: 'POST', type: 'application/json', body: { token: 'push-action-token-1', action: 'approve' } }]);
    await shown(0, 'the answered notification closed');
    await context.unroute(`${server.url}/api/push/actions`);

    // Refused (answered elsewhere first): the hub's words replace the notification, not silence.
    await context.route(`${server.url}/api/push/actions`, (route) => route.fulfill({ status: 409, contentType: 'application/json', body: '{"code":"already_answered","message":"bob approved it first"}' }));
    await push(requestPush({ actionToken: 'push-action-token-2' }));
    await shown(1, 'the second permission notification');
    await sw.evaluate(`(async () => {
      const [n] = await self.registration.getNotifications();
      const waits = [];
      const event = new NotificationEvent('notificationclick', { notification: n, action: 'deny' });
      Object.defineProperty(event, 'waitUntil', { value: (p) => waits.push(p) });
      self.dispatchEvent(event);
      await Promise.all(waits);
    })()`);
    const [refused] = await shown(1, 'the refusal notification');
    expect(refused).toMatchObject({ title: 'Release notes: run deploy?', tag: 'chat:ahp-chat:/s-release/main', body: 'Not denied: bob approved it first. Open the chat to answer there.', actions: [] });
    await context.unroute(`${server.url}/api/push/actions`);
    await push({ v: 1, kind: 'resolved', tag: 'chat:ahp-chat:/s-release/main' });
    await shown(0, 'the refusal withdrawn with its chat');

    // A payload that is not the hub's still shows something, saying so (a push must be visible).
    await push('not json at all');
    const [odd] = await shown(1, 'the unreadable push');
    expect(odd?.body).toContain('could not be read');
    await page.evaluate('navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((ns) => ns.forEach((n) => n.close()))');
    await page.close();
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it('offline: with the hub stopped, a reload shows the app shell and its reconnecting state, then connects', async () => {
    const data = tempDir('hub-pwa-');
    let hub = await startTestServer({ withAuth: true, staticDir: 'dist/app', dataDir: data.dir });
    const port = hub.port;
    try {
      const ctx = await browser.newContext({ viewport: { width: 1100, height: 800 } });
      const page = await openControlled(ctx, hub.url);
      await hub.close();
      await page.locator('[data-testid=connection]', { hasText: 'Reconnecting…' }).waitFor(T);

      // Nothing answers at the hub's address now: without the worker this reload is the browser's error page.
      await page.reload();
      await expect(page.title()).resolves.toBe('AHP Hub');
      await page.locator('[data-testid=connection]', { hasText: 'Reconnecting…' }).waitFor(T);
      await page.locator('[role=alert]', { hasText: 'Connection to the hub lost — reconnecting automatically' }).waitFor(T);
      await expect(page.locator('.topbar .brand').textContent()).resolves.toBe('AHP Hub');
      // The stylesheet came from the cache too (the header is laid out, not unstyled).
      await expect(page.evaluate<string>("getComputedStyle(document.querySelector('.topbar')).display")).resolves.toBe('flex');
      await expect(page.locator('form.signin').count()).resolves.toBe(0);

      // The hub back on its address: the app connects by itself, signed in as before.
      hub = await startTestServer({ withAuth: true, staticDir: 'dist/app', dataDir: data.dir, port });
      await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
      await page.locator('[data-testid=me]', { hasText: 'alice' }).waitFor(T);
      await ctx.close();
      expect(pageErrors).toEqual([]);
    } finally {
      await hub.close();
      data.remove();
    }
  }, 60_000);

  describe('the "Notifications on this device" switch', () => {
    /** Serious and critical WCAG A/AA violations axe finds in the header and the switch's note. */
    async function seriousViolations(page: Page): Promise<string[]> {
      if (!(await page.evaluate<boolean>('typeof window.axe !== "undefined"'))) await page.evaluate(AXE);
      const violations = await page.evaluate<Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }>>(
        `axe.run({ include: [['.topbar'], ['[data-testid=notify-note]']] }, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] }).then((r) => r.violations)`,
      );
      return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(' | ')}`);
    }

    async function expectAccessible(page: Page, what: string): Promise<void> {
      const found: string[] = [];
      for (const colorScheme of ['light', 'dark'] as const) {
        for (const viewport of [
          { width: 1280, height: 800 },
          { width: 390, height: 844 },
        ]) {
          await page.emulateMedia({ colorScheme });
          await page.setViewportSize(viewport);
          for (const v of await seriousViolations(page)) found.push(`${what}, ${colorScheme} ${viewport.width}px: ${v}`);
        }
      }
      expect(found).toEqual([]);
    }

    /**
     * Stands in for the browser's push service: `subscribe` answers a subscription object as
     * Chromium's would after FCM registered it (recording the options it was given), and
     * `unsubscribe` is recorded.
     */
    const FAKE_PUSH_SERVICE = `(() => {
      // The subscription outlives a reload, as the browser's does (sessionStorage of the tab).
      const calls = (window.__push = { subscribe: [], unsubscribed: 0 });
      const endpoint = () => sessionStorage.getItem('fake-push-endpoint');
      const make = (url) => ({
        endpoint: url,
        toJSON() { return { endpoint: this.endpoint, expirationTime: null, keys: { p256dh: 'BPublicKeyOfTheDevice', auth: 'AuthSecret16byte' } }; },
        async unsubscribe() { calls.unsubscribed++; sessionStorage.removeItem('fake-push-endpoint'); return true; },
      });
      PushManager.prototype.subscribe = async function (options) {
        calls.subscribe.push({ userVisibleOnly: options.userVisibleOnly, key: Array.from(new Uint8Array(options.applicationServerKey)) });
        sessionStorage.setItem('fake-push-endpoint', 'https://push.invalid/send/device-1');
        return make(endpoint());
      };
      PushManager.prototype.getSubscription = async function () { return endpoint() ? make(endpoint()) : null; };
    })()`;

    it('on: subscribes with the hub key and registers the device; off: unsubscribes and deletes it; axe-clean both ways', async () => {
      const ctx = await browser.newContext({ viewport: { width: 1100, height: 800 } });
      await ctx.grantPermissions(['notifications'], { origin: server.url });
      await ctx.addInitScript(FAKE_PUSH_SERVICE);
      const key = Buffer.from(Array.from({ length: 65 }, (_, i) => (i === 0 ? 4 : i))).toString('base64url');
      const seen: Array<{ method: string; path: string; auth: string | undefined; body: unknown }> = [];
      let posts = 0;
      await ctx.route(`${server.url}/api/push/**`, async (route) => {
        const r = route.request();
        const path = new URL(r.url()).pathname;
        seen.push({ method: r.method(), path, auth: r.headers()['authorization'], body: r.postData() ? r.postDataJSON() : undefined });
        if (path === '/api/push/key') await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ publicKey: key }) });
        else if (r.method() === 'POST') await route.fulfill({ status: 201, contentType: 'application/json', body: JSON.stringify({ id: `sub-${7 + posts++}` }) });
        else await route.fulfill({ status: 204 });
      });
      const page = await openControlled(ctx, server.url);
      const toggle = page.getByRole('button', { name: 'Notifications on this device' });
      await expect(toggle.getAttribute('aria-pressed')).resolves.toBe('false');
      await expectAccessible(page, 'switch off');

      await toggle.click();
      await page.locator('[data-testid=notify-toggle][aria-pressed=true]').waitFor(T);
      await page.locator('[data-testid=notify-note]', { hasText: 'also with the app closed' }).waitFor(T);
      const bearer = `Bearer ${TOKENS.alice}`;
      expect(seen).toEqual([
        { method: 'GET', path: '/api/push/key', auth: bearer, body: undefined },
        { method: 'POST', path: '/api/push/subscriptions', auth: bearer, body: { endpoint: 'https://push.invalid/send/device-1', expirationTime: null, keys: { p256dh: 'BPublicKeyOfTheDevice', auth: 'AuthSecret16byte' } } },
      ]);
      const calls = await page.evaluate<{ subscribe: Array<{ userVisibleOnly: boolean; key: number[] }> }>('window.__push');
      expect(calls.subscribe).toEqual([{ userVisibleOnly: true, key: [...Buffer.from(key, 'base64url')] }]);
      // Push delivers now: this tab raises no notification of its own beside it.
      await expect(page.evaluate<string | null>("localStorage.getItem('ahp-hub-notify')")).resolves.toBe('push');
      await expectAccessible(page, 'switch on');

      // The push service renewed the subscription (the worker resubscribes on
      // pushsubscriptionchange): the next start registers the new one and drops the old one.
      seen.length = 0;
      await page.evaluate("sessionStorage.setItem('fake-push-endpoint', 'https://push.invalid/send/device-1b')");
      await page.reload();
      await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
      await waitFor(() => (seen.length === 2 ? true : undefined), { what: 'the renewed subscription registered' });
      expect(seen).toEqual([
        { method: 'POST', path: '/api/push/subscriptions', auth: bearer, body: { endpoint: 'https://push.invalid/send/device-1b', expirationTime: null, keys: { p256dh: 'BPublicKeyOfTheDevice', auth: 'AuthSecret16byte' } } },
        { method: 'DELETE', path: '/api/push/subscriptions/sub-7', auth: bearer, body: undefined },
      ]);
      await expect(toggle.getAttribute('aria-pressed')).resolves.toBe('true');

      seen.length = 0;
      await toggle.click();
      await page.locator('[data-testid=notify-toggle][aria-pressed=false]').waitFor(T);
      await waitFor(() => (seen.length === 1 ? true : undefined), { what: 'the DELETE' });
      expect(seen).toEqual([{ method: 'DELETE', path: '/api/push/subscriptions/sub-8', auth: bearer, body: undefined }]);
      await expect(page.evaluate<number>('window.__push.unsubscribed')).resolves.toBe(1);
      await expect(page.evaluate<string | null>("sessionStorage.getItem('fake-push-endpoint')")).resolves.toBe(null);

      // Turned on again, then the browser drops the subscription: the next start shows it off and says so.
      await toggle.click();
      await page.locator('[data-testid=notify-toggle][aria-pressed=true]').waitFor(T);
      await page.evaluate("sessionStorage.removeItem('fake-push-endpoint')");
      await page.reload();
      await page.locator('[data-testid=notify-note]', { hasText: 'switched off by the browser' }).waitFor(T);
      await expect(toggle.getAttribute('aria-pressed')).resolves.toBe('false');
      await ctx.close();
      expect(pageErrors).toEqual([]);
    }, 60_000);

    it('without Web Push it says why and falls back to notifications from an open tab', async () => {
      const ctx = await browser.newContext({ viewport: { width: 1100, height: 800 } });
      await ctx.grantPermissions(['notifications'], { origin: server.url });
      await ctx.addInitScript('delete window.PushManager');
      const page = await openControlled(ctx, server.url);
      await page.getByRole('button', { name: 'Notifications on this device' }).click();
      await page.locator('[data-testid=notify-note]', { hasText: 'Push notifications are not available: this browser has no Web Push (PushManager). Until then you are notified only while a tab of the app is open.' }).waitFor(T);
      await expect(page.locator('[data-testid=notify-toggle]').getAttribute('aria-pressed')).resolves.toBe('true');
      await expect(page.evaluate<string | null>("localStorage.getItem('ahp-hub-notify')")).resolves.toBe('on');
      await expectAccessible(page, 'switch on, tab only');
      await ctx.close();
      expect(pageErrors).toEqual([]);
    }, 60_000);

    it('over plain http to another host: no service worker, and the switch says why', async () => {
      // A name for the hub that is not loopback, so the page is not a secure context.
      const remote = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, '--host-resolver-rules=MAP pwa-hub.test 127.0.0.1'] });
      try {
        const page = watch(await (await remote.newContext()).newPage());
        await page.goto(`http://pwa-hub.test:${server.port}/?token=${TOKENS.alice}`);
        await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
        await expect(page.evaluate<boolean>('window.isSecureContext')).resolves.toBe(false);
        await expect(page.evaluate<boolean>("'serviceWorker' in navigator")).resolves.toBe(false);
        await page.getByRole('button', { name: 'Notifications on this device' }).click();
        await page
          .locator('[data-testid=notify-note]', {
            hasText: `Notifications are not available: this page is not in a secure context (http://pwa-hub.test:${server.port}): open the hub over HTTPS, or at 127.0.0.1 / localhost on this machine.`,
          })
          .waitFor(T);
        await expect(page.locator('[data-testid=notify-toggle]').getAttribute('aria-pressed')).resolves.toBe('false');
      } finally {
        await remote.close();
      }
      expect(pageErrors).toEqual([]);
    }, 60_000);
  });
});
