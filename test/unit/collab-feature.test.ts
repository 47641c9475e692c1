/**
 * The collaboration feature against a fake hub port: which documents it opens, when the hub's
 * hooks (commits, turn end, disposal, disconnect) make it drop them, and how an AHP draft is
 * merged into the shared text. Real sockets and Y.Docs are covered by test/server/collab.test.ts
 * and test/integration/collaborative-answers.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { fromBase64 } from 'lib0/buffer';
import { CHAT_PRESENCE_DOC, CollabMethod } from '../../shared/protocol/collab.js';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { Role, type Principal } from '../../server/auth/auth.js';
import { installCollab, type CollabEngine } from '../../server/collab/feature.js';
import type { RpcRegistrar } from '../../server/ahp/rpc.js';
import { silentLogger } from '../../server/log.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { FakeHubPort } from '../helpers/fake-hub-port.js';
import { TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const SESSION = 'ahp-session:/collab';
const ALICE: Principal = { user: 'alice', tenant: 'default', role: Role.User };
const BOB: Principal = { user: 'bob', tenant: 'default', role: Role.User };
const MALLORY: Principal = { user: 'mallory', tenant: 'other', role: Role.User };

describe('collab feature (unit, fake hub port)', () => {
  let hub: FakeHubPort;
  let chat: string;
  let engine: CollabEngine;
  let dispose: () => void | Promise<void>;
  const registered: string[] = [];

  beforeEach(() => {
    hub = new FakeHubPort();
    chat = hub.addSession(SESSION);
    registered.length = 0;
    const rpc: RpcRegistrar = {
      request: (method: string) => void registered.push(method),
      notification: (method: string) => void registered.push(method),
    };
    ({ engine, dispose } = installCollab({ hub, rpc, logger: silentLogger }));
    hub.commit(chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: '2026-01-01T00:00:00.000Z', message: { text: 'go', origin: { kind: 'user' } } });
    hub.commit(chat, { type: 'chat/inputRequested', request: { ...TWO_QUESTION_REQUEST, answers: { notes: { state: 'draft', value: { kind: 'text', value: 'draft so far' } } } } });
  });
  afterEach(() => dispose());

  it('registers the x-collab methods and one set of hub hooks, and removes its hooks when disposed', () => {
    expect(registered.sort()).toEqual([CollabMethod.Awareness, CollabMethod.Join, CollabMethod.Leave, CollabMethod.Sync].sort());
    expect(hub.hookCount).toBe(1);
    dispose();
    expect(hub.hookCount).toBe(0);
    dispose = () => {};
  });

  it('at shutdown, text a member typed that still waits for its mirror is written into the draft before the documents go', async () => {
    const conn = new FakeConnection('a');
    engine.join(conn, ALICE, chat, 'req-1');
    const room = [...engine.rooms.values()][0]!;
    room.doc.transact(() => room.text('notes').insert(room.text('notes').length, ', typed just before the stop'), { conn, principal: ALICE });
    await dispose();
    dispose = () => {};
    expect(engine.rooms.size).toBe(0);
    const drafts = hub.committed.filter((c) => c.action.type === 'chat/inputAnswerChanged').map((c) => (c.action as { answer?: { value?: { value?: unknown } } }).answer?.value?.value);
    expect(drafts).toEqual(['draft so far, typed just before the stop']);
  });

  it("holds a member's update from the others and from late joiners until the draft with its text is committed", async () => {
    const a = new FakeConnection('a');
    const b = new FakeConnection('b');
    engine.join(a, ALICE, chat, 'req-1');
    engine.join(b, BOB, chat, 'req-1');
    const room = [...engine.rooms.values()][0]!;
    room.doc.transact(() => room.text('notes').insert(room.text('notes').length, ' and more'), { conn: a, principal: ALICE });
    const syncs = (c: FakeConnection) => c.messages().filter((m) => m['method'] === CollabMethod.Sync).length;
    expect(syncs(b)).toBe(0);
    const late = new Y.Doc();
    const joined = await engine.join(new FakeConnection('c'), BOB, chat, 'req-1');
    Y.applyUpdate(late, fromBase64(joined.state));
    expect(late.getText('notes').toString()).toBe('draft so far');
    await waitFor(() => syncs(b) || undefined, { what: 'the held update, once its draft is committed' });
    expect(hub.committed.at(-1)?.action).toMatchObject({ type: 'chat/inputAnswerChanged', answer: { value: { value: 'draft so far and more' } } });
    expect(syncs(a)).toBe(0);
  });

  it('opens a document for an open input request, seeded with the current draft of its text question', () => {
    engine.join(new FakeConnection('a'), ALICE, chat, 'req-1');
    const room = [...engine.rooms.values()][0]!;
    expect(room.text('notes').toString()).toBe('draft so far');
  });

  it('refuses a document for a request that is not open, or on a chat of another tenant, with NotFound', () => {
    expect(() => engine.join(new FakeConnection('a'), ALICE, chat, 'no-such-request')).toThrow(expect.objectContaining({ code: ErrorCode.NotFound }));
    expect(() => engine.join(new FakeConnection('m'), MALLORY, chat, 'req-1')).toThrow(expect.objectContaining({ code: ErrorCode.NotFound }));
    expect(engine.rooms.size).toBe(0);
  });

  it("merges a draft written by a client that does not speak Yjs into the document's text", () => {
    engine.join(new FakeConnection('a'), ALICE, chat, 'req-1');
    hub.commit(chat, { type: 'chat/inputAnswerChanged', requestId: 'req-1', questionId: 'notes', answer: { state: 'draft', value: { kind: 'text', value: 'draft so far, edited' } } });
    expect([...engine.rooms.values()][0]!.text('notes').toString()).toBe('draft so far, edited');
  });

  it('drops request documents when the turn ends, but keeps the chat presence document', () => {
    engine.join(new FakeConnection('a'), ALICE, chat, 'req-1');
    engine.join(new FakeConnection('b'), ALICE, chat, CHAT_PRESENCE_DOC);
    hub.commit(chat, { type: 'chat/turnComplete', turnId: 't1', duration: 3 });
    expect([...engine.rooms.values()].map((r) => r.requestId)).toEqual([CHAT_PRESENCE_DOC]);
  });

  it('drops the document of a request once it is answered', () => {
    engine.join(new FakeConnection('a'), ALICE, chat, 'req-1');
    hub.commit(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'cancel' });
    expect(engine.rooms.size).toBe(0);
  });

  it('drops every document of a disposed chat, and frees a presence document when its last viewer disconnects', () => {
    const viewer = new FakeConnection('v');
    engine.join(viewer, ALICE, chat, CHAT_PRESENCE_DOC);
    hub.disconnect(viewer);
    expect(engine.rooms.size).toBe(0);
    engine.join(new FakeConnection('a'), ALICE, chat, 'req-1');
    hub.disposeChat(chat);
    expect(engine.rooms.size).toBe(0);
  });
});
