/**
 * Seed 004 (DataWorks `ReplyAgentSession`) over real HTTP, SSE and WebSocket: every test drives
 * the demo agent from an AHP tab, reads `permission_request` from the session's SSE stream, and
 * replies with the DataWorks envelope (`POST /v2/agent-sessions/reply`).
 * Behaviour numbers (B1…B15) refer to the README section "Answering from anywhere" and the seed-004 checklist.
 */
import { request } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createInteractionsFeature } from '../../server/interactions/feature.js';
import { defaultFeatures } from '../../server/features.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { openWatchedSession, replyDataWorks, replyQwen, sessionIdOfUri, SseClient, type HttpResult } from '../helpers/sse.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';

/** POSTs JSON to a path exactly as written (no URL normalisation). */
function rawPost(port: number, path: string, body: unknown): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const TOOL = { id: 'tool-1', name: 'write_file', input: { path: 'README.md' }, confirm: true };

/** B10 / B14: the DataWorks response shape, with exactly one of Result and Error. */
function envelope(res: HttpResult, id: unknown): { Result?: { Accepted: boolean }; Error?: { Code: number; ErrorCode: string; Message: string } } {
  const r = res.body.JsonRpcResponse;
  expect(r).toBeDefined();
  expect(r.Id).toEqual(id);
  expect(r.Jsonrpc).toBe('2.0');
  expect(typeof r.Timestamp).toBe('number');
  expect(Math.abs(r.Timestamp - Date.now())).toBeLessThan(60_000);
  expect(typeof res.body.RequestId).toBe('string');
  expect(res.body.RequestId.length).toBeGreaterThan(0);
  expect(('Result' in r ? 1 : 0) + ('Error' in r ? 1 : 0)).toBe(1);
  return r;
}

function accepted(res: HttpResult, id: unknown): boolean {
  const r = envelope(res, id);
  expect(r.Error).toBeUndefined();
  expect(res.status).toBe(200);
  return r.Result!.Accepted;
}

function errorOf(res: HttpResult, id: unknown = res.body.JsonRpcResponse?.Id): { Code: number; ErrorCode: string; Message: string } {
  const r = envelope(res, id);
  expect(r.Result).toBeUndefined();
  expect(r.Error!.Message.length).toBeGreaterThan(5);
  return r.Error!;
}

interface Ctx {
  tab: RpcClient;
  session: string;
  sessionId: string;
  chat: string;
  sse: SseClient;
}

describe('DataWorks ReplyAgentSession (seed 004)', () => {
  let server: TestServer;
  const closers: Array<() => Promise<void>> = [];
  beforeEach(async () => {
    server = await startTestServer();
  });
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((c) => c()));
    await server.stop();
  });

  async function setup(script: unknown[]): Promise<Ctx & { turnId: string }> {
    const { tab, session, sessionId, chat, sse } = await openWatchedSession(server, 'seed-004', closers);
    expect(sse.status).toBe(200);
    const turnId = await startScriptTurn(tab, chat, script);
    return { tab, session, sessionId, chat, sse, turnId };
  }

  async function chatState(tab: RpcClient, chat: string): Promise<any> {
    return (await tab.subscribe(chat)).state;
  }

  it('B1 B2 B7 B9 B11: answers ask_user_question by index with the requestId from the SSE event; Accepted only means taken, events keep flowing', async () => {
    const { tab, sessionId, chat, sse } = await setup([{ ask: TWO_QUESTION_REQUEST }, { say: 'after the answers' }]);
    const data = await sse.waitForPermissionRequest();
    // B2: the id to answer is params.data.requestId of a _qwen/notify permission_request.
    expect(data.sessionId).toBe(sessionId);
    expect(data.requestId).toBe('req-1');
    expect(data.toolCall.toolName).toBe('ask_user_question');
    expect(data.toolCall._meta.toolName).toBe('ask_user_question');
    expect(data.toolCall.rawInput.questions.map((q: any) => q.question)).toEqual(['Which runtime?', 'Anything else?']);
    expect(data.toolCall.rawInput.questions[0].options.map((o: any) => o.label)).toEqual(['Node.js', 'Deno']);
    const allowOnce = data.options.find((o: any) => o.kind === 'allow_once');
    expect(allowOnce).toBeDefined();
    expect(data.options.every((o: any) => typeof o.optionId === 'string' && typeof o.name === 'string')).toBe(true);

    const res = await replyDataWorks(
      server.url,
      {
        SessionId: sessionId,
        PermissionRequestId: data.requestId,
        Answers: { '0': 'Deno', '1': 'keep it small' },
        Outcome: { Outcome: 'selected', OptionId: allowOnce.optionId },
      },
      { id: 'reply-rpc-001' },
    );
    expect(accepted(res, 'reply-rpc-001')).toBe(true);

    // B7: answers by index landed on the AHP question ids; every AHP subscriber saw it.
    const done = await tab.waitForEnvelope((e) => e.action.type === 'chat/inputCompleted', 'inputCompleted');
    expect(done.action).toMatchObject({
      requestId: 'req-1',
      response: 'accept',
      answers: {
        runtime: { state: 'submitted', value: { kind: 'selected', value: 'deno' } },
        notes: { state: 'submitted', value: { kind: 'text', value: 'keep it small' } },
      },
    });
    // B11: the outcome and the rest of the turn arrive on the original SSE stream.
    const resolved = await sse.waitForResolved('req-1');
    expect(resolved.data.params.data.outcome).toEqual({ outcome: 'selected', optionId: allowOnce.optionId });
    await sse.waitForEvent((e) => e.data.method === '_hub/notify' && e.data.params.kind === 'turn_end', 'turn end');
    const said = sse
      .updates('agent_message_chunk')
      .map((e) => e.data.params.update.content.text)
      .join('');
    expect(said).toContain('runtime: Deno');
    expect(said).toContain('after the answers');
    const resolvedIndex = sse.events.indexOf(resolved);
    const firstAfter = sse.events.findIndex((e) => e.data.params?.update?.sessionUpdate === 'agent_message_chunk' && e.data.params.update.content.text.includes('after'));
    expect(firstAfter).toBeGreaterThan(resolvedIndex);
    const state = await chatState(tab, chat);
    expect(state.turns[0].responseParts.find((p: any) => p.kind === 'inputRequest').response).toBe('accept');
  });

  it('B1: grants, denies and cancels tool permissions (allow_* approves, reject_* denies, cancelled cancels)', async () => {
    const { tab, sessionId, chat, sse } = await setup([
      { tool: { ...TOOL, id: 't-grant' } },
      { tool: { ...TOOL, id: 't-deny' } },
      { tool: { ...TOOL, id: 't-cancel' } },
      { ask: { id: 'q-cancel', questions: [{ id: 'x', kind: 'text', message: 'x?' }] } },
    ]);
    const grant = await sse.waitForPermissionRequest(1);
    expect(grant.toolCall.toolCallId).toBe('t-grant');
    expect(grant.requestId).not.toBe('t-grant');
    expect(grant.options.map((o: any) => o.kind).sort()).toEqual(['allow_always', 'allow_once', 'reject_always', 'reject_once']);
    expect(grant.toolCall.rawInput).toEqual({ path: 'README.md' });
    const optionOf = (d: any, kind: string): string => d.options.find((o: any) => o.kind === kind).optionId;
    expect(accepted(await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: grant.requestId, Outcome: { Outcome: 'selected', OptionId: optionOf(grant, 'allow_once') } }, { id: 'g' }), 'g')).toBe(true);

    const deny = await sse.waitForPermissionRequest(2);
    expect(accepted(await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: deny.requestId, Outcome: { Outcome: 'selected', OptionId: optionOf(deny, 'reject_once') } }, { id: 'd' }), 'd')).toBe(true);

    const cancel = await sse.waitForPermissionRequest(3);
    expect(accepted(await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: cancel.requestId, Outcome: { Outcome: 'cancelled' } }, { id: 'c' }), 'c')).toBe(true);

    const question = await sse.waitForPermissionRequest(4);
    expect(accepted(await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: question.requestId, Outcome: { Outcome: 'cancelled' } }, { id: 'q' }), 'q')).toBe(true);

    await tab.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn complete');
    const parts = (await chatState(tab, chat)).turns[0].responseParts;
    const tool = (id: string) => parts.find((p: any) => p.kind === 'toolCall' && p.toolCall.toolCallId === id).toolCall;
    expect(tool('t-grant')).toMatchObject({ status: 'completed', confirmed: 'user-action' });
    expect(tool('t-deny')).toMatchObject({ status: 'cancelled', reason: 'denied' });
    expect(tool('t-cancel')).toMatchObject({ status: 'cancelled', reason: 'skipped' });
    expect(parts.find((p: any) => p.kind === 'inputRequest').response).toBe('cancel');
    expect(sse.notifies('permission_resolved').map((e) => e.data.params.data.outcome)).toEqual([
      { outcome: 'selected', optionId: optionOf(grant, 'allow_once') },
      { outcome: 'selected', optionId: optionOf(deny, 'reject_once') },
      { outcome: 'cancelled' },
      { outcome: 'cancelled' },
    ]);
  });

  it('B3: the PermissionRequestId is not the ToolCallId, the HTTP RequestId nor the JSON-RPC Id', async () => {
    const { tab, sessionId, chat, sse } = await setup([{ tool: TOOL }]);
    const data = await sse.waitForPermissionRequest();
    expect(data.requestId).not.toBe(TOOL.id);
    const allow = data.options.find((o: any) => o.kind === 'allow_once').optionId;
    const outcome = { Outcome: 'selected', OptionId: allow };

    const byToolCallId = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: TOOL.id, Outcome: outcome }, { id: 'rpc-1' });
    expect(accepted(byToolCallId, 'rpc-1')).toBe(false);
    const byHttpRequestId = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: byToolCallId.body.RequestId, Outcome: outcome }, { id: 'rpc-2' });
    expect(accepted(byHttpRequestId, 'rpc-2')).toBe(false);
    const byJsonRpcId = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: 'rpc-3', Outcome: outcome }, { id: 'rpc-3' });
    expect(accepted(byJsonRpcId, 'rpc-3')).toBe(false);
    // Still pending: none of those touched it.
    const state = await chatState(tab, chat);
    expect(state.activeTurn.responseParts.find((p: any) => p.kind === 'toolCall').toolCall.status).toBe('pending-confirmation');

    const right = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: data.requestId, Outcome: outcome }, { id: 'rpc-4' });
    expect(accepted(right, 'rpc-4')).toBe(true);
  });

  it('B4 B15: empty, "." and ".." PermissionRequestIds are parameter errors in the DataWorks body and in the Qwen path, even with nothing pending', async () => {
    const { sessionId } = await setup([{ say: 'nothing to ask' }]);
    for (const bad of ['', '.', '..', undefined, 7]) {
      const res = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: bad, Outcome: { Outcome: 'cancelled' } }, { id: 'bad-id' });
      expect(res.status).toBe(400);
      expect(errorOf(res, 'bad-id')).toMatchObject({ Code: -32602, ErrorCode: 'INVALID_PERMISSION_REQUEST_ID' });
    }
    // Dot-segments are normalised away by URL parsing (fetch, the hub's router), which leaves a
    // path with no request id: still a 400 naming the problem, never a reply to something else.
    for (const bad of ['%2E', '%2E%2E', '%2e', '.', '..', '']) {
      const res = await rawPost(server.port, `/session/${sessionId}/permission/${bad}`, { outcome: { outcome: 'cancelled' } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_permission_request_id', errorCode: 'INVALID_PERMISSION_REQUEST_ID' });
    }
  });

  it('B5: SessionId is the public id returned at creation (the ahp-session URI works too); the chat URI or a made-up id is not a session', async () => {
    const { session, sessionId, chat, sse } = await setup([{ tool: TOOL }, { tool: { ...TOOL, id: 'tool-2' } }]);
    const data = await sse.waitForPermissionRequest();
    const cancel = { Outcome: 'cancelled' };
    expect(accepted(await replyDataWorks(server.url, { SessionId: chat, PermissionRequestId: data.requestId, Outcome: cancel }, { id: 'a' }), 'a')).toBe(false);
    expect(accepted(await replyDataWorks(server.url, { SessionId: `${sessionId}-x`, PermissionRequestId: data.requestId, Outcome: cancel }, { id: 'b' }), 'b')).toBe(false);
    expect(accepted(await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: data.requestId, Outcome: cancel }, { id: 'c' }), 'c')).toBe(true);
    const second = await sse.waitForPermissionRequest(2);
    expect(accepted(await replyDataWorks(server.url, { SessionId: session, PermissionRequestId: second.requestId, Outcome: cancel }, { id: 'd' }), 'd')).toBe(true);
  });

  it('B6: Jsonrpc is optional but must be "2.0"; Id is required and echoed unchanged; Params is required', async () => {
    const { sessionId, sse } = await setup([{ tool: TOOL }]);
    const data = await sse.waitForPermissionRequest();
    const params = { SessionId: sessionId, PermissionRequestId: data.requestId, Outcome: { Outcome: 'cancelled' } };

    const wrongVersion = await replyDataWorks(server.url, {}, { envelope: { Jsonrpc: '1.0', Id: 'v', Params: params } });
    expect(errorOf(wrongVersion, 'v')).toMatchObject({ Code: -32600, ErrorCode: 'INVALID_REQUEST' });
    const noId = await replyDataWorks(server.url, {}, { envelope: { Jsonrpc: '2.0', Params: params } });
    expect(errorOf(noId, null)).toMatchObject({ Code: -32600, ErrorCode: 'MISSING_ID' });
    const numericId = await replyDataWorks(server.url, {}, { envelope: { Id: 42, Params: params } });
    expect(errorOf(numericId, 42).ErrorCode).toBe('MISSING_ID');
    const noParams = await replyDataWorks(server.url, {}, { envelope: { Id: 'p' } });
    expect(errorOf(noParams, 'p')).toMatchObject({ Code: -32602, ErrorCode: 'MISSING_PARAMS' });
    const notJson = await fetch(`${server.url}/v2/agent-sessions/reply`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"Id": ' });
    const notJsonBody = { status: notJson.status, body: await notJson.json() };
    expect(errorOf(notJsonBody, null)).toMatchObject({ Code: -32700, ErrorCode: 'INVALID_JSON' });

    // Without Jsonrpc, with an Id full of odd characters: accepted and echoed byte for byte.
    const oddId = 'réply/001 "quoted" ✓';
    const ok = await replyDataWorks(server.url, {}, { envelope: { Id: oddId, Params: params } });
    expect(accepted(ok, oddId)).toBe(true);
  });

  it('B7 B15: Answers keys must be canonical in-range indexes and values must fit their question', async () => {
    const { tab, sessionId, chat, sse } = await setup([{ ask: TWO_QUESTION_REQUEST }, { tool: TOOL }]);
    const data = await sse.waitForPermissionRequest();
    const allow = data.options.find((o: any) => o.kind === 'allow_once').optionId;
    const reply = (Answers: unknown, id: string, requestId = data.requestId) => replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: requestId, Answers, Outcome: { Outcome: 'selected', OptionId: allow } }, { id });

    // Malformed keys are errors before lookup: the same for an unknown request id.
    for (const key of ['01', '-0', '1.0', ' 1', '+1', '1e0', 'a']) {
      for (const requestId of [data.requestId, 'no-such-request']) {
        const res = await reply({ [key]: 'x' }, `k${key}`, requestId);
        expect(errorOf(res, `k${key}`)).toMatchObject({ Code: -32602, ErrorCode: 'INVALID_ANSWER_KEY' });
      }
    }
    // Out of range for a 2-question request (our choice: rejected, not ignored as Qwen does).
    for (const key of ['2', '4', '5']) expect(errorOf(await reply({ '0': 'Node.js', '1': 'x', [key]: 'x' }, `r${key}`)).ErrorCode).toBe('INVALID_ANSWER_KEY');
    expect(errorOf(await reply({ '0': 'Bun', '1': 'x' }, 'fit')).ErrorCode).toBe('INVALID_ANSWER');
    expect(errorOf(await reply({ '0': 'node', '1': 'x'.repeat(201) }, 'long')).ErrorCode).toBe('INVALID_ANSWER');
    expect(errorOf(await reply({ '0': 3 }, 'num')).ErrorCode).toBe('INVALID_ANSWERS');
    expect(errorOf(await reply(['node'], 'arr')).ErrorCode).toBe('INVALID_ANSWERS');
    expect(errorOf(await reply({ '0': 'node' }, 'missing')).ErrorCode).toBe('MISSING_REQUIRED_ANSWER');

    // None of that changed anything; option ids and labels both select.
    const before = await chatState(tab, chat);
    const part = before.activeTurn.responseParts.find((p: any) => p.kind === 'inputRequest');
    expect(part.response).toBeUndefined();
    expect(part.request.answers).toBeUndefined();
    expect(accepted(await reply({ '1': 'fine', '0': 'node' }, 'ok'), 'ok')).toBe(true);

    // Answers for a plain tool permission are refused.
    const tool = await sse.waitForPermissionRequest(2);
    const toolAllow = tool.options.find((o: any) => o.kind === 'allow_once').optionId;
    const res = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: tool.requestId, Answers: { '0': 'x' }, Outcome: { Outcome: 'selected', OptionId: toolAllow } }, { id: 'na' });
    expect(errorOf(res, 'na').ErrorCode).toBe('ANSWERS_NOT_EXPECTED');
  });

  it('B8 B9 B15: Outcome is required and selected|cancelled; selected needs a non-empty OptionId that was offered', async () => {
    const { sessionId, sse } = await setup([{ tool: TOOL }]);
    const data = await sse.waitForPermissionRequest();
    const reply = (Outcome: unknown, id: string, requestId = data.requestId) => replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: requestId, Outcome }, { id });
    for (const requestId of [data.requestId, 'unknown-request']) {
      expect(errorOf(await reply(undefined, 'o1', requestId), 'o1')).toMatchObject({ Code: -32602, ErrorCode: 'MISSING_OUTCOME' });
      expect(errorOf(await reply({ Outcome: 'approve' }, 'o2', requestId), 'o2').ErrorCode).toBe('INVALID_OUTCOME');
      expect(errorOf(await reply({}, 'o3', requestId), 'o3').ErrorCode).toBe('INVALID_OUTCOME');
      expect(errorOf(await reply({ Outcome: 'selected' }, 'o4', requestId), 'o4').ErrorCode).toBe('MISSING_OPTION_ID');
      expect(errorOf(await reply({ Outcome: 'selected', OptionId: '' }, 'o5', requestId), 'o5').ErrorCode).toBe('MISSING_OPTION_ID');
    }
    const notOffered = await reply({ Outcome: 'selected', OptionId: 'allow_everything' }, 'o6');
    expect(errorOf(notOffered, 'o6')).toMatchObject({ Code: -32602, ErrorCode: 'INVALID_OPTION_ID' });
    expect(notOffered.body.JsonRpcResponse.Error.Message).toContain('proceed_once');
    // Qwen shape: the same problem is a 400 invalid_option_id.
    const qwen = await replyQwen(server.url, sessionId, data.requestId, { outcome: { outcome: 'selected', optionId: 'allow_everything' } });
    expect(qwen.status).toBe(400);
    expect(qwen.body.code).toBe('invalid_option_id');
    // Still pending after all of that.
    expect(accepted(await reply({ Outcome: 'selected', OptionId: data.options[0].optionId }, 'ok'), 'ok')).toBe(true);
  });

  it('B13: protocol errors come back in Error, e.g. -32601 DAEMON_PERMISSION_UNAVAILABLE when replies are not enabled', async () => {
    const disabled = await startTestServer({ features: defaultFeatures().map((f) => (f.name === 'interactions' ? createInteractionsFeature({ replies: false }) : f)) });
    closers.push(() => disabled.stop());
    const res = await replyDataWorks(disabled.url, { SessionId: 's', PermissionRequestId: 'p', Outcome: { Outcome: 'cancelled' } }, { id: 'reply-rpc-001' });
    expect(res.status).toBe(501);
    expect(errorOf(res, 'reply-rpc-001')).toMatchObject({ Code: -32601, ErrorCode: 'DAEMON_PERMISSION_UNAVAILABLE' });
    const qwen = await replyQwen(disabled.url, 's', 'p', { outcome: { outcome: 'cancelled' } });
    expect(qwen.status).toBe(501);
  });

  it('B15: a duplicate reply gets Accepted=false and the SSE stream says permission_already_resolved', async () => {
    const { sessionId, sse } = await setup([{ tool: TOOL }, { sleep: 60_000 }]);
    const data = await sse.waitForPermissionRequest();
    const params = { SessionId: sessionId, PermissionRequestId: data.requestId, Outcome: { Outcome: 'selected', OptionId: data.options[0].optionId } };
    expect(accepted(await replyDataWorks(server.url, params, { id: '1' }), '1')).toBe(true);
    expect(accepted(await replyDataWorks(server.url, params, { id: '2' }), '2')).toBe(false);
    const late = await sse.waitForEvent((e) => e.data.params?.kind === 'permission_already_resolved', 'permission_already_resolved');
    expect(late.data.params.data).toMatchObject({ requestId: data.requestId, sessionId, outcome: { outcome: 'selected', optionId: data.options[0].optionId } });
    expect((await replyQwen(server.url, sessionId, data.requestId, { outcome: { outcome: 'cancelled' } })).status).toBe(404);
    expect(sse.notifies('permission_resolved')).toHaveLength(1);
  });
});

describe('Accepted=false is indistinguishable (B12, B15)', () => {
  let server: TestServer;
  const closers: Array<() => Promise<void>> = [];
  beforeEach(async () => {
    server = await startTestServer({ withAuth: true });
  });
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((c) => c()));
    await server.stop();
  });

  it('unknown request, already handled, expired (turn cancelled), closed session, other tenant: same false, same 404', async () => {
    const alice = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
    closers.push(() => alice.close());
    const { session, chat } = await alice.createSession('tenant-acme');
    const sessionId = sessionIdOfUri(session);
    const sse = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`, { token: TOKENS.alice });
    closers.push(() => sse.close());
    const turnId = await startScriptTurn(alice, chat, [{ tool: TOOL }, { tool: { ...TOOL, id: 'tool-2' } }, { tool: { ...TOOL, id: 'tool-3' } }]);
    const first = await sse.waitForPermissionRequest(1);
    const allow = (d: any) => ({ Outcome: 'selected', OptionId: d.options[0].optionId });
    const dw = (params: Record<string, unknown>, token: string) => replyDataWorks(server.url, params, { id: 'same-id', token });
    const normalise = (r: HttpResult) => ({ status: r.status, body: { ...r.body, RequestId: 'x', JsonRpcResponse: { ...r.body.JsonRpcResponse, Timestamp: 0 } } });

    expect(accepted(await dw({ SessionId: sessionId, PermissionRequestId: first.requestId, Outcome: allow(first) }, TOKENS.alice), 'same-id')).toBe(true);
    const second = await sse.waitForPermissionRequest(2);

    // Mallory (other tenant) replying to Alice's live request cannot tell it exists.
    const foreign = await dw({ SessionId: sessionId, PermissionRequestId: second.requestId, Outcome: allow(second) }, TOKENS.mallory);
    const unknown = await dw({ SessionId: sessionId, PermissionRequestId: 'never-issued', Outcome: allow(second) }, TOKENS.alice);
    const handled = await dw({ SessionId: sessionId, PermissionRequestId: first.requestId, Outcome: allow(first) }, TOKENS.alice);
    const noSession = await dw({ SessionId: 'no-such-session', PermissionRequestId: second.requestId, Outcome: allow(second) }, TOKENS.alice);
    // Expired: the turn is cancelled while the second request is pending.
    const cancelled = await alice.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId, duration: 1 });
    expect(cancelled.rejectionReason).toBeUndefined();
    const cancelledEvent = await sse.waitForResolved(second.requestId);
    expect(cancelledEvent.data.params.data.outcome).toEqual({ outcome: 'cancelled' });
    const expired = await dw({ SessionId: sessionId, PermissionRequestId: second.requestId, Outcome: allow(second) }, TOKENS.alice);

    const all = [foreign, unknown, handled, noSession, expired];
    for (const r of all) expect(accepted(r, 'same-id')).toBe(false);
    const shapes = all.map(normalise);
    for (const s of shapes) expect(s).toEqual(shapes[0]);

    // The Qwen shape: all 404 with the same body.
    const q = [
      await replyQwen(server.url, sessionId, second.requestId, { outcome: { outcome: 'cancelled' } }, TOKENS.mallory),
      await replyQwen(server.url, sessionId, 'never-issued', { outcome: { outcome: 'cancelled' } }, TOKENS.alice),
      await replyQwen(server.url, sessionId, first.requestId, { outcome: { outcome: 'cancelled' } }, TOKENS.alice),
      await replyQwen(server.url, 'no-such-session', second.requestId, { outcome: { outcome: 'cancelled' } }, TOKENS.alice),
      await replyQwen(server.url, sessionId, second.requestId, { outcome: { outcome: 'cancelled' } }, TOKENS.alice),
    ];
    for (const r of q) expect(r).toEqual(q[0]);
    expect(q[0]!.status).toBe(404);

    // Closed session: a request pending at disposal resolves as cancelled; replies are false.
    const turn2 = await startScriptTurn(alice, chat, [{ tool: { ...TOOL, id: 'tool-9' } }]);
    expect(turn2).toBeDefined();
    const third = await sse.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === 'tool-9');
    await alice.request('disposeSession', { channel: session });
    await sse.waitForResolved(third.requestId);
    await sse.waitForEnd();
    const closed = await dw({ SessionId: sessionId, PermissionRequestId: third.requestId, Outcome: allow(third) }, TOKENS.alice);
    expect(normalise(closed)).toEqual(shapes[0]);

    // Viewers are refused outright (an error, not false).
    const viewer = await dw({ SessionId: sessionId, PermissionRequestId: 'x', Outcome: { Outcome: 'cancelled' } }, TOKENS.viewer);
    expect(viewer.status).toBe(403);
    expect(errorOf(viewer, 'same-id').ErrorCode).toBe('PERMISSION_DENIED');
  });
});
