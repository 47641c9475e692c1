/**
 * Steering across nodes: every node folds every steering action into its book, so an input
 * accepted on one node is consumed by the turn's agent on another, ordinals and the quota are the
 * cluster's (decided under the write turn), and any node answers a receipt, also after the
 * accepting node died.
 */
import { describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { answer, askStep, chatState, SteeringHttp, waitForOpenRequest, waitForTurnEnd } from '../cli/steering-support.js';
import { clusterPerFile, subscribeWhenKnown } from './cluster.js';

describe('steering inputs across nodes', () => {
  const fx = clusterPerFile(2);
  const clients = fx.clients;

  it('an input sent to node 2 for a turn running on node 1 is consumed by that turn, and node 2 reports the receipt as consumed', async () => {
    const [n1, n2] = fx.cluster.nodes;
    const alice = await RpcClient.open(n1!.wsUrl);
    const bob = await RpcClient.open(n2!.wsUrl);
    clients.push(alice, bob);
    const { session, chat } = await alice.createSession('steer');
    await alice.subscribe(chat);
    await subscribeWhenKnown(bob, chat);
    const turnId = await startScriptTurn(alice, chat, [askStep('ask-1'), { say: 'after the question' }]);
    await waitForOpenRequest(bob, chat, 'ask-1');

    const viaNode2 = new SteeringHttp(n2!.url);
    const target = await waitFor(async () => (await viaNode2.target(session)) ?? undefined, { what: 'node 2 to know the running turn' });
    expect(target.turnId).toBe(turnId);
    const submitted = await viaNode2.submit(session, { inputId: 'from-node-2', target, content: { text: 'steer from node 2' } });
    expect(submitted.status).toBe(202);
    expect(submitted.body['outcome']).toBe('accepted');

    await answer(alice, chat, 'ask-1');
    const ended = await waitForTurnEnd(bob, chat, turnId);
    // Consumed once, as a user message inside the turn, by the agent on node 1.
    const consumed = (ended.responseParts as Array<{ kind: string; message?: { text?: string } }>).filter((p) => p.kind === 'userMessage');
    expect(consumed.map((p) => p.message?.text)).toEqual(['steer from node 2']);
    const receipt = await waitFor(
      async () => {
        const r = await viaNode2.status(session, 'from-node-2', target);
        return (r.body['receipt'] as { state?: string } | undefined)?.state === 'consumed' ? r : undefined;
      },
      { what: 'the receipt on node 2 to say consumed' },
    );
    expect(receipt.status).toBe(200);
    // Node 2 took the pending steering message down once the input was consumed.
    await waitFor(
      async () => {
        const view = await bob.subscribe<{ steeringMessages?: unknown[] }>(chat);
        return (view.state.steeringMessages ?? []).length === 0 ? true : undefined;
      },
      { what: 'the steering message to be removed' },
    );
  });
  it('inputs submitted concurrently on two nodes get distinct consecutive ordinals, and the per-turn quota holds for the whole cluster', async () => {
    const [n1, n2] = fx.cluster.nodes;
    const alice = await RpcClient.open(n1!.wsUrl);
    const bob = await RpcClient.open(n2!.wsUrl);
    clients.push(alice, bob);
    const { session, chat } = await alice.createSession('steer-race');
    await alice.subscribe(chat);
    await subscribeWhenKnown(bob, chat);
    const turnId = await startScriptTurn(alice, chat, [askStep('ask-1'), { say: 'after the question' }]);
    await waitForOpenRequest(bob, chat, 'ask-1');
    const via = [new SteeringHttp(n1!.url), new SteeringHttp(n2!.url)];
    const target = await waitFor(async () => (await via[1]!.target(session)) ?? undefined, { what: 'node 2 to know the running turn' });
    // Both nodes name the same target (the history epoch is the cluster's, not the process's).
    expect(await via[0]!.target(session)).toEqual(target);

    // 20 inputs on each node at once: 40 > the quota of 32.
    const ids = Array.from({ length: 40 }, (_, i) => `race-${i}`);
    const results = await Promise.all(ids.map((inputId, i) => via[i % 2]!.submit(session, { inputId, target, content: { text: `input ${i}` } })));
    const accepted = results.filter((r) => r.status === 202);
    const refused = results.filter((r) => r.status !== 202);
    expect(accepted).toHaveLength(32);
    expect(refused.map((r) => [r.status, r.body['code']])).toEqual(Array.from({ length: 8 }, () => [429, 'input_quota_exceeded']));
    const ordinals = accepted.map((r) => (r.body['receipt'] as { ordinal: number }).ordinal).sort((a, b) => a - b);
    expect(ordinals).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
    // Both nodes accepted some, and each receipt reads the same on the other node.
    const acceptedOn = (node: number) => ids.filter((_, i) => i % 2 === node && results[i]!.status === 202);
    expect(acceptedOn(0).length).toBeGreaterThan(0);
    expect(acceptedOn(1).length).toBeGreaterThan(0);
    for (const [i, r] of results.entries()) {
      if (r.status !== 202) continue;
      const other = await via[(i + 1) % 2]!.status(session, ids[i]!, target);
      expect(other.status).toBe(200);
      expect(other.body['receipt']).toMatchObject({ inputId: ids[i], ordinal: (r.body['receipt'] as { ordinal: number }).ordinal, state: 'accepted' });
    }

    await answer(alice, chat, 'ask-1');
    const ended = await waitForTurnEnd(bob, chat, turnId);
    const consumed = (ended.responseParts as Array<{ kind: string; message?: { _meta?: Record<string, { ordinal?: number }> } }>).filter((p) => p.kind === 'userMessage').map((p) => p.message?._meta?.['hub/userInput']?.ordinal);
    expect(consumed).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
  });

  it('a receipt is answered by another node, also after the accepting node was SIGKILLed, and by a node that started later', async () => {
    const [n1, n2] = fx.cluster.nodes;
    const alice = await RpcClient.open(n1!.wsUrl);
    clients.push(alice);
    const { session, chat } = await alice.createSession('steer-kill');
    await alice.subscribe(chat);
    const turnId = await startScriptTurn(alice, chat, [askStep('ask-1'), { say: 'after the question' }]);
    await waitForOpenRequest(alice, chat, 'ask-1');
    const viaNode2 = new SteeringHttp(n2!.url);
    const target = await waitFor(async () => (await viaNode2.target(session)) ?? undefined, { what: 'node 2 to know the running turn' });
    const submitted = await viaNode2.submit(session, { inputId: 'dies-with-node-2', target, content: { text: 'from a node that will die' } });
    expect(submitted.status).toBe(202);
    const original = submitted.body['receipt'] as { ordinal: number; acceptedAt: string };

    // Asked on node 1 over the WebSocket, right away: the same receipt.
    const onNode1 = await alice.request<{ receipt: Record<string, unknown> | null }>('x-input/status', { channel: session, inputId: 'dies-with-node-2', target });
    expect(onNode1.receipt).toMatchObject({ inputId: 'dies-with-node-2', ordinal: original.ordinal, state: 'accepted', source: 'http', acceptedAt: original.acceptedAt });

    n2!.child.kill('SIGKILL');
    await n2!.exited();
    const afterKill = await alice.request<{ receipt: Record<string, unknown> | null }>('x-input/status', { channel: session, inputId: 'dies-with-node-2', target });
    expect(afterKill.receipt).toMatchObject({ ordinal: original.ordinal, state: 'accepted' });
    // A retry of the same input on a surviving node is recognised, not accepted twice.
    const viaNode1 = new SteeringHttp(n1!.url);
    const retried = await viaNode1.submit(session, { inputId: 'dies-with-node-2', target, content: { text: 'from a node that will die' } });
    expect(retried.status).toBe(202);
    expect(retried.body).toMatchObject({ duplicate: true, receipt: { ordinal: original.ordinal } });

    // A node that starts now learns the input from the chat state it loads.
    const n3 = await fx.cluster.addNode();
    const viaNode3 = new SteeringHttp(n3.url);
    const onNode3 = await waitFor(
      async () => {
        const r = await viaNode3.status(session, 'dies-with-node-2', target);
        return r.status === 200 ? r : undefined;
      },
      { what: 'node 3 to answer the receipt', timeoutMs: 15_000 },
    );
    expect(onNode3.body['receipt']).toMatchObject({ ordinal: original.ordinal, state: 'accepted' });

    await answer(alice, chat, 'ask-1');
    const ended = await waitForTurnEnd(alice, chat, turnId);
    expect((ended.responseParts as Array<{ kind: string; message?: { text?: string } }>).filter((p) => p.kind === 'userMessage').map((p) => p.message?.text)).toEqual(['from a node that will die']);
    for (const via of [viaNode1, viaNode3]) {
      const r = await waitFor(
        async () => {
          const s = await via.status(session, 'dies-with-node-2', target);
          return (s.body['receipt'] as { state?: string } | undefined)?.state === 'consumed' ? s : undefined;
        },
        { what: `the receipt on ${via.baseUrl} to say consumed` },
      );
      expect(r.body['receipt']).toMatchObject({ ordinal: original.ordinal, revision: 2, state: 'consumed' });
    }
    // Nobody is left holding the pending steering message.
    expect((await chatState(alice, chat)).steeringMessages ?? []).toEqual([]);
  });
});
