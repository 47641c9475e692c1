/**
 * The push path end to end (issue 30): a real hub on port 0, the loopback push service that
 * verifies the VAPID JWT and decrypts each message with the device's keys
 * (test/helpers/push-service.ts), and the app's real service worker in Debian's headless Chromium.
 * The demo agent asks tool permissions in a chat alice has no tab on; the hub's own encrypted
 * push, decrypted by the push service, is handed to the worker with DevTools'
 * `ServiceWorker.deliverPushMessage`; the notification is read back with
 * `registration.getNotifications()`; its Approve goes from the worker to the hub's real
 * `POST /api/push/actions` (nothing routed by the test); the hub's withdrawal push closes it.
 *
 * What stands in for what is outside the machine: Chromium's `PushManager.subscribe` asks
 * Google's FCM, which a test cannot reach, so the device alice subscribes at the hub is one of the
 * loopback push service's (its endpoint and key pair, POSTed as `PushSubscription.toJSON()` would
 * give them), and DevTools delivers what that service received to the worker of the same origin.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserContext, chromium, type Page, type Worker } from 'playwright-core';
import { toolDecisionsOf } from '../../shared/state/selectors.js';
import { LoopbackPushService, type Device, type PushMessage } from '../helpers/push-service.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { CHROMIUM, CHROMIUM_ARGS, ensureAppBuilt } from './support.js';

interface Shown {
  title: string;
  body: string;
  tag: string;
  actions: Array<{ action: string; title: string }>;
  data: { url?: string; actionToken?: string; requestId?: string };
}

const NOTIFICATIONS = `navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((ns) => ns.map((n) => ({ title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => ({ action: a.action, title: a.title })), data: n.data })))`;
const toolStep = (id: string, name: string) => ({ tool: { id, name, input: { env: 'prod' }, confirm: true } });

describe('push end to end: hub → push service → service worker → hub', () => {
  let server: TestServer;
  let push: LoopbackPushService;
  let profile: string;
  let context: BrowserContext;
  const clients: RpcClient[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    await ensureAppBuilt();
    server = await startTestServer({ withAuth: true, staticDir: 'dist/app' });
    push = await LoopbackPushService.start();
    profile = mkdtempSync(join(tmpdir(), 'push-e2e-profile-'));
    // A persistent profile, as in pwa.test.ts: the worker, its notifications and their permission.
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, viewport: { width: 1100, height: 900 } });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await context?.close();
    await push?.close();
    await server?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(server.url + path, { method: init.method ?? 'GET', headers: { authorization: `Bearer ${TOKENS.alice}`, 'content-type': 'application/json' }, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });

  async function rpc(): Promise<RpcClient> {
    const c = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
    clients.push(c);
    return c;
  }

  /** The next message the device received after the first `seen` that `match` accepts. */
  const nextPush = (d: Device, seen: number, what: string, match: (p: Record<string, unknown>) => boolean): Promise<PushMessage> =>
    waitFor(() => d.received.slice(seen).find((m) => match(m.payload)), { what, timeoutMs: 10_000 }).catch((e: Error) => {
      throw new Error(`${e.message}; push service problems: ${JSON.stringify(push.problems)}; received: ${JSON.stringify(d.received.map((m) => m.payload))}`);
    });

  it('a permission the hub pushes shows in the worker with Approve/Deny, Approve answers it at the hub, and the withdrawal push closes the next one', async () => {
    // 1. Alice's device at the hub: the loopback push service's endpoint and keys.
    const { publicKey } = (await (await api('/api/push/key')).json()) as { publicKey: string };
    push.expectedKey = publicKey;
    const device = push.device('alice-chromium');
    const subscribed = await api('/api/push/subscriptions', { method: 'POST', body: device.subscription });
    expect(subscribed.status).toBe(201);
    const deviceId = ((await subscribed.json()) as { id: string }).id;

    // 2. The app in Chromium on its home page (no chat open), controlled by its real worker.
    await context.grantPermissions(['notifications'], { origin: server.url });
    const page: Page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(`${server.url}/?token=${TOKENS.alice}`);
    await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor({ timeout: 15_000 });
    // Polled from here: the app's CSP (no 'unsafe-eval') refuses waitForFunction's string.
    await waitFor(() => page.evaluate<boolean>('navigator.serviceWorker.controller !== null'), { what: 'the page controlled by the service worker', timeoutMs: 15_000 });
    const cdp = await context.newCDPSession(page);
    const registrations: Array<{ registrationId: string; scopeURL: string; isDeleted: boolean }> = [];
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations));
    await cdp.send('ServiceWorker.enable');
    const registrationId = await waitFor(() => registrations.find((r) => r.scopeURL === `${server.url}/` && !r.isDeleted)?.registrationId, { what: 'the registration id' });
    // The decrypted plaintext, as the browser's push service would hand it to the worker.
    const deliver = (m: PushMessage) => cdp.send('ServiceWorker.deliverPushMessage', { origin: `${server.url}/`, registrationId, data: JSON.stringify(m.payload) });
    const shown = (what: string, ok: (ns: Shown[]) => boolean): Promise<Shown[]> =>
      waitFor(
        async () => {
          const ns = await page.evaluate<Shown[]>(NOTIFICATIONS);
          return ok(ns) ? ns : undefined;
        },
        { what },
      );
    const sw: Worker = await waitFor(() => context.serviceWorkers().find((w) => w.url() === `${server.url}/sw.js`), { what: 'the service worker', timeoutMs: 15_000 });

    // 3. The demo agent asks two permissions in a chat no tab of alice's shows.
    const setup = await rpc();
    const { session, chat } = await setup.createSession('Friday deploy');
    await setup.subscribe(chat);
    const turnId = await startScriptTurn(setup, chat, [toolStep('tool-1', 'deploy'), toolStep('tool-2', 'rollback')]);
    const tag = `chat:${chat}`;

    // 4. The hub's push for tool-1, delivered to the worker exactly as decrypted.
    const first = await nextPush(device, 0, 'the push for deploy', (p) => p['kind'] === 'request' && p['tool'] === 'deploy');
    expect(first.payload).toMatchObject({ kind: 'request', tag, session, chat, title: 'Friday deploy', requestKind: 'permission' });
    await deliver(first);
    const [notification] = await shown('the permission notification', (ns) => ns.length === 1);
    expect(notification).toEqual({
      title: 'Friday deploy',
      body: first.payload['body'],
      tag,
      actions: [
        { action: 'approve', title: 'Approve' },
        { action: 'deny', title: 'Deny' },
      ],
      data: { url: first.payload['url'], actionToken: first.payload['actionToken'], requestId: first.payload['requestId'] },
    });
    expect(notification!.body).toContain('deploy');
    expect(notification!.data.url).toMatch(/#input=tool-1$/);

    // 5. Approve on it, as the browser would fire it: the worker POSTs to the hub's real route.
    await sw.evaluate(`(async () => {
      const [n] = await self.registration.getNotifications({ tag: ${JSON.stringify(tag)} });
      const waits = [];
      const event = new NotificationEvent('notificationclick', { notification: n, action: 'approve' });
      // A synthetic event cannot extend its own lifetime: collect what the handler waits for.
      Object.defineProperty(event, 'waitUntil', { value: (p) => waits.push(p) });
      self.dispatchEvent(event);
      await Promise.all(waits);
    })()`);
    // Answered at the hub, stamped by the push path: a fresh client's snapshot of the chat says so.
    await setup.waitForEnvelope((e) => e.action.type === 'chat/toolCallConfirmed' && (e.action as { toolCallId?: string }).toolCallId === 'tool-1' && !e.rejectionReason, 'tool-1 confirmed');
    const snap = await (await rpc()).subscribe<Parameters<typeof toolDecisionsOf>[0]>(chat);
    const decided = toolDecisionsOf(snap.state).find((d) => d.toolCallId === 'tool-1');
    expect(decided).toMatchObject({ turnId, toolName: 'deploy', approved: true, by: { user: 'alice', surface: `push notification (device ${deviceId})` } });
    // The worker refused nothing (a refusal would have shown a "Not approved: …" notification).
    await shown('the answered notification closed', (ns) => ns.length === 0);

    // 6. The hub withdraws tool-1 and pushes tool-2 under the same tag; delivered in arrival order.
    const withdrawn1 = await nextPush(device, device.received.indexOf(first) + 1, 'the withdrawal of deploy', (p) => p['kind'] === 'resolved' && p['requestId'] === first.payload['requestId']);
    expect(withdrawn1.payload).toMatchObject({ kind: 'resolved', tag, tool: 'deploy', actions: [] });
    const second = await nextPush(device, device.received.indexOf(first) + 1, 'the push for rollback', (p) => p['kind'] === 'request' && p['tool'] === 'rollback');
    for (const m of [withdrawn1, second].sort((a, b) => device.received.indexOf(a) - device.received.indexOf(b))) await deliver(m);
    const [rollback] = await shown('the rollback notification', (ns) => ns.length === 1 && ns[0]!.data.url === second.payload['url']);
    expect(rollback).toMatchObject({ title: 'Friday deploy', tag, actions: [{ action: 'approve' }, { action: 'deny' }] });
    expect(rollback!.body).toContain('rollback');

    // A push service may deliver late or twice (RFC 8030 promises no order): deploy's withdrawal
    // again, now that rollback's notification holds the tag, must leave rollback's standing. Handed
    // to the same worker as a push event whose handling the test can await (deliverPushMessage
    // says nothing of when the worker is done), with the hub's decrypted payload as its data.
    await sw.evaluate(`(async () => {
      const waits = [];
      const event = new PushEvent('push', { data: ${JSON.stringify(JSON.stringify(withdrawn1.payload))} });
      Object.defineProperty(event, 'waitUntil', { value: (p) => waits.push(p) });
      self.dispatchEvent(event);
      await Promise.all(waits);
    })()`);
    expect((await page.evaluate<Shown[]>(NOTIFICATIONS)).map((n) => n.data.url)).toEqual([second.payload['url']]);

    // 7. Answered elsewhere (alice's tab denies it): the hub's withdrawal push, same tag, closes it.
    const seen = device.received.length;
    const denied = await setup.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'tool-2', approved: false, reason: 'denied', confirmed: 'user-action' });
    expect(denied.rejectionReason).toBeUndefined();
    const withdrawn2 = await nextPush(device, seen, 'the withdrawal of rollback', (p) => p['kind'] === 'resolved' && p['requestId'] === second.payload['requestId']);
    expect(withdrawn2.payload).toMatchObject({ kind: 'resolved', tag, tool: 'rollback', actions: [] });
    await deliver(withdrawn2);
    await shown('the rollback notification withdrawn', (ns) => ns.length === 0);

    expect(push.problems).toEqual([]);
    await page.close();
    expect(pageErrors).toEqual([]);
  }, 90_000);
});
