/**
 * The app tells the hub when a chat is in front of its person (issue 30): the chat view sets
 * `visible` in its presence from `document.visibilityState`, and the hub sends that person no
 * push for the chat while it is visible. Real headless Chromium, a hub in this process, and the
 * loopback push service that decrypts what it gets (test/helpers/push-service.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoopbackPushService } from '../helpers/push-service.js';
import { TOKENS } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { Peer } from '../helpers/yjs-peer.js';
import { BrowserHub, sessionPath } from './support.js';

describe('browser app: push and the visible chat', () => {
  const hub = BrowserHub.perFile();
  let push: LoopbackPushService;
  beforeAll(async () => {
    push = await LoopbackPushService.start();
  });
  afterAll(() => push.close());

  const subscribe = async (token: string, name: string) => {
    const d = push.device(name);
    const res = await fetch(`${hub.server.url}/api/push/subscriptions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(d.subscription) });
    expect(res.status).toBe(201);
    return d;
  };
  const aliceVisible = (peer: Peer, visible: boolean) => [...peer.awareness.getStates().values()].some((s) => (s as { user?: { id?: string }; visible?: boolean }).user?.id === 'alice' && (s as { visible?: boolean }).visible === visible);

  it('a chat open in a visible tab is not pushed to its person; once the tab is hidden it is', async () => {
    const key = (await (await fetch(`${hub.server.url}/api/push/key`, { headers: { authorization: `Bearer ${TOKENS.alice}` } })).json()) as { publicKey: string };
    push.expectedKey = key.publicKey;
    const alicePhone = await subscribe(TOKENS.alice, 'alice-phone');
    const bobPhone = await subscribe(TOKENS.bob, 'bob-phone');
    const setup = await hub.rpc(TOKENS.alice);
    const { session, chat } = await setup.createSession('Visible chat');
    await setup.subscribe(chat);
    const page = await hub.open(TOKENS.alice, `${sessionPath(session)}?chat=${encodeURIComponent(chat)}`);
    // Bob watches the chat's presence room: what the hub holds of alice's tab.
    const bob = await hub.rpc(TOKENS.bob);
    const watcher = await Peer.join(bob, chat, '~chat');
    await waitFor(() => aliceVisible(watcher, true), { what: "alice's tab present and visible" });

    const turn = await setup.dispatchAndWait(chat, {
      type: 'chat/turnStarted',
      turnId: 'turn-v',
      startedAt: new Date().toISOString(),
      message: { text: JSON.stringify({ script: [{ tool: { id: 't1', name: 'deploy', confirm: true } }, { tool: { id: 't2', name: 'migrate', confirm: true } }] }), origin: { kind: 'user' } },
    });
    expect(turn.rejectionReason).toBeUndefined();
    await waitFor(() => bobPhone.received.length >= 1, { what: "bob's push for deploy" });
    expect(bobPhone.received[0]!.payload).toMatchObject({ kind: 'request', tool: 'deploy', title: 'Visible chat' });
    // Sent in the same round as bob's: alice, looking at the chat, got none.
    expect(alicePhone.hits).toBe(0);

    // The tab goes to the background (the browser would fire this when the person switches away).
    await page.evaluate(`Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true }); document.dispatchEvent(new Event('visibilitychange'))`);
    await waitFor(() => aliceVisible(watcher, false), { what: "alice's tab hidden at the hub" });
    await setup.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId: 'turn-v', toolCallId: 't1', approved: true, confirmed: 'user-action' });
    await waitFor(() => alicePhone.received.some((m) => m.payload['tool'] === 'migrate'), { what: "alice's push once her tab is hidden" });
    expect(push.problems).toEqual([]);
    watcher.destroy();
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);
});
