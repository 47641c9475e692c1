/**
 * Three hub processes on one PostgreSQL log behave like one hub: clients on different nodes see
 * the same actions in the same order, answers merge, and roll-up reaches a dashboard on a third node.
 */
import { describe, expect, it } from 'vitest';
import type { ActionEnvelope, ReconnectResult } from '../../shared/protocol/messages.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { clusterPerFile, subscribeWhenKnown } from './cluster.js';

const IN_PROGRESS = 8;
const INPUT_NEEDED = 24;
const activity = (status: number): number => status & 31;

interface ChatLike {
  activeTurn?: { responseParts: Array<{ kind: string; request?: { id: string; answers?: Record<string, unknown> } }> };
}

describe('a three-node cluster on one PostgreSQL log', () => {
  const fx = clusterPerFile(3);
  const clients = fx.clients;

  async function open(node: number, subscribe: string[] = []): Promise<RpcClient> {
    const client = await RpcClient.open(fx.cluster.nodes[node]!.wsUrl, { subscribe });
    clients.push(client);
    return client;
  }

  it('clients on node 1 and node 2 answer different questions of one request: both see the merged answers in one order; a dashboard on node 3 sees InputNeeded and back', async () => {
    const dashboard = await open(2, ['ahp-root://']);
    const a = await open(0);
    const b = await open(1);
    const { session, chat } = await a.createSession('across nodes');
    await a.subscribe(chat);
    await subscribeWhenKnown(b, chat);
    await dashboard.waitForNotification((n) => n.method === 'root/sessionAdded' && (n.params['summary'] as { resource: string }).resource === session, 'session added on node 3');

    await startScriptTurn(a, chat, [{ ask: TWO_QUESTION_REQUEST }, { sleep: 60_000 }]);
    await b.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/inputRequested', 'input request on node 2');
    await dashboard.waitForNotification(
      (n) => n.method === 'root/sessionSummaryChanged' && n.params['session'] === session && activity((n.params['changes'] as { status?: number }).status ?? 0) === INPUT_NEEDED,
      'root InputNeeded on node 3',
    );

    const [fromA, fromB] = await Promise.all([
      a.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: 'req-1', questionId: 'runtime', answer: { state: 'submitted', value: { kind: 'selected', value: 'node' } } }),
      b.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: 'req-1', questionId: 'notes', answer: { state: 'submitted', value: { kind: 'text', value: 'from node 2' } } }),
    ]);
    expect(fromA.rejectionReason).toBeUndefined();
    expect(fromB.rejectionReason).toBeUndefined();

    const merged = {
      runtime: { state: 'submitted', value: { kind: 'selected', value: 'node' } },
      notes: { state: 'submitted', value: { kind: 'text', value: 'from node 2' } },
    };
    for (const client of [a, b]) {
      await client.waitForEnvelope((e) => e.serverSeq === Math.max(fromA.serverSeq, fromB.serverSeq), 'both answers');
      const snap = await client.subscribe<ChatLike>(chat);
      expect(snap.state.activeTurn!.responseParts.find((p) => p.kind === 'inputRequest')!.request!.answers).toEqual(merged);
    }
    const stream = (c: RpcClient): Array<[number, string]> => c.envelopes.filter((e: ActionEnvelope) => e.channel === chat && e.serverSeq <= Math.max(fromA.serverSeq, fromB.serverSeq)).map((e) => [e.serverSeq, e.action.type]);
    const fromRequest = (list: Array<[number, string]>): Array<[number, string]> => list.slice(list.findIndex(([, t]) => t === 'chat/inputRequested'));
    expect(fromRequest(stream(a))).toEqual(fromRequest(stream(b)));
    expect(stream(b).map(([s]) => s)).toEqual([...stream(b).map(([s]) => s)].sort((x, y) => x - y));

    const done = await b.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'accept' });
    expect(done.rejectionReason).toBeUndefined();
    await dashboard.waitForNotification(
      (n) => n.method === 'root/sessionSummaryChanged' && n.params['session'] === session && activity((n.params['changes'] as { status?: number }).status ?? 0) === IN_PROGRESS,
      'root back to InProgress on node 3',
    );
    // The same request answered again from node 1 after node 2 completed it: a stale requestId.
    const stale = await a.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'accept' });
    expect(stale.rejectionReason).toMatch(/req-1/);
  });
  it('push notifications are refused by name in cluster mode (501 push_unavailable), not half-served', async () => {
    for (const path of ['/api/push/key', '/api/push/subscriptions']) {
      const res = await fetch(fx.cluster.nodes[0]!.url + path);
      expect(res.status).toBe(501);
      expect(await res.json()).toMatchObject({ code: 'push_unavailable' });
    }
  });

  it('a client moving to another node right after seeing an action gets a replay from its cursor (the node catches up first), never an older snapshot', async () => {
    const a = await open(0);
    const { chat } = await a.createSession('move');
    await a.subscribe(chat);
    for (let i = 0; i < 20; i++) a.dispatch(chat, { type: 'chat/pendingMessageSet', kind: 'queued', id: `m${i}`, message: { text: `m${i}`, origin: { kind: 'user' } } });
    const last = await a.waitForEnvelope((e) => e.action['id'] === 'm19', 'the last echo');
    await a.close();
    // Straight to node 3, which may not have folded the session or the last actions yet.
    const moved = await RpcClient.open(fx.cluster.nodes[2]!.wsUrl, { clientId: a.clientId });
    clients.push(moved);
    // The epoch node 1 told its clients: every node answers the partition's one epoch, so the
    // cursor stays of this history and the replay holds (docs/continuity.md#epoch).
    const probe = await RpcClient.connect(fx.cluster.nodes[0]!.wsUrl);
    clients.push(probe);
    const epoch = ((await probe.initialize()) as { _meta?: Record<string, unknown> })._meta?.['hub/epoch'];
    expect(epoch).toEqual(expect.any(String));
    const result = await moved.request<ReconnectResult>('reconnect', { channel: 'ahp-root://', clientId: a.clientId, lastSeenServerSeq: last.serverSeq, subscriptions: [chat], _meta: { 'hub/epoch': epoch } });
    expect(result).toMatchObject({ type: 'replay', actions: [], missing: [] });
    expect((result as { _meta?: Record<string, unknown> })._meta?.['hub/epoch']).toBe(epoch);
    // Live from there on: the next action from node 1 reaches it.
    const b = await open(0);
    const next = await b.dispatchAndWait(chat, { type: 'chat/pendingMessageSet', kind: 'queued', id: 'after', message: { text: 'after', origin: { kind: 'user' } } });
    expect(next.rejectionReason).toBeUndefined();
    await moved.waitForEnvelope((e) => e.serverSeq === next.serverSeq, 'the next action on node 3');
  });
});
