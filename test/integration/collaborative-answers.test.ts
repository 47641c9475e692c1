import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

interface ChatLike {
  status: number;
  activeTurn?: { responseParts: Array<{ kind: string; request?: { id: string; answers?: Record<string, unknown> }; response?: string }> };
  turns: Array<{ responseParts: Array<{ kind: string; content?: string; request?: { id: string; answers?: Record<string, unknown> }; response?: string }> }>;
}

describe('one input request answered by several clients', () => {
  let server: TestServer;
  const clients: RpcClient[] = [];
  beforeEach(async () => {
    server = await startTestServer({ persistent: true });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await server.stop();
  });

  async function open(): Promise<RpcClient> {
    const c = await RpcClient.open(server.wsUrl);
    clients.push(c);
    return c;
  }

  /** Folds every envelope a client received on a chat into the snapshot it started from. */
  async function openRequest(after: unknown[] = []): Promise<{ a: RpcClient; b: RpcClient; c: RpcClient; chat: string; turnId: string }> {
    const [a, b, c] = [await open(), await open(), await open()];
    const { chat } = await a.createSession('collab');
    for (const x of [a, b, c]) await x.subscribe(chat);
    const turnId = await startScriptTurn(a, chat, [{ ask: TWO_QUESTION_REQUEST }, ...after]);
    await c.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    return { a, b, c, chat, turnId };
  }

  it('A and B fill different questions and a third client sees the merged answers map', async () => {
    const { a, b, c, chat } = await openRequest();
    const fromA = await a.dispatchAndWait(chat, {
      type: 'chat/inputAnswerChanged',
      requestId: 'req-1',
      questionId: 'runtime',
      answer: { state: 'submitted', value: { kind: 'selected', value: 'node' } },
    });
    const fromB = await b.dispatchAndWait(chat, {
      type: 'chat/inputAnswerChanged',
      requestId: 'req-1',
      questionId: 'notes',
      answer: { state: 'submitted', value: { kind: 'text', value: 'keep it small' } },
    });
    expect(fromA.rejectionReason).toBeUndefined();
    expect(fromB.rejectionReason).toBeUndefined();
    // The third client fetches a fresh snapshot: the authoritative merged map.
    const snap = await c.subscribe<ChatLike>(chat);
    const part = snap.state.activeTurn!.responseParts.find((p) => p.kind === 'inputRequest')!;
    expect(part.request!.answers).toEqual({
      runtime: { state: 'submitted', value: { kind: 'selected', value: 'node' } },
      notes: { state: 'submitted', value: { kind: 'text', value: 'keep it small' } },
    });
    // And it saw both echoes live, in the same order as everyone else.
    await waitFor(() => c.envelopes.filter((e) => e.action.type === 'chat/inputAnswerChanged').length === 2 || undefined);
    const seqs = (x: RpcClient) => x.envelopes.filter((e) => e.channel === chat).map((e) => e.serverSeq);
    await waitFor(() => (seqs(a).length === seqs(c).length ? true : undefined));
    expect(seqs(c)).toEqual([...seqs(c)].sort((x, y) => x - y));

    // B accepts; the agent says the final answers; everyone converges on one resolved part.
    const done = await b.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'accept' });
    expect(done.rejectionReason).toBeUndefined();
    await c.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn complete');
    const final = await c.subscribe<ChatLike>(chat);
    const turn = final.state.turns[0]!;
    const resolved = turn.responseParts.find((p) => p.kind === 'inputRequest')!;
    expect(resolved.response).toBe('accept');
    const said = turn.responseParts
      .filter((p) => p.kind === 'markdown')
      .map((p) => p.content)
      .join('\n');
    expect(said).toContain('runtime: Node.js');
    expect(said).toContain('notes: keep it small');
  });

  it('rejects a stale requestId and an accept with a required answer missing, changing nothing', async () => {
    // The turn keeps running after the request (a long sleep), so "resolved" is what makes it stale.
    const { a, b, chat, turnId } = await openRequest([{ sleep: 600_000 }]);
    const before = await b.subscribe<ChatLike>(chat);

    const stale = await a.dispatchAndWait(chat, {
      type: 'chat/inputAnswerChanged',
      requestId: 'req-unknown',
      questionId: 'runtime',
      answer: { state: 'draft', value: { kind: 'selected', value: 'node' } },
    });
    expect(stale.rejectionReason).toMatch(/req-unknown/);

    await a.dispatchAndWait(chat, {
      type: 'chat/inputAnswerChanged',
      requestId: 'req-1',
      questionId: 'runtime',
      answer: { state: 'submitted', value: { kind: 'selected', value: 'deno' } },
    });
    const early = await a.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'accept' });
    expect(early.rejectionReason).toMatch(/notes/);

    const wrongKind = await a.dispatchAndWait(chat, {
      type: 'chat/inputAnswerChanged',
      requestId: 'req-1',
      questionId: 'notes',
      answer: { state: 'submitted', value: { kind: 'number', value: 3 } },
    });
    expect(wrongKind.rejectionReason).toBeDefined();

    // Rejections went only to their sender and were never applied.
    expect(b.envelopes.some((e) => e.rejectionReason)).toBe(false);
    const after = await b.subscribe<ChatLike>(chat);
    const partBefore = before.state.activeTurn!.responseParts.find((p) => p.kind === 'inputRequest')!;
    const partAfter = after.state.activeTurn!.responseParts.find((p) => p.kind === 'inputRequest')!;
    expect(partBefore.response).toBeUndefined();
    expect(partAfter.response).toBeUndefined();
    expect(partAfter.request!.answers).toEqual({ runtime: { state: 'submitted', value: { kind: 'selected', value: 'deno' } } });

    // Once resolved, the same request id is stale too — while its turn is still running.
    await a.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'decline' });
    const late = await b.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'accept' });
    expect(late.rejectionReason).toBe('unknown or already resolved input request req-1');
    const running = await b.subscribe<ChatLike & { activeTurn?: { id: string } }>(chat);
    expect(running.state.activeTurn?.id).toBe(turnId);
    const lateDraft = await b.dispatchAndWait(chat, {
      type: 'chat/inputAnswerChanged',
      requestId: 'req-1',
      questionId: 'notes',
      answer: { state: 'draft', value: { kind: 'text', value: 'too late' } },
    });
    expect(lateDraft.rejectionReason).toBe('unknown or already resolved input request req-1');
  });
});
