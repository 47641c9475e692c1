/**
 * First-wins across surfaces, `allow_always` (remembered in the log, so it survives a restart),
 * and the Qwen reply shape, over real WebSocket, HTTP and SSE.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RpcClient } from '../helpers/rpc-client.js';
import { openWatchedSession, replyDataWorks, replyQwen, restartWatchedSession, type SseClient } from '../helpers/sse.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const TOOL = { id: 'tool-1', name: 'write_file', input: { path: 'README.md' }, confirm: true };

describe('first reply wins', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  async function setup(options: Parameters<typeof startTestServer>[0] = {}): Promise<{ server: TestServer; tab: RpcClient; session: string; sessionId: string; chat: string; sse: SseClient }> {
    const server = await startTestServer(options);
    closers.push(() => server.stop());
    return { server, ...(await openWatchedSession(server, 'race', closers)) };
  }

  it('an AHP tab and two HTTP replies race for one request: exactly one wins, the others get false / 404, state shows one answer', async () => {
    const { server, tab, sessionId, chat, sse } = await setup();
    const ROUNDS = 6;
    const requests = Array.from({ length: ROUNDS }, (_, i) => ({ ...TWO_QUESTION_REQUEST, id: `race-${i}` }));
    await startScriptTurn(
      tab,
      chat,
      requests.map((ask) => ({ ask })),
    );
    const winners: string[] = [];

    for (let round = 0; round < ROUNDS; round++) {
      const data = await sse.waitForPermissionRequest(round + 1);
      expect(data.requestId).toBe(`race-${round}`);
      const allow = data.options.find((o: any) => o.kind === 'allow_once').optionId;

      const fromTab = async (): Promise<boolean> => {
        const echo = await tab.dispatchAndWait(chat, {
          type: 'chat/inputCompleted',
          requestId: data.requestId,
          response: 'accept',
          answers: {
            runtime: { state: 'submitted', value: { kind: 'selected', value: 'node' } },
            notes: { state: 'submitted', value: { kind: 'text', value: 'tab' } },
          },
        });
        return echo.rejectionReason === undefined;
      };
      const fromDataWorks = async (): Promise<boolean> => {
        const res = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: data.requestId, Answers: { '0': 'Deno', '1': 'dataworks' }, Outcome: { Outcome: 'selected', OptionId: allow } }, { id: `dw-${round}` });
        expect(res.status).toBe(200);
        expect(res.body.JsonRpcResponse.Error).toBeUndefined();
        return res.body.JsonRpcResponse.Result.Accepted;
      };
      const fromQwen = async (): Promise<boolean> => {
        const res = await replyQwen(server.url, sessionId, data.requestId, { outcome: { outcome: 'selected', optionId: allow }, answers: { '0': 'deno', '1': 'qwen' } });
        expect([200, 404]).toContain(res.status);
        return res.status === 200;
      };
      // Even rounds: all three fired together (the WebSocket frame usually lands first). Odd
      // rounds: the two HTTP replies race each other and the tab answers as soon as the first
      // HTTP response is back, while the other may still be in flight.
      const order = round % 4 < 2 ? ['dataworks', 'qwen', 'tab'] : ['qwen', 'dataworks', 'tab'];
      const run = { tab: fromTab, dataworks: fromDataWorks, qwen: fromQwen } as Record<string, () => Promise<boolean>>;
      let results: boolean[];
      if (round % 2 === 0) {
        results = await Promise.all(order.map((name) => run[name]!()));
      } else {
        const http = [run[order[0]!]!(), run[order[1]!]!()];
        await Promise.race(http);
        const tabResult = run['tab']!();
        results = [...(await Promise.all(http)), await tabResult];
      }
      const won = order.filter((_, i) => results[i]).map((name) => ({ name }));
      expect(won).toHaveLength(1);
      winners.push(won[0]!.name);

      // Exactly one answer in the state, and it is the winner's.
      const parts = await waitFor(
        async () => {
          const state = (await tab.subscribe<any>(chat)).state;
          const all = [...(state.activeTurn?.responseParts ?? []), ...state.turns.flatMap((t: any) => t.responseParts)];
          const mine = all.filter((p: any) => p.kind === 'inputRequest' && p.request.id === data.requestId);
          return mine.length === 1 && mine[0].response ? mine : undefined;
        },
        { what: 'resolved part' },
      );
      expect(parts[0].response).toBe('accept');
      expect(parts[0].request.answers.notes.value.value).toBe(won[0]!.name);
      const applied = tab.envelopes.filter((e) => e.action.type === 'chat/inputCompleted' && e.action['requestId'] === data.requestId && !e.rejectionReason);
      expect(applied).toHaveLength(1);
      const resolvedEvent = await sse.waitForResolved(data.requestId);
      expect(resolvedEvent.data.params.data.outcome).toEqual({ outcome: 'selected', optionId: allow });
      expect(sse.notifies('permission_resolved').filter((e) => e.data.params.data.requestId === data.requestId)).toHaveLength(1);
    }
    // HTTP losers were told on the SSE stream too.
    expect(sse.notifies('permission_already_resolved').length).toBeGreaterThan(0);
    expect(winners).toHaveLength(ROUNDS);
    expect(winners.filter((w) => w !== 'tab').length).toBeGreaterThanOrEqual(ROUNDS / 2);
  });

  it('many concurrent HTTP replies to one tool permission: exactly one is accepted', async () => {
    const { server, tab, sessionId, chat, sse } = await setup();
    await startScriptTurn(tab, chat, [{ tool: TOOL }]);
    const data = await sse.waitForPermissionRequest();
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i % 2 === 0
          ? replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: data.requestId, Outcome: { Outcome: 'selected', OptionId: i % 4 === 0 ? 'proceed_once' : 'reject_once' } }, { id: `r${i}` }).then(
              (r) => r.body.JsonRpcResponse.Result.Accepted as boolean,
            )
          : replyQwen(server.url, sessionId, data.requestId, { outcome: { outcome: 'cancelled' } }).then((r) => r.status === 200),
      ),
    );
    expect(replies.filter(Boolean)).toHaveLength(1);
    await tab.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn complete');
    expect(tab.envelopes.filter((e) => e.action.type === 'chat/toolCallConfirmed')).toHaveLength(1);
  });

  it('Qwen shape: 200 when taken, 404 when not, 400 invalid_option_id and bad params', async () => {
    const { server, sessionId, sse, tab, chat } = await setup();
    await startScriptTurn(tab, chat, [
      {
        tool: {
          ...TOOL,
          options: [
            { id: 'yes-please', label: 'Yes', kind: 'approve' },
            { id: 'no-thanks', label: 'No', kind: 'deny' },
          ],
        },
      },
    ]);
    const data = await sse.waitForPermissionRequest();
    // The tool's own AHP options are offered with their ids, plus allow_always and reject_always.
    expect(data.options).toEqual([
      { optionId: 'yes-please', name: 'Yes', kind: 'allow_once' },
      { optionId: 'no-thanks', name: 'No', kind: 'reject_once' },
      { optionId: 'proceed_always', name: 'Always allow this tool in this session', kind: 'allow_always' },
      { optionId: 'reject_always', name: 'Always deny this tool in this session', kind: 'reject_always' },
    ]);
    const bad = await replyQwen(server.url, sessionId, data.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } });
    expect(bad).toMatchObject({ status: 400, body: { code: 'invalid_option_id' } });
    expect((await replyQwen(server.url, sessionId, data.requestId, { outcome: { outcome: 'selected' } })).body.code).toBe('missing_option_id');
    expect((await replyQwen(server.url, sessionId, data.requestId, { outcome: 'cancelled' })).body.code).toBe('missing_outcome');
    expect((await replyQwen(server.url, sessionId, data.requestId, { outcome: { outcome: 'maybe' } })).body.code).toBe('invalid_outcome');
    expect((await replyQwen(server.url, sessionId, 'unknown', { outcome: { outcome: 'selected' } })).status).toBe(400);
    expect((await replyQwen(server.url, sessionId, 'unknown', { outcome: { outcome: 'cancelled' } })).status).toBe(404);
    const ok = await replyQwen(server.url, sessionId, data.requestId, { outcome: { outcome: 'selected', optionId: 'no-thanks' } });
    expect(ok).toEqual({ status: 200, body: { accepted: true } });
    expect((await replyQwen(server.url, sessionId, data.requestId, { outcome: { outcome: 'selected', optionId: 'no-thanks' } })).status).toBe(404);
    const confirmed = await tab.waitForEnvelope((e) => e.action.type === 'chat/toolCallConfirmed', 'confirmation');
    expect(confirmed.action).toMatchObject({ approved: false, reason: 'denied', selectedOptionId: 'no-thanks' });
  });

  it('allow_always is recorded in the log, auto-approves that tool later in the session, and survives a restart', async () => {
    const first = await setup({ persistent: true });
    const { tab, session, sessionId, chat, sse } = first;
    await startScriptTurn(tab, chat, [{ tool: TOOL }]);
    const ask = await sse.waitForPermissionRequest();
    const always = ask.options.find((o: any) => o.kind === 'allow_always').optionId;
    const res = await replyDataWorks(first.server.url, { SessionId: sessionId, PermissionRequestId: ask.requestId, Outcome: { Outcome: 'selected', OptionId: always } }, { id: 'always' });
    expect(res.body.JsonRpcResponse.Result.Accepted).toBe(true);
    await tab.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn 1 complete');
    const sessionState = (await tab.subscribe<any>(session)).state;
    expect(sessionState._meta['hub/approvedTools']).toEqual(['write_file']);

    // Same tool later: approved by the hub; another tool still asks.
    await startScriptTurn(tab, chat, [{ tool: { ...TOOL, id: 'tool-2' } }, { tool: { id: 'tool-3', name: 'delete_file', confirm: true } }]);
    const auto = await sse.waitForPermissionRequest(2);
    expect(auto.toolCall.toolCallId).toBe('tool-2');
    expect((await sse.waitForResolved(auto.requestId)).data.params.data.outcome).toEqual({ outcome: 'selected', optionId: always });
    const other = await sse.waitForPermissionRequest(3);
    expect(other.toolCall.toolCallId).toBe('tool-3');
    let state = (await tab.subscribe<any>(chat)).state;
    const tool2 = state.activeTurn.responseParts.find((p: any) => p.kind === 'toolCall' && p.toolCall.toolCallId === 'tool-2').toolCall;
    expect(tool2).toMatchObject({ status: 'completed', confirmed: 'setting' });
    expect(state.activeTurn.responseParts.find((p: any) => p.kind === 'toolCall' && p.toolCall.toolCallId === 'tool-3').toolCall.status).toBe('pending-confirmation');
    expect((await replyQwen(first.server.url, sessionId, other.requestId, { outcome: { outcome: 'selected', optionId: 'reject_once' } })).status).toBe(200);
    await waitFor(async () => ((await tab.subscribe<any>(chat)).state.activeTurn ? undefined : true), { what: 'turn 2 to end' });

    // Restart on the same data directory: the remembered approval is still there and still used.
    const { tab: tab2, sse: sse2 } = await restartWatchedSession(first, closers);
    expect((await tab2.subscribe<any>(session)).state._meta['hub/approvedTools']).toEqual(['write_file']);
    await startScriptTurn(tab2, chat, [{ tool: { ...TOOL, id: 'tool-4' } }]);
    const again = await sse2.waitForPermissionRequest();
    expect((await sse2.waitForResolved(again.requestId)).data.params.data.outcome).toEqual({ outcome: 'selected', optionId: always });
    await tab2.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn 3 complete');
    state = (await tab2.subscribe<any>(chat)).state;
    expect(state.turns.at(-1).responseParts.find((p: any) => p.kind === 'toolCall').toolCall).toMatchObject({ status: 'completed', confirmed: 'setting' });
  });
});
