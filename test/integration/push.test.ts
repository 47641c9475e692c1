/**
 * Web Push end to end (issue 30): a real hub process, a loopback push service that verifies the
 * VAPID JWT against `GET /api/push/key` and decrypts every message with the device's own keys
 * (test/helpers/push-service.ts), the demo agent asking for tool permissions, and an AHP client
 * as alice's open tab.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { LoopbackPushService, type Device } from '../helpers/push-service.js';
import { RestartRig } from '../helpers/restart-rig.js';
import type { HubProcess } from '../helpers/hub-process.js';
import { TOKENS, writeAuthFile } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const rig = RestartRig.perTest();
let push: LoopbackPushService | undefined;
afterEach(async () => {
  await push?.close();
  push = undefined;
});

function api(hub: HubProcess, path: string, init: { method?: string; body?: unknown; token?: string | null } = {}): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.token !== null) headers['authorization'] = `Bearer ${init.token ?? TOKENS.alice}`;
  return fetch(hub.url + path, { method: init.method ?? 'GET', headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
}

/** `POST /api/push/actions` as the service worker sends it (no bearer); `sent` once the request is written out. */
function postAction(hub: HubProcess, body: unknown): { sent: Promise<void>; done: Promise<{ status: number }> } {
  const text = JSON.stringify(body);
  let onSent!: () => void;
  const sent = new Promise<void>((resolve) => (onSent = resolve));
  const done = new Promise<{ status: number }>((resolve, reject) => {
    const req = request(`${hub.url}/api/push/actions`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
    });
    req.on('error', reject);
    req.on('finish', onSent);
    req.end(text);
  });
  return { sent, done };
}

async function subscribe(hub: HubProcess, device: Device): Promise<string> {
  const res = await api(hub, '/api/push/subscriptions', { method: 'POST', body: device.subscription });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const toolStep = (id: string, name: string) => ({ tool: { id, name, input: { env: 'prod' }, confirm: true } });
const requestsOf = (d: Device) => d.received.filter((m) => m.payload['kind'] === 'request');
const resolvedOf = (d: Device) => d.received.filter((m) => m.payload['kind'] === 'resolved');
const confirmedOf = (envelopes: ActionEnvelope[], toolCallId: string) => envelopes.filter((e) => e.action.type === 'chat/toolCallConfirmed' && (e.action as { toolCallId?: string }).toolCallId === toolCallId && !e.rejectionReason);

describe('push notifications from the hub', () => {
  it('pushes a permission to both devices, answers from the notification first-wins, withdraws, drops a 410 device and keeps the rest over a restart', async () => {
    const dir = rig.dataDir('push-');
    const args = ['--data', dir, '--auth', writeAuthFile(dir)];
    let hub = await rig.start(args);
    push = await LoopbackPushService.start();
    const { publicKey } = (await (await api(hub, '/api/push/key')).json()) as { publicKey: string };
    expect(Buffer.from(publicKey, 'base64url')).toHaveLength(65);
    push.expectedKey = publicKey;
    const phone = push.device('phone');
    const laptop = push.device('laptop');
    const phoneId = await subscribe(hub, phone);
    const laptopId = await subscribe(hub, laptop);

    const tab = await rig.open(hub, TOKENS.alice);
    const { session, chat } = await tab.createSession('Release checklist');
    await tab.subscribe(chat);

    // 1. A permission asked by the demo agent reaches both devices within 2 s, decrypted and verified.
    const asked = Date.now();
    const turnId = await startScriptTurn(tab, chat, [toolStep('tool-1', 'deploy'), toolStep('tool-2', 'rollback'), toolStep('tool-3', 'restart'), toolStep('tool-4', 'scale'), toolStep('tool-5', 'notify')]);
    await waitFor(() => requestsOf(phone).length >= 1 && requestsOf(laptop).length >= 1, { what: 'the first push on both devices', timeoutMs: 5_000 }).catch((e: Error) => {
      // What the push service refused says why (a bad JWT, a body it could not decrypt).
      throw new Error(`${e.message}; push service problems: ${JSON.stringify(push!.problems)}; hub stderr: ${hub.stderr().slice(-2_000)}`);
    });
    for (const d of [phone, laptop]) {
      const m = requestsOf(d)[0]!;
      expect(m.at - asked).toBeLessThan(2_000);
      expect(m.vapid.aud).toBe(push.origin);
      expect(m.vapid.k).toBe(publicKey);
      expect(m.payload).toMatchObject({
        v: 1,
        kind: 'request',
        tag: `chat:${chat}`,
        title: 'Release checklist',
        session,
        chat,
        requestKind: 'permission',
        tool: 'deploy',
        actions: [
          { action: 'approve', title: 'Approve' },
          { action: 'deny', title: 'Deny' },
        ],
      });
      expect(m.payload['body']).toContain('deploy');
      expect(m.payload['url']).toBe(`/s/${encodeURIComponent(session.replace('ahp-session:/', ''))}?chat=${encodeURIComponent(chat)}#input=tool-1`);
      expect(typeof m.payload['actionToken']).toBe('string');
    }
    expect(push.problems).toEqual([]);

    // 2. Approve as the service worker would send it: no bearer, just the token and the action.
    const token1 = requestsOf(phone)[0]!.payload['actionToken'] as string;
    const approved = await api(hub, '/api/push/actions', { method: 'POST', token: null, body: { token: token1, action: 'approve' } });
    expect(approved.status).toBe(200);
    const confirm1 = await tab.waitForEnvelope((e) => confirmedOf([e], 'tool-1').length === 1, 'tool-1 confirmed');
    expect(confirm1.action).toMatchObject({ approved: true, _meta: { 'hub/answeredBy': { user: 'alice', surface: `push notification (device ${phoneId})` } } });
    // The withdrawal follows on both devices, same tag.
    await waitFor(() => resolvedOf(phone).length >= 1 && resolvedOf(laptop).length >= 1, { what: 'the withdrawal on both devices' });
    for (const d of [phone, laptop]) expect(resolvedOf(d)[0]!.payload).toMatchObject({ kind: 'resolved', tag: `chat:${chat}`, actions: [] });
    // The token is spent: its request is answered.
    const again = await api(hub, '/api/push/actions', { method: 'POST', token: null, body: { token: token1, action: 'deny' } });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: 'already_answered' });

    // 3. The laptop's browser unsubscribed: its push service answers 410, and the hub forgets it.
    laptop.status = 410;
    await waitFor(() => requestsOf(phone).length >= 2, { what: 'the second permission on the phone' });
    expect(requestsOf(phone)[1]!.payload).toMatchObject({ tool: 'rollback', requestKind: 'permission' });
    await waitFor(async () => ((await (await api(hub, '/api/push/subscriptions')).json()) as { subscriptions: Array<{ id: string }> }).subscriptions.length === 1, { what: 'the 410 device removed' });
    const kept = ((await (await api(hub, '/api/push/subscriptions')).json()) as { subscriptions: Array<{ id: string }> }).subscriptions;
    expect(kept.map((s) => s.id)).toEqual([phoneId]);
    expect(kept.map((s) => s.id)).not.toContain(laptopId);

    // 4. First wins: the notification's Deny and the tab's approval at the same moment, for four
    // permissions in a row (tool-2 … tool-5): each time exactly one answer is recorded.
    const winners: string[] = [];
    for (let n = 2; n <= 5; n++) {
      const toolCallId = `tool-${n}`;
      await waitFor(() => requestsOf(phone).find((m) => (m.payload['url'] as string).endsWith(`#input=${toolCallId}`)), { what: `the push for ${toolCallId}` });
      const token = requestsOf(phone).find((m) => (m.payload['url'] as string).endsWith(`#input=${toolCallId}`))!.payload['actionToken'] as string;
      // Odd rounds start both together; even rounds put the notification's request on the wire first.
      const pushed = postAction(hub, { token, action: 'deny' });
      if (n % 2 === 0) await pushed.sent;
      const [fromPush, fromTab] = await Promise.all([pushed.done, tab.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId, approved: true, confirmed: 'user-action' })]);
      const pushWon = fromPush.status === 200;
      const tabWon = fromTab.rejectionReason === undefined;
      expect({ toolCallId, pushWon, tabWon, status: fromPush.status }).toEqual({ toolCallId, pushWon, tabWon: !pushWon, status: pushWon ? 200 : 409 });
      const recorded = await tab.waitForEnvelope((e) => confirmedOf([e], toolCallId).length === 1, `${toolCallId} answered`);
      expect(confirmedOf(tab.envelopes, toolCallId)).toHaveLength(1);
      expect(recorded.action).toMatchObject(pushWon ? { approved: false, _meta: { 'hub/answeredBy': { user: 'alice', surface: `push notification (device ${phoneId})` } } } : { approved: true });
      winners.push(pushWon ? 'push' : 'tab');
    }
    await tab.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'the turn to complete');
    for (let n = 2; n <= 5; n++) expect(confirmedOf(tab.envelopes, `tool-${n}`)).toHaveLength(1);
    // Every permission was withdrawn on the phone once answered (five in all).
    await waitFor(() => resolvedOf(phone).length >= 5, { what: 'the withdrawals' });
    expect(winners).toHaveLength(4);
    const laptopHits = laptop.hits;

    // 5. A restart keeps the phone's subscription and the keys; the removed laptop stays removed.
    hub = await rig.restart(hub, 'SIGTERM', args);
    expect(((await (await api(hub, '/api/push/key')).json()) as { publicKey: string }).publicKey).toBe(publicKey);
    const after = ((await (await api(hub, '/api/push/subscriptions')).json()) as { subscriptions: Array<{ id: string }> }).subscriptions;
    expect(after.map((s) => s.id)).toEqual([phoneId]);
    const tab2 = await rig.open(hub, TOKENS.alice);
    await tab2.subscribe(chat);
    await startScriptTurn(tab2, chat, [toolStep('tool-6', 'migrate')]);
    await waitFor(() => requestsOf(phone).some((m) => m.payload['tool'] === 'migrate'), { what: 'a push after the restart' });
    expect(laptop.hits).toBe(laptopHits);
    expect(push.problems).toEqual([]);
  }, 60_000);

  it('withdraws a notification shown before a restart once its request is answered after it', async () => {
    const dir = rig.dataDir('push-restart-');
    const args = ['--data', dir, '--auth', writeAuthFile(dir)];
    let hub = await rig.start(args);
    push = await LoopbackPushService.start();
    push.expectedKey = ((await (await api(hub, '/api/push/key')).json()) as { publicKey: string }).publicKey;
    const phone = push.device('phone');
    await subscribe(hub, phone);
    const tab = await rig.open(hub, TOKENS.alice);
    const { chat } = await tab.createSession('Across a restart');
    await tab.subscribe(chat);
    const turnId = await startScriptTurn(tab, chat, [toolStep('tool-r', 'deploy')]);
    await waitFor(() => requestsOf(phone).length === 1, { what: 'the push before the restart' });

    hub = await rig.restart(hub, 'SIGTERM', args);
    const tab2 = await rig.open(hub, TOKENS.alice);
    await tab2.subscribe(chat);
    const answer = await tab2.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'tool-r', approved: true, confirmed: 'user-action' });
    expect(answer.rejectionReason).toBeUndefined();
    await waitFor(() => resolvedOf(phone).length === 1, { what: 'the withdrawal after the restart' });
    expect(resolvedOf(phone)[0]!.payload).toMatchObject({ kind: 'resolved', tag: `chat:${chat}`, actions: [] });
    expect(push.problems).toEqual([]);
  }, 60_000);
});
