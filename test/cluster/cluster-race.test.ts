/**
 * First reply wins across processes: 100 replies to one input request, from clients spread over
 * three hub processes and three surfaces (AHP dispatch, DataWorks HTTP, Qwen HTTP), while an SSE
 * listener on every node watches the request and its resolution.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { replyDataWorks, replyQwen, sessionIdOfUri, SseClient } from '../helpers/sse.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { clusterPerFile, headOf, subscribeWhenKnown } from './cluster.js';

describe('100 replies racing for one request across three nodes', () => {
  const fx = clusterPerFile(3);
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('exactly one wins, every other gets the already-resolved outcome, every replica ends in the same state', async () => {
    const nodes = fx.cluster.nodes;
    const tabs: RpcClient[] = [];
    for (let i = 0; i < 6; i++) {
      const tab = await RpcClient.open(nodes[i % 3]!.wsUrl);
      closers.push(() => tab.close());
      tabs.push(tab);
    }
    const { session, chat } = await tabs[0]!.createSession('race');
    const sessionId = sessionIdOfUri(session);
    for (const tab of tabs) await subscribeWhenKnown(tab, chat);
    const streams: SseClient[] = [];
    for (const node of nodes) {
      const sse = await SseClient.open(`${node.url}/v2/sessions/${sessionId}/events`);
      closers.push(() => sse.close());
      expect(sse.status).toBe(200);
      streams.push(sse);
    }

    await startScriptTurn(tabs[0]!, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    const requests = await Promise.all(streams.map((sse) => sse.waitForPermissionRequest()));
    for (const data of requests) expect(data.requestId).toBe('req-1');
    const allow = requests[0].options.find((o: { kind: string }) => o.kind === 'allow_once').optionId as string;

    type Outcome = { who: string; won: boolean };
    const replies: Array<() => Promise<Outcome>> = [];
    for (let i = 0; i < 100; i++) {
      const node = nodes[i % 3]!;
      const who = `r${i}`;
      // Every (node, surface) pair occurs: the node cycles with i, the surface with i / 3.
      const surface = ['ahp', 'dataworks', 'qwen'][Math.floor(i / 3) % 3]!;
      const kind = surface;
      if (kind === 'ahp') {
        const tab = tabs[(i % 3) + 3 * (Math.floor(i / 9) % 2)]!; // a tab on the same node
        replies.push(async () => {
          const echo = await tab.dispatchAndWait(chat, {
            type: 'chat/inputCompleted',
            requestId: 'req-1',
            response: 'accept',
            answers: { runtime: { state: 'submitted', value: { kind: 'selected', value: 'node' } }, notes: { state: 'submitted', value: { kind: 'text', value: who } } },
          });
          if (echo.rejectionReason !== undefined) expect(echo.rejectionReason).toMatch(/req-1/);
          return { who, won: echo.rejectionReason === undefined };
        });
      } else if (kind === 'dataworks') {
        replies.push(async () => {
          const res = await replyDataWorks(node.url, { SessionId: sessionId, PermissionRequestId: 'req-1', Answers: { '0': 'Node.js', '1': who }, Outcome: { Outcome: 'selected', OptionId: allow } }, { id: who });
          expect(res.status).toBe(200);
          expect(res.body.JsonRpcResponse.Error).toBeUndefined();
          return { who, won: res.body.JsonRpcResponse.Result.Accepted === true };
        });
      } else {
        replies.push(async () => {
          const res = await replyQwen(node.url, sessionId, 'req-1', { outcome: { outcome: 'selected', optionId: allow }, answers: { '0': 'node', '1': who } });
          expect([200, 404]).toContain(res.status);
          return { who, won: res.status === 200 };
        });
      }
    }
    const outcomes = await Promise.all(replies.map((reply) => reply()));
    const winners = outcomes.filter((o) => o.won);
    expect(winners).toHaveLength(1);
    expect(outcomes.filter((o) => !o.won)).toHaveLength(99);

    // Every node's SSE stream reports the one resolution.
    for (const sse of streams) {
      const resolved = await sse.waitForResolved('req-1');
      expect(resolved.data.params.data.outcome).toEqual({ outcome: 'selected', optionId: allow });
    }

    // Every replica converges on the same head and the same state, with the winner's answer.
    const heads = async (): Promise<number[]> => Promise.all(nodes.map(headOf));
    await waitFor(
      async () => {
        const h = await heads();
        return h.every((x) => x === h[0]) && tabs.every((t) => t.envelopes.some((e) => e.action.type === 'chat/turnComplete')) ? true : undefined;
      },
      { what: 'every node at one head after the turn completed', timeoutMs: 20_000 },
    );
    const states = await Promise.all(tabs.slice(0, 3).map((t) => t.subscribe<{ turns: Array<{ responseParts: Array<{ kind: string; response?: string; request?: { answers?: Record<string, { value: { value: string } }> } }> }> }>(chat)));
    expect(states[1]).toEqual(states[0]);
    expect(states[2]).toEqual(states[0]);
    const part = states[0]!.state.turns[0]!.responseParts.find((p) => p.kind === 'inputRequest')!;
    expect(part.response).toBe('accept');
    expect(part.request!.answers!['notes']!.value.value).toBe(winners[0]!.who);
    // Exactly one applied completion in every tab's stream, whichever node it is on.
    for (const tab of tabs) {
      expect(tab.envelopes.filter((e) => e.action.type === 'chat/inputCompleted' && e.rejectionReason === undefined)).toHaveLength(1);
    }
  });
});
