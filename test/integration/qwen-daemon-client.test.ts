/**
 * qwen serve's own client, `DaemonClient` / `DaemonSessionClient` from `@qwen-code/sdk` (the npm
 * package, unmodified), against a real hub on port 0 with tokens: capabilities, sessions,
 * prompts to the demo agent, events until `turn_complete`, a permission race with an AHP tab,
 * cancel, the prompt queue, `Last-Event-ID` resumption, bad tokens and tenancy.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DaemonClient, DaemonHttpError, DaemonPendingPromptLimitError, DaemonSessionClient } from '@qwen-code/sdk';
import { isDaemonTurnError } from '@qwen-code/sdk/daemon';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Frame = { id?: number; v: 1; type: string; data: any; promptId?: string };

const script = (steps: unknown[]) => ({ prompt: [{ type: 'text', text: JSON.stringify({ script: steps }) }] });
const TOOL = { tool: { id: 'tool-1', name: 'write_file', input: { path: 'README.md' }, confirm: true } };

/** Reads a session's qwen event stream in the background, keeping every frame. */
function collect(client: DaemonClient, sessionId: string, options: { lastEventId?: number; epoch?: string } = {}) {
  const frames: Frame[] = [];
  const controller = new AbortController();
  const done = (async () => {
    try {
      for await (const frame of client.subscribeEvents(sessionId, { ...options, signal: controller.signal })) frames.push(frame as Frame);
    } catch {
      // aborted at the end of the test
    }
  })();
  return {
    frames,
    waitFor: (predicate: (f: Frame) => boolean, what: string) => waitFor(() => frames.find(predicate), { what }),
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

describe('qwen serve compatibility: @qwen-code/sdk DaemonClient against the hub', () => {
  let server: TestServer;
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
    await server.stop();
  });

  async function start(): Promise<DaemonClient> {
    // A browser app is served too, so a path falling through to it would answer HTML.
    const app = mkdtempSync(join(tmpdir(), 'qwen-app-'));
    writeFileSync(join(app, 'index.html'), '<!doctype html><title>app</title>');
    closers.push(async () => rmSync(app, { recursive: true, force: true }));
    server = await startTestServer({ withAuth: true, staticDir: app });
    return new DaemonClient({ baseUrl: server.url, token: TOKENS.alice });
  }

  it('health and capabilities answer JSON with the features and the first-responder permission policy; unknown API paths are JSON 404s', async () => {
    const client = await start();
    expect(await client.health()).toEqual({ status: 'ok' });
    const caps = await client.capabilities();
    expect(caps.v).toBe(1);
    expect(caps.features).toEqual(expect.arrayContaining(['session_create', 'session_prompt', 'session_events', 'session_cancel', 'permission_vote', 'session_id_override']));
    expect((caps as unknown as { policy: unknown }).policy).toEqual({ permission: 'first-responder' });
    expect(caps.limits?.maxPendingPromptsPerSession).toBe(5);
    for (const path of ['/session/x/unknown', '/sessions', '/workspace/x/sessions', '/health/extra', '/v2/nothing', '/daemon/status']) {
      const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${TOKENS.alice}` } });
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toContain('application/json');
      expect(((await res.json()) as { code: string }).code).toBe('not_found');
    }
    // The WebSocket endpoint is a route: a plain GET with a valid token is told to upgrade.
    const ahp = await fetch(server.url + '/ahp', { headers: { authorization: `Bearer ${TOKENS.alice}` } });
    expect(ahp.status).toBe(426);
    expect(((await ahp.json()) as { code: string }).code).toBe('upgrade_required');
    // The app keeps its own pages.
    for (const path of ['/', '/s/some-session']) {
      const res = await fetch(server.url + path);
      expect(res.headers.get('content-type'), path).toContain('text/html');
    }
  });

  it('works unmodified against a hub in dev mode (no tokens): create, prompt, cancel and close (a DELETE without a body) are not refused by the dev-mode write guard', async () => {
    server = await startTestServer({});
    const client = new DaemonClient({ baseUrl: server.url });
    const session = await DaemonSessionClient.createOrAttach(client, { workspaceCwd: '/work' });
    expect((await session.prompt(script([{ say: 'dev mode works' }]))).stopReason).toBe('end_turn');
    await client.cancel(session.sessionId);
    await client.closeSession(session.sessionId);
    const gone = await fetch(`${server.url}/session/${encodeURIComponent(session.sessionId)}/events`);
    expect(gone.status).toBe(404);
  });

  it('creates a session, prompts the demo agent and reads events until turn_complete; attaching by id returns the same session', async () => {
    const client = await start();
    const session = await DaemonSessionClient.createOrAttach(client, { workspaceCwd: '/work' });
    expect(session.attached).toBe(false);
    expect(session.eventEpoch).toMatch(/^[0-9a-f]{16}$/);
    const result = await session.prompt(script([{ say: 'hello from the demo agent' }]));
    expect(result.stopReason).toBe('end_turn');

    const events = collect(client, session.sessionId, { lastEventId: 0, epoch: session.eventEpoch! });
    closers.push(events.stop);
    const complete = await events.waitFor((f) => f.type === 'turn_complete', 'turn_complete');
    expect(complete.promptId).toBe(complete.data.promptId);
    const text = events.frames
      .filter((f) => f.type === 'session_update' && f.data.update.sessionUpdate === 'agent_message_chunk')
      .map((f) => f.data.update.content.text)
      .join('');
    expect(text).toContain('hello from the demo agent');
    const ids = events.frames.map((f) => f.id!);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    expect(events.frames.every((f) => f.v === 1 && f.data.sessionId === session.sessionId)).toBe(true);

    const again = await client.createOrAttachSession({ workspaceCwd: '/work', sessionId: session.sessionId });
    expect(again).toMatchObject({ sessionId: session.sessionId, attached: true, eventEpoch: session.eventEpoch });
  });

  it('DaemonSessionClient with an open events() subscription: prompt() resolves from the same stream, which also carries the permission request it answers', async () => {
    const client = await start();
    const session = await DaemonSessionClient.createOrAttach(client, {});
    const seen: Frame[] = [];
    const stop = new AbortController();
    const stream = session.events({ signal: stop.signal });
    const reading = (async () => {
      for await (const frame of stream) {
        seen.push(frame as Frame);
        if (frame.type === 'permission_request') {
          await session.respondToSessionPermission((frame as Frame).data.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } });
        }
      }
    })();
    const result = await session.prompt(script([TOOL, { say: 'tool ran' }]));
    expect(result.stopReason).toBe('end_turn');
    // The client settles the prompt as soon as it reads turn_complete, just before handing it on.
    await waitFor(() => seen.find((f) => f.type === 'turn_complete'), { what: 'turn_complete read by the loop' });
    expect(seen.map((f) => f.type)).toEqual(expect.arrayContaining(['permission_request', 'permission_resolved', 'turn_complete']));
    stop.abort();
    await reading.catch(() => undefined);
  });

  it('a permission answered by DaemonClient while an AHP tab answers the same request: exactly one wins, the loser gets false', async () => {
    const client = await start();
    const tab = await RpcClient.open(server.wsUrl, { token: TOKENS.bob });
    closers.push(() => tab.close());
    for (let round = 0; round < 4; round++) {
      const session = await DaemonSessionClient.createOrAttach(client, {});
      const uri = `ahp-session:/${session.sessionId}`;
      const chat = (await tab.subscribe<{ defaultChat: string }>(uri)).state.defaultChat;
      await tab.subscribe(chat);
      const events = collect(client, session.sessionId);
      closers.push(events.stop);
      const done = session.prompt(script([TOOL, { say: 'after the tool' }]));
      const request = await events.waitFor((f) => f.type === 'permission_request', 'permission_request');
      const toolCallId = request.data.toolCall.toolCallId ?? 'tool-1';
      const turnId = (await tab.subscribe<{ activeTurn: { id: string } }>(chat)).state.activeTurn.id;
      // Alternate who sends first; both are in flight together.
      const fromTab = async () => (await tab.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId, approved: true, confirmed: 'user-action' })).rejectionReason === undefined;
      const fromQwen = () => session.respondToSessionPermission(request.data.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } });
      const [tabWon, qwenWon] = round % 2 === 0 ? await Promise.all([fromTab(), fromQwen()]) : (await Promise.all([fromQwen(), fromTab()])).reverse();
      expect([tabWon, qwenWon].filter(Boolean)).toHaveLength(1);
      expect((await done).stopReason).toBe('end_turn');
      const resolved = events.frames.filter((f) => f.type === 'permission_resolved' && f.data.requestId === request.data.requestId);
      expect(resolved).toHaveLength(1);
      // A reply after the fact is false, on both reply routes.
      expect(await session.respondToSessionPermission(request.data.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } })).toBe(false);
      expect(await client.respondToPermission(request.data.requestId, { outcome: { outcome: 'cancelled' } })).toBe(false);
    }
  });

  it('the session-less POST /permission/{requestId} and qwen option ids (proceed_always_project, cancel) are accepted', async () => {
    const client = await start();
    const session = await DaemonSessionClient.createOrAttach(client, {});
    const events = collect(client, session.sessionId);
    closers.push(events.stop);
    const first = session.prompt(script([TOOL, { tool: { id: 'tool-2', name: 'delete_file', confirm: true } }]));
    const req1 = await events.waitFor((f) => f.type === 'permission_request' && f.data.toolCall.title !== undefined && JSON.stringify(f.data).includes('write_file'), 'first permission');
    expect(await client.respondToPermission(req1.data.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_always_project' } })).toBe(true);
    const req2 = await events.waitFor((f) => f.type === 'permission_request' && JSON.stringify(f.data).includes('delete_file'), 'second permission');
    expect(await session.respondToSessionPermission(req2.data.requestId, { outcome: { outcome: 'selected', optionId: 'cancel' } })).toBe(true);
    expect((await first).stopReason).toBe('end_turn');
    const outcomes = events.frames.filter((f) => f.type === 'permission_resolved').map((f) => f.data.outcome);
    expect(outcomes).toEqual([
      { outcome: 'selected', optionId: 'proceed_always' },
      { outcome: 'selected', optionId: 'reject_once' },
    ]);
    const updates = events.frames.filter((f) => f.type === 'session_update' && f.data.update.sessionUpdate === 'tool_call_update').map((f) => f.data.update.status);
    expect(updates).toContain('completed');
  });

  it('the session-less POST /permission/{requestId} refuses an id pending in two sessions with 409 ambiguous_request_id, naming both; the per-session route answers', async () => {
    const client = await start();
    const sessions = [await DaemonSessionClient.createOrAttach(client, {}), await DaemonSessionClient.createOrAttach(client, {})];
    const streams = sessions.map((s) => collect(client, s.sessionId));
    for (const e of streams) closers.push(e.stop);
    // The same question id in both sessions: each session's request keeps the agent's id.
    const turns = sessions.map((s) => s.prompt(script([{ ask: { id: 'q-same', message: 'Go on?' } }])));
    const asked = await Promise.all(streams.map((e) => e.waitFor((f) => f.type === 'permission_request', 'a permission request')));
    expect(asked[0]!.data.requestId).toBe(asked[1]!.data.requestId);
    const requestId = asked[0]!.data.requestId as string;

    // Issue 33.5c: a viewer may answer nothing: 403, and the session ids are not listed to it.
    const byViewer = await fetch(`${server.url}/permission/${requestId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.viewer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ outcome: { outcome: 'selected', optionId: 'proceed_once' } }),
    });
    const viewerBody = (await byViewer.json()) as { code: string; sessions?: unknown };
    expect({ status: byViewer.status, code: viewerBody.code, sessions: viewerBody.sessions }).toEqual({ status: 403, code: 'permission_denied', sessions: undefined });

    const res = await fetch(`${server.url}/permission/${requestId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ outcome: { outcome: 'selected', optionId: 'proceed_once' } }),
    });
    expect(res.status).toBe(409);
    const body = (await res.json()) as { code: string; message: string; sessions: string[] };
    expect(body.code).toBe('ambiguous_request_id');
    expect(body.message).toMatch(/2 sessions/);
    expect(new Set(body.sessions)).toEqual(new Set(sessions.map((s) => s.sessionId)));
    // Neither request was answered by the refused reply.
    expect(streams.flatMap((e) => e.frames).some((f) => f.type === 'permission_resolved')).toBe(false);

    for (const s of sessions) expect(await s.respondToSessionPermission(requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } })).toBe(true);
    for (const t of turns) expect((await t).stopReason).toBe('end_turn');
  });

  it('a prompt whose turn fails ends with turn_error, which DaemonClient raises as a turn error', async () => {
    const client = await start();
    const session = await DaemonSessionClient.createOrAttach(client, {});
    const failed = await session.prompt(script([{ say: 'trying' }, { fail: 'disk full' }])).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DaemonHttpError);
    expect(isDaemonTurnError(failed)).toBe(true);
    expect(String((failed as Error).message)).toContain('disk full');
    // The session is usable again afterwards.
    expect((await session.prompt(script([{ say: 'again' }]))).stopReason).toBe('end_turn');
  });

  it('cancels a running prompt; prompts sent while a turn runs queue until 5 are pending, then prompt_queue_full', async () => {
    const client = await start();
    const session = await DaemonSessionClient.createOrAttach(client, {});
    const running = session.prompt(script([{ sleep: 60_000 }]));
    await waitFor(async () => (await client.createOrAttachSession({ sessionId: session.sessionId })).hasActivePrompt || undefined, { what: 'turn running' });
    const queued = [];
    // Five pending at most, the running prompt included: four wait.
    for (let i = 0; i < 4; i++) queued.push(await client.promptNonBlocking(session.sessionId, script([{ say: `queued ${i}` }])));
    expect(queued.every((q) => 'promptId' in q)).toBe(true);
    const full = await client.promptNonBlocking(session.sessionId, script([{ say: 'one too many' }])).catch((e: unknown) => e);
    expect(full).toBeInstanceOf(DaemonPendingPromptLimitError);
    expect(full).toMatchObject({ limit: 5, pendingCount: 5 });

    await session.cancel();
    expect((await running).stopReason).toBe('cancelled');
    const events = collect(client, session.sessionId, { lastEventId: 0 });
    closers.push(events.stop);
    for (const q of queued) {
      const end = await events.waitFor((f) => f.type === 'turn_complete' && f.data.promptId === (q as { promptId: string }).promptId, 'queued prompt ended');
      expect(end.data.stopReason).toBe('cancelled');
    }
  });

  it('a queued prompt starts when the running turn ends and completes in order', async () => {
    const client = await start();
    const session = await DaemonSessionClient.createOrAttach(client, {});
    const tab = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
    closers.push(() => tab.close());
    const chat = (await tab.subscribe<{ defaultChat: string }>(`ahp-session:/${session.sessionId}`)).state.defaultChat;
    await tab.subscribe(chat);
    const first = client.prompt(session.sessionId, script([{ ask: { id: 'hold', questions: [{ id: 'q', kind: 'text', message: 'go?' }] } }, { say: 'first done' }]));
    await tab.waitForEnvelope((e) => e.action.type === 'chat/inputRequested');
    const second = client.prompt(session.sessionId, script([{ say: 'second done' }]));
    await waitFor(
      async () => {
        const res = await fetch(`${server.url}/session/${session.sessionId}/prompt`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKENS.alice}`, 'content-type': 'application/json' },
          body: JSON.stringify(script([{ say: 'third' }])),
        });
        return res.status === 202 ? ((await res.json()) as { queued?: boolean }).queued : undefined;
      },
      { what: 'a prompt queued behind the running turn' },
    );
    await tab.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'hold', response: 'cancel' });
    expect((await first).stopReason).toBe('end_turn');
    expect((await second).stopReason).toBe('end_turn');
    const turns = (await tab.subscribe<{ turns: Array<{ message: { text: string } }> }>(chat)).state.turns.map((t) => t.message.text);
    expect(turns.slice(0, 2).map((t) => JSON.parse(t).script[0])).toEqual([{ ask: expect.anything() }, { say: 'second done' }]);
  });

  it('resumes events with Last-Event-ID in the same epoch; another epoch gets state_resync_required', async () => {
    const client = await start();
    const session = await DaemonSessionClient.createOrAttach(client, {});
    await session.prompt(script([{ say: 'one' }, { say: 'two' }]));
    const all = collect(client, session.sessionId, { lastEventId: 0, epoch: session.eventEpoch! });
    closers.push(all.stop);
    await all.waitFor((f) => f.type === 'turn_complete', 'turn_complete');
    const cut = Math.floor(all.frames.length / 2);
    const lastSeen = all.frames[cut - 1]!.id!;
    const resumed = collect(client, session.sessionId, { lastEventId: lastSeen, epoch: session.eventEpoch! });
    closers.push(resumed.stop);
    await resumed.waitFor((f) => f.type === 'turn_complete', 'resumed turn_complete');
    expect(resumed.frames).toEqual(all.frames.slice(cut));

    // The epoch travels in a header, as DaemonClient's onEpoch expects.
    let announced: string | undefined;
    const probe = new AbortController();
    for await (const _ of client.subscribeEvents(session.sessionId, { lastEventId: 0, onEpoch: (e) => (announced = e), signal: probe.signal })) break;
    expect(announced).toBe(session.eventEpoch);

    const stale = collect(client, session.sessionId, { lastEventId: lastSeen, epoch: 'another-epoch' });
    closers.push(stale.stop);
    const resync = await stale.waitFor((f) => f.type === 'state_resync_required', 'state_resync_required');
    expect(resync.data).toMatchObject({ reason: 'epoch_reset', lastDeliveredId: lastSeen });
  });

  it('a bad token is refused with 401 on every route but /health; another tenant cannot see the session', async () => {
    const client = await start();
    const session = await DaemonSessionClient.createOrAttach(client, {});
    const bad = new DaemonClient({ baseUrl: server.url, token: 'not-a-token' });
    expect(await bad.health()).toEqual({ status: 'ok' });
    const refused = await bad.capabilities().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DaemonHttpError);
    expect((refused as DaemonHttpError).status).toBe(401);
    await expect(bad.promptNonBlocking(session.sessionId, script([{ say: 'x' }]))).rejects.toMatchObject({ status: 401 });
    const mallory = new DaemonClient({ baseUrl: server.url, token: TOKENS.mallory });
    await expect(mallory.promptNonBlocking(session.sessionId, script([{ say: 'x' }]))).rejects.toMatchObject({ status: 404 });
    await expect(mallory.cancel(session.sessionId)).rejects.toMatchObject({ status: 404 });
    const viewer = new DaemonClient({ baseUrl: server.url, token: TOKENS.viewer });
    await expect(viewer.promptNonBlocking(session.sessionId, script([{ say: 'x' }]))).rejects.toMatchObject({ status: 403 });
    // Closing is the owner's; the session is gone afterwards.
    await session.close();
    await expect(client.promptNonBlocking(session.sessionId, script([{ say: 'x' }]))).rejects.toMatchObject({ status: 404 });
  });
});
