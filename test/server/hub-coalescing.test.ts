import { describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';

async function hubWithTurn() {
  let n = 0;
  const log = new MemoryActionLog();
  const hub = await Hub.open({
    log,
    logger: silentLogger,
    now: () => 1_000,
    newId: () => `id-${++n}`,
    agents: [{ provider: 'remote', displayName: 'Remote' }],
    defaultProvider: 'remote',
  });
  const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/s' });
  const agent = new FakeConnection('agent');
  const observer = new FakeConnection('observer');
  const late = new FakeConnection('late');
  hub.subscribe(agent, DEV_PRINCIPAL, chat);
  const start = hub.subscribe(observer, DEV_PRINCIPAL, chat);
  const client = { conn: agent, principal: DEV_PRINCIPAL, clientId: 'agent' };
  let clientSeq = 0;
  const dispatch = (action: Record<string, unknown>) => hub.dispatchFromClient(client, chat, ++clientSeq, action as { type: string });
  dispatch({ type: 'chat/turnStarted', turnId: 't1', startedAt: '1970-01-01T00:00:00.000Z', message: { text: 'go', origin: { kind: 'user' } } });
  dispatch({ type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: '' } });
  await hub.drain();
  return { hub, chat, agent, observer, late, dispatch, start: start.state as ChatState };
}

describe('hub delivery under a burst', () => {
  it('sends a burst of deltas to other subscribers as one envelope, and each echo to the dispatcher', async () => {
    const { hub, chat, agent, observer, dispatch, start } = await hubWithTurn();
    const before = observer.envelopes().length;
    const echoesBefore = agent.envelopes().length;
    for (let i = 0; i < 50; i++) dispatch({ type: 'chat/delta', turnId: 't1', partId: 'p1', content: `${i} ` });
    await hub.drain();
    const seen = observer.envelopes().slice(before);
    expect(seen.filter((e) => e.action.type === 'chat/delta')).toHaveLength(1);
    expect(seen[0]!.origin).toBeUndefined();
    const echoes = agent.envelopes().slice(echoesBefore);
    expect(echoes.map((e) => e.origin?.clientSeq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 3));
    // Both views reduce to the hub's state.
    const fold = (list: ActionEnvelope[]) => list.reduce((s, e) => chatReducer(s, e.action), start);
    const truth = hub.chatEntry(chat)!.state;
    const observerState = fold(observer.envelopes());
    expect(observerState.activeTurn).toEqual(truth.activeTurn);
    expect((observerState.activeTurn!.responseParts[0] as { content: string }).content).toBe(Array.from({ length: 50 }, (_, i) => `${i} `).join(''));
  });

  it('does not merge for a subscriber that joins mid-batch: it gets nothing twice', async () => {
    const { hub, chat, late, dispatch } = await hubWithTurn();
    for (let i = 0; i < 10; i++) dispatch({ type: 'chat/delta', turnId: 't1', partId: 'p1', content: `a${i} ` });
    const snap = hub.subscribe(late, DEV_PRINCIPAL, chat); // taken while the batch is not yet delivered
    for (let i = 0; i < 10; i++) dispatch({ type: 'chat/delta', turnId: 't1', partId: 'p1', content: `b${i} ` });
    await hub.drain();
    const state = late.envelopes().reduce((s, e) => chatReducer(s, e.action), snap.state as ChatState);
    expect(state.activeTurn).toEqual(hub.chatEntry(chat)!.state.activeTurn);
  });

  it('a coalescing subscriber that joins while its group holds a buffer never applies anything twice', async () => {
    const { hub, chat, dispatch } = await hubWithTurn();
    const early = new FakeConnection('early');
    const joiner = new FakeConnection('joiner');
    const earlySnap = hub.subscribe(early, DEV_PRINCIPAL, chat, 10_000);
    for (let i = 0; i < 5; i++) dispatch({ type: 'chat/delta', turnId: 't1', partId: 'p1', content: `x${i} ` });
    await hub.drain(); // delivered into the 10 s coalescing buffer, not yet sent
    const joinSnap = hub.subscribe(joiner, DEV_PRINCIPAL, chat, 10_000);
    for (let i = 0; i < 5; i++) dispatch({ type: 'chat/delta', turnId: 't1', partId: 'p1', content: `y${i} ` });
    await hub.drain();
    await hub.close(); // flushes coalescing buffers
    const truth = hub.chatEntry(chat)!.state.activeTurn;
    const fold = (c: FakeConnection, s: ChatState) => c.envelopes().reduce((st, e) => chatReducer(st, e.action), s);
    expect(fold(early, earlySnap.state as ChatState).activeTurn).toEqual(truth);
    expect(fold(joiner, joinSnap.state as ChatState).activeTurn).toEqual(truth);
  });

  it('merges a burst from a dispatcher that is not subscribed, which still gets every echo', async () => {
    const { hub, chat, agent, observer, dispatch, start } = await hubWithTurn();
    hub.unsubscribe(agent, chat);
    const before = observer.envelopes().length;
    const echoesBefore = agent.envelopes().length;
    for (let i = 0; i < 20; i++) dispatch({ type: 'chat/delta', turnId: 't1', partId: 'p1', content: `${i} ` });
    await hub.drain();
    expect(observer.envelopes().slice(before)).toHaveLength(1);
    expect(
      agent
        .envelopes()
        .slice(echoesBefore)
        .map((e) => e.origin?.clientSeq),
    ).toEqual(Array.from({ length: 20 }, (_, i) => i + 3));
    const state = observer.envelopes().reduce((s, e) => chatReducer(s, e.action), start);
    expect(state.activeTurn).toEqual(hub.chatEntry(chat)!.state.activeTurn);
  });
});
