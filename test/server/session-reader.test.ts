/**
 * Search and export read through `HubPort.reader` (queries.ts, `ChatTable.peekSession`): a parked
 * session is read from the parking cache and stays parked — a search over every session of a
 * tenant must not bring them all back into memory.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import { searchSessions } from '../../server/sessions/search.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import { transcriptMarkdown, transcriptOf } from '../../shared/state/transcript.js';

const hubs: Hub[] = [];
afterEach(async () => {
  for (const hub of hubs.splice(0)) await hub.close();
});

async function hubWithSessions(count: number): Promise<{ hub: Hub; sessions: string[] }> {
  let n = 0;
  let t = 1_000;
  const hub = await Hub.open({
    log: new MemoryActionLog(),
    logger: silentLogger,
    now: () => (t += 7),
    newId: () => `id-${++n}`,
    agents: [{ provider: 'remote', displayName: 'R' }],
    defaultProvider: 'remote',
    limits: { parkIdleMs: 3_600_000 },
  });
  hubs.push(hub);
  const sessions: string[] = [];
  for (let i = 0; i < count; i++) {
    const uri = `ahp-session:/s${i}`;
    const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri, title: `session ${i}` });
    await hub.dispatchServer(chat, { type: 'chat/turnStarted', turnId: `t${i}`, startedAt: '1970-01-01T00:00:01.000Z', message: { text: `question ${i}`, origin: { kind: 'user' } } } as WireAction);
    await hub.dispatchServer(chat, { type: 'chat/responsePart', turnId: `t${i}`, part: { kind: 'markdown', id: 'p1', content: i === 1 ? 'the quokka answer' : `answer ${i}` } } as WireAction);
    await hub.dispatchServer(chat, { type: 'chat/turnComplete', turnId: `t${i}`, duration: 3 } as WireAction);
    sessions.push(uri);
  }
  return { hub, sessions };
}

describe('reading parked sessions for search and export', () => {
  it('finds text in a parked session and leaves every session parked', async () => {
    const { hub } = await hubWithSessions(3);
    hub.parking.sweep();
    expect(hub.parking.sweep()).toBe(3);
    expect(hub.parking.residency).toEqual({ resident: 0, parked: 3 });
    const answer = await searchSessions(hub.reader, DEV_PRINCIPAL, 'Quokka', 20);
    expect(answer.results).toMatchObject([{ session: 'ahp-session:/s1', turnId: 't1', field: 'agent', snippet: 'the quokka answer', match: { start: 4, length: 6 } }]);
    expect(hub.parking.residency).toEqual({ resident: 0, parked: 3 });
    // Export reads the same way.
    const session = hub.visibleSession(DEV_PRINCIPAL, 'ahp-session:/s2')!;
    const [chat] = hub.reader.chatsOf(session);
    expect(transcriptMarkdown(transcriptOf(chat!.state, { uri: session.uri, title: session.state.title }, '1970-01-01T00:00:00.000Z'))).toBe('# session 2\n\n## Turn 1\n\n**User:**\n\nquestion 2\n\nanswer 2\n');
    expect(hub.parking.residency).toEqual({ resident: 0, parked: 3 });
  });

  it('lists a tenant’s sessions newest first and never another tenant’s', async () => {
    const { hub, sessions } = await hubWithSessions(3);
    expect(hub.reader.sessions(DEV_PRINCIPAL).map((s) => s.uri)).toEqual([...sessions].reverse());
    expect(hub.reader.sessions({ ...DEV_PRINCIPAL, tenant: 'other' })).toEqual([]);
  });

  it('a long text gives a snippet around the match with ellipses, offsets still true', async () => {
    const { hub } = await hubWithSessions(0);
    const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/long', title: 'long' });
    const text = `${'a'.repeat(100)}\nNEEDLE\n${'b'.repeat(100)}`;
    await hub.dispatchServer(chat, { type: 'chat/turnStarted', turnId: 'tl', startedAt: '1970-01-01T00:00:01.000Z', message: { text, origin: { kind: 'user' } } } as WireAction);
    const [hit] = (await searchSessions(hub.reader, DEV_PRINCIPAL, 'needle', 5)).results;
    expect(hit!.snippet).toBe(`…${'a'.repeat(59)} NEEDLE ${'b'.repeat(59)}…`);
    expect(hit!.snippet.slice(hit!.match.start, hit!.match.start + hit!.match.length)).toBe('NEEDLE');
  });
});
