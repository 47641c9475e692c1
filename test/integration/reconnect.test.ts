import { afterEach, describe, expect, it } from 'vitest';
import type { ActionEnvelope, Snapshot } from '../../shared/protocol/messages.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';

type ReconnectResult = { type: 'replay'; actions: ActionEnvelope[]; missing: string[] } | { type: 'snapshot'; snapshots: Snapshot[]; missing: string[] };

const draft = (text: string) => ({
  type: 'chat/inputAnswerChanged',
  requestId: 'req-1',
  questionId: 'notes',
  answer: { state: 'draft', value: { kind: 'text', value: text } },
});

describe('reconnect', () => {
  let server: TestServer;
  const clients: RpcClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await server.stop();
  });
  const open = async (clientId?: string) => {
    const c = await RpcClient.open(server.wsUrl, clientId ? { clientId } : {});
    clients.push(c);
    return c;
  };

  async function setUp(): Promise<{ a: RpcClient; b: RpcClient; chat: string; session: string; lastSeen: number }> {
    const a = await open();
    const b = await open();
    const { chat, session } = await a.createSession();
    await a.subscribe(chat);
    await b.subscribe(chat);
    await startScriptTurn(a, chat, [{ ask: TWO_QUESTION_REQUEST }, { sleep: 60_000 }]);
    await a.waitForEnvelope((e) => e.action.type === 'chat/inputRequested');
    const lastSeen = Math.max(...a.envelopes.map((e) => e.serverSeq));
    await a.close();
    return { a, b, chat, session, lastSeen };
  }

  it('replays what was missed, in order, and reports gone channels as missing', async () => {
    server = await startTestServer();
    const { a, b, chat, lastSeen } = await setUp();
    for (let i = 0; i < 5; i++) await b.dispatchAndWait(chat, draft(`while away ${i}`));
    const other = await b.createSession();
    await b.request('disposeSession', { channel: other.session });

    const back = await open(a.clientId);
    const result = await back.request<ReconnectResult>('reconnect', {
      channel: 'ahp-root://',
      clientId: a.clientId,
      lastSeenServerSeq: lastSeen,
      subscriptions: [chat, other.chat],
    });
    expect(result.type).toBe('replay');
    if (result.type !== 'replay') return;
    expect(result.missing).toEqual([other.chat]);
    const drafts = result.actions.filter((e) => e.action.type === 'chat/inputAnswerChanged');
    expect(drafts.map((e) => (e.action['answer'] as { value: { value: string } }).value.value)).toEqual([0, 1, 2, 3, 4].map((i) => `while away ${i}`));
    const seqs = result.actions.map((e) => e.serverSeq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(seqs.every((s) => s > lastSeen)).toBe(true);
    // Re-subscribed at the live edge: the next action arrives live.
    await b.dispatchAndWait(chat, draft('live again'));
    await back.waitForEnvelope((e) => JSON.stringify(e.action).includes('live again'));
  });

  it('falls back to snapshots when the gap is older than the replay buffer', async () => {
    server = await startTestServer({ limits: { replayBufferSize: 8 } });
    const { a, b, chat, lastSeen } = await setUp();
    for (let i = 0; i < 120; i++) b.dispatch(chat, draft(`burst ${i}`));
    await b.waitForEnvelope((e) => JSON.stringify(e.action).includes('burst 119'));
    const back = await open(a.clientId);
    const result = await back.request<ReconnectResult>('reconnect', {
      channel: 'ahp-root://',
      clientId: a.clientId,
      lastSeenServerSeq: lastSeen,
      subscriptions: [chat],
    });
    expect(result.type).toBe('snapshot');
    if (result.type !== 'snapshot') return;
    const state = result.snapshots[0]!.state as { activeTurn: { responseParts: Array<{ kind: string; request?: { answers?: Record<string, { value: { value: string } }> } }> } };
    const part = state.activeTurn.responseParts.find((p) => p.kind === 'inputRequest')!;
    expect(part.request!.answers!['notes']!.value.value).toBe('burst 119');
  });

  it('never applies a re-sent action twice: the same clientSeq gets its original echo', async () => {
    server = await startTestServer();
    const a = await open();
    const { chat } = await a.createSession();
    await a.subscribe(chat);
    const turn = { type: 'chat/turnStarted', turnId: 'turn-once', startedAt: new Date().toISOString(), message: { text: '{"script":[{"sleep":60000}]}', origin: { kind: 'user' } } };
    a.notify('dispatchAction', { channel: chat, clientSeq: 1, action: turn });
    const first = await a.waitForEnvelope((e) => e.origin?.clientSeq === 1);
    await a.close();
    const back = await open(a.clientId);
    await back.subscribe(chat);
    back.notify('dispatchAction', { channel: chat, clientSeq: 1, action: turn });
    const again = await back.waitForEnvelope((e) => e.origin?.clientSeq === 1);
    expect(again).toEqual(first);
    const state = (await back.subscribe<{ turns: unknown[]; activeTurn: { id: string } }>(chat)).state;
    expect(state.activeTurn.id).toBe('turn-once');
    expect(back.envelopes.filter((e) => e.action.type === 'chat/turnStarted')).toHaveLength(1);
  });

  it('a new connection may open with reconnect: it adopts the clientId and gets the replay, live delivery and its original echoes, exactly as after initialize', async () => {
    server = await startTestServer();
    const { a, b, chat, session, lastSeen } = await setUp();
    await b.dispatchAndWait(chat, draft('while away'));
    const back = await RpcClient.connect(server.wsUrl, { clientId: a.clientId });
    clients.push(back);
    // The first request on this socket is reconnect (no initialize).
    const result = await back.request<ReconnectResult>('reconnect', {
      channel: 'ahp-root://',
      clientId: a.clientId,
      lastSeenServerSeq: lastSeen,
      subscriptions: [chat, session],
    });
    expect(result.type).toBe('replay');
    if (result.type !== 'replay') return;
    expect(result.missing).toEqual([]);
    expect(result.actions.map((e) => JSON.stringify(e.action))).toContainEqual(expect.stringContaining('while away'));
    expect(result.actions.every((e) => e.serverSeq > lastSeen)).toBe(true);
    // The connection is initialized: other requests work, a second initialize is refused.
    await expect(back.request('listSessions', { channel: 'ahp-root://' })).resolves.toHaveProperty('items');
    await expect(back.request('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: a.clientId })).rejects.toMatchObject({ code: -32600 });
    // Re-subscribed at the live edge.
    await b.dispatchAndWait(chat, draft('live after reconnect-first'));
    await back.waitForEnvelope((e) => JSON.stringify(e.action).includes('live after reconnect-first'));
    // The adopted clientId is the dedupe key: re-sending a clientSeq the old socket used returns its original echo.
    const firstEcho = a.envelopes.find((e) => e.origin?.clientId === a.clientId && e.origin.clientSeq === 1)!;
    expect(firstEcho).toBeDefined();
    back.notify('dispatchAction', { channel: chat, clientSeq: 1, action: { type: 'chat/turnStarted', turnId: 'ignored', startedAt: new Date().toISOString(), message: { text: 'x', origin: { kind: 'user' } } } });
    const again = await back.waitForEnvelope((e) => e.origin?.clientId === a.clientId && e.origin.clientSeq === 1);
    expect(again).toEqual(firstEcho);
  });

  it('reconnect as the first request with a gap older than the replay buffer answers with snapshots', async () => {
    server = await startTestServer({ limits: { replayBufferSize: 8 } });
    const { a, b, chat, lastSeen } = await setUp();
    for (let i = 0; i < 40; i++) b.dispatch(chat, draft(`burst ${i}`));
    await b.waitForEnvelope((e) => JSON.stringify(e.action).includes('burst 39'));
    const back = await RpcClient.connect(server.wsUrl, { clientId: a.clientId });
    clients.push(back);
    const result = await back.request<ReconnectResult>('reconnect', {
      channel: 'ahp-root://',
      clientId: a.clientId,
      lastSeenServerSeq: lastSeen,
      subscriptions: [chat],
    });
    expect(result.type).toBe('snapshot');
    if (result.type !== 'snapshot') return;
    expect(result.snapshots[0]).toEqual((await b.request<{ snapshot: Snapshot }>('subscribe', { channel: chat })).snapshot);
  });
});
