/**
 * `reject_always` over real WebSocket, HTTP and SSE: it denies the tool now, records
 * `x-session/toolDenialRemembered` in the log (`_meta['hub/deniedTools']`), the hub denies later
 * confirmations of that tool in the session itself (also after a restart), and the latest
 * "always" choice for a tool wins (allow_always after reject_always flips it, and back).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { openWatchedSession, replyDataWorks, replyQwen, restartWatchedSession, type SseClient } from '../helpers/sse.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

const TOOL = { id: 'tool-1', name: 'write_file', input: { path: 'README.md' }, confirm: true };
const REJECT_ALWAYS = { optionId: 'reject_always', name: 'Always deny this tool in this session', kind: 'reject_always' };

function toolPart(state: any, toolCallId: string): any {
  const parts = [...(state.activeTurn?.responseParts ?? []), ...state.turns.flatMap((t: any) => t.responseParts)];
  return parts.find((p: any) => p.kind === 'toolCall' && p.toolCall.toolCallId === toolCallId)?.toolCall;
}

const optionOf = (data: any, kind: string): string => data.options.find((o: any) => o.kind === kind).optionId;

describe('reject_always', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  async function setup(options: Parameters<typeof startTestServer>[0] = {}): Promise<{ server: TestServer; tab: RpcClient; session: string; sessionId: string; chat: string; sse: SseClient }> {
    const server = await startTestServer(options);
    closers.push(() => server.stop());
    return { server, ...(await openWatchedSession(server, 'always', closers)) };
  }

  async function turnEnded(tab: RpcClient, chat: string): Promise<any> {
    return waitFor(
      async () => {
        const state = (await tab.subscribe<any>(chat)).state;
        return state.activeTurn ? undefined : state;
      },
      { what: `turn of ${chat} to end` },
    );
  }

  it('is offered for tool permissions only, never for ask_user_question', async () => {
    const { server, tab, sessionId, chat, sse } = await setup();
    await startScriptTurn(tab, chat, [{ tool: TOOL }, { ask: { id: 'q-1', questions: [{ id: 'x', kind: 'text', message: 'x?' }] } }]);
    const tool = await sse.waitForPermissionRequest(1);
    expect(tool.options).toContainEqual(REJECT_ALWAYS);
    expect(tool.options.filter((o: any) => o.kind === 'reject_always')).toHaveLength(1);
    expect((await replyQwen(server.url, sessionId, tool.requestId, { outcome: { outcome: 'selected', optionId: optionOf(tool, 'allow_once') } })).status).toBe(200);
    const question = await sse.waitForPermissionRequest(2);
    expect(question.toolCall.toolName).toBe('ask_user_question');
    expect(question.options.map((o: any) => o.kind)).toEqual(['allow_once', 'reject_once']);
    expect((await replyQwen(server.url, sessionId, question.requestId, { outcome: { outcome: 'selected', optionId: 'reject_always' } })).body.code).toBe('invalid_option_id');
    expect((await replyQwen(server.url, sessionId, question.requestId, { outcome: { outcome: 'cancelled' } })).status).toBe(200);
    await turnEnded(tab, chat);
  });

  it('reject_always denies now, is recorded in the log, denies that tool later in the session without a reply, and survives a restart', async () => {
    const first = await setup({ persistent: true });
    const { tab, session, sessionId, chat, sse } = first;
    await startScriptTurn(tab, chat, [{ tool: TOOL }]);
    const ask = await sse.waitForPermissionRequest();
    expect(ask.options).toContainEqual(REJECT_ALWAYS);
    const res = await replyDataWorks(first.server.url, { SessionId: sessionId, PermissionRequestId: ask.requestId, Outcome: { Outcome: 'selected', OptionId: 'reject_always' } }, { id: 'never' });
    expect(res.body.JsonRpcResponse.Result.Accepted).toBe(true);

    // Denied now, through the same path as reject_once.
    const confirmed = await tab.waitForEnvelope((e) => e.action.type === 'chat/toolCallConfirmed', 'confirmation');
    expect(confirmed.action).toMatchObject({ toolCallId: 'tool-1', approved: false, reason: 'denied' });
    expect((await sse.waitForResolved(ask.requestId)).data.params.data.outcome).toEqual({ outcome: 'selected', optionId: 'reject_always' });
    await tab.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn 1 complete');
    expect(toolPart((await tab.subscribe<any>(chat)).state, 'tool-1')).toMatchObject({ status: 'cancelled', reason: 'denied' });
    const sessionState = (await tab.subscribe<any>(session)).state;
    expect(sessionState._meta['hub/deniedTools']).toEqual(['write_file']);
    expect(sessionState._meta['hub/approvedTools']).toBeUndefined();

    // Same tool later: denied by the hub without a reply; another tool still asks.
    await startScriptTurn(tab, chat, [{ tool: { ...TOOL, id: 'tool-2' } }, { tool: { id: 'tool-3', name: 'delete_file', confirm: true } }]);
    const auto = await sse.waitForPermissionRequest(2);
    expect(auto.toolCall.toolCallId).toBe('tool-2');
    expect(auto.options).toContainEqual(REJECT_ALWAYS);
    expect((await sse.waitForResolved(auto.requestId)).data.params.data.outcome).toEqual({ outcome: 'selected', optionId: 'reject_always' });
    const other = await sse.waitForPermissionRequest(3);
    expect(other.toolCall.toolCallId).toBe('tool-3');
    let state = (await tab.subscribe<any>(chat)).state;
    expect(toolPart(state, 'tool-2')).toMatchObject({ status: 'cancelled', reason: 'denied' });
    expect(toolPart(state, 'tool-3').status).toBe('pending-confirmation');
    // A late reply to the auto-denied request is not accepted.
    expect((await replyQwen(first.server.url, sessionId, auto.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } })).status).toBe(404);
    expect((await replyQwen(first.server.url, sessionId, other.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } })).status).toBe(200);
    state = await turnEnded(tab, chat);
    expect(toolPart(state, 'tool-3')).toMatchObject({ status: 'completed', confirmed: 'user-action' });
    // The denial is remembered once, as one x-session/toolDenialRemembered in the log.
    expect((await tab.subscribe<any>(session)).state._meta['hub/deniedTools']).toEqual(['write_file']);

    // Restart on the same data directory: the remembered denial is still there and still used.
    const { tab: tab2, sse: sse2 } = await restartWatchedSession(first, closers);
    expect((await tab2.subscribe<any>(session)).state._meta['hub/deniedTools']).toEqual(['write_file']);
    await startScriptTurn(tab2, chat, [{ tool: { ...TOOL, id: 'tool-4' } }]);
    const again = await sse2.waitForPermissionRequest();
    expect((await sse2.waitForResolved(again.requestId)).data.params.data.outcome).toEqual({ outcome: 'selected', optionId: 'reject_always' });
    await tab2.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn 3 complete');
    state = (await tab2.subscribe<any>(chat)).state;
    expect(toolPart(state, 'tool-4')).toMatchObject({ status: 'cancelled', reason: 'denied' });
  });

  it('the latest "always" choice for a tool wins: allow_always after reject_always flips it, and reject_always flips it back', async () => {
    const { server, tab, session, sessionId, chat, sse } = await setup();
    // Three chats of one session, each with a write_file confirmation pending at the same time
    // (a remembered choice answers later confirmations, not ones already pending).
    // A second connection only watches the session channel (never re-subscribes), to see its log.
    const watcher = await RpcClient.open(server.wsUrl);
    closers.push(() => watcher.close());
    await watcher.subscribe(session);
    const chats = [chat];
    for (let i = 0; i < 2; i++) {
      const { chat: extra } = await tab.request<{ chat: string }>('createChat', { channel: session });
      await tab.subscribe(extra);
      chats.push(extra);
    }
    for (const [i, c] of chats.entries()) await startScriptTurn(tab, c, [{ tool: { ...TOOL, id: `w-${i}` } }]);
    const requests = await Promise.all(chats.map((_, i) => sse.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === `w-${i}`)));
    const choose = async (i: number, kind: string): Promise<void> => {
      const res = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: requests[i].requestId, Outcome: { Outcome: 'selected', OptionId: optionOf(requests[i], kind) } }, { id: `c-${i}` });
      expect(res.body.JsonRpcResponse.Result.Accepted).toBe(true);
    };
    const remembered = async (): Promise<{ approved: unknown; denied: unknown }> => {
      const meta = (await tab.subscribe<any>(session)).state._meta ?? {};
      return { approved: meta['hub/approvedTools'], denied: meta['hub/deniedTools'] };
    };

    await choose(0, 'reject_always');
    expect(await remembered()).toEqual({ approved: undefined, denied: ['write_file'] });
    await choose(1, 'allow_always');
    expect(await remembered()).toEqual({ approved: ['write_file'], denied: undefined });
    expect(toolPart(await turnEnded(tab, chats[1]!), 'w-1')).toMatchObject({ status: 'completed', confirmed: 'user-action' });

    // Now approved: the next write_file in the session is approved by the hub.
    await startScriptTurn(tab, chats[1]!, [{ tool: { ...TOOL, id: 'w-auto-allow' } }]);
    const autoAllow = await sse.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === 'w-auto-allow');
    expect((await sse.waitForResolved(autoAllow.requestId)).data.params.data.outcome).toEqual({ outcome: 'selected', optionId: 'proceed_always' });
    expect(toolPart(await turnEnded(tab, chats[1]!), 'w-auto-allow')).toMatchObject({ status: 'completed', confirmed: 'setting' });

    await choose(2, 'reject_always');
    expect(await remembered()).toEqual({ approved: undefined, denied: ['write_file'] });
    expect(toolPart(await turnEnded(tab, chats[2]!), 'w-2')).toMatchObject({ status: 'cancelled', reason: 'denied' });

    // Denied again: the next write_file is denied by the hub.
    await startScriptTurn(tab, chats[2]!, [{ tool: { ...TOOL, id: 'w-auto-deny' } }]);
    const autoDeny = await sse.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === 'w-auto-deny');
    expect((await sse.waitForResolved(autoDeny.requestId)).data.params.data.outcome).toEqual({ outcome: 'selected', optionId: 'reject_always' });
    expect(toolPart(await turnEnded(tab, chats[2]!), 'w-auto-deny')).toMatchObject({ status: 'cancelled', reason: 'denied' });
    const log = watcher.envelopes.filter((e) => e.channel === session && String(e.action.type).startsWith('x-session/tool')).map((e) => [e.action.type, e.action['toolName']]);
    expect(log).toEqual([
      ['x-session/toolDenialRemembered', 'write_file'],
      ['x-session/toolApprovalRemembered', 'write_file'],
      ['x-session/toolDenialRemembered', 'write_file'],
    ]);
  });
});
