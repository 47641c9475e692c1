/**
 * Three hub processes behind a real HAProxy run with deploy/haproxy.cfg (the compose profile's
 * file): SDK clients connect through the proxy (WebSocket upgrade), one node is SIGKILLed while
 * they dispatch; HAProxy's health checks on /healthz mark it down within seconds, every client
 * that was on it is back (reconnected through the proxy to a survivor) within 5 s of the kill,
 * and every action any client saw acknowledged is in the final state, and in the log once.
 */
import { describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { connectionsOn, headOf, queuedMessageCountsInLog, subscribeWhenKnown } from './cluster.js';
import { proxiedClusterPerFile } from './proxied.js';
import { SdkWriter } from './sdk-writer.js';

describe('three nodes behind HAProxy: SIGKILL one', () => {
  const fx = proxiedClusterPerFile();
  const writers = fx.writers;

  it('clients on the killed node are back through the proxy within 5 s; every acknowledged action is in the final state, once', async () => {
    const nodes = fx.cluster.nodes;
    for (let i = 0; i < 6; i++) {
      const w = await SdkWriter.open(`w${i}`, fx.proxy.wsUrl);
      writers.push(w);
      await w.createChat();
    }
    // leastconn spreads the six over the three nodes.
    const perNode = await Promise.all(nodes.map(connectionsOn));
    expect(perNode.reduce((a, b) => a + b, 0)).toBe(6);
    const victim = perNode.findIndex((n) => n > 0 && n === Math.max(...perNode));
    const killed = nodes[victim]!;
    const survivors = nodes.filter((n) => n !== killed);

    const PER_WRITER = 45;
    const runs = writers.map((w) => w.run(PER_WRITER));
    await waitFor(() => (writers.reduce((n, w) => n + w.echoed.size, 0) >= (PER_WRITER * writers.length) / 3 ? true : undefined), { what: 'load', timeoutMs: 30_000 });
    const killedAt = Date.now();
    killed.child.kill('SIGKILL');
    expect((await killed.exited()).signal).toBe('SIGKILL');

    // The clients that were on it noticed, and every one of them is open again through the proxy
    // within 5 s of the kill (a deadline poll: the assertion is the deadline).
    const orphans = await waitFor(
      () => {
        const lost = writers.filter((w) => w.lost.length > 0);
        return lost.length >= perNode[victim]! ? lost : undefined;
      },
      { what: "the killed node's clients to notice", timeoutMs: 5_000 },
    );
    expect(orphans).toHaveLength(perNode[victim]!);
    await waitFor(() => (orphans.every((w) => w.reopened.length > 0 && w.client.connectionState === 'open') ? true : undefined), {
      what: 'every client of the killed node to be back',
      timeoutMs: Math.max(0, killedAt + 5_000 - Date.now()),
    });
    for (const w of orphans) expect(w.reopened[0]! - killedAt).toBeLessThanOrEqual(5_000);
    // HAProxy's health checks took the node out within seconds.
    const name = `hub-${victim + 1}`;
    await waitFor(() => (new RegExp(`Server hubs/${name} is DOWN`).test(fx.proxy.output()) ? true : undefined), { what: `HAProxy to mark ${name} down`, timeoutMs: 5_000 });
    // The survivors now hold every client.
    const after = await Promise.all(survivors.map(connectionsOn));
    expect(after.reduce((a, b) => a + b, 0)).toBe(6);

    await Promise.all(runs);
    for (const w of writers) expect(w.refused, w.name).toEqual([]);
    const allEchoed = writers.flatMap((w) => [...w.echoed]);
    expect(allEchoed).toHaveLength(PER_WRITER * writers.length);

    // Both survivors converge on one head and one state holding every acknowledged action.
    await waitFor(
      async () => {
        const [a, b] = await Promise.all(survivors.map(headOf));
        return a === b ? true : undefined;
      },
      { what: 'survivors at one head' },
    );
    const readers = await Promise.all(survivors.map((n) => RpcClient.open(n.wsUrl)));
    fx.clients.push(...readers);
    for (const w of writers) {
      const snaps = await Promise.all(readers.map((r) => subscribeWhenKnown<{ queuedMessages?: Array<{ id: string }> }>(r, w.chat)));
      expect(snaps[1]!.state).toEqual(snaps[0]!.state);
      const inState = new Set((snaps[0]!.state.queuedMessages ?? []).map((m) => m.id));
      for (const id of w.echoed) expect(inState.has(id), id).toBe(true);
    }
    const counts = await queuedMessageCountsInLog(fx.cluster.storeUrl);
    for (const id of allEchoed) expect(counts.get(id), id).toBe(1);
  }, 120_000);
});
