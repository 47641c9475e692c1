/**
 * Steering receipts survive a restart of the real hub process (docs/continuity.md, "Steering
 * receipts"). Receipts in every state — consumed and closed in the last ended turn, accepted and
 * cancelled in the running one — are read, the hub is stopped with SIGTERM (it writes a final
 * snapshot, so the next start loads the receipts from the snapshot image) and later killed with
 * SIGKILL (the next start replays the records after that snapshot), and started again on the same
 * data dir each time: every receipt id answers exactly the same receipt, the target keeps its
 * history epoch, and an input consumed after a restart moves on to `consumed`.
 *
 * The session's agent is remote (the test client plays it, as a dev-mode admin may): its turn
 * stays open across a restart, and nothing consumes an input unless the test says so.
 */
import { describe, expect, it } from 'vitest';
import type { HubProcess } from '../helpers/hub-process.js';
import { RestartRig } from '../helpers/restart-rig.js';
import type { RpcClient } from '../helpers/rpc-client.js';
import { startTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { chatState, SteeringHttp, type Target } from '../cli/steering-support.js';

const rig = RestartRig.perTest();
const open = (hub: HubProcess) => rig.open(hub);

type Receipts = Record<string, unknown>;

/** Every receipt the test holds, as the hub answers it now (a 404 fails the test). */
async function readAll(http: SteeringHttp, session: string, held: ReadonlyArray<{ inputId: string; target: Target }>): Promise<Receipts> {
  const out: Receipts = {};
  for (const { inputId, target } of held) {
    const r = await http.status(session, inputId, target);
    expect(r.status, `receipt ${inputId}: ${JSON.stringify(r.body)}`).toBe(200);
    out[inputId] = r.body['receipt'];
  }
  return out;
}

async function ok(c: RpcClient, chat: string, action: Record<string, unknown>): Promise<void> {
  expect((await c.dispatchAndWait(chat, action)).rejectionReason).toBeUndefined();
}

/** The remote agent takes input `inputId`: the userMessage part naming it, with the pending message's content. */
async function consume(c: RpcClient, chat: string, turnId: string, inputId: string): Promise<void> {
  const steering = (await chatState(c, chat)).steeringMessages?.find((m) => m.id === `hub-input:${inputId}`);
  expect(steering, `pending steering message of ${inputId}`).toBeDefined();
  await ok(c, chat, { type: 'chat/responsePart', turnId, part: { kind: 'userMessage', id: `took-${inputId}`, message: steering!.message } });
}

describe('steering receipts survive a hub restart', () => {
  it('SIGTERM, then SIGKILL: every receipt id answers the same receipt, the target keeps its epoch, and an input consumed after a restart moves on', async () => {
    const args = ['--data', rig.dataDir('receipts-survive-')];
    let hub = await rig.start(args);
    let alice = await open(hub);
    const session = 'ahp-session:/durable-receipts';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote' });
    await alice.subscribe(chat);
    let http = new SteeringHttp(hub.url);
    const submit = async (inputId: string, target: Target) => {
      const r = await http.submit(session, { inputId, target, content: { text: `text of ${inputId}` } });
      expect(r.status, `submit ${inputId}`).toBe(202);
    };

    // Turn 1 (ends): a1 consumed by the agent, a2 closed when the turn completes.
    await startTurn(alice, chat, 'first', 't1');
    const t1 = (await http.target(session))!;
    await submit('a1', t1);
    await submit('a2', t1);
    await consume(alice, chat, 't1', 'a1');
    await ok(alice, chat, { type: 'chat/turnComplete', turnId: 't1', duration: 5 });
    // Turn 2 (keeps running): b1 and b3 accepted, b2 taken back by the client (cancelled).
    await startTurn(alice, chat, 'second', 't2');
    const t2 = (await http.target(session))!;
    for (const id of ['b1', 'b2', 'b3']) await submit(id, t2);
    await ok(alice, chat, { type: 'chat/steeringMessageRemoved', id: 'hub-input:b2' });
    const held = [...['a1', 'a2'].map((inputId) => ({ inputId, target: t1 })), ...['b1', 'b2', 'b3'].map((inputId) => ({ inputId, target: t2 }))];
    let before = await readAll(http, session, held);
    expect(Object.fromEntries(Object.entries(before).map(([id, r]) => [id, [(r as { state: string }).state, (r as { reason?: string }).reason]]))).toEqual({
      a1: ['consumed', undefined],
      a2: ['closed', 'turn_completed'],
      b1: ['accepted', undefined],
      b2: ['cancelled', 'removed_by_client'],
      b3: ['accepted', undefined],
    });
    const capsBefore = (await http.capabilities(session)).body;

    // SIGTERM: the same receipts (loaded from the final snapshot), the same target and retention.
    hub = await rig.restart(hub, 'SIGTERM', args);
    http = new SteeringHttp(hub.url);
    expect(await readAll(http, session, held)).toEqual(before);
    const capsAfter = (await http.capabilities(session)).body;
    expect(capsAfter['target']).toEqual(t2);
    expect(capsAfter['retention']).toEqual(capsBefore['retention']);
    expect(capsAfter['durableReceipts']).toBe(true);
    // A retry of an input the restart kept is recognised, not accepted twice.
    const retry = await http.submit(session, { inputId: 'b1', target: t2, content: { text: 'text of b1' } });
    expect(retry.body).toMatchObject({ duplicate: true, receipt: before['b1'] });

    // The agent comes back and takes b1: it moves on to consumed, and its pending message goes.
    alice = await open(hub);
    await alice.subscribe(chat);
    await consume(alice, chat, 't2', 'b1');
    before = await readAll(http, session, held);
    expect(before['b1']).toMatchObject({ state: 'consumed', revision: 2, ordinal: 1 });
    await waitFor(async () => ((await chatState(alice, chat)).steeringMessages?.some((m) => m.id === 'hub-input:b1') ? undefined : true), { what: 'b1 to leave the steering list' });

    // SIGKILL: nothing flushed on the way out, the records after the snapshot are replayed.
    hub = await rig.restart(hub, 'SIGKILL', args);
    http = new SteeringHttp(hub.url);
    expect(await readAll(http, session, held)).toEqual(before);
    expect(await http.target(session)).toEqual(t2);

    // After the second restart b3 is consumed and the turn ends: b3 consumed, b1 and b2 unchanged.
    alice = await open(hub);
    await alice.subscribe(chat);
    await consume(alice, chat, 't2', 'b3');
    await ok(alice, chat, { type: 'chat/turnComplete', turnId: 't2', duration: 5 });
    const turn2 = held.filter((h) => h.target === t2);
    const after = await readAll(http, session, turn2);
    expect(after['b3']).toMatchObject({ state: 'consumed', revision: 2, ordinal: 3, acceptedAt: (before['b3'] as { acceptedAt: string }).acceptedAt });
    expect({ ...after, b3: undefined }).toEqual({ b1: before['b1'], b2: before['b2'], b3: undefined });
    const turn = (await chatState(alice, chat)).turns.find((t) => t.id === 't2')!;
    expect(turn.responseParts.filter((p) => p.kind === 'userMessage').map((p) => p.message!.text)).toEqual(['text of b1', 'text of b3']);
    // Turn 1 is two turns back now: outside the retention window (docs/limits.md), as before restarts existed.
    expect((await http.status(session, 'a1', t1)).status).toBe(404);
  }, 120_000);
});
