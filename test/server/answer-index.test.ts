import { describe, expect, it } from 'vitest';
import { initialRootState } from '../../shared/protocol/state.js';
import { MAX_ANSWER_RECORDS, withAnswer } from '../../shared/state/answered-by.js';
import { CATALOGUE_CHANNEL, chatSnapshotMeta, HubState } from '../../server/hub/catalogue.js';

const CHAT = 'ahp-chat:/c1';
const by = (user: string) => ({ user, surface: 'app', at: '2026-12-01T10:00:00.000Z' });

function stateWithOpenRequest(): HubState {
  const s = new HubState(initialRootState([]));
  s.applyRecord({ channel: CATALOGUE_CHANNEL, action: { type: 'hub/sessionCreated', session: 'ahp-session:/s1', tenant: 't', owner: 'u', provider: 'demo', title: 's', createdAt: '2026-12-01T09:00:00.000Z' } });
  s.applyRecord({ channel: CATALOGUE_CHANNEL, action: { type: 'hub/chatCreated', chat: CHAT, session: 'ahp-session:/s1', title: 'c', createdAt: '2026-12-01T09:00:00.000Z' } });
  s.applyRecord({ channel: CHAT, action: { type: 'chat/turnStarted', turnId: 't1', startedAt: '2026-12-01T09:00:01.000Z', message: { text: 'hi', origin: { kind: 'user' } } } });
  s.applyRecord({ channel: CHAT, action: { type: 'chat/inputRequested', request: { id: 'r1', questions: [{ id: 'q', kind: 'text', message: 'Q?' }] } } });
  return s;
}

describe('the who-answered index beside the chat state', () => {
  it('records the stamp of an applied answer outside the state and survives a snapshot image', () => {
    const s = stateWithOpenRequest();
    s.applyRecord({ channel: CHAT, action: { type: 'chat/inputCompleted', requestId: 'nope', response: 'accept', _meta: { 'hub/answeredBy': by('mallory') } } });
    s.applyRecord({ channel: CHAT, action: { type: 'chat/inputCompleted', requestId: 'r1', response: 'decline', _meta: { 'hub/answeredBy': by('alice') } } });
    const chat = s.chats.get(CHAT)!;
    expect(chat.answeredBy).toEqual({ r1: by('alice') });
    const part = chat.state.activeTurn!.responseParts[0] as Record<string, unknown>;
    expect(part['response']).toBe('decline');
    expect(part['_meta']).toBeUndefined();
    const restored = HubState.fromImage(JSON.parse(JSON.stringify(s.toImage())));
    expect(restored.chats.get(CHAT)!.answeredBy).toEqual({ r1: by('alice') });
  });

  it('records who stopped a turn outside the state, sends it as the snapshot meta and survives a snapshot image', () => {
    const s = stateWithOpenRequest();
    const before = s.chats.get(CHAT)!;
    expect(chatSnapshotMeta(before)).toBeUndefined();
    // A cancel of a turn that is not running changes nothing and records nothing.
    s.applyRecord({ channel: CHAT, action: { type: 'chat/turnCancelled', turnId: 'other', duration: 5, _meta: { 'hub/answeredBy': by('mallory') } } });
    s.applyRecord({ channel: CHAT, action: { type: 'chat/turnCancelled', turnId: 't1', duration: 1600, _meta: { 'hub/answeredBy': by('bob') } } });
    const chat = s.chats.get(CHAT)!;
    expect(chat.stoppedBy).toEqual({ t1: by('bob') });
    expect(chat.state.turns.at(-1)).toMatchObject({ id: 't1', state: 'cancelled' });
    expect(chat.state.turns.at(-1)).not.toHaveProperty('_meta');
    expect(chatSnapshotMeta(chat)).toEqual({ 'hub/stoppedBy': { t1: by('bob') } });
    const restored = HubState.fromImage(JSON.parse(JSON.stringify(s.toImage())));
    expect(restored.chats.get(CHAT)!.stoppedBy).toEqual({ t1: by('bob') });
  });

  it('keeps the newest MAX_ANSWER_RECORDS entries', () => {
    let index = {};
    for (let i = 0; i <= MAX_ANSWER_RECORDS; i++) index = withAnswer(index, `req-${i}`, by(`u${i}`));
    const keys = Object.keys(index);
    expect(keys).toHaveLength(MAX_ANSWER_RECORDS);
    expect(keys).not.toContain('req-0');
    expect(keys.at(-1)).toBe(`req-${MAX_ANSWER_RECORDS}`);
  });
});
