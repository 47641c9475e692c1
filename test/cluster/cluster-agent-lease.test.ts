/**
 * Side effects at most once: a session's in-process agent runs on the one node that sequenced the
 * turn start (its lease in PostgreSQL); when that node is SIGKILLed, the lease expires, another
 * node claims it and ends the interrupted turn with `chat/error` (hubNodeLost).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startScriptTurn } from '../helpers/turns.js';
import { clusterPerFile, subscribeWhenKnown } from './cluster.js';

describe('agent lease across nodes', () => {
  beforeAll(() => {
    // Short lease so the test waits about a second, not five (the hub's children inherit this).
    process.env['HUB_AGENT_LEASE_TTL_MS'] = '1000';
  });
  const fx = clusterPerFile(3);
  const clients = fx.clients;
  afterAll(async () => {
    delete process.env['HUB_AGENT_LEASE_TTL_MS'];
  });

  it('the agent runs once, on the node that started the turn; when that node dies the turn ends as chat/error with a clear reason', async () => {
    const [n1, n2, n3] = fx.cluster.nodes;
    const starter = await RpcClient.open(n1!.wsUrl);
    const watcher = await RpcClient.open(n2!.wsUrl);
    const other = await RpcClient.open(n3!.wsUrl);
    clients.push(starter, watcher, other);
    const { chat } = await starter.createSession('lease');
    await starter.subscribe(chat);
    await subscribeWhenKnown(watcher, chat);
    await subscribeWhenKnown(other, chat);

    const turnId = await startScriptTurn(starter, chat, [{ say: 'said exactly once' }, { sleep: 60_000 }]);
    await watcher.waitForEnvelope((e) => e.action.type === 'chat/responsePart' || e.action.type === 'chat/delta', 'the agent speaking');
    const snap = await watcher.subscribe<{ activeTurn?: { id: string; responseParts: Array<{ kind: string; content?: string }> } }>(chat);
    expect(snap.state.activeTurn?.id).toBe(turnId);
    // Three nodes saw the turn start; only one ran the agent.
    const said = snap.state.activeTurn!.responseParts.filter((p) => p.kind === 'markdown');
    expect(said).toHaveLength(1);
    expect(said[0]!.content).toBe('said exactly once');

    n1!.child.kill('SIGKILL');
    await n1!.exited();
    const ended = await watcher.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/error', 'the orphaned turn to end');
    expect(ended.action).toMatchObject({ turnId, error: { errorType: 'hubNodeLost', message: expect.stringMatching(/hub process running this turn stopped/) } });
    // Ended once, by one node, seen the same way on every surviving node.
    await other.waitForEnvelope((e) => e.serverSeq === ended.serverSeq, 'the same end on node 3');
    const final = await other.subscribe<{ activeTurn?: unknown; turns: Array<{ id: string }> }>(chat);
    expect(final.state.activeTurn).toBeUndefined();
    expect(final.state.turns.map((t) => t.id)).toEqual([turnId]);
    expect(watcher.envelopes.filter((e) => e.action.type === 'chat/error')).toHaveLength(1);
  });
});
