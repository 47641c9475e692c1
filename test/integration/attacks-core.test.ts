/**
 * Regression tests for the hub-core holes of issue 8, each reproducing the attack as the outside
 * review ran it, over real sockets against a real hub.
 */
import { describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { hubPerTest, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

type ChatView = { activeTurn?: { id: string; message: { text: string } }; turns: Array<{ id: string; message: { text: string } }>; queuedMessages?: Array<{ id: string }> };

/** JSON text of an object nested `levels` deep (built as text: JSON.stringify itself overflows on it). */
function deeplyNestedJson(levels: number): string {
  return '{"k":'.repeat(levels) + '1' + '}'.repeat(levels);
}

describe('attacks on the hub core (issue 8)', () => {
  const hubs = hubPerTest();
  let server: TestServer;
  const open = hubs.open;
  const turnStarted = (turnId: string, text: string, extra: Record<string, unknown> = {}) => ({
    type: 'chat/turnStarted',
    turnId,
    startedAt: new Date().toISOString(),
    message: userMessage(text),
    ...extra,
  });
  const echoOf = (c: RpcClient, clientSeq: number) => c.waitForEnvelope((e) => e.origin?.clientId === c.clientId && e.origin.clientSeq === clientSeq, `echo of clientSeq ${clientSeq}`);

  it('1: an unknown key nested 5,000 deep is refused with json_too_deep (viewer and user), never stored, and the hub keeps serving', async () => {
    server = await hubs.start({ withAuth: true });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    const viewer = await open(TOKENS.viewer);
    await viewer.subscribe(chat);
    await alice.subscribe(chat);
    const frame = (clientSeq: number) => {
      const action = JSON.stringify(turnStarted('t-deep', 'deep')).slice(0, -1) + `,"extra":${deeplyNestedJson(5_000)}}`;
      return `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":${JSON.stringify(chat)},"clientSeq":${clientSeq},"action":${action}}}`;
    };
    expect(frame(1).length).toBeLessThan(40_000);

    viewer.sendRaw(frame(7));
    const viewerEcho = await echoOf(viewer, 7);
    expect(viewerEcho.rejectionReason).toMatch(/nested deeper than 64 levels \(json_too_deep\)/);
    // The refused value is never echoed back: only the action's type.
    expect(viewerEcho.action).toEqual({ type: 'chat/turnStarted' });

    alice.sendRaw(frame(9));
    const aliceEcho = await echoOf(alice, 9);
    expect(aliceEcho.rejectionReason).toMatch(/json_too_deep/);

    // Deep JSON in a request (not a dispatch) gets -32600 with the code in data.
    const err = await alice.request('ping', { channel: 'ahp-root://', _meta: { x: JSON.parse(deeplyNestedJson(100)) as unknown } }).catch((e: RpcError) => e);
    expect(err).toMatchObject({ code: -32600, data: { code: 'json_too_deep' } });

    // The hub is alive and stored nothing: a normal turn still starts, and it is the only one.
    const ok = await alice.dispatchAndWait(chat, turnStarted('t-ok', 'fine'));
    expect(ok.rejectionReason).toBeUndefined();
    const state = (await viewer.subscribe<ChatView>(chat)).state;
    expect(state.activeTurn?.id).toBe('t-ok');
    expect(state.turns).toEqual([]);
  });

  it('1: a 1,000,000-character unknown key is refused with json_key_too_long and never stored or echoed', async () => {
    server = await hubs.start({ withAuth: true });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    await alice.subscribe(chat);
    const hugeKey = 'k'.repeat(1_000_000);
    const clientSeq = alice.dispatch(chat, turnStarted('t-key', 'key', { [hugeKey]: 1 }));
    const echo = await echoOf(alice, clientSeq);
    expect(echo.rejectionReason).toMatch(/key longer than 1024 characters \(json_key_too_long\)/);
    expect(JSON.stringify(echo).length).toBeLessThan(1_000);
    const state = (await alice.subscribe<ChatView>(chat)).state;
    expect(state.activeTurn).toBeUndefined();
  });

  it("2: another principal cannot take a victim's clientId (no duplicate echo of the victim's text, no pre-emption)", async () => {
    server = await hubs.start({ withAuth: true });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    await alice.subscribe(chat);
    const secretSeq = alice.dispatch(chat, turnStarted('t-secret', 'the secret plan'));
    expect((await echoOf(alice, secretSeq)).rejectionReason).toBeUndefined();

    // The same tenant's other user and a viewer may not use alice's clientId.
    for (const token of [TOKENS.bob, TOKENS.viewer]) {
      const thief = await RpcClient.connect(server.wsUrl, { token, clientId: alice.clientId });
      hubs.track(thief);
      const err = await thief.initialize().catch((e: RpcError) => e);
      expect(err).toBeInstanceOf(RpcError);
      expect(err).toMatchObject({ code: -32010, data: { code: 'client_id_in_use' } });
      expect(thief.envelopes).toEqual([]);
    }
    // Another tenant has a duplicate ledger of its own: the same clientId there is another client,
    // which sees nothing of alice's (no echo of her text, not even her chat) and changes nothing of hers.
    const other = await RpcClient.connect(server.wsUrl, { token: TOKENS.mallory, clientId: alice.clientId });
    hubs.track(other);
    await other.initialize();
    const probe = other.dispatch(chat, turnStarted('t-secret', 'the secret plan'));
    await other.request('ping', { channel: 'ahp-root://' });
    expect(other.envelopes.filter((e) => e.origin?.clientSeq === probe || e.channel === chat)).toEqual([]);
    await expect(other.subscribe(chat)).rejects.toMatchObject({ code: -32008 });
    // alice's own clientSeqs are untouched: her next dispatch is applied and attributed to her.
    const next = alice.dispatch(chat, { type: 'chat/turnCancelled', turnId: 't-secret', duration: 1 });
    expect((await echoOf(alice, next)).rejectionReason).toBeUndefined();
    // alice may reconnect with her clientId (same principal).
    const again = await open(TOKENS.alice, { clientId: alice.clientId });
    expect(again.clientId).toBe(alice.clientId);
  });

  it('2: a clientSeq of 2^53−1 does not poison later dispatches of the same client', async () => {
    server = await hubs.start({ withAuth: true });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    await alice.subscribe(chat);
    const huge = Number.MAX_SAFE_INTEGER;
    alice.notify('dispatchAction', { channel: chat, clientSeq: huge, action: { type: 'chat/turnCancelled', turnId: 'none', duration: 0 } });
    expect((await echoOf(alice, huge)).rejectionReason).toBeDefined();
    alice.notify('dispatchAction', { channel: chat, clientSeq: huge - 1, action: turnStarted('t-1', 'first') });
    expect((await echoOf(alice, huge - 1)).rejectionReason).toBeUndefined();
    alice.notify('dispatchAction', { channel: chat, clientSeq: 5, action: { type: 'chat/turnCancelled', turnId: 't-1', duration: 1 } });
    expect((await echoOf(alice, 5)).rejectionReason).toBeUndefined();
    // …and a re-sent accepted clientSeq is still answered with its original echo, not re-applied.
    alice.notify('dispatchAction', { channel: chat, clientSeq: huge - 1, action: turnStarted('t-1', 'first') });
    await waitFor(() => alice.envelopes.filter((e) => e.origin?.clientSeq === huge - 1).length === 2);
    const echoes = alice.envelopes.filter((e) => e.origin?.clientSeq === huge - 1);
    expect(echoes[1]).toEqual(echoes[0]);
    expect((await alice.subscribe<ChatView>(chat)).state.turns.map((t) => t.id)).toEqual(['t-1']);
  });

  it('2/6: after a restart past a snapshot, a re-sent clientSeq is not applied again (a removed message stays removed)', async () => {
    const data = hubs.tempDir();
    server = await hubs.start({ withAuth: true, dataDir: data.dir, limits: { snapshotEvery: 20 } });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    await alice.subscribe(chat);
    const queued = { type: 'chat/pendingMessageSet', kind: 'queued', id: 'q-1', message: userMessage('do this later') };
    const seq = alice.dispatch(chat, queued);
    expect((await echoOf(alice, seq)).rejectionReason).toBeUndefined();
    // Enough records after it for several snapshots, then another user removes the message.
    const bob = await open(TOKENS.bob);
    for (let i = 0; i < 60; i++) await bob.dispatchAndWait(chat, { type: 'chat/draftChanged', draft: userMessage(`draft ${i}`) });
    expect((await bob.dispatchAndWait(chat, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'q-1' })).rejectionReason).toBeUndefined();
    await hubs.closeClients();
    await server.stop();

    server = await hubs.start({ withAuth: true, dataDir: data.dir, limits: { snapshotEvery: 20 } });
    const back = await open(TOKENS.alice, { clientId: alice.clientId });
    await back.subscribe(chat);
    back.notify('dispatchAction', { channel: chat, clientSeq: seq, action: queued });
    const echo = await back.waitForEnvelope((e) => e.origin?.clientSeq === seq, 'answer to the re-sent clientSeq');
    expect(echo.rejectionReason).toMatch(/never applied twice|already applied/);
    expect((await back.subscribe<ChatView>(chat)).state.queuedMessages).toBeUndefined();
  });

  it("3: an agent cannot point its session's defaultChat at another tenant's chat; steering never reaches that chat", async () => {
    server = await hubs.start({ withAuth: true });
    const mallory = await open(TOKENS.mallory);
    const victim = await mallory.createSession('victim');
    await mallory.subscribe(victim.chat);
    const victimTurn = await startScriptTurn(mallory, victim.chat, [{ sleep: 600_000 }]);

    const agent = await open(TOKENS.agent);
    const own = `ahp-session:/agent-${Date.now()}`;
    const { defaultChat } = await agent.request<{ defaultChat: string }>('createSession', { channel: own, provider: 'remote' });
    const ownState = (await agent.subscribe<Record<string, unknown>>(own)).state;
    const forged = await agent.dispatchAndWait(own, { type: 'x-session/stateReplaced', state: { ...ownState, defaultChat: victim.chat } });
    expect(forged.rejectionReason).toMatch(/not a chat of this session/);
    // The pre-rename name is still read for one version, and checked the same way.
    const smuggled = await agent.dispatchAndWait(own, {
      type: 'session/stateReplaced',
      state: { ...ownState, chats: [...(ownState['chats'] as unknown[]), { resource: victim.chat, title: 'x', status: 1, modifiedAt: new Date().toISOString() }] },
    });
    expect(smuggled.rejectionReason).toMatch(/not a chat of this session/);
    expect((await agent.subscribe<{ defaultChat: string }>(own)).state.defaultChat).toBe(defaultChat);

    // Steering on the agent's session (even by a plain user) targets nothing: the victim's turn id never leaks.
    const headers = { authorization: `Bearer ${TOKENS.alice}` };
    const caps = (await (await fetch(`${server.url}/v2/sessions/${encodeURIComponent(own.slice('ahp-session:/'.length))}/input-capabilities`, { headers })).json()) as { target: unknown };
    expect(JSON.stringify(caps)).not.toContain(victimTurn);
    expect(caps.target).toBeNull();
    const victimState = (await mallory.subscribe<{ steeringMessages?: unknown[] }>(victim.chat)).state;
    expect(victimState.steeringMessages ?? []).toEqual([]);
  });

  const queuedMessage = (id: string, text: string) => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: userMessage(text) });

  it('4: a client that stops reading is closed (4008) however it fills its queue, JSON-RPC answers (snapshots) included', async () => {
    server = await hubs.start({ withAuth: true });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    for (let i = 0; i < 10; i++) expect((await alice.dispatchAndWait(chat, queuedMessage(`q${i}`, 'x'.repeat(99_000)))).rejectionReason).toBeUndefined();
    await alice.subscribe(chat);
    const reader = await open(TOKENS.bob);
    reader.ws.pause(); // stops reading its socket; the hub's answers pile up
    const asked = 40; // ~1 MB each
    const answers = Array.from({ length: asked }, () =>
      reader.request('subscribe', { channel: chat }).then(
        () => 'answered',
        () => 'closed',
      ),
    );
    // Frames are handled in order: once this dispatch is applied, every subscribe before it was answered (or refused).
    reader.dispatch(chat, queuedMessage('marker', 'all asked'));
    await alice.waitForEnvelope((e) => e.action.type === 'chat/pendingMessageSet' && e.action['id'] === 'marker', 'the marker dispatch');
    reader.ws.resume();
    const outcomes = await Promise.all(answers);
    expect(reader.closeCode).toBe(4008);
    expect(outcomes.filter((o) => o === 'answered').length).toBeLessThan(asked);
  });

  it('4: the replay window is bounded in size, not only in count: an old gap gets snapshots', async () => {
    server = await hubs.start({ withAuth: true, limits: { replayBufferChars: 60_000 } });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    await alice.subscribe(chat);
    const before = Math.max(0, ...alice.envelopes.map((e) => e.serverSeq), (await alice.subscribe(chat)).fromSeq);
    for (let i = 0; i < 6; i++) await alice.dispatchAndWait(chat, queuedMessage(`big${i}`, 'y'.repeat(20_000)));
    const back = await open(TOKENS.alice, { clientId: alice.clientId });
    const result = await back.request<{ type: string }>('reconnect', { channel: 'ahp-root://', clientId: alice.clientId, lastSeenServerSeq: before, subscriptions: [chat] });
    expect(result.type).toBe('snapshot');
  });

  it('4: queued and steering messages per chat are capped (pending_messages_limit); replacing one still works', async () => {
    server = await hubs.start({ withAuth: true });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    await alice.subscribe(chat);
    for (let i = 0; i < 100; i++) alice.dispatch(chat, queuedMessage(`m${i}`, `message ${i}`));
    const over = await alice.dispatchAndWait(chat, queuedMessage('m100', 'one too many'));
    expect(over.rejectionReason).toMatch(/pending_messages_limit/);
    expect(alice.envelopes.filter((e) => e.rejectionReason !== undefined)).toHaveLength(1);
    expect((await alice.dispatchAndWait(chat, queuedMessage('m5', 'edited'))).rejectionReason).toBeUndefined();
    expect((await alice.subscribe<ChatView>(chat)).state.queuedMessages).toHaveLength(100);

    // The steering-message list has the same cap.
    const steering = (id: string) => ({ type: 'chat/steeringMessageSet', steeringMessage: { id, message: userMessage(`steer ${id}`) } });
    for (let i = 0; i < 100; i++) alice.dispatch(chat, steering(`s${i}`));
    const overSteer = await alice.dispatchAndWait(chat, steering('s100'));
    expect(overSteer.rejectionReason).toMatch(/too many steering messages \(pending_messages_limit\)/);
    expect((await alice.subscribe<{ steeringMessages?: unknown[] }>(chat)).state.steeringMessages).toHaveLength(100);
  });

  it('4: a chat cannot grow past its size limit (channel_too_large), and a full chat can still be cleaned up and subscribed', async () => {
    server = await hubs.start({ withAuth: true, limits: { maxChannelJsonChars: 200_000 } });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession();
    await alice.subscribe(chat);
    const outcomes: Array<string | undefined> = [];
    for (let i = 0; i < 6; i++) outcomes.push((await alice.dispatchAndWait(chat, queuedMessage(`f${i}`, 'z'.repeat(45_000)))).rejectionReason);
    expect(outcomes.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
    expect(outcomes[4]).toMatch(/channel_too_large/);
    const full = await alice.subscribe<ChatView>(chat);
    expect(JSON.stringify(full.state).length).toBeLessThanOrEqual(200_000);
    expect((await alice.dispatchAndWait(chat, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'f0' })).rejectionReason).toBeUndefined();
    expect((await alice.dispatchAndWait(chat, queuedMessage('g', 'fits again'))).rejectionReason).toBeUndefined();
  });

  it('6/8: an agent streaming chat/delta unpaced is slowed down, not refused: every delta is applied and delivered', async () => {
    server = await hubs.start({ withAuth: true, rateLimit: { perSecond: 2_000, burst: 500 } });
    const alice = await open(TOKENS.alice);
    const session = `ahp-session:/stream-${Date.now()}`;
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote' });
    await alice.subscribe(chat);
    await alice.dispatchAndWait(chat, turnStarted('t-s', 'stream please'));
    const agent = await open(TOKENS.agent);
    await agent.dispatchAndWait(chat, { type: 'chat/responsePart', turnId: 't-s', part: { kind: 'markdown', id: 'p', content: '' } });
    const count = 5_000;
    for (let i = 0; i < count; i++) agent.dispatch(chat, { type: 'chat/delta', turnId: 't-s', partId: 'p', content: `${i},` });
    const last = count + 1; // the responsePart used clientSeq 1
    await waitFor(() => agent.envelopes.some((e) => e.origin?.clientSeq === last), { what: 'the last delta echo', timeoutMs: 30_000 });
    const own = agent.envelopes.filter((e: ActionEnvelope) => e.origin?.clientId === agent.clientId);
    expect(own.filter((e) => e.rejectionReason !== undefined)).toEqual([]);
    expect(own.length).toBe(count + 1);
    const expected = Array.from({ length: count }, (_, i) => `${i},`).join('');
    await waitFor(
      async () => {
        const state = (await alice.subscribe<{ activeTurn?: { responseParts: Array<{ content: string }> } }>(chat)).state;
        return state.activeTurn?.responseParts[0]?.content === expected;
      },
      { what: 'every delta in the chat' },
    );
  });
});
