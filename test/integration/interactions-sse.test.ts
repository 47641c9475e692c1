/**
 * The SSE side of issue #4 over real sockets: `GET /v2/sessions/{id}/events` (ACP updates,
 * `_qwen/notify` frames, late listeners, Last-Event-ID), `POST /v2/sessions/{id}/prompt`
 * (a turn's stream ending in one JSON-RPC response), and pending interactions resolving as
 * cancelled on cancel, truncation and disposal.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createInteractionsFeature } from '../../server/interactions/feature.js';
import { defaultFeatures } from '../../server/features.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { postJson, replyQwen, sessionIdOfUri, SseClient } from '../helpers/sse.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const TOOL = { id: 'tool-1', name: 'write_file', input: { path: 'README.md' }, confirm: true };
const script = (steps: unknown[]): string => JSON.stringify({ script: steps });

describe('session events and prompts over SSE', () => {
  let server: TestServer;
  const closers: Array<() => Promise<void>> = [];
  beforeEach(async () => {
    server = await startTestServer({
      features: defaultFeatures().map((f) => (f.name === 'interactions' ? createInteractionsFeature({ streams: { maxListenersPerSession: 4 } }) : f)),
    });
  });
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((c) => c()));
    await server.stop();
  });

  async function session(): Promise<{ tab: RpcClient; session: string; sessionId: string; chat: string }> {
    const tab = await RpcClient.open(server.wsUrl);
    closers.push(() => tab.close());
    const created = await tab.createSession('sse');
    await tab.subscribe(created.chat);
    return { tab, ...created, sessionId: sessionIdOfUri(created.session) };
  }

  async function events(sessionId: string, lastEventId?: string): Promise<SseClient> {
    const sse = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`, lastEventId ? { lastEventId } : {});
    closers.push(() => sse.close());
    return sse;
  }

  async function prompt(sessionId: string, text: string, id?: unknown): Promise<SseClient> {
    const sse = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/prompt`, { method: 'POST', body: id === undefined ? { prompt: [{ type: 'text', text }] } : { id, prompt: [{ type: 'text', text }] } });
    closers.push(() => sse.close());
    return sse;
  }

  it('streams ACP session/update frames for text and tool calls to every listener, with the same ids', async () => {
    const { tab, sessionId, chat } = await session();
    const [a, b] = [await events(sessionId), await events(sessionId)];
    expect(a.headers!.get('content-type')).toMatch(/^text\/event-stream/);
    expect(a.headers!.get('cache-control')).toBe('no-cache');
    await startScriptTurn(tab, chat, [{ say: 'hello there' }, { tool: { ...TOOL, confirm: false } }]);
    for (const sse of [a, b]) await sse.waitForEvent((e) => e.data.method === '_hub/notify' && e.data.params.kind === 'turn_end', 'turn end');
    expect(a.events.map((e) => e.id)).toEqual(b.events.map((e) => e.id));
    expect(a.updates('user_message_chunk')).toHaveLength(1);
    expect(
      a
        .updates('agent_message_chunk')
        .map((e) => e.data.params.update.content.text)
        .join(''),
    ).toBe('hello there');
    const toolCall = a.updates('tool_call')[0]!.data.params;
    expect(toolCall.sessionId).toBe(sessionId);
    expect(toolCall.update).toMatchObject({ toolCallId: 'tool-1', title: 'write_file', kind: 'edit', status: 'pending' });
    const statuses = a
      .updates('tool_call_update')
      .map((e) => e.data.params.update.status)
      .filter(Boolean);
    expect(statuses).toEqual(['in_progress', 'completed']);
    expect(a.events.at(-1)!.data.params.data.stopReason).toBe('end_turn');
    // Ids increase strictly.
    const seqs = a.events.map((e) => Number(e.id!.split('-')[1]));
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).toBe(seqs.length);
  });

  it('a listener that connects late first receives the interactions still pending', async () => {
    const { tab, sessionId, chat } = await session();
    const early = await events(sessionId);
    await startScriptTurn(tab, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    const request = await early.waitForPermissionRequest();
    const late = await events(sessionId);
    const first = await late.waitForEvent(() => true, 'first event');
    expect(first.data).toEqual({ jsonrpc: '2.0', method: '_qwen/notify', params: { kind: 'permission_request', data: request } });
    expect(first.id).toBe(early.lastEventId);
    expect(late.events).toHaveLength(1);
    // Both hear the resolution.
    const res = await replyQwen(server.url, sessionId, request.requestId, { outcome: { outcome: 'cancelled' } });
    expect(res.status).toBe(200);
    await late.waitForResolved(request.requestId);
    await early.waitForResolved(request.requestId);
  });

  it('Last-Event-ID resumes exactly after the last event seen; an unusable id falls back to what is pending', async () => {
    const { tab, sessionId, chat } = await session();
    const first = await events(sessionId);
    await startScriptTurn(tab, chat, [{ tool: TOOL }, { say: 'tool done' }, { tool: { ...TOOL, id: 'tool-2' } }]);
    const request = await first.waitForPermissionRequest();
    const seen = first.lastEventId!;
    await first.close();

    // Missed while disconnected: the resolution, the text, and the second request.
    expect((await replyQwen(server.url, sessionId, request.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } })).status).toBe(200);
    const watcher = await events(sessionId);
    const second = await watcher.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === 'tool-2');

    const resumed = await events(sessionId, seen);
    await resumed.waitForPermissionRequest(1, (d) => d.requestId === second.requestId);
    expect(resumed.events.some((e) => e.id === seen)).toBe(false);
    expect(resumed.notifies('permission_resolved').map((e) => e.data.params.data.requestId)).toEqual([request.requestId]);
    expect(
      resumed
        .updates('agent_message_chunk')
        .map((e) => e.data.params.update.content.text)
        .join(''),
    ).toContain('tool done');
    const ids = resumed.events.map((e) => Number(e.id!.split('-')[1]));
    expect(ids[0]).toBe(Number(seen.split('-')[1]) + 1);
    expect(ids).toEqual(ids.map((_, i) => ids[0]! + i));

    // Ids from another process (epoch) or from the future cannot be resumed: pending replay instead.
    for (const bogus of ['deadbeef-3', `${seen.split('-')[0]}-999999`, 'garbage']) {
      // This server allows 4 listeners per session; a closed one frees its slot once the server sees the close.
      const fallback = await waitFor(
        async () => {
          const c = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`, { lastEventId: bogus });
          return c.status === 200 ? c : undefined;
        },
        { what: 'a listener slot' },
      );
      closers.push(() => fallback.close());
      const only = await fallback.waitForEvent(() => true, 'pending replay');
      expect(only.data.params).toMatchObject({ kind: 'permission_request', data: { requestId: second.requestId } });
      expect(fallback.events).toHaveLength(1);
      await fallback.close();
    }
  });

  it('POST prompt starts a turn and streams it, ending with one JSON-RPC result {stopReason: "end_turn"}', async () => {
    const { tab, sessionId, chat } = await session();
    const observer = await events(sessionId);
    const p = await prompt(sessionId, script([{ say: 'answer from the agent' }]), 'prompt-1');
    expect(p.status).toBe(200);
    await p.waitForEnd();
    const last = p.events.at(-1)!;
    expect(last.data).toEqual({ jsonrpc: '2.0', id: 'prompt-1', result: { stopReason: 'end_turn' } });
    expect(p.events.filter((e) => 'result' in e.data || 'error' in e.data)).toHaveLength(1);
    expect(
      p
        .updates('agent_message_chunk')
        .map((e) => e.data.params.update.content.text)
        .join(''),
    ).toBe('answer from the agent');
    // The AHP tab and other SSE listeners saw the same turn.
    await observer.waitForEvent((e) => e.data.params?.kind === 'turn_end', 'turn end on the session stream');
    const state = (await tab.subscribe<any>(chat)).state;
    expect(state.turns).toHaveLength(1);
    expect(state.turns[0].state).toBe('complete');
  });

  it('a prompt stream carries the permission requests of its turn and keeps going after a reply', async () => {
    const { sessionId } = await session();
    const p = await prompt(sessionId, script([{ ask: TWO_QUESTION_REQUEST }, { say: 'thanks' }]));
    const req = await p.waitForPermissionRequest();
    const res = await replyQwen(server.url, sessionId, req.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' }, answers: { '0': 'Node.js', '1': 'none' } });
    expect(res).toEqual({ status: 200, body: { accepted: true } });
    await p.waitForEnd();
    expect(p.notifies('permission_resolved')).toHaveLength(1);
    expect(
      p
        .updates('agent_message_chunk')
        .map((e) => e.data.params.update.content.text)
        .join(''),
    ).toContain('runtime: Node.js');
    expect(p.events.at(-1)!.data.result).toEqual({ stopReason: 'end_turn' });
    expect(typeof p.events.at(-1)!.data.id).toBe('string');
  });

  it('a prompt while a turn is active is refused with 409, never queued', async () => {
    const { tab, sessionId, chat } = await session();
    const running = await prompt(sessionId, script([{ tool: TOOL }]));
    await running.waitForPermissionRequest();
    const second = await postJson(`${server.url}/v2/sessions/${sessionId}/prompt`, { prompt: [{ type: 'text', text: 'me too' }] });
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('turn_in_progress');
    expect(second.body.message).toMatch(/already running/);
    const state = (await tab.subscribe<any>(chat)).state;
    expect(state.queuedMessages).toBeUndefined();
    expect(state.activeTurn.message.text).toContain('script');
    // Bad prompts and unknown sessions are plain HTTP errors.
    expect((await postJson(`${server.url}/v2/sessions/${sessionId}/prompt`, { prompt: [] })).status).toBe(400);
    expect((await postJson(`${server.url}/v2/sessions/${sessionId}/prompt`, { prompt: [{ type: 'image', data: 'x' }] })).body.code).toBe('unsupported_content');
    expect((await postJson(`${server.url}/v2/sessions/nope/prompt`, { prompt: [{ type: 'text', text: 'x' }] })).status).toBe(404);
    expect((await fetch(`${server.url}/v2/sessions/nope/events`)).status).toBe(404);
  });

  it('stop reasons: a cancelled turn ends with "cancelled", a failed one with a JSON-RPC error', async () => {
    const { tab, sessionId, chat } = await session();
    const p = await prompt(sessionId, script([{ tool: TOOL }]), 7);
    const req = await p.waitForPermissionRequest();
    const state = (await tab.subscribe<any>(chat)).state;
    const cancel = await tab.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId: state.activeTurn.id, duration: 5 });
    expect(cancel.rejectionReason).toBeUndefined();
    await p.waitForEnd();
    const resolved = p.notifies('permission_resolved')[0]!.data.params.data;
    expect(resolved).toMatchObject({ requestId: req.requestId, outcome: { outcome: 'cancelled' } });
    expect(p.events.at(-1)!.data).toEqual({ jsonrpc: '2.0', id: 7, result: { stopReason: 'cancelled' } });
    expect((await replyQwen(server.url, sessionId, req.requestId, { outcome: { outcome: 'cancelled' } })).status).toBe(404);

    const failing = await prompt(sessionId, script([{ fail: 'the model gave up' }]), 'f');
    await failing.waitForEnd();
    expect(failing.events.at(-1)!.data).toEqual({ jsonrpc: '2.0', id: 'f', error: { code: -32603, message: 'the model gave up', data: { errorType: 'scriptFailure' } } });
  });

  it('truncation and session disposal resolve pending interactions as cancelled', async () => {
    const { tab, session: uri, sessionId, chat } = await session();
    const sse = await events(sessionId);
    await startScriptTurn(tab, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    const asked = await sse.waitForPermissionRequest(1);
    const truncated = await tab.dispatchAndWait(chat, { type: 'chat/truncated' });
    expect(truncated.rejectionReason).toBeUndefined();
    expect((await sse.waitForResolved(asked.requestId)).data.params.data.outcome).toEqual({ outcome: 'cancelled' });
    expect((await sse.waitForEvent((e) => e.data.params?.kind === 'turn_end', 'turn end')).data.params.data.stopReason).toBe('cancelled');

    const p = await prompt(sessionId, script([{ tool: TOOL }]));
    const pending = await p.waitForPermissionRequest();
    await tab.request('disposeSession', { channel: uri });
    await sse.waitForResolved(pending.requestId);
    await sse.waitForEnd();
    await p.waitForEnd();
    expect(p.events.at(-1)!.data.result).toEqual({ stopReason: 'cancelled' });
    expect((await replyQwen(server.url, sessionId, pending.requestId, { outcome: { outcome: 'cancelled' } })).status).toBe(404);
  });

  it('bounds listeners per session (429 beyond the limit) and frees the slot when a listener leaves', async () => {
    const { sessionId } = await session();
    const open = [await events(sessionId), await events(sessionId), await events(sessionId), await events(sessionId)];
    const refused = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`);
    expect(refused.status).toBe(429);
    expect(refused.errorBody.code).toBe('too_many_listeners');
    await open[0]!.close();
    const again = await waitFor(
      async () => {
        const c = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`);
        if (c.status === 200) return c;
        return undefined;
      },
      { what: 'a free listener slot' },
    );
    closers.push(() => again.close());
    expect(again.status).toBe(200);
  });
});
