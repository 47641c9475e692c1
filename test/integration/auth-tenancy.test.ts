import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';

describe('auth and tenancy', () => {
  let server: TestServer;
  const clients: RpcClient[] = [];
  beforeEach(async () => {
    server = await startTestServer({ withAuth: true });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await server.stop();
  });
  const open = async (token: string, subscribe: string[] = []) => {
    const c = await RpcClient.open(server.wsUrl, { token, subscribe });
    clients.push(c);
    return c;
  };

  it('refuses the upgrade with 401 without a token or with an unknown one', async () => {
    await expect(RpcClient.connect(server.wsUrl)).rejects.toThrow('HTTP 401');
    await expect(RpcClient.connect(server.wsUrl, { token: 'not-a-real-token-at-all' })).rejects.toThrow('HTTP 401');
  });

  it('takes the token from the Authorization header too', async () => {
    const { default: WebSocket } = await import('ws');
    const ws = new WebSocket(server.wsUrl, { headers: { authorization: `Bearer ${TOKENS.alice}` } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_r, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    ws.close();
  });

  it("rejects a viewer's dispatch with a reason and applies nothing", async () => {
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    const viewer = await open(TOKENS.viewer);
    const snap = await viewer.subscribe<{ turns: unknown[]; activeTurn?: unknown }>(chat);
    expect(snap.state.turns).toEqual([]);
    const echo = await viewer.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't-v', startedAt: new Date().toISOString(), message: userMessage('hi') });
    expect(echo.rejectionReason).toMatch(/read-only/);
    const after = await alice.subscribe<{ activeTurn?: unknown }>(chat);
    expect(after.state.activeTurn).toBeUndefined();
    await expect(viewer.createSession()).rejects.toMatchObject({ code: -32009 });
  });

  it('users cannot dispatch server-side actions; an agent token drives a remote session turn', async () => {
    const alice = await open(TOKENS.alice);
    const session = 'ahp-session:/remote-1';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote' });
    await alice.subscribe(chat);
    const turn = await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't-r', startedAt: new Date().toISOString(), message: userMessage('hello agent') });
    expect(turn.rejectionReason).toBeUndefined();
    const forged = await alice.dispatchAndWait(chat, { type: 'chat/delta', turnId: 't-r', partId: 'p', content: 'x' });
    expect(forged.rejectionReason).toMatch(/not client-dispatchable/);

    const agent = await open(TOKENS.agent);
    await agent.subscribe(chat);
    const part = await agent.dispatchAndWait(chat, { type: 'chat/responsePart', turnId: 't-r', part: { kind: 'markdown', id: 'p1', content: '' } });
    expect(part.rejectionReason).toBeUndefined();
    const wrongTurn = await agent.dispatchAndWait(chat, { type: 'chat/delta', turnId: 't-other', partId: 'p1', content: 'x' });
    expect(wrongTurn.rejectionReason).toMatch(/not the active turn/);
    await agent.dispatchAndWait(chat, { type: 'chat/delta', turnId: 't-r', partId: 'p1', content: 'Hello from a remote agent' });
    await agent.dispatchAndWait(chat, { type: 'chat/turnComplete', turnId: 't-r', duration: 5 });
    const final = await alice.subscribe<{ activeTurn?: unknown; turns: Array<{ responseParts: Array<{ content?: string }> }> }>(chat);
    expect(final.state.activeTurn).toBeUndefined();
    expect(final.state.turns[0]!.responseParts[0]!.content).toBe('Hello from a remote agent');
  });

  it('another tenant cannot see or touch a session: it behaves as if it did not exist', async () => {
    const alice = await open(TOKENS.alice, ['ahp-root://']);
    const mallory = await open(TOKENS.mallory, ['ahp-root://']);
    const { session, chat } = await alice.createSession('secret plans');
    await alice.waitForNotification((n) => n.method === 'root/sessionAdded');

    const listed = await mallory.request<{ items: Array<{ resource: string }> }>('listSessions', { channel: 'ahp-root://' });
    expect(listed.items.map((s) => s.resource)).not.toContain(session);
    const missingErr = await mallory.subscribe('ahp-session:/does-not-exist').catch((e: RpcError) => e);
    const foreignErr = await mallory.subscribe(session).catch((e: RpcError) => e);
    expect(foreignErr).toBeInstanceOf(RpcError);
    expect({ code: (foreignErr as RpcError).code, msg: (foreignErr as RpcError).message.replace(session, 'X') }).toEqual({
      code: (missingErr as RpcError).code,
      msg: (missingErr as RpcError).message.replace('ahp-session:/does-not-exist', 'X'),
    });
    await expect(mallory.subscribe(chat)).rejects.toMatchObject({ code: -32008 });
    await expect(mallory.request('disposeSession', { channel: session })).rejects.toMatchObject({ code: -32001 });
    await expect(mallory.request('createChat', { channel: session })).rejects.toMatchObject({ code: -32001 });

    // A dispatch on the foreign chat is ignored exactly like one on an unknown chat: no echo, no effect.
    const seq = mallory.dispatch(chat, { type: 'chat/turnStarted', turnId: 't-m', startedAt: new Date().toISOString(), message: userMessage('pwn') });
    const probe = mallory.dispatch('ahp-chat:/nope', { type: 'chat/turnStarted', turnId: 't-n', startedAt: new Date().toISOString(), message: userMessage('x') });
    await mallory.request('ping', { channel: 'ahp-root://' });
    expect(mallory.envelopes.filter((e) => e.origin?.clientSeq === seq || e.origin?.clientSeq === probe)).toEqual([]);
    expect((await alice.subscribe<{ activeTurn?: unknown }>(chat)).state.activeTurn).toBeUndefined();
    // No root notification about alice's session reached mallory.
    expect(mallory.notifications.filter((n) => JSON.stringify(n.params).includes(session))).toEqual([]);
  });
});
