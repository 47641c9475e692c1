/**
 * Failover: a hub process is SIGKILLed while clients on every node keep dispatching; the killed
 * node's clients reconnect to another node (same clientId, `reconnect` from their last seen
 * serverSeq, then re-send what was not echoed with the same clientSeq) and everyone converges.
 * Every action any client saw echoed is in the final state, and in the log exactly once.
 */
import { describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { clusterPerFile, headOf, queuedMessageCountsInLog, subscribeWhenKnown } from './cluster.js';
import { Writer } from './writer.js';

describe('SIGKILL a node under load', () => {
  const fx = clusterPerFile(3);
  const clients = fx.clients;

  it('its clients reconnect to another node and converge; every echoed action is in the final state, none twice', async () => {
    const [n1, n2, n3] = fx.cluster.nodes as [(typeof fx.cluster.nodes)[0], (typeof fx.cluster.nodes)[0], (typeof fx.cluster.nodes)[0]];
    const owner = await RpcClient.open(n1!.wsUrl);
    clients.push(owner);
    // One chat per writer: a chat holds at most 100 queued messages.
    const writers: Writer[] = [];
    for (const [index, node] of [n1, n2, n3, n1, n2, n3].entries()) {
      const { chat } = await owner.createSession(`failover-${index}`);
      const client = await RpcClient.open(node!.wsUrl);
      clients.push(client);
      await subscribeWhenKnown(client, chat);
      writers.push(new Writer(`w${index}`, client, chat));
    }
    const PER_WRITER = 60;
    const runs = writers.map((w) => w.run(PER_WRITER));

    // Under load: kill node 3 once a third of the work is echoed.
    await waitFor(() => (writers.reduce((n, w) => n + w.echoed.size, 0) >= (PER_WRITER * writers.length) / 3 ? true : undefined), { what: 'load', timeoutMs: 20_000 });
    n3!.child.kill('SIGKILL');
    expect((await n3!.exited()).signal).toBe('SIGKILL');
    const orphans = writers.filter((w) => w.client.ws.url.startsWith(n3!.wsUrl));
    expect(orphans).toHaveLength(2);
    await waitFor(() => (orphans.every((w) => w.client.closed) ? true : undefined), { what: 'orphans to notice' });
    for (const [i, w] of orphans.entries()) {
      await w.moveTo([n1, n2][i]!.wsUrl);
      clients.push(w.client);
    }
    await Promise.all(runs);

    const allEchoed = writers.flatMap((w) => [...w.echoed]);
    expect(allEchoed).toHaveLength(PER_WRITER * writers.length);

    // Both survivors converge on one head and one state holding every echoed action.
    const heads = async (): Promise<number[]> => Promise.all([n1!, n2!].map(headOf));
    await waitFor(
      async () => {
        const [a, b] = await heads();
        return a === b ? true : undefined;
      },
      { what: 'survivors at one head' },
    );
    for (const w of writers) {
      // Each writer's chat as node 1 and node 2 see it (writers 0 and 1 are connected there).
      const snaps = await Promise.all([writers[0]!, writers[1]!].map((reader) => reader.client.subscribe<{ queuedMessages?: Array<{ id: string }> }>(w.chat)));
      expect(snaps[1]).toEqual(snaps[0]);
      const inState = new Set((snaps[0]!.state.queuedMessages ?? []).map((m) => m.id));
      for (const id of w.echoed) expect(inState.has(id), id).toBe(true);
    }

    // In the log exactly once each.
    const counts = await queuedMessageCountsInLog(fx.cluster.storeUrl);
    for (const id of allEchoed) expect(counts.get(id), id).toBe(1);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });
});
