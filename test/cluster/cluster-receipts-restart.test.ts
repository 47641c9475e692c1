/**
 * Steering receipts survive a restart of every cluster node (docs/continuity.md, "Steering
 * receipts"): two real hub processes on one real PostgreSQL database; receipts in every state are
 * made through node A, read on both nodes, then node A is SIGKILLed and node B stopped with
 * SIGTERM, and two fresh nodes start on the same database. Both answer every receipt id with
 * exactly the receipt from before, name the same target, and an input consumed afterwards (through
 * the other node) reads consumed on both.
 *
 * The session's agent is remote (the test client plays it in dev mode). The agent lease TTL is
 * long so that no node ends the running turn as orphaned while the test runs: ending orphaned
 * turns is cluster-failover.test.ts's subject; here the turn must stay as it was.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { freshDatabase } from '../helpers/postgres.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { chatState, SteeringHttp, type Target } from '../cli/steering-support.js';
import { subscribeWhenKnown } from './cluster.js';

const nodes: HubProcess[] = [];
const clients: RpcClient[] = [];
let dropDatabase: (() => Promise<void>) | undefined;

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const n of nodes.splice(0)) n.child.kill('SIGKILL');
  await dropDatabase?.();
  dropDatabase = undefined;
});

async function startNode(storeUrl: string): Promise<HubProcess> {
  const node = await startHubProcess(['--store', storeUrl, '--log-level', 'warn'], { env: { HUB_AGENT_LEASE_TTL_MS: '600000' } });
  nodes.push(node);
  return node;
}

async function open(node: HubProcess): Promise<RpcClient> {
  const c = await RpcClient.open(node.wsUrl);
  clients.push(c);
  return c;
}

async function ok(c: RpcClient, chat: string, action: Record<string, unknown>): Promise<void> {
  expect((await c.dispatchAndWait(chat, action)).rejectionReason).toBeUndefined();
}

/** Every held receipt as `node` answers it (waiting until the node has folded it: a fresh node catches up first). */
async function readAll(node: HubProcess, session: string, held: ReadonlyArray<{ inputId: string; target: Target }>): Promise<Record<string, unknown>> {
  const http = new SteeringHttp(node.url);
  const out: Record<string, unknown> = {};
  for (const { inputId, target } of held) {
    const r = await http.status(session, inputId, target);
    expect(r.status, `receipt ${inputId} on ${node.url}: ${JSON.stringify(r.body)}`).toBe(200);
    out[inputId] = r.body['receipt'];
  }
  return out;
}

describe('steering receipts across a restart of every cluster node', () => {
  it('receipts made on node A answer the same on both nodes after every node was restarted (SIGKILL and SIGTERM)', async () => {
    const db = await freshDatabase('receipts');
    dropDatabase = db.drop;
    const a = await startNode(db.url);
    const b = await startNode(db.url);
    const alice = await open(a);
    const session = 'ahp-session:/cluster-receipts';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote' });
    await alice.subscribe(chat);
    const viaA = new SteeringHttp(a.url);
    const submit = async (inputId: string, target: Target) => {
      const r = await viaA.submit(session, { inputId, target, content: { text: `text of ${inputId}` } });
      expect(r.status, `submit ${inputId}`).toBe(202);
    };
    const consume = async (c: RpcClient, turnId: string, inputId: string) => {
      const steering = (await chatState(c, chat)).steeringMessages?.find((m) => m.id === `hub-input:${inputId}`);
      expect(steering, `pending steering message of ${inputId}`).toBeDefined();
      await ok(c, chat, { type: 'chat/responsePart', turnId, part: { kind: 'userMessage', id: `took-${inputId}`, message: steering!.message } });
    };

    // Turn 1 ends: a1 consumed, a2 closed. Turn 2 runs: b1 accepted, b2 cancelled by the client.
    await ok(alice, chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: new Date().toISOString(), message: userMessage('first') });
    const t1 = (await viaA.target(session))!;
    await submit('a1', t1);
    await submit('a2', t1);
    await consume(alice, 't1', 'a1');
    await ok(alice, chat, { type: 'chat/turnComplete', turnId: 't1', duration: 5 });
    await ok(alice, chat, { type: 'chat/turnStarted', turnId: 't2', startedAt: new Date().toISOString(), message: userMessage('second') });
    const t2 = (await viaA.target(session))!;
    await submit('b1', t2);
    await submit('b2', t2);
    await ok(alice, chat, { type: 'chat/steeringMessageRemoved', id: 'hub-input:b2' });
    const held = [...['a1', 'a2'].map((inputId) => ({ inputId, target: t1 })), ...['b1', 'b2'].map((inputId) => ({ inputId, target: t2 }))];
    const before = await readAll(a, session, held);
    expect(Object.values(before).map((r) => (r as { state: string }).state)).toEqual(['consumed', 'closed', 'accepted', 'cancelled']);
    // Node B answers the same already (it folds every record; the status route waits for the write turn).
    expect(await readAll(b, session, held)).toEqual(before);

    // Every node goes: A is killed, B drains and exits.
    a.child.kill('SIGKILL');
    b.child.kill('SIGTERM');
    await Promise.all([a.exited(), b.exited()]);
    const c = await startNode(db.url);
    const d = await startNode(db.url);
    for (const node of [c, d]) {
      expect(await readAll(node, session, held), `receipts on ${node.url}`).toEqual(before);
      expect(await new SteeringHttp(node.url).target(session)).toEqual(t2);
    }

    // The agent takes b1 through node D; both nodes answer it consumed, and b2 stays cancelled.
    const agent = await open(d);
    await subscribeWhenKnown(agent, chat);
    await consume(agent, 't2', 'b1');
    for (const node of [c, d]) {
      const now = await waitFor(
        async () => {
          const r = await readAll(node, session, held);
          return (r['b1'] as { state: string }).state === 'consumed' ? r : undefined;
        },
        { what: `b1 consumed on ${node.url}` },
      );
      expect(now['b1']).toMatchObject({ state: 'consumed', revision: 2, ordinal: 1, acceptedAt: (before['b1'] as { acceptedAt: string }).acceptedAt });
      expect({ ...now, b1: undefined }).toEqual({ ...before, b1: undefined });
    }
  }, 120_000);
});
