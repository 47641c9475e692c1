/**
 * Collaborative answers across nodes: each node's Y.Doc of an open request is built from one
 * shared Yjs history (docs/cluster.md "Text merge across nodes"), and every node mirrors the text
 * into the same AHP draft. Presence travels on the cluster bus (PostgreSQL NOTIFY, never the log)
 * and expires with a node that stops. Concurrent typing: cluster-text-merge.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { Peer } from '../helpers/yjs-peer.js';
import { clusterPerFile, subscribeWhenKnown } from './cluster.js';

describe('Yjs collaboration across nodes', () => {
  const peers: Peer[] = [];
  const fx = clusterPerFile(2);
  const clients = fx.clients;
  afterAll(async () => {
    for (const p of peers.splice(0)) p.destroy();
  });

  it('text typed on node 1 reaches a Y.Doc on node 2 and back, and both end as the same AHP draft', async () => {
    const [n1, n2] = fx.cluster.nodes;
    const alice = await RpcClient.open(n1!.wsUrl);
    const bob = await RpcClient.open(n2!.wsUrl);
    clients.push(alice, bob);
    const { chat } = await alice.createSession('collab');
    await alice.subscribe(chat);
    await subscribeWhenKnown(bob, chat);
    await startScriptTurn(alice, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    await bob.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request on node 2');

    const a = await Peer.join(alice, chat, 'req-1');
    const b = await Peer.join(bob, chat, 'req-1');
    peers.push(a, b);
    a.text('notes').insert(0, 'hello from node 1');
    await waitFor(() => (b.text('notes').toString() === 'hello from node 1' ? true : undefined), { what: 'node 1 text on node 2', timeoutMs: 15_000 });
    b.text('notes').insert(b.text('notes').length, ', and node 2');
    await waitFor(() => (a.text('notes').toString() === 'hello from node 1, and node 2' ? true : undefined), { what: 'node 2 text on node 1', timeoutMs: 15_000 });

    const draftOn = async (c: RpcClient): Promise<unknown> => {
      const snap = await c.subscribe<{ activeTurn?: { responseParts: Array<{ kind: string; request?: { answers?: Record<string, { value?: { value?: unknown } }> } }> } }>(chat);
      return snap.state.activeTurn?.responseParts.find((p) => p.kind === 'inputRequest')?.request?.answers?.['notes']?.value?.value;
    };
    await waitFor(async () => ((await draftOn(alice)) === 'hello from node 1, and node 2' && (await draftOn(bob)) === 'hello from node 1, and node 2' ? true : undefined), { what: 'the same draft on both nodes' });
    expect(a.text('notes').toString()).toBe(b.text('notes').toString());
  });
  it("presence travels between nodes: each sees the other, a disconnect removes it, and a killed node's people expire", async () => {
    const [n1, n2] = fx.cluster.nodes;
    const alice = await RpcClient.open(n1!.wsUrl);
    const bob = await RpcClient.open(n2!.wsUrl);
    clients.push(alice, bob);
    const { chat } = await alice.createSession('presence');
    await alice.subscribe(chat);
    await subscribeWhenKnown(bob, chat);
    await startScriptTurn(alice, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    await bob.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request on node 2');

    const names = (p: Peer): string[] =>
      [...p.awareness.getStates().values()]
        .map((s) => String((s as { name?: unknown }).name))
        .filter((n) => n !== 'undefined')
        .sort();
    const a = await Peer.join(alice, chat, 'req-1');
    peers.push(a);
    a.awareness.setLocalState({ name: 'alice', editing: 'notes' });
    // Bob joins after Alice announced herself: his node asks the others, so he sees her at once.
    const b = await Peer.join(bob, chat, 'req-1');
    peers.push(b);
    b.awareness.setLocalState({ name: 'bob', editing: 'notes' });
    await waitFor(() => (names(b).join() === 'alice,bob' ? true : undefined), { what: 'bob (node 2) to see alice (node 1)', timeoutMs: 15_000 });
    await waitFor(() => (names(a).join() === 'alice,bob' ? true : undefined), { what: 'alice (node 1) to see bob (node 2)', timeoutMs: 15_000 });
    // The state arrives as the hub stamped it on the node the person is connected to.
    const seenAlice = [...b.awareness.getStates().values()].find((s) => (s as { name?: unknown }).name === 'alice') as { user?: { id?: unknown } };
    expect(seenAlice.user?.id).toEqual(expect.any(String));

    // Alice's connection closes: her presence disappears for Bob on the other node.
    await alice.close();
    await waitFor(() => (names(b).join() === 'bob' ? true : undefined), { what: 'alice to disappear on node 2', timeoutMs: 15_000 });

    // Carol on a third node, which is then SIGKILLed: nobody tells the others, her presence expires.
    const n3 = await fx.cluster.addNode();
    const carol = await RpcClient.open(n3.wsUrl);
    clients.push(carol);
    await subscribeWhenKnown(carol, chat);
    const c = await Peer.join(carol, chat, 'req-1');
    peers.push(c);
    c.awareness.setLocalState({ name: 'carol' });
    await waitFor(() => (names(b).join() === 'bob,carol' ? true : undefined), { what: 'bob to see carol (node 3)', timeoutMs: 15_000 });
    n3.child.kill('SIGKILL');
    await n3.exited();
    await waitFor(() => (names(b).join() === 'bob' ? true : undefined), { what: 'carol to expire on node 2 after node 3 died', timeoutMs: 15_000 });
  }, 60_000);
});
