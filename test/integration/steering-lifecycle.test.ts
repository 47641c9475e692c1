/**
 * Seed 003 turn semantics on a real hub: consumption only at the agent's safe barrier, the
 * transcript and the AHP steering list as every subscriber sees them, closing / cancelling when
 * the turn ends first, history replacement, restart (receipts are durable), and "a supplement approves nothing".
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { answer, askStep, chatState, SteeringHttp, waitForOpenRequest, waitForTurnEnd } from '../cli/steering-support.js';

describe('steering lifecycle', () => {
  let server: TestServer | undefined;
  const clients: RpcClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await server?.stop();
    server = undefined;
  });
  const open = async (s: TestServer) => {
    const c = await RpcClient.open(s.wsUrl);
    clients.push(c);
    return c;
  };

  async function setup(script: unknown[], firstRequest?: string) {
    server = await startTestServer();
    const alice = await open(server);
    const { session, chat } = await alice.createSession();
    await alice.subscribe(chat);
    const other = await open(server);
    await other.subscribe(chat);
    const http = new SteeringHttp(server.url);
    const turnId = await startScriptTurn(alice, chat, script);
    if (firstRequest) await waitForOpenRequest(alice, chat, firstRequest);
    const target = (await waitFor(() => http.target(session), { what: 'target' }))!;
    return { alice, other, session, chat, http, turnId, target };
  }

  it('1/2/13/57: inputs wait while the agent works, are consumed at the next barrier as user messages in the same turn, seen by every subscriber', async () => {
    const { alice, other, session, chat, http, turnId, target } = await setup([askStep('ask-1'), { say: 'step two' }], 'ask-1');
    await http.submit(session, { inputId: 'i1', target, content: { text: 'also check the renewal clause' } });
    await http.submit(session, {
      inputId: 'i2',
      target,
      content: {
        blocks: [
          { t: 'text', text: 'and' },
          { t: 'text', text: 'the fees' },
        ],
      },
    });
    // Accepted, not consumed: the agent is still inside a step (blocked on the question).
    const pending = await waitFor(
      async () => {
        const s = await chatState(other, chat);
        return s.steeringMessages?.length === 2 ? s : undefined;
      },
      { what: 'pending steering messages on another connection' },
    );
    expect(pending.steeringMessages!.map((m) => [m.message.text, m.message.origin.kind])).toEqual([
      ['also check the renewal clause', 'user'],
      ['and\nthe fees', 'user'],
    ]);
    expect(pending.steeringMessages![0]!.message._meta?.['hub/userInput']).toMatchObject({ inputId: 'i1', ordinal: 1, turnId });
    expect(pending.activeTurn!.responseParts.some((p) => p.kind === 'userMessage')).toBe(false);
    expect((await http.status(session, 'i1', target)).body['receipt']).toMatchObject({ state: 'accepted' });

    // The step ends → barrier → consumed, in acceptance order.
    await answer(alice, chat, 'ask-1');
    const done = await waitForTurnEnd(other, chat, turnId);
    expect(done.state).toBe('complete');
    const parts = done.responseParts;
    const userParts = parts.filter((p) => p.kind === 'userMessage');
    expect(userParts.map((p) => [p.message!.text, p.message!.origin.kind])).toEqual([
      ['also check the renewal clause', 'user'],
      ['and\nthe fees', 'user'],
    ]);
    // Consumed after the question was answered and before the next step: same turn, next step sees it.
    const idxQuestion = parts.findIndex((p) => p.kind === 'inputRequest');
    const idxUser = parts.findIndex((p) => p.kind === 'userMessage');
    const idxAck = parts.findIndex((p) => p.kind === 'markdown' && p.content?.includes('also check the renewal clause'));
    const idxStep2 = parts.findIndex((p) => p.kind === 'markdown' && p.content === 'step two');
    expect(idxQuestion).toBeLessThan(idxUser);
    expect(idxUser).toBeLessThan(idxAck);
    expect(idxAck).toBeLessThan(idxStep2);
    // Never a system message, and no new turn was opened.
    expect(parts.some((p) => p.kind === 'systemNotification')).toBe(false);
    const final = await chatState(other, chat);
    expect(final.turns).toHaveLength(1);
    expect(final.steeringMessages ?? []).toEqual([]);
    for (const id of ['i1', 'i2']) {
      expect((await http.status(session, id, target)).body['receipt']).toMatchObject({ state: 'consumed', revision: 2 });
    }
    // The original turn message is unchanged (a started request is never rewritten).
    expect(final.turns[0]!.message.text).toContain('ask-1');
  });

  it('2/13: an input accepted while the agent streams is taken at the following barrier, not mid-step', async () => {
    const { alice, session, chat, http, turnId, target } = await setup([askStep('a'), askStep('b')], 'a');
    await http.submit(session, { inputId: 'x', target, content: { text: 'between' } });
    await answer(alice, chat, 'a');
    await waitForOpenRequest(alice, chat, 'b');
    // Consumed at the barrier between step a and step b.
    const s = await chatState(alice, chat);
    const kinds = s.activeTurn!.responseParts.map((p) => (p.kind === 'inputRequest' ? `ask:${p.request!.id}` : p.kind));
    expect(kinds.indexOf('userMessage')).toBeGreaterThan(kinds.indexOf('ask:a'));
    expect(kinds.indexOf('userMessage')).toBeLessThan(kinds.indexOf('ask:b'));
    // A second input during step b waits for the barrier after it.
    await http.submit(session, { inputId: 'y', target, content: { text: 'later' } });
    expect((await http.status(session, 'y', target)).body['receipt']).toMatchObject({ state: 'accepted' });
    await answer(alice, chat, 'b');
    await waitForTurnEnd(alice, chat, turnId);
    expect((await http.status(session, 'y', target)).body['receipt']).toMatchObject({ state: 'consumed' });
  });

  it('13/62: when the turn completes before a barrier, unconsumed inputs become closed with a reason and leave the steering list', async () => {
    server = await startTestServer();
    const alice = await open(server);
    const http = new SteeringHttp(server.url);
    // A remote-agent session: no barrier ever runs; the (admin) dev principal ends the turn itself.
    const session = 'ahp-session:/remote-steer';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote' });
    await alice.subscribe(chat);
    await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't-r', startedAt: new Date().toISOString(), message: userMessage('go') });
    const target = (await http.target(session))!;
    await http.submit(session, { inputId: 'late', target, content: { text: 'one more thing' } });
    expect((await chatState(alice, chat)).steeringMessages).toHaveLength(1);
    await alice.dispatchAndWait(chat, { type: 'chat/turnComplete', turnId: 't-r', duration: 3 });
    const r = await http.status(session, 'late', target);
    expect(r.body['receipt']).toMatchObject({ state: 'closed', reason: 'turn_completed', revision: 2 });
    await waitFor(async () => ((await chatState(alice, chat)).steeringMessages === undefined ? true : undefined), { what: 'steering list cleared' });
    // 62: never accepted into the next turn.
    await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't-r2', startedAt: new Date().toISOString(), message: userMessage('again') });
    const again = await http.submit(session, { inputId: 'late', target, content: { text: 'one more thing' } });
    expect(again.body).toMatchObject({ outcome: 'accepted', duplicate: true, receipt: { state: 'closed', turnId: 't-r' } });
    const fresh = await http.submit(session, { inputId: 'late2', target, content: { text: 'x' } });
    expect(fresh.status).toBe(409);
    // An errored turn closes its inputs as well.
    const t2 = (await http.target(session))!;
    await http.submit(session, { inputId: 'e', target: t2, content: { text: 'x' } });
    await alice.dispatchAndWait(chat, { type: 'chat/error', turnId: 't-r2', duration: 1, error: { errorType: 'boom', message: 'failed' } });
    expect((await http.status(session, 'e', t2)).body['receipt']).toMatchObject({ state: 'closed', reason: 'turn_failed' });
  });

  it('13: a cancelled turn cancels unconsumed inputs; a client removing the pending steering message cancels that input', async () => {
    const { alice, other, session, chat, http, turnId, target } = await setup([askStep('ask-1'), { say: 'x' }], 'ask-1');
    await http.submit(session, { inputId: 'keep', target, content: { text: 'keep' } });
    await http.submit(session, { inputId: 'drop', target, content: { text: 'drop' } });
    const s = await chatState(other, chat);
    const dropId = s.steeringMessages!.find((m) => m.message.text === 'drop')!.id;
    const echo = await other.dispatchAndWait(chat, { type: 'chat/steeringMessageRemoved', id: dropId });
    expect(echo.rejectionReason).toBeUndefined();
    expect((await http.status(session, 'drop', target)).body['receipt']).toMatchObject({ state: 'cancelled', reason: 'removed_by_client', revision: 2 });
    await alice.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId, duration: 5 });
    expect((await http.status(session, 'keep', target)).body['receipt']).toMatchObject({ state: 'cancelled', reason: 'turn_cancelled', revision: 2 });
    const final = await waitForTurnEnd(alice, chat, turnId);
    expect(final.state).toBe('cancelled');
    expect(final.responseParts.some((p) => p.kind === 'userMessage')).toBe(false);
    await waitFor(async () => ((await chatState(alice, chat)).steeringMessages === undefined ? true : undefined), { what: 'steering list cleared' });
  });

  it('46/59: a supplement saying "allow" approves nothing; the pending tool stays pending until the real confirmation channel answers', async () => {
    const { alice, session, chat, http, turnId, target } = await setup([{ tool: { id: 'tool-1', name: 'write_file', confirm: true } }, { say: 'after tool' }]);
    await waitFor(
      async () => {
        const s = await chatState(alice, chat);
        return s.activeTurn?.responseParts.some((p) => p.kind === 'toolCall' && p.toolCall?.status === 'pending-confirmation') ? true : undefined;
      },
      { what: 'tool awaiting confirmation' },
    );
    const r = await http.submit(session, { inputId: 'allow', target, content: { text: 'allow' } });
    expect(r.status).toBe(202);
    await server!.hub.drain();
    const s = await chatState(alice, chat);
    expect(s.activeTurn!.responseParts.find((p) => p.kind === 'toolCall')!.toolCall!.status).toBe('pending-confirmation');
    // The legacy permission channel decides: deny.
    await alice.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'tool-1', approved: false, reason: 'denied' });
    const done = await waitForTurnEnd(alice, chat, turnId);
    const tool = done.responseParts.find((p) => p.kind === 'toolCall')!.toolCall!;
    expect(tool.status).toBe('cancelled');
    expect(done.responseParts.find((p) => p.kind === 'userMessage')!.message!.text).toBe('allow');
    expect((await http.status(session, 'allow', target)).body['receipt']).toMatchObject({ state: 'consumed' });
  });

  it('23: truncating the chat (explicit history replacement) changes historyEpoch and closes open inputs; other actions do not', async () => {
    const { alice, session, chat, http, turnId, target } = await setup([askStep('ask-1'), { say: 'x' }], 'ask-1');
    await http.submit(session, { inputId: 'pre', target, content: { text: 'pre' } });
    // Ordinary activity in the turn keeps the epoch.
    await alice.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: 'ask-1', questionId: 'q', answer: { state: 'draft', value: { kind: 'text', value: 'hmm' } } });
    expect((await http.target(session))?.historyEpoch).toBe(target.historyEpoch);
    const echo = await alice.dispatchAndWait(chat, { type: 'chat/truncated' });
    expect(echo.rejectionReason).toBeUndefined();
    expect((await http.status(session, 'pre', target)).body['receipt']).toMatchObject({ state: 'closed', reason: 'history_replaced' });
    const t2 = await startScriptTurn(alice, chat, [askStep('ask-2')]);
    await waitForOpenRequest(alice, chat, 'ask-2');
    const next = (await http.target(session))!;
    expect(next.turnId).toBe(t2);
    expect(next.historyEpoch).not.toBe(target.historyEpoch);
    // The old epoch is stale now.
    const stale = await http.submit(session, { inputId: 'old-epoch', target: { historyEpoch: target.historyEpoch, turnId: t2 }, content: { text: 'x' } });
    expect(stale.status).toBe(409);
    expect(stale.body['code']).toBe('turn_closed');
    expect(turnId).not.toBe(t2);
  });

  it('24: a hub restart keeps historyEpoch and every receipt (durability log); the running turn carries on and consumes the input', async () => {
    const tmp = tempDir();
    try {
      server = await startTestServer({ dataDir: tmp.dir });
      const alice = await open(server);
      const { session, chat } = await alice.createSession();
      await alice.subscribe(chat);
      const t1 = await startScriptTurn(alice, chat, [askStep('ask-1'), { say: 'after' }]);
      await waitForOpenRequest(alice, chat, 'ask-1');
      const http = new SteeringHttp(server.url);
      const target = (await http.target(session))!;
      const accepted = (await http.submit(session, { inputId: 'kept', target, content: { text: 'x' } })).body['receipt'];
      await alice.close();
      await server.close();
      server = await startTestServer({ dataDir: tmp.dir });
      const http2 = new SteeringHttp(server.url);
      const caps = await http2.capabilities(session);
      expect(caps.status).toBe(200);
      // The demo agent's turn survives the restart (docs/continuity.md), in the same history epoch.
      expect(caps.body['target']).toEqual({ historyEpoch: target.historyEpoch, turnId: t1 });
      // The same receipt; the resumed demo agent passes a barrier and consumes it (revision 2).
      const { state: _s, revision: _r, updatedAt: _u, ...facts } = accepted as Record<string, unknown>;
      const consumed = await waitFor(
        async () => {
          const r = await http2.status(session, 'kept', target);
          expect(r.status).toBe(200);
          return (r.body['receipt'] as { state: string }).state === 'consumed' ? r.body['receipt'] : undefined;
        },
        { what: 'the input to be consumed by the resumed turn' },
      );
      expect(consumed).toMatchObject({ ...facts, state: 'consumed', revision: 2 });
      // A retry after the restart is recognised, not accepted twice.
      const resend = await http2.submit(session, { inputId: 'kept', target, content: { text: 'x' } });
      expect(resend.body).toMatchObject({ duplicate: true, receipt: consumed });
      const bob = await open(server);
      await waitForOpenRequest(bob, chat, 'ask-1');
      await answer(bob, chat, 'ask-1');
      const done = await waitForTurnEnd(bob, chat, t1);
      expect(done.responseParts.filter((p) => p.kind === 'userMessage').map((p) => p.message!.text)).toEqual(['x']);
      expect((await http2.status(session, 'kept', target)).body['receipt']).toEqual(consumed);
    } finally {
      await server?.stop();
      server = undefined;
      tmp.remove();
    }
  });

  it('29/1: the session is not recreated and no second turn is opened by supplements', async () => {
    const { alice, session, chat, http, turnId, target } = await setup([askStep('ask-1')], 'ask-1');
    for (let i = 0; i < 5; i++) await http.submit(session, { inputId: `n${i}`, target, content: { text: `n${i}` } });
    await answer(alice, chat, 'ask-1');
    await waitForTurnEnd(alice, chat, turnId);
    const sessions = await alice.request<{ items: unknown[] }>('listSessions', { channel: 'ahp-root://' });
    expect(sessions.items).toHaveLength(1);
    expect((await chatState(alice, chat)).turns).toHaveLength(1);
  });

  it('60: a consumed input may still be followed by a failure stop; the receipt and the terminal state are reported together', async () => {
    const { alice, session, chat, http, turnId, target } = await setup([askStep('ask-1'), { fail: 'budget exhausted' }], 'ask-1');
    await http.submit(session, { inputId: 'c', target, content: { text: 'consider this' } });
    await answer(alice, chat, 'ask-1');
    const done = await waitForTurnEnd(alice, chat, turnId);
    expect(done.state).toBe('error');
    expect((await http.status(session, 'c', target)).body['receipt']).toMatchObject({ state: 'consumed' });
    expect(done.responseParts.some((p) => p.kind === 'userMessage')).toBe(true);
  });

  it('62: a submit racing the end of the turn is either accepted then closed, or 409 — never accepted into the next turn', async () => {
    server = await startTestServer();
    const alice = await open(server);
    const http = new SteeringHttp(server.url);
    const session = 'ahp-session:/race';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote' });
    await alice.subscribe(chat);
    for (let i = 0; i < 5; i++) {
      const turnId = `race-${i}`;
      await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: userMessage('go') });
      const target = (await http.target(session))!;
      const submitting = http.submit(session, { inputId: 'r', target, content: { text: 'racing' } });
      alice.dispatch(chat, { type: 'chat/turnComplete', turnId, duration: 1 });
      const r = await submitting;
      await waitForTurnEnd(alice, chat, turnId);
      if (r.status === 202) {
        expect((r.body['receipt'] as { turnId: string }).turnId).toBe(turnId);
        expect((await http.status(session, 'r', target)).body['receipt']).toMatchObject({ state: 'closed', reason: 'turn_completed', turnId });
      } else {
        expect(r.status).toBe(409);
        expect(r.body['code']).toBe('turn_closed');
      }
    }
  });

  it('23/14: resuming an errored turn (chat/turnResume) reopens the same target; receipts and ordinals carry on, the epoch stays', async () => {
    server = await startTestServer();
    const alice = await open(server);
    const http = new SteeringHttp(server.url);
    const session = 'ahp-session:/resume';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote' });
    await alice.subscribe(chat);
    await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't-1', startedAt: new Date().toISOString(), message: userMessage('go') });
    const target = (await http.target(session))!;
    await http.submit(session, { inputId: 'a', target, content: { text: 'a' } });
    const err = await alice.dispatchAndWait(chat, { type: 'chat/error', turnId: 't-1', duration: 1, part: { kind: 'error', error: { errorType: 'network', message: 'x' }, resumable: true } });
    expect(err.rejectionReason).toBeUndefined();
    expect((await http.status(session, 'a', target)).body['receipt']).toMatchObject({ state: 'closed', reason: 'turn_failed' });
    const resumed = await alice.dispatchAndWait(chat, { type: 'chat/turnResume', turnId: 't-1' });
    expect(resumed.rejectionReason).toBeUndefined();
    expect(await http.target(session)).toEqual(target);
    const b = await http.submit(session, { inputId: 'b', target, content: { text: 'b' } });
    expect(b.body['receipt']).toMatchObject({ ordinal: 2, state: 'accepted' });
    const again = await http.submit(session, { inputId: 'a', target, content: { text: 'a' } });
    expect(again.body).toMatchObject({ duplicate: true, receipt: { state: 'closed' } });
  });

  it('2/13: a remote agent consumes an input by appending the userMessage part that names it', async () => {
    server = await startTestServer();
    const alice = await open(server);
    const http = new SteeringHttp(server.url);
    const session = 'ahp-session:/remote-consume';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote' });
    await alice.subscribe(chat);
    await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't-c', startedAt: new Date().toISOString(), message: userMessage('go') });
    const target = (await http.target(session))!;
    await http.submit(session, { inputId: 'r1', target, content: { text: 'remote take' } });
    const steering = (await chatState(alice, chat)).steeringMessages![0]!;
    // The (dev-mode admin) caller acts as the remote agent.
    const echo = await alice.dispatchAndWait(chat, { type: 'chat/responsePart', turnId: 't-c', part: { kind: 'userMessage', id: 'u1', message: steering.message } });
    expect(echo.rejectionReason).toBeUndefined();
    expect((await http.status(session, 'r1', target)).body['receipt']).toMatchObject({ state: 'consumed', revision: 2 });
    await waitFor(async () => ((await chatState(alice, chat)).steeringMessages === undefined ? true : undefined), { what: 'steering list cleared' });
    await alice.dispatchAndWait(chat, { type: 'chat/turnComplete', turnId: 't-c', duration: 1 });
    expect((await http.status(session, 'r1', target)).body['receipt']).toMatchObject({ state: 'consumed', revision: 2 });
  });
});
