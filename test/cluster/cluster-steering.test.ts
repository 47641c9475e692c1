/**
 * Steering across nodes: the turn's agent runs on node 1, the steering input is submitted over
 * HTTP to node 2; the agent on node 1 consumes it at its next barrier, and node 2's receipt says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { answer, askStep, SteeringHttp, waitForOpenRequest, waitForTurnEnd } from '../cli/steering-support.js';
import { startCluster, subscribeWhenKnown, type Cluster } from './cluster.js';

describe('steering inputs across nodes', () => {
  let cluster: Cluster;
  const clients: RpcClient[] = [];
  beforeAll(async () => {
    cluster = await startCluster(2);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await cluster?.stop();
  });

  it('an input sent to node 2 for a turn running on node 1 is consumed by that turn, and node 2 reports the receipt as consumed', async () => {
    const [n1, n2] = cluster.nodes;
    const alice = await RpcClient.open(n1!.wsUrl);
    const bob = await RpcClient.open(n2!.wsUrl);
    clients.push(alice, bob);
    const { session, chat } = await alice.createSession('steer');
    await alice.subscribe(chat);
    await subscribeWhenKnown(bob, chat);
    const turnId = await startScriptTurn(alice, chat, [askStep('ask-1'), { say: 'after the question' }]);
    await waitForOpenRequest(bob, chat, 'ask-1');

    const viaNode2 = new SteeringHttp(n2!.url);
    const target = await waitFor(async () => ((await viaNode2.target(session)) ?? undefined), { what: 'node 2 to know the running turn' });
    expect(target.turnId).toBe(turnId);
    const submitted = await viaNode2.submit(session, { inputId: 'from-node-2', target, content: { text: 'steer from node 2' } });
    expect(submitted.status).toBe(202);
    expect(submitted.body['outcome']).toBe('accepted');

    await answer(alice, chat, 'ask-1');
    const ended = await waitForTurnEnd(bob, chat, turnId);
    // Consumed once, as a user message inside the turn, by the agent on node 1.
    const consumed = (ended.responseParts as Array<{ kind: string; message?: { text?: string } }>).filter((p) => p.kind === 'userMessage');
    expect(consumed.map((p) => p.message?.text)).toEqual(['steer from node 2']);
    const receipt = await waitFor(async () => {
      const r = await viaNode2.status(session, 'from-node-2', target);
      return (r.body['receipt'] as { state?: string } | undefined)?.state === 'consumed' ? r : undefined;
    }, { what: 'the receipt on node 2 to say consumed' });
    expect(receipt.status).toBe(200);
    // Node 2 took the pending steering message down once the input was consumed.
    await waitFor(async () => {
      const view = await bob.subscribe<{ steeringMessages?: unknown[] }>(chat);
      return (view.state.steeringMessages ?? []).length === 0 ? true : undefined;
    }, { what: 'the steering message to be removed' });
  });
});
