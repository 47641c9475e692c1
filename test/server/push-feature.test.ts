/**
 * The push feature in a real in-process hub with tokens (server/push/feature.ts): the HTTP API's
 * refusals (bad subscription bodies, limits, other people's subscriptions, agents, no token),
 * the action tokens (forged, from another key, expired, reused, a viewer's), the keys file, and
 * the app's presence `visible` suppressing the push through the real collab feature. Pushes go to
 * a recording sender; test/integration/push.test.ts covers the wire to a push service.
 */
import { createECDH, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultFeatures } from '../../server/features.js';
import { type ActionClaims, signActionToken } from '../../server/push/action-token.js';
import { PUSH_KEYS_FILE } from '../../server/push/keys.js';
import { PUSH_DB_FILE } from '../../server/push/subscriptions.js';
import { ConfigError, parseArgs } from '../../server/config.js';
import type { PushPayload } from '../../shared/protocol/push-payload.js';
import { hubPerTest, TOKENS } from '../helpers/start-server.js';
import type { TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { Peer } from '../helpers/yjs-peer.js';

const hubs = hubPerTest();
const peers: Peer[] = [];
afterEach(() => {
  for (const p of peers.splice(0)) p.destroy();
});

function device(name: string) {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { endpoint: `https://push.example/${name}`, expirationTime: null, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') } };
}

async function call(server: TestServer, path: string, init: { method?: string; body?: unknown; raw?: string; token?: string | null } = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.token !== null) headers['authorization'] = `Bearer ${init.token ?? TOKENS.alice}`;
  const res = await fetch(server.url + path, { method: init.method ?? 'GET', headers, ...(init.raw !== undefined ? { body: init.raw } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function start(limits: { maxPerUser?: number } = {}) {
  const dir = hubs.tempDir().dir;
  const sent: Array<{ endpoint: string; payload: PushPayload }> = [];
  const server = await hubs.start({
    withAuth: true,
    dataDir: dir,
    features: defaultFeatures({
      push: {
        dataDir: dir,
        limits,
        notifier: { collapseMs: 10 },
        send: async (t, p) => {
          sent.push({ endpoint: t.endpoint, payload: JSON.parse(p) as PushPayload });
          return { kind: 'sent' };
        },
      },
    }),
  });
  const tokenKey = Buffer.from((JSON.parse(readFileSync(join(dir, PUSH_KEYS_FILE), 'utf8')) as { tokenKey: string }).tokenKey, 'base64url');
  return { server, sent, dir, tokenKey };
}

const toolStep = (id: string) => ({ tool: { id, name: 'deploy', confirm: true } });

describe('push feature (in-process hub)', () => {
  it('takes HUB_PUSH_SUBJECT only as a mailto: or https: contact', () => {
    expect(parseArgs([], { HUB_PUSH_SUBJECT: 'mailto:ops@example.com' }).pushSubject).toBe('mailto:ops@example.com');
    expect(parseArgs([], { HUB_PUSH_SUBJECT: 'https://example.com/contact' }).pushSubject).toBe('https://example.com/contact');
    expect(parseArgs([], {}).pushSubject).toBeUndefined();
    for (const bad of ['ops@example.com', 'http://example.com', 'mailto:nobody']) expect(() => parseArgs([], { HUB_PUSH_SUBJECT: bad })).toThrow(ConfigError);
  });

  it('keeps its keys in a 0600 file and answers the public key to a token holder only', async () => {
    const { server, dir } = await start();
    expect(statSync(join(dir, PUSH_KEYS_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, PUSH_DB_FILE)).mode & 0o777).toBe(0o600);
    const key = await call(server, '/api/push/key');
    expect(key.status).toBe(200);
    expect(Buffer.from(key.json['publicKey'] as string, 'base64url')).toHaveLength(65);
    expect((await call(server, '/api/push/key', { token: null })).json).toMatchObject({ code: 'unauthorized' });
  });

  it('refuses bad subscription bodies with push_subscription_invalid, and bounds devices per user', async () => {
    const { server } = await start({ maxPerUser: 2 });
    const good = device('a');
    const bad: Array<[string, unknown]> = [
      ['no keys', { endpoint: good.endpoint }],
      ['plain http off loopback', { ...good, endpoint: 'http://push.example/x' }],
      ['not a URL', { ...good, endpoint: 'push.example' }],
      ['a file URL', { ...good, endpoint: 'file:///etc/passwd' }],
      ['an endpoint too long', { ...good, endpoint: `https://push.example/${'x'.repeat(3_000)}` }],
      ['a short p256dh', { ...good, keys: { ...good.keys, p256dh: good.keys.p256dh.slice(0, 40) } }],
      ['an auth secret not base64url', { ...good, keys: { ...good.keys, auth: '!!!!!!!!!!!!!!!!!!!!!!' } }],
      ['an array', [good]],
      ['JSON too deep', { ...good, extra: JSON.parse(`${'['.repeat(80)}${']'.repeat(80)}`) }],
    ];
    for (const [what, body] of bad) {
      const r = await call(server, '/api/push/subscriptions', { method: 'POST', body });
      expect({ what, status: r.status, code: r.json['code'] }).toEqual({ what, status: 400, code: 'push_subscription_invalid' });
      expect(typeof r.json['message']).toBe('string');
    }
    expect((await call(server, '/api/push/subscriptions', { method: 'POST', raw: '{"endpoint":' })).json).toMatchObject({ code: 'invalid_json' });
    const first = await call(server, '/api/push/subscriptions', { method: 'POST', body: good });
    expect(first.status).toBe(201);
    // The same device again is the same subscription.
    expect(await call(server, '/api/push/subscriptions', { method: 'POST', body: good })).toEqual({ status: 200, json: { id: first.json['id'] } });
    expect((await call(server, '/api/push/subscriptions', { method: 'POST', body: device('b') })).status).toBe(201);
    const third = await call(server, '/api/push/subscriptions', { method: 'POST', body: device('c') });
    expect(third).toMatchObject({ status: 429, json: { code: 'push_subscriptions_exceeded' } });
    // Someone else's subscription is not yours to delete (nor to see).
    expect(await call(server, `/api/push/subscriptions/${first.json['id'] as string}`, { method: 'DELETE', token: TOKENS.bob })).toMatchObject({ status: 404, json: { code: 'push_subscription_not_found' } });
    expect((await call(server, '/api/push/subscriptions', { token: TOKENS.bob })).json).toEqual({ subscriptions: [] });
    expect((await call(server, `/api/push/subscriptions/${first.json['id'] as string}`, { method: 'DELETE' })).status).toBe(204);
    expect(await call(server, '/api/push/subscriptions', { method: 'POST', body: device('d'), token: TOKENS.agent })).toMatchObject({ status: 403, json: { code: 'permission_denied' } });
    expect(await call(server, '/api/push/subscriptions', { method: 'POST', body: device('e'), token: null })).toMatchObject({ status: 401, json: { code: 'unauthorized' } });
  });

  it('refuses forged, foreign, expired, reused and viewer action tokens', async () => {
    const { server, sent, tokenKey } = await start();
    const alice = await call(server, '/api/push/subscriptions', { method: 'POST', body: device('alice') });
    const victor = await call(server, '/api/push/subscriptions', { method: 'POST', body: device('victor'), token: TOKENS.viewer });
    const tab = await hubs.open(TOKENS.alice);
    const { chat } = await tab.createSession('Tokens');
    await tab.subscribe(chat);
    await startScriptTurn(tab, chat, [toolStep('t1')]);
    await waitFor(() => sent.length === 2, { what: 'the pushes' });
    const mine = sent.find((s) => s.endpoint.endsWith('/alice'))!.payload;
    const viewerPayload = sent.find((s) => s.endpoint.endsWith('/victor'))!.payload;
    expect(viewerPayload.actions).toEqual([]);
    expect(viewerPayload.actionToken).toBeUndefined();
    const token = mine.actionToken!;
    const act = (t: string, action = 'approve') => call(server, '/api/push/actions', { method: 'POST', token: null, body: { token: t, action } });
    const [body, sig] = token.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as ActionClaims;
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, user: 'bob' })).toString('base64url');
    expect(await act(`${forgedBody}.${sig}`)).toMatchObject({ status: 401, json: { code: 'push_token_invalid' } });
    expect(await act(signActionToken(randomBytes(32), claims))).toMatchObject({ status: 401, json: { code: 'push_token_invalid' } });
    expect(await act('not-a-token')).toMatchObject({ status: 401, json: { code: 'push_token_invalid' } });
    expect(await act(signActionToken(tokenKey, { ...claims, exp: Date.now() - 1 }))).toMatchObject({ status: 401, json: { code: 'push_token_expired' } });
    // A viewer's device never gets a token; one signed for it anyway is refused.
    expect(await act(signActionToken(tokenKey, { ...claims, user: 'victor', sub: victor.json['id'] as string }))).toMatchObject({ status: 403, json: { code: 'permission_denied' } });
    expect(await act(token, 'maybe')).toMatchObject({ status: 400, json: { code: 'invalid_params' } });
    // Nothing above answered it; the real token does, once.
    expect(await act(token)).toMatchObject({ status: 200, json: { ok: true, action: 'approve' } });
    const confirmed = await tab.waitForEnvelope((e) => e.action.type === 'chat/toolCallConfirmed', 'the approval');
    expect(confirmed.action).toMatchObject({ approved: true, _meta: { 'hub/answeredBy': { user: 'alice', surface: `push notification (device ${alice.json['id'] as string})` } } });
    expect(await act(token)).toMatchObject({ status: 409, json: { code: 'already_answered' } });
    expect(await act(token, 'deny')).toMatchObject({ status: 409, json: { code: 'already_answered' } });
  });

  it('sends no push for a chat the user has open in a visible tab (app presence), and does once it is hidden', async () => {
    const { server, sent } = await start();
    await call(server, '/api/push/subscriptions', { method: 'POST', body: device('alice') });
    await call(server, '/api/push/subscriptions', { method: 'POST', body: device('bob'), token: TOKENS.bob });
    const tab = await hubs.open(TOKENS.alice);
    const { chat } = await tab.createSession('Visible');
    await tab.subscribe(chat);
    const presence = await Peer.join(tab, chat, '~chat');
    peers.push(presence);
    presence.awareness.setLocalState({ user: { name: 'alice' }, visible: true });
    const observer = await hubs.open(TOKENS.bob);
    const seen = await Peer.join(observer, chat, '~chat');
    peers.push(seen);
    await waitFor(() => [...seen.awareness.getStates().values()].some((s) => (s as { visible?: boolean }).visible === true), { what: "alice's visible presence at the hub" });
    await startScriptTurn(tab, chat, [toolStep('t1'), toolStep('t2')]);
    await waitFor(() => sent.some((s) => s.endpoint.endsWith('/bob')), { what: "bob's push" });
    expect(sent.filter((s) => s.endpoint.endsWith('/alice'))).toEqual([]);
    // The tab goes to the background: the next request reaches alice's device.
    presence.awareness.setLocalState({ user: { name: 'alice' }, visible: false });
    await waitFor(() => [...seen.awareness.getStates().values()].some((s) => (s as { visible?: boolean }).visible === false), { what: 'the hidden presence' });
    const first = await tab.waitForEnvelope((e) => e.action.type === 'chat/toolCallReady', 'the first tool');
    await tab.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId: (first.action as unknown as { turnId: string }).turnId, toolCallId: 't1', approved: true, confirmed: 'user-action' });
    await waitFor(() => sent.some((s) => s.endpoint.endsWith('/alice') && s.payload.requestKind === 'permission'), { what: "alice's push once hidden" });
  });
});
