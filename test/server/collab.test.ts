/**
 * The collaboration server over a real hub and real sockets: Y.Docs in this process play the
 * browsers, a plain RpcClient plays an AHP client that knows nothing about Yjs.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { toBase64 } from 'lib0/buffer';
import type { LogRecord } from '../../server/storage/action-log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { Peer } from '../helpers/yjs-peer.js';

interface ChatLike {
  activeTurn?: { responseParts: Array<{ kind: string; request?: { id: string; answers?: Record<string, { state: string; value?: { value: unknown } }> } }> };
}

describe('collaborative answers over x-collab', () => {
  let server: TestServer;
  const clients: RpcClient[] = [];
  const peers: Peer[] = [];
  beforeEach(async () => {
    server = await startTestServer({ withAuth: true });
  });
  afterEach(async () => {
    for (const p of peers.splice(0)) p.destroy();
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await server.stop();
  });

  async function open(token: string): Promise<RpcClient> {
    const c = await RpcClient.open(server.wsUrl, { token });
    clients.push(c);
    return c;
  }

  async function openRequest(): Promise<{ alice: RpcClient; bob: RpcClient; chat: string }> {
    const alice = await open(TOKENS.alice);
    const bob = await open(TOKENS.bob);
    const { chat } = await alice.createSession('collab');
    await alice.subscribe(chat);
    await bob.subscribe(chat);
    await startScriptTurn(alice, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    await bob.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    return { alice, bob, chat };
  }

  async function draftOf(c: RpcClient, chat: string): Promise<string | undefined> {
    const snap = await c.subscribe<ChatLike>(chat);
    const part = snap.state.activeTurn?.responseParts.find((p) => p.kind === 'inputRequest');
    return part?.request?.answers?.['notes']?.value?.value as string | undefined;
  }

  it('two Y.Docs typing into the same answer converge, and the merged text becomes the AHP draft', async () => {
    const { alice, bob, chat } = await openRequest();
    const a = await Peer.join(alice, chat, 'req-1');
    const b = await Peer.join(bob, chat, 'req-1');
    peers.push(a, b);
    // Concurrent edits: both insert at position 0 before seeing each other's change.
    a.text('notes').insert(0, 'alpha ');
    b.text('notes').insert(0, 'beta ');
    a.text('notes').insert(a.text('notes').length, 'A-end');
    await waitFor(() => (a.text('notes').toString() === b.text('notes').toString() && a.text('notes').length === 'alpha beta A-end'.length) || undefined, { what: 'convergence' });
    const merged = a.text('notes').toString();
    expect(merged).toContain('alpha ');
    expect(merged).toContain('beta ');
    expect(merged).toContain('A-end');

    // A plain AHP client (no Yjs) sees the merged text as the draft.
    const plain = await open(TOKENS.bob);
    await waitFor(async () => ((await draftOf(plain, chat)) === merged ? true : undefined), { what: 'mirrored draft' });
  });

  it("sends a member's text to the other members only after the draft holding it is in the log", async () => {
    const { alice, bob, chat } = await openRequest();
    const a = await Peer.join(alice, chat, 'req-1');
    const b = await Peer.join(bob, chat, 'req-1');
    peers.push(a, b);
    // Every append of the log waits at a gate the test opens; appended drafts are recorded.
    const appended: LogRecord[] = [];
    const entered: LogRecord[] = [];
    let open: (() => void) | undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const append = MemoryActionLog.prototype.append;
    const spy = vi.spyOn(MemoryActionLog.prototype, 'append').mockImplementation(async function (this: MemoryActionLog, head: number, records: readonly LogRecord[]) {
      entered.push(...records);
      await gate;
      const result = await append.call(this, head, records);
      appended.push(...records);
      return result;
    });
    try {
      a.text('notes').insert(0, 'durable first');
      const isDraft = (r: LogRecord) => r.action.type === 'chat/inputAnswerChanged' && JSON.stringify(r.action).includes('durable first');
      await waitFor(() => entered.some(isDraft) || undefined, { what: 'the mirrored draft to reach the log' });
      // While the append is held the hub has every chance to send the text to Bob (1 s).
      const early = await waitFor(() => b.text('notes').toString().includes('durable first') || undefined, { timeoutMs: 1_000 }).catch(() => false);
      expect(early).toBe(false);
      open!();
      await waitFor(() => b.text('notes').toString().includes('durable first') || undefined, { what: "Alice's text at Bob" });
      expect(appended.some(isDraft)).toBe(true);
    } finally {
      open!();
      spy.mockRestore();
    }
  });

  it('a draft written by a client without Yjs is merged into the text', async () => {
    const { alice, bob, chat } = await openRequest();
    const a = await Peer.join(alice, chat, 'req-1');
    peers.push(a);
    a.text('notes').insert(0, 'hello');
    await waitFor(async () => ((await draftOf(bob, chat)) === 'hello' ? true : undefined), { what: 'first mirror' });
    const echo = await bob.dispatchAndWait(chat, {
      type: 'chat/inputAnswerChanged',
      requestId: 'req-1',
      questionId: 'notes',
      answer: { state: 'draft', value: { kind: 'text', value: 'hello world' } },
    });
    expect(echo.rejectionReason).toBeUndefined();
    await waitFor(() => (a.text('notes').toString() === 'hello world' ? true : undefined), { what: 'draft merged into Y.Text' });
  });

  it('seeds a late joiner with existing drafts and drops the document when the request resolves', async () => {
    const { alice, bob, chat } = await openRequest();
    await bob.dispatchAndWait(chat, {
      type: 'chat/inputAnswerChanged',
      requestId: 'req-1',
      questionId: 'notes',
      answer: { state: 'draft', value: { kind: 'text', value: 'seeded' } },
    });
    const a = await Peer.join(alice, chat, 'req-1');
    peers.push(a);
    expect(a.text('notes').toString()).toBe('seeded');
    const done = await bob.dispatchAndWait(chat, {
      type: 'chat/inputCompleted',
      requestId: 'req-1',
      response: 'accept',
      answers: {
        runtime: { state: 'submitted', value: { kind: 'selected', value: 'node' } },
        notes: { state: 'submitted', value: { kind: 'text', value: 'seeded' } },
      },
    });
    expect(done.rejectionReason).toBeUndefined();
    await waitFor(() => a.closedReason, { what: 'x-collab/closed' });
    expect(a.closedReason).toMatch(/answered/);
    await expect(alice.request('x-collab/join', { channel: chat, doc: 'req-1' })).rejects.toMatchObject({ code: -32008 });
  });

  it('presence carries the authenticated user and disappears on leave and when the socket closes', async () => {
    const { alice, bob, chat } = await openRequest();
    const a = await Peer.join(alice, chat, 'req-1');
    const b = await Peer.join(bob, chat, 'req-1');
    peers.push(a, b);
    // Alice claims to be someone else; the server stamps her real identity.
    a.awareness.setLocalState({ user: { name: 'Alice', id: 'mallory' }, editing: 'notes' });
    b.awareness.setLocalState({ user: { name: 'Bob' }, editing: null });
    const aliceOnB = await waitFor(() => b.awareness.getStates().get(a.doc.clientID) as { user: { id: string; role: string }; editing: string } | undefined, { what: 'alice presence at bob' });
    expect(aliceOnB.user.id).toBe('alice');
    expect(aliceOnB.user.role).toBe('user');
    expect(aliceOnB.editing).toBe('notes');
    await waitFor(() => a.awareness.getStates().get(b.doc.clientID), { what: 'bob presence at alice' });

    // Explicit leave.
    bob.notify('x-collab/leave', { channel: chat, doc: 'req-1' });
    await waitFor(() => (a.awareness.getStates().has(b.doc.clientID) ? undefined : true), { what: 'bob presence removed on leave' });

    // Rejoin, then close the socket: presence goes with the connection.
    const carol = await open(TOKENS.bob);
    const c = await Peer.join(carol, chat, 'req-1');
    peers.push(c);
    c.awareness.setLocalState({ user: { name: 'Tab 2' }, editing: 'runtime' });
    await waitFor(() => a.awareness.getStates().get(c.doc.clientID), { what: 'second tab presence' });
    await carol.close();
    await waitFor(() => (a.awareness.getStates().has(c.doc.clientID) ? undefined : true), { what: 'presence removed on close' });
  });

  it('a viewer receives the text but cannot change it; other tenants and unknown requests cannot join', async () => {
    const { alice, chat } = await openRequest();
    const viewer = await open(TOKENS.viewer);
    const a = await Peer.join(alice, chat, 'req-1');
    const v = await Peer.join(viewer, chat, 'req-1');
    peers.push(a, v);
    a.text('notes').insert(0, 'from alice');
    await waitFor(() => (v.text('notes').toString() === 'from alice' ? true : undefined), { what: 'viewer receives text' });
    v.text('notes').insert(0, 'VIEWER ');
    // Round trip a ping so the viewer's update has certainly been processed.
    await viewer.request('ping', { channel: 'ahp-root://' });
    await alice.request('ping', { channel: 'ahp-root://' });
    expect(a.text('notes').toString()).toBe('from alice');

    const mallory = await open(TOKENS.mallory);
    await expect(mallory.request('x-collab/join', { channel: chat, doc: 'req-1' })).rejects.toBeInstanceOf(RpcError);
    await expect(alice.request('x-collab/join', { channel: chat, doc: 'nope' })).rejects.toMatchObject({ code: -32008 });
  });

  it('has a presence-only room per chat that needs no open request and holds no text', async () => {
    const alice = await open(TOKENS.alice);
    const bob = await open(TOKENS.bob);
    const { chat } = await alice.createSession('presence');
    await alice.subscribe(chat);
    const a = await Peer.join(alice, chat, '~chat');
    const b = await Peer.join(bob, chat, '~chat');
    peers.push(a, b);
    a.awareness.setLocalState({ user: { name: 'A' } });
    const seen = await waitFor(() => b.awareness.getStates().get(a.doc.clientID) as { user: { id: string } } | undefined, { what: 'presence in chat room' });
    expect(seen.user.id).toBe('alice');
    b.text('x').insert(0, 'ignored');
    await bob.request('ping', { channel: 'ahp-root://' });
    await alice.request('ping', { channel: 'ahp-root://' });
    expect(a.text('x').toString()).toBe('');
    // A turn ending does not close it.
    await startScriptTurn(alice, chat, [{ say: 'hi' }]);
    await alice.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn end');
    expect(a.closedReason).toBeUndefined();
    await bob.close();
    await waitFor(() => (a.awareness.getStates().has(b.doc.clientID) ? undefined : true), { what: 'bob gone' });
  });

  it('limits how many documents one connection may follow', async () => {
    const alice = await open(TOKENS.alice);
    const chats: string[] = [];
    for (let i = 0; i < 17; i++) chats.push((await alice.createSession(`s${i}`)).chat);
    for (const chat of chats.slice(0, 16)) await alice.request('x-collab/join', { channel: chat, doc: '~chat' });
    await expect(alice.request('x-collab/join', { channel: chats[16], doc: '~chat' })).rejects.toMatchObject({ code: -32020 });
    // Leaving one frees a slot.
    alice.notify('x-collab/leave', { channel: chats[0], doc: '~chat' });
    await alice.request('x-collab/join', { channel: chats[16], doc: '~chat' });
  });

  it('refuses sync before join and oversized payloads', async () => {
    const { alice, chat } = await openRequest();
    alice.notify('x-collab/sync', { channel: chat, doc: 'req-1', data: toBase64(new Uint8Array([2, 0])) });
    await waitFor(() => alice.errors.find((e) => /not joined/.test(e.message)), { what: 'not joined error' });
    await Peer.join(alice, chat, 'req-1').then((p) => peers.push(p));
    alice.notify('x-collab/sync', { channel: chat, doc: 'req-1', data: 'A'.repeat(200 * 1024) });
    await waitFor(() => alice.errors.find((e) => /larger than/.test(e.message)), { what: 'payload limit error' });
  });
});
