/**
 * The push notifier on its own (server/push/notifier.ts): collapse per chat, the per-user rate
 * limit, no push to a user whose tab shows the chat, viewers without actions, withdrawals to the
 * devices that were told, and the retry/removal rules. A recording sender stands in for the push
 * services; the subscriptions are the real SQLite store (in memory).
 */
import { createECDH, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../server/log.js';
import { verifyActionToken } from '../../server/push/action-token.js';
import { type OpenRequest, PushNotifier } from '../../server/push/notifier.js';
import type { PushPayload } from '../../shared/protocol/push-payload.js';
import { MAX_PUSH_PAYLOAD_BYTES, payloadText, requestPayload } from '../../server/push/payload.js';
import type { SendResult } from '../../server/push/sender.js';
import { PushSubscriptions } from '../../server/push/subscriptions.js';
import { waitFor } from '../helpers/wait-for.js';

const TENANT = 'acme';
const SESSION = 'ahp-session:/s1';
const CHAT = 'ahp-chat:/c1';
const KEY = randomBytes(32);

function body(name: string) {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { endpoint: `https://push.example/${name}`, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') } };
}

function request(id: string, chat = CHAT, kind: 'permission' | 'question' = 'permission'): OpenRequest {
  return { session: SESSION, sessionTitle: 'Release', chat, requestId: id, anchor: `tool-${id}`, requestKind: kind, tool: kind === 'permission' ? 'deploy' : undefined, text: kind === 'permission' ? `Deploy ${id}` : `Question ${id}?` };
}

describe('push notifier', () => {
  let store: PushSubscriptions;
  let sent: Array<{ endpoint: string; payload: PushPayload; topic: string }>;
  let answer: (endpoint: string) => SendResult;
  let now: number;
  let visible: Set<string>;
  let notifier: PushNotifier;
  const make = (limits: ConstructorParameters<typeof PushNotifier>[0]['limits'] = {}) =>
    new PushNotifier({
      tenant: TENANT,
      store,
      tokenKey: KEY,
      now: () => now,
      logger: silentLogger,
      viewingVisibly: (chat, user) => visible.has(`${chat} ${user}`),
      send: async (target, payload, topic) => {
        sent.push({ endpoint: target.endpoint, payload: JSON.parse(payload) as PushPayload, topic });
        return answer(target.endpoint);
      },
      limits: { collapseMs: 20, retryBaseMs: 5, ...limits },
    });

  beforeEach(() => {
    store = new PushSubscriptions(undefined);
    sent = [];
    answer = () => ({ kind: 'sent' });
    now = 1_000_000;
    visible = new Set();
    notifier = make();
  });
  afterEach(() => {
    notifier.close();
    store.close();
  });

  it('collapses requests of one chat opened together into one push per device, under one tag', async () => {
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('phone'), now);
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('laptop'), now);
    notifier.opened(request('a'));
    notifier.opened(request('b'));
    notifier.opened(request('c'));
    await waitFor(() => sent.length === 2, { what: 'one push per device' });
    expect(sent.map((s) => s.payload.requestId)).toEqual(['c', 'c']);
    expect(sent[0]!.payload).toMatchObject({ kind: 'request', tag: `chat:${CHAT}`, title: 'Release', tool: 'deploy' });
    expect(sent[0]!.payload.body).toContain('(+2 more waiting)');
    expect(new Set(sent.map((s) => s.topic)).size).toBe(1);
    // A later request replaces the notification (same tag); a request of another chat has its own.
    notifier.opened(request('d'));
    notifier.opened(request('x', 'ahp-chat:/c2'));
    await waitFor(() => sent.length === 6, { what: 'the replacement and the other chat' });
    expect(
      sent
        .slice(2)
        .map((s) => s.payload.tag)
        .sort(),
    ).toEqual([`chat:${CHAT}`, `chat:${CHAT}`, 'chat:ahp-chat:/c2', 'chat:ahp-chat:/c2']);
  });

  it('withdraws once the chat has nothing open, only on the devices that were told', async () => {
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('phone'), now);
    notifier.opened(request('a'));
    notifier.opened(request('b'));
    await waitFor(() => sent.length === 1, { what: 'the push' });
    // Another device subscribes after the push: it was never told, so it gets no withdrawal.
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('tablet'), now);
    // The notification names b (the newest); b is answered while a still waits: it is replaced by one naming a.
    notifier.resolved(CHAT, 'b');
    await waitFor(() => sent.length === 2, { what: 'the replacement naming a' });
    expect(sent[1]).toMatchObject({ endpoint: 'https://push.example/phone', payload: { kind: 'request', requestId: 'a', tag: `chat:${CHAT}` } });
    notifier.resolved(CHAT, 'a');
    await waitFor(() => sent.length === 3, { what: 'the withdrawal' });
    expect(sent[2]).toMatchObject({ endpoint: 'https://push.example/phone', payload: { kind: 'resolved', tag: `chat:${CHAT}`, requestId: 'a', actions: [] } });
    expect(sent[2]!.payload.actionToken).toBeUndefined();
  });

  it('sends nothing for a request resolved before its collapse window ends', async () => {
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('phone'), now);
    notifier.opened(request('a'));
    notifier.resolved(CHAT, 'a');
    notifier.opened(request('z', 'ahp-chat:/other'));
    await waitFor(() => sent.length === 1, { what: 'the other chat' });
    expect(sent[0]!.payload.chat).toBe('ahp-chat:/other');
  });

  it('rate-limits request pushes per user, and refills with time', async () => {
    notifier.close();
    notifier = make({ ratePerMinute: 2, collapseMs: 0 });
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('phone'), now);
    store.add({ tenant: TENANT, user: 'bob', role: 'user' }, body('bobs'), now);
    for (const c of ['c1', 'c2', 'c3']) notifier.opened(request(c, `ahp-chat:/${c}`));
    await waitFor(() => sent.length === 4 && notifier.counters.rateLimited === 2, { what: 'two pushes each, the third refused for both' });
    // Bob is under his own limit too (2), so he hears of c1 and c2 only; the same for alice.
    const alice = sent.filter((s) => s.endpoint.endsWith('phone')).map((s) => s.payload.chat);
    expect(alice).toEqual(['ahp-chat:/c1', 'ahp-chat:/c2']);
    expect(notifier.counters.rateLimited).toBe(2);
    // Withdrawals are never held back.
    notifier.resolved('ahp-chat:/c1', 'c1');
    await waitFor(() => sent.some((s) => s.payload.kind === 'resolved' && s.endpoint.endsWith('phone')), { what: 'the withdrawal' });
    now += 30_000; // one token back (2 a minute)
    notifier.opened(request('c4', 'ahp-chat:/c4'));
    await waitFor(() => sent.some((s) => s.payload.chat === 'ahp-chat:/c4' && s.endpoint.endsWith('phone')), { what: 'a push after the refill' });
  });

  it('sends no push to a user who has the chat open and visible', async () => {
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('phone'), now);
    store.add({ tenant: TENANT, user: 'bob', role: 'user' }, body('bobs'), now);
    visible.add(`${CHAT} alice`);
    notifier.opened(request('a'));
    await waitFor(() => sent.length === 1, { what: "bob's push" });
    expect(sent[0]!.endpoint).toBe('https://push.example/bobs');
    expect(notifier.counters.suppressedVisible).toBe(1);
    // Alice looked: nothing to withdraw on her phone either.
    notifier.resolved(CHAT, 'a');
    await waitFor(() => sent.length === 2, { what: "bob's withdrawal" });
    expect(sent[1]!.endpoint).toBe('https://push.example/bobs');
  });

  it('gives viewers the notification without actions or a token, writers both', async () => {
    store.add({ tenant: TENANT, user: 'victor', role: 'viewer' }, body('viewer'), now);
    const alice = store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('phone'), now);
    notifier.opened(request('a'));
    await waitFor(() => sent.length === 2, { what: 'both pushes' });
    const viewer = sent.find((s) => s.endpoint.endsWith('viewer'))!.payload;
    const writer = sent.find((s) => s.endpoint.endsWith('phone'))!.payload;
    expect(viewer.actions).toEqual([]);
    expect(viewer.actionToken).toBeUndefined();
    expect(writer.actions.map((a) => a.action)).toEqual(['approve', 'deny']);
    const claims = verifyActionToken(KEY, writer.actionToken!, now);
    expect(claims).toMatchObject({ ok: true, claims: { tenant: TENANT, user: 'alice', sub: alice.ok ? alice.subscription.id : '', chat: CHAT, session: SESSION, req: 'a' } });
    // A question carries no actions for anyone: it is answered in the app (the url opens the form).
    notifier.opened(request('q', 'ahp-chat:/q', 'question'));
    await waitFor(() => sent.length === 4, { what: 'the question pushes' });
    for (const s of sent.slice(2)) {
      expect(s.payload).toMatchObject({ requestKind: 'question', actions: [], body: 'Question q?' });
      expect(s.payload.actionToken).toBeUndefined();
    }
  });

  it('removes a subscription the push service calls gone and retries other failures, bounded', async () => {
    const gone = store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('gone'), now);
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('flaky'), now);
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('down'), now);
    let flaky = 0;
    answer = (endpoint) => {
      if (endpoint.endsWith('gone')) return { kind: 'gone', status: 410 };
      if (endpoint.endsWith('flaky')) return ++flaky < 3 ? { kind: 'failed', status: 503, message: 'busy' } : { kind: 'sent' };
      return { kind: 'failed', status: 500, message: 'down' };
    };
    notifier.opened(request('a'));
    await waitFor(() => flaky === 3 && sent.filter((s) => s.endpoint.endsWith('down')).length === 4, { what: 'the retries' });
    expect(store.get(gone.ok ? gone.subscription.id : '')).toBeUndefined();
    expect(sent.filter((s) => s.endpoint.endsWith('gone'))).toHaveLength(1);
    expect(notifier.counters).toMatchObject({ sent: 1, gone: 1, failed: 2 + 4 });
  });

  it('keeps every payload within one push message (3,993 bytes), shortening title and body first', async () => {
    const base = requestPayload({ ...request('a'), sessionTitle: 'T'.repeat(500), text: 'word '.repeat(400), open: 1 }, true, 'tok');
    expect(base.body.length).toBe(300);
    // Padded to just over the limit: the shortened title and body make it fit.
    const over = { ...base, url: `${base.url}${'x'.repeat(MAX_PUSH_PAYLOAD_BYTES - JSON.stringify(base).length + 100)}` };
    const text = payloadText(over)!;
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_PUSH_PAYLOAD_BYTES);
    expect((JSON.parse(text) as PushPayload).body.length).toBe(80);
    expect((JSON.parse(text) as PushPayload).url).toBe(over.url);
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('phone'), now);
    // Ids so long that nothing fits: not sent (the push service would refuse it), counted as failed.
    const huge = `ahp-chat:/${'x'.repeat(2_000)}`;
    notifier.opened(request('b', huge));
    await waitFor(() => notifier.counters.failed === 1, { what: 'the refusal' });
    expect(sent).toHaveLength(0);
  });

  it('remembers who was told in the store, so a notifier after a restart still withdraws', async () => {
    store.add({ tenant: TENANT, user: 'alice', role: 'user' }, body('phone'), now);
    notifier.opened(request('a'));
    await waitFor(() => sent.length === 1, { what: 'the push' });
    notifier.close();
    notifier = make();
    expect(notifier.watches(CHAT)).toBe(true);
    expect(notifier.watches('ahp-chat:/other')).toBe(false);
    notifier.chatSettled(CHAT);
    await waitFor(() => sent.length === 2, { what: 'the withdrawal' });
    expect(sent[1]).toMatchObject({ endpoint: 'https://push.example/phone', payload: { kind: 'resolved', requestId: 'a', tag: `chat:${CHAT}` } });
    expect(notifier.watches(CHAT)).toBe(false);
    expect(store.notifiedOf(TENANT).size).toBe(0);
  });
});
