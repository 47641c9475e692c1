import { afterEach, describe, expect, it } from 'vitest';
import type { ActionEnvelope, Snapshot } from '../../shared/protocol/messages.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';

type ReconnectResult = { type: 'replay'; actions: ActionEnvelope[]; missing: string[] } | { type: 'snapshot'; snapshots: Snapshot[]; missing: string[] };

const draft = (text: string) => ({
  type: 'chat/inputAnswerChanged', requestId: 'req-1', questionId: 'notes',
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
      channel: 'ahp-root://', clientId: a.clientId, lastSeenServerSeq: lastSeen, subscriptions: [chat, other.chat],
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
      channel: 'ahp-root://', clientId: a.clientId, lastSeenServerSeq: lastSeen, subscriptions: [chat],
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
});
