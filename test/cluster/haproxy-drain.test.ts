/**
 * Drain (docs/cluster.md): SIGTERM on the node that runs an agent's streaming turn, with SDK
 * clients on every node through the real HAProxy. The node answers /healthz with 503 (HAProxy
 * takes it out), closes its sockets with 4012 (its clients reconnect at once, through the proxy,
 * to another node), hands the turn's agent lease over — another node resumes the same turn with
 * the agent's session (the demo agent's replay): no `hubNodeLost` error, every part said once, the
 * turn completes — and exits 0. Every acknowledged action is in the final state.
 */
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { RECONNECT_NOW_CLOSE_CODE } from '../../shared/protocol/close-codes.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { connectionsOn, subscribeWhenKnown } from './cluster.js';
import { STREAM_PARTS, drain, proxiedClusterPerFile, proxySaid, saidIn, streamingScript } from './proxied.js';
import { SdkWriter } from './sdk-writer.js';

describe('drain: SIGTERM on a node behind HAProxy', () => {
  beforeAll(() => {
    // Leases renewed (and handed-over ones claimed) every 500 ms; the hub's children inherit this.
    process.env['HUB_AGENT_LEASE_TTL_MS'] = '2000';
  });
  const fx = proxiedClusterPerFile();
  afterAll(() => {
    delete process.env['HUB_AGENT_LEASE_TTL_MS'];
  });

  it('the node leaves the proxy (503), its clients reconnect at once elsewhere, its agent turn resumes on another node with its session, and it exits 0', async () => {
    const [n1, n2] = fx.cluster.nodes;
    // The turn starts on node 1, so node 1 runs the agent.
    const starter = await RpcClient.open(n1!.wsUrl);
    const watcher = await RpcClient.open(n2!.wsUrl);
    fx.clients.push(starter, watcher);
    const { chat } = await starter.createSession('drain-stream');
    await starter.subscribe(chat);
    await subscribeWhenKnown(watcher, chat);

    for (let i = 0; i < 6; i++) {
      const w = await SdkWriter.open(`d${i}`, fx.proxy.wsUrl);
      fx.writers.push(w);
      await w.createChat();
    }
    const onNode1 = await connectionsOn(n1!);
    expect(onNode1).toBeGreaterThanOrEqual(2); // the starter and at least one writer

    const turnId = await startScriptTurn(starter, chat, streamingScript('stream'));
    const runs = fx.writers.map((w) => w.run(60));
    await watcher.waitForEnvelope((e) => e.action.type === 'chat/delta' && JSON.stringify(e.action).includes('part 4 of'), 'the agent streaming');

    const downs = proxySaid(fx.proxy, 'hub-1', 'DOWN');
    const drained = await drain(n1!);
    expect(drained.healthDuringDrain, '/healthz while draining').toBe(503);
    expect(drained.exit).toEqual({ code: 0, signal: null });
    await waitFor(() => (proxySaid(fx.proxy, 'hub-1', 'DOWN') > downs ? true : undefined), { what: 'HAProxy to take hub-1 out', timeoutMs: 5_000 });

    // Its SDK clients were told to reconnect at once, and are back through the proxy.
    const moved = fx.writers.filter((w) => w.closeCodes.includes(RECONNECT_NOW_CLOSE_CODE));
    expect(moved.length).toBe(onNode1 - 1);
    await waitFor(() => (moved.every((w) => w.client.connectionState === 'open' && w.reopened.length > 0) ? true : undefined), { what: "the drained node's clients back", timeoutMs: 5_000 });
    expect(starter.closed).toBe(true);

    // The turn carries on elsewhere and completes: nothing said twice, nothing missing, no error.
    const done = await waitFor(() => watcher.envelopes.find((e) => e.channel === chat && (e.action.type === 'chat/turnComplete' || e.action.type === 'chat/error')), {
      what: 'the turn to end',
      timeoutMs: 40_000,
    });
    expect(done.action).toMatchObject({ type: 'chat/turnComplete', turnId });
    const final = (await watcher.subscribe<ChatState>(chat)).state;
    expect(saidIn(final, turnId)).toEqual(Array.from({ length: STREAM_PARTS }, (_, i) => `stream part ${i + 1} of ${STREAM_PARTS}.`));

    await Promise.all(runs);
    for (const w of fx.writers) {
      expect(w.refused, w.name).toEqual([]);
      const state = (await subscribeWhenKnown<{ queuedMessages?: Array<{ id: string }> }>(watcher, w.chat)).state;
      const inState = new Set((state.queuedMessages ?? []).map((m) => m.id));
      expect(w.echoed.size).toBe(60);
      for (const id of w.echoed) expect(inState.has(id), id).toBe(true);
    }
  }, 120_000);
});
