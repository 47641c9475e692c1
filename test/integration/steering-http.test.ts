/**
 * Seed 003 over real HTTP: the three v2 routes, their status codes and error bodies, receipts,
 * idempotent retry, retention, quota and tenancy. Numbers in test names are seed-checklist items.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSteeringFeature } from '../../server/steering/feature.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { SseClient } from '../helpers/sse.js';
import { answer, askStep, chatState, SteeringHttp, waitForOpenRequest, waitForTurnEnd, type Target } from '../cli/steering-support.js';
import { collabFeature } from '../../server/collab/feature.js';
import { interactionsFeature } from '../../server/interactions/feature.js';

describe('steering over HTTP', () => {
  let server: TestServer;
  let alice: RpcClient;
  let http: SteeringHttp;
  const clients: RpcClient[] = [];

  beforeEach(async () => {
    server = await startTestServer({ withAuth: true });
    alice = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
    clients.push(alice);
    http = new SteeringHttp(server.url, TOKENS.alice);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await server.stop();
  });

  /** A session whose demo agent is blocked on `ask-1` (between two barriers). */
  async function runningTurn(): Promise<{ session: string; chat: string; turnId: string; target: Target }> {
    const { session, chat } = await alice.createSession();
    await alice.subscribe(chat);
    const turnId = await startScriptTurn(alice, chat, [askStep('ask-1'), { say: 'after the question' }]);
    await waitForOpenRequest(alice, chat, 'ask-1');
    const target = await http.target(session);
    expect(target).toEqual({ historyEpoch: expect.any(String), turnId });
    return { session, chat, turnId, target: target! };
  }

  it('8/33: capabilities report version 1, text + blocks, memory ack only, no durable ack, no images, durable receipts, the target and the retention range', async () => {
    const { session } = await alice.createSession();
    const idle = await http.capabilities(session);
    expect(idle.status).toBe(200);
    expect(idle.body).toMatchObject({
      version: 1,
      durableAck: false,
      image: false,
      content: ['text', 'blocks'],
      blockTypes: ['text'],
      ack: ['memory'],
      defaultAck: 'memory',
      durability: 'log',
      durableReceipts: true,
      target: null,
      retention: { turns: ['current', 'lastEnded'], current: null, lastEnded: null },
      quotaPerTurn: 32,
    });
  });

  it('9: the target is {historyEpoch, turnId} of the running turn and null when idle; a closed target is not replaced by a newer turn', async () => {
    const { session, chat, turnId, target } = await runningTurn();
    expect(target.turnId).toBe(turnId);
    await answer(alice, chat, 'ask-1');
    await waitForTurnEnd(alice, chat, turnId);
    expect(await http.target(session)).toBeNull();
    const caps = await http.capabilities(session);
    expect((caps.body['retention'] as { lastEnded: Target }).lastEnded).toEqual(target);
    // A new turn has a new target; the old one stays closed (409), never redirected.
    const next = await startScriptTurn(alice, chat, [askStep('ask-2')]);
    await waitForOpenRequest(alice, chat, 'ask-2');
    const t2 = await http.target(session);
    expect(t2).toEqual({ historyEpoch: target.historyEpoch, turnId: next });
    const late = await http.submit(session, { inputId: 'late', target, content: { text: 'too late' } });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ outcome: 'closed', code: 'turn_closed' });
    expect((await http.status(session, 'late', t2!)).status).toBe(404);
  });

  it('4/10/12/34/37: a submit is 202 {outcome: accepted, receipt} with every receipt field (id, session, epoch, turn, ordinal 1, revision 1, source http, state accepted, durability log, no reason)', async () => {
    const { session, turnId, target } = await runningTurn();
    const r = await http.submit(session, { inputId: 'ui-001', target, content: { text: 'also check the renewal clause' }, ack: 'memory' });
    expect(r.status).toBe(202);
    expect(r.body['outcome']).toBe('accepted');
    expect(r.body['receipt']).toMatchObject({
      inputId: 'ui-001',
      sessionId: SteeringHttp.idOf(session),
      historyEpoch: target.historyEpoch,
      turnId,
      ordinal: 1,
      revision: 1,
      source: 'http',
      state: 'accepted',
      durability: 'log',
    });
    expect(r.body['receipt']).not.toHaveProperty('reason');
  });

  it('5: {blocks} are joined with newlines; 7: omitted ack means memory', async () => {
    const { session, chat, target } = await runningTurn();
    const r = await http.submit(session, {
      inputId: 'b1',
      target,
      content: {
        blocks: [
          { t: 'text', text: 'first' },
          { t: 'text', text: 'second' },
        ],
      },
    });
    expect(r.status).toBe(202);
    expect((r.body['receipt'] as { durability: string }).durability).toBe('log');
    const state = await chatState(alice, chat);
    expect(state.steeringMessages?.[0]?.message.text).toBe('first\nsecond');
    // The same text sent as {text} is the same normalised text: an identical retry.
    const same = await http.submit(session, { inputId: 'b1', target, content: { text: 'first\r\nsecond' } });
    expect(same.status).toBe(202);
    expect(same.body['duplicate']).toBe(true);
  });

  it('6/65: empty, whitespace-only, blocks: [], image blocks and unknown content are refused with their own codes (422), never trimmed or dropped', async () => {
    const { session, chat, target } = await runningTurn();
    const cases: Array<[unknown, string]> = [
      [{ text: '' }, 'empty_content'],
      [{ text: '  \n\t ' }, 'empty_content'],
      [{ blocks: [] }, 'empty_content'],
      [
        {
          blocks: [
            { t: 'text', text: ' ' },
            { t: 'text', text: '' },
          ],
        },
        'empty_content',
      ],
      [
        {
          blocks: [
            { t: 'text', text: 'look' },
            { t: 'image', data: 'AAAA', mimeType: 'image/png' },
          ],
        },
        'image_unsupported',
      ],
      [{ image: { data: 'AAAA' } }, 'image_unsupported'],
      [{ blocks: [{ t: 'audio', text: 'x' }] }, 'unsupported_content'],
      [{ audio: 'x' }, 'unsupported_content'],
      [{ text: 'a', blocks: [{ t: 'text', text: 'b' }] }, 'unsupported_content'],
      [{ text: 'a', extra: true }, 'unsupported_content'],
      [{}, 'unsupported_content'],
    ];
    for (const [content, code] of cases) {
      const r = await http.submit(session, { inputId: `c-${code}`, target, content });
      expect({ content, status: r.status, code: r.body['code'] }).toEqual({ content, status: 422, code });
      expect(r.body).toMatchObject({ outcome: 'rejected', message: expect.any(String) });
    }
    expect((await chatState(alice, chat)).steeringMessages ?? []).toEqual([]);
    // Leading/trailing whitespace of real text is kept, not trimmed.
    const kept = await http.submit(session, { inputId: 'ws', target, content: { text: '  keep me  ' } });
    expect(kept.status).toBe(202);
    expect((await chatState(alice, chat)).steeringMessages?.[0]?.message.text).toBe('  keep me  ');
  });

  it("7: ack 'durable' is refused explicitly (422 durable_ack_unsupported); an unknown ack too", async () => {
    const { session, target } = await runningTurn();
    const d = await http.submit(session, { inputId: 'd', target, content: { text: 'x' }, ack: 'durable' });
    expect(d.status).toBe(422);
    expect(d.body).toMatchObject({ outcome: 'rejected', code: 'durable_ack_unsupported' });
    const u = await http.submit(session, { inputId: 'd', target, content: { text: 'x' }, ack: 'eventually' });
    expect(u.status).toBe(422);
    expect(u.body['code']).toBe('unsupported_ack');
    // Nothing was accepted under that id.
    expect((await http.status(session, 'd', target)).status).toBe(404);
  });

  it('37: malformed bodies are 400 with a code and a message', async () => {
    const { session, target } = await runningTurn();
    const bad: Array<[string, string]> = [
      ['not json', 'invalid_json'],
      ['', 'invalid_json'],
      ['[1,2]', 'invalid_request'],
      [JSON.stringify({ target, content: { text: 'x' } }), 'invalid_request'],
      [JSON.stringify({ inputId: '', target, content: { text: 'x' } }), 'invalid_request'],
      [JSON.stringify({ inputId: 7, target, content: { text: 'x' } }), 'invalid_request'],
      [JSON.stringify({ inputId: 'x'.repeat(201), target, content: { text: 'x' } }), 'invalid_request'],
      [JSON.stringify({ inputId: 'a', content: { text: 'x' } }), 'invalid_request'],
      [JSON.stringify({ inputId: 'a', target: null, content: { text: 'x' } }), 'invalid_request'],
      [JSON.stringify({ inputId: 'a', target: { turnId: target.turnId }, content: { text: 'x' } }), 'invalid_request'],
      [JSON.stringify({ inputId: 'a', target }), 'invalid_request'],
      [JSON.stringify({ inputId: 'a', target, content: 'x' }), 'invalid_request'],
      [JSON.stringify({ inputId: 'a', target, content: { text: 5 } }), 'invalid_request'],
      [JSON.stringify({ inputId: 'a', target, content: { blocks: 'x' } }), 'invalid_request'],
      [JSON.stringify({ inputId: 'a', target, content: { blocks: ['x'] } }), 'invalid_request'],
      [JSON.stringify({ inputId: 'a', target, content: { text: 'x' }, ack: 1 }), 'invalid_request'],
    ];
    for (const [body, code] of bad) {
      const r = await http.submitRaw(session, body);
      expect({ body, status: r.status, code: r.body['code'] }).toEqual({ body, status: 400, code });
      expect(typeof r.body['message']).toBe('string');
    }
    const wrongType = await http.submitRaw(session, JSON.stringify({ inputId: 'a', target, content: { text: 'x' } }), 'text/plain');
    expect(wrongType.status).toBe(415);
  });

  it('14/63: two ids in one turn get ordinals 1 and 2; a retry of #1 does not take an ordinal', async () => {
    const { session, target } = await runningTurn();
    const a = await http.submit(session, { inputId: 'one', target, content: { text: 'first' } });
    const retry = await http.submit(session, { inputId: 'one', target, content: { text: 'first' } });
    const b = await http.submit(session, { inputId: 'two', target, content: { text: 'second' } });
    expect((a.body['receipt'] as { ordinal: number }).ordinal).toBe(1);
    expect(retry.status).toBe(202);
    expect(retry.body['receipt']).toEqual(a.body['receipt']);
    expect((b.body['receipt'] as { ordinal: number }).ordinal).toBe(2);
  });

  it('16/17: same id + target + normalised text returns the original receipt; other text is 409 input_conflict', async () => {
    const { session, target } = await runningTurn();
    const original = await http.submit(session, { inputId: 'idem', target, content: { text: 'caf\u00e9' } });
    // NFD spelling of the same text is the same normalised text.
    const again = await http.submit(session, { inputId: 'idem', target, content: { text: 'cafe\u0301' } });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ outcome: 'accepted', duplicate: true, receipt: original.body['receipt'] });
    const conflict = await http.submit(session, { inputId: 'idem', target, content: { text: 'something else' } });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ outcome: 'rejected', code: 'input_conflict', message: expect.any(String) });
  });

  it('15/18/13: revision grows with each state change; a duplicate submit after consumption returns the consumed receipt', async () => {
    const { session, chat, turnId, target } = await runningTurn();
    const first = await http.submit(session, { inputId: 'rev', target, content: { text: 'add a summary' } });
    expect(first.body['receipt']).toMatchObject({ state: 'accepted', revision: 1 });
    await answer(alice, chat, 'ask-1');
    const consumed = await waitFor(
      async () => {
        const r = await http.status(session, 'rev', target);
        return (r.body['receipt'] as { state: string } | undefined)?.state === 'consumed' ? r : undefined;
      },
      { what: 'consumed' },
    );
    expect(consumed.status).toBe(200);
    expect(consumed.body['receipt']).toMatchObject({ state: 'consumed', revision: 2, ordinal: 1 });
    await waitForTurnEnd(alice, chat, turnId);
    // The turn is closed, yet the identical retry still answers with the original (consumed) receipt.
    const dup = await http.submit(session, { inputId: 'rev', target, content: { text: 'add a summary' } });
    expect(dup.status).toBe(202);
    expect(dup.body).toMatchObject({ outcome: 'accepted', duplicate: true, receipt: { state: 'consumed', revision: 2 } });
  });

  it('11/38: status is 200 {receipt} and querying never re-runs anything', async () => {
    const { session, chat, target } = await runningTurn();
    await http.submit(session, { inputId: 'q', target, content: { text: 'query me' } });
    const before = await chatState(alice, chat);
    for (let i = 0; i < 3; i++) {
      const r = await http.status(session, 'q', target);
      expect(r.status).toBe(200);
      expect(r.body['receipt']).toMatchObject({ inputId: 'q', state: 'accepted', revision: 1 });
    }
    const after = await chatState(alice, chat);
    expect(after.activeTurn?.responseParts).toEqual(before.activeTurn?.responseParts);
    expect(after.steeringMessages).toEqual(before.steeringMessages);
  });

  it('21/38: an unknown id is 404 {outcome: rejected, code: input_not_found}; 22: a wrong target is not found, a closed receipt is found', async () => {
    const { session, chat, turnId, target } = await runningTurn();
    const nf = await http.status(session, 'never-sent', target);
    expect(nf.status).toBe(404);
    expect(nf.body).toMatchObject({ outcome: 'rejected', code: 'input_not_found', message: expect.any(String) });
    await http.submit(session, { inputId: 'x', target, content: { text: 'x' } });
    expect((await http.status(session, 'x', { historyEpoch: 'other', turnId })).status).toBe(404);
    expect((await http.status(session, 'x', { historyEpoch: target.historyEpoch })).status).toBe(400);
    // Cancelled first: the receipt is still found (200, state cancelled), not "not found".
    await alice.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId, duration: 1 });
    const closed = await waitFor(async () => {
      const r = await http.status(session, 'x', target);
      return (r.body['receipt'] as { state: string } | undefined)?.state === 'cancelled' ? r : undefined;
    });
    expect(closed.status).toBe(200);
    expect(closed.body['receipt']).toMatchObject({ state: 'cancelled', reason: 'turn_cancelled', revision: 2 });
  });

  it('20/64: receipts are kept for the current and the last ended turn only', async () => {
    const { session, chat, turnId, target } = await runningTurn();
    await http.submit(session, { inputId: 'old', target, content: { text: 'from turn 1' } });
    await answer(alice, chat, 'ask-1');
    await waitForTurnEnd(alice, chat, turnId);
    const t2 = await startScriptTurn(alice, chat, [askStep('ask-2')]);
    await waitForOpenRequest(alice, chat, 'ask-2');
    // Turn 1 is the last ended turn: still there.
    expect((await http.status(session, 'old', target)).status).toBe(200);
    await answer(alice, chat, 'ask-2');
    await waitForTurnEnd(alice, chat, t2);
    const t3 = await startScriptTurn(alice, chat, [askStep('ask-3')]);
    await waitForOpenRequest(alice, chat, 'ask-3');
    // Turn 1 is now two turns ago: outside the window.
    const gone = await http.status(session, 'old', target);
    expect(gone.status).toBe(404);
    expect(gone.body['code']).toBe('input_not_found');
    const caps = await http.capabilities(session);
    expect(caps.body['retention']).toMatchObject({ current: { turnId: t3 }, lastEnded: { turnId: t2 } });
  });

  it('61: a stale turnId or a stale historyEpoch is 409 turn_closed (not 404, not accepted)', async () => {
    const { session, turnId, target } = await runningTurn();
    const staleTurn = await http.submit(session, { inputId: 's1', target: { historyEpoch: target.historyEpoch, turnId: 'turn-that-ended' }, content: { text: 'x' } });
    expect(staleTurn.status).toBe(409);
    expect(staleTurn.body).toMatchObject({ outcome: 'closed', code: 'turn_closed' });
    const staleEpoch = await http.submit(session, { inputId: 's2', target: { historyEpoch: 'epoch-from-before', turnId }, content: { text: 'x' } });
    expect(staleEpoch.status).toBe(409);
    expect(staleEpoch.body).toMatchObject({ outcome: 'closed', code: 'turn_closed', reason: 'stale_history_epoch' });
  });

  it('9/61: submitting while idle with a remembered target is 409 turn_closed', async () => {
    const { session, chat, turnId, target } = await runningTurn();
    await answer(alice, chat, 'ask-1');
    await waitForTurnEnd(alice, chat, turnId);
    const r = await http.submit(session, { inputId: 'idle', target, content: { text: 'x' } });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ outcome: 'closed', code: 'turn_closed', reason: 'no_active_turn' });
    // 1: nothing new was started.
    const s = await chatState(alice, chat);
    expect(s.activeTurn).toBeUndefined();
    expect(s.turns).toHaveLength(1);
  });

  it('36: ids with reserved characters round-trip through URL-encoded paths and queries', async () => {
    const { session, target } = await runningTurn();
    const id = 'ui/001?&#%20 ünï';
    const r = await http.submit(session, { inputId: id, target, content: { text: 'x' } });
    expect(r.status).toBe(202);
    const s = await http.status(session, id, target);
    expect(s.status).toBe(200);
    expect((s.body['receipt'] as { inputId: string }).inputId).toBe(id);
  });

  it('22/32/66: no token is 401, a foreign tenant gets 404 session_not_found (never an input error), a viewer may read but not add', async () => {
    const { session, target } = await runningTurn();
    const anon = new SteeringHttp(server.url);
    for (const r of [await anon.capabilities(session), await anon.submit(session, { inputId: 'a', target, content: { text: 'x' } }), await anon.status(session, 'a', target)]) {
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ code: 'unauthorized', message: expect.any(String) });
    }
    const mallory = new SteeringHttp(server.url, TOKENS.mallory);
    for (const r of [await mallory.capabilities(session), await mallory.submit(session, { inputId: 'a', target, content: { text: 'x' } }), await mallory.status(session, 'a', target)]) {
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ code: 'session_not_found', message: expect.any(String) });
      expect(r.body).not.toHaveProperty('outcome');
    }
    // Even a malformed body from a foreign tenant is a session error, not a 400.
    expect((await mallory.submitRaw(session, 'nope')).body['code']).toBe('session_not_found');
    const missing = await http.capabilities('ahp-session:/does-not-exist');
    expect(missing.status).toBe(404);
    expect(missing.body['code']).toBe('session_not_found');
    const viewer = new SteeringHttp(server.url, TOKENS.viewer);
    expect((await viewer.capabilities(session)).status).toBe(200);
    const denied = await viewer.submit(session, { inputId: 'v', target, content: { text: 'x' } });
    expect(denied.status).toBe(403);
    expect(denied.body['code']).toBe('permission_denied');
    // Bob (same tenant) may add to Alice's session.
    const bob = new SteeringHttp(server.url, TOKENS.bob);
    expect((await bob.submit(session, { inputId: 'b', target, content: { text: 'from bob' } })).status).toBe(202);
  });

  it("39/40: steering adds no other route (POST …/messages stays 404) and the session's SSE stream never mentions an input or its receipt: receipts are polled, not pushed", async () => {
    const { session, chat, turnId, target } = await runningTurn();
    const r = await fetch(`${server.url}/v2/sessions/${SteeringHttp.idOf(session)}/messages`, { method: 'POST', headers: { authorization: `Bearer ${TOKENS.alice}` } });
    expect(r.status).toBe(404);
    // Follow the session's SSE stream across a submit and its consumption.
    const sse = await SseClient.open(`${server.url}/v2/sessions/${SteeringHttp.idOf(session)}/events`, { token: TOKENS.alice });
    expect(sse.status).toBe(200);
    const submitted = await http.submit(session, { inputId: 'sse-quiet', target, content: { text: 'also check the renewal clause' } });
    expect(submitted.status).toBe(202);
    await answer(alice, chat, 'ask-1');
    await waitForTurnEnd(alice, chat, turnId);
    expect((await http.status(session, 'sse-quiet', target)).body['receipt']).toMatchObject({ state: 'consumed' });
    await sse.waitForEvent((e) => e.raw.includes('turn_end'), 'turn end on SSE');
    // Receipts are polled, never pushed: no SSE event mentions the input id or a receipt.
    expect(sse.events.filter((e) => /sse-quiet|receipt/.test(e.raw))).toEqual([]);
    await sse.close();
  });
});

describe('steering quota (60/37): at most N inputs per turn, then 429', () => {
  let server: TestServer;
  afterEach(async () => server.stop());

  it('the per-turn injection quota is configurable and answers 429 input_quota_exceeded; retries do not count', async () => {
    server = await startTestServer({ features: [createSteeringFeature({ quotaPerTurn: 2 }), interactionsFeature, collabFeature] });
    const client = await RpcClient.open(server.wsUrl);
    const http = new SteeringHttp(server.url);
    const { session, chat } = await client.createSession();
    await client.subscribe(chat);
    const turnId = await startScriptTurn(client, chat, [askStep('ask-q'), { say: 'ok' }]);
    await waitForOpenRequest(client, chat, 'ask-q');
    const target = (await http.target(session))!;
    expect((await http.capabilities(session)).body['quotaPerTurn']).toBe(2);
    expect((await http.submit(session, { inputId: '1', target, content: { text: 'a' } })).status).toBe(202);
    expect((await http.submit(session, { inputId: '1', target, content: { text: 'a' } })).status).toBe(202);
    expect((await http.submit(session, { inputId: '2', target, content: { text: 'b' } })).status).toBe(202);
    const over = await http.submit(session, { inputId: '3', target, content: { text: 'c' } });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ outcome: 'rejected', code: 'input_quota_exceeded', message: expect.any(String) });
    // Consumption does not refill the quota: budgets keep accumulating within the turn.
    await answer(client, chat, 'ask-q');
    await waitForTurnEnd(client, chat, turnId);
    expect((await http.status(session, '2', target)).body['receipt']).toMatchObject({ state: 'consumed' });
    await client.close();
  });
});
