/**
 * Actions of AHP 0.9–1.x that no copied upstream fixture covers: the per-chat read and archived
 * flags, the chat reorder after a move, and `chat/turnsLoaded` from typed peers (`usage: null`).
 */
import { describe, expect, it } from 'vitest';
import { CLIENT_DISPATCHABLE_ACTIONS, parseAction } from '../../shared/protocol/actions.js';
import { initialChatState, initialSessionState, SessionStatus, type ChatState, type SessionState } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { validateClientAction } from '../../shared/state/validate-action.js';

const T0 = '2026-12-01T00:00:00.000Z';

function frozen<T>(value: T): T {
  return JSON.parse(JSON.stringify(value), (_key, item: unknown) => (typeof item === 'object' && item !== null ? Object.freeze(item) : item)) as T;
}

const chat = (status: number = SessionStatus.Idle): ChatState => frozen({ ...initialChatState('ahp-chat:/c1', 'Chat', T0), status });

describe('chat/isReadChanged and chat/isArchivedChanged', () => {
  it('set and clear the chat’s own bits, keeping every other bit', () => {
    const read = chatReducer(chat(SessionStatus.InProgress), { type: 'chat/isReadChanged', isRead: true });
    expect(read.status).toBe(SessionStatus.InProgress | SessionStatus.IsRead);
    const archived = chatReducer(read, { type: 'chat/isArchivedChanged', isArchived: true });
    expect(archived.status).toBe(SessionStatus.InProgress | SessionStatus.IsRead | SessionStatus.IsArchived);
    const unread = chatReducer(archived, { type: 'chat/isReadChanged', isRead: false });
    expect(unread.status).toBe(SessionStatus.InProgress | SessionStatus.IsArchived);
    expect(chatReducer(unread, { type: 'chat/isArchivedChanged', isArchived: false }).status).toBe(SessionStatus.InProgress);
  });

  it('return the same state when the bit already has that value', () => {
    const state = chat(SessionStatus.Idle | SessionStatus.IsRead);
    expect(chatReducer(state, { type: 'chat/isReadChanged', isRead: true })).toBe(state);
    expect(chatReducer(state, { type: 'chat/isArchivedChanged', isArchived: false })).toBe(state);
  });

  it('a new turn marks a read chat unread again', () => {
    const state = chatReducer(chat(), { type: 'chat/isReadChanged', isRead: true });
    const started = chatReducer(state, {
      type: 'chat/turnStarted',
      turnId: 't1',
      startedAt: T0,
      message: { text: 'hi', origin: { kind: 'user' } },
    });
    expect(started.status & SessionStatus.IsRead).toBe(0);
  });

  it('are client-dispatchable on a chat channel only', () => {
    const validate = (ctx: Parameters<typeof validateClientAction>[0], action: Record<string, unknown> & { type: string }) => validateClientAction(ctx, action);
    expect(CLIENT_DISPATCHABLE_ACTIONS.has('chat/isReadChanged')).toBe(true);
    expect(CLIENT_DISPATCHABLE_ACTIONS.has('chat/isArchivedChanged')).toBe(true);
    const onChat = { channelKind: 'chat' as const, chat: chat(), clientId: 'c' };
    expect(validate(onChat, { type: 'chat/isReadChanged', isRead: true })).toBeUndefined();
    expect(validate(onChat, { type: 'chat/isArchivedChanged', isArchived: true })).toBeUndefined();
    const onSession = { channelKind: 'session' as const, session: initialSessionState('ahp-session:/s', 'demo', 'S'), clientId: 'c' };
    expect(validate(onSession, { type: 'chat/isReadChanged', isRead: true })).toMatch(/must be dispatched on a chat channel/);
    expect(validate(onChat, { type: 'chat/isReadChanged', isRead: 'yes' })).toMatch(/isRead/);
  });
});

describe('session/chatsReordered', () => {
  const summary = (id: string) => ({ resource: `ahp-chat:/${id}`, title: id, status: SessionStatus.Idle, modifiedAt: T0 });
  const session = (): SessionState => frozen({ ...initialSessionState('ahp-session:/s', 'demo', 'S'), chats: [summary('a'), summary('b'), summary('c')] });
  const order = (state: SessionState) => state.chats.map((c) => c.resource.slice('ahp-chat:/'.length)).join('');

  it('puts the chats in the listed order', () => {
    expect(order(sessionReducer(session(), { type: 'session/chatsReordered', chats: ['ahp-chat:/c', 'ahp-chat:/a', 'ahp-chat:/b'] }))).toBe('cab');
  });

  it('keeps unlisted chats after the listed ones, ignores unknown and repeated URIs', () => {
    const next = sessionReducer(session(), {
      type: 'session/chatsReordered',
      chats: ['ahp-chat:/x', 'ahp-chat:/c', 'ahp-chat:/c'],
    });
    expect(order(next)).toBe('cab');
  });

  it('returns the same state when the order does not change', () => {
    const state = session();
    expect(sessionReducer(state, { type: 'session/chatsReordered', chats: ['ahp-chat:/a', 'ahp-chat:/b'] })).toBe(state);
  });

  it('is the hub’s to send: clients cannot dispatch it', () => {
    expect(CLIENT_DISPATCHABLE_ACTIONS.has('session/chatsReordered')).toBe(false);
  });
});

describe('chat/turnsLoaded from typed peers', () => {
  const turn = { id: 't0', message: { text: 'old', origin: { kind: 'user' } }, responseParts: [], state: 'complete' };

  it('reads `usage: null` on a loaded turn as absent', () => {
    const parsed = parseAction({ type: 'chat/turnsLoaded', turns: [{ ...turn, usage: null }] });
    expect(parsed).toEqual({ ok: true, action: { type: 'chat/turnsLoaded', turns: [turn] } });
    if (!parsed.ok) throw new Error(parsed.message);
    const loaded = chatReducer(chat(), parsed.action);
    expect(loaded.turns).toEqual([turn]);
    expect('usage' in (loaded.turns[0] ?? {})).toBe(false);
  });

  it('still refuses a malformed usage', () => {
    expect(parseAction({ type: 'chat/turnsLoaded', turns: [{ ...turn, usage: 'lots' }] })).toMatchObject({ ok: false });
  });
});
