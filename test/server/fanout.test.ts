import { describe, expect, it } from 'vitest';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { initialChatState, type ChatState } from '../../shared/protocol/state.js';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { ChannelFanout } from '../../server/hub/fanout.js';
import { encodeEnvelope, mergeStreamingEnvelopes } from '../../server/hub/envelope-text.js';

/** A manual scheduler: timers fire only when the test says so. */
function manualScheduler() {
  const timers: Array<{ fn: () => void; cancelled: boolean }> = [];
  return {
    schedule: (fn: () => void) => {
      const t = { fn, cancelled: false };
      timers.push(t);
      return { cancel: () => (t.cancelled = true) };
    },
    fireAll: () => {
      for (const t of timers.splice(0)) if (!t.cancelled) t.fn();
    },
  };
}

const delta = (serverSeq: number, content: string, partId = 'p1', extra: Partial<ActionEnvelope> = {}): ActionEnvelope => ({
  channel: 'ahp-chat:/c',
  serverSeq,
  action: { type: 'chat/delta', turnId: 't1', partId, content },
  ...extra,
});

describe('ChannelFanout', () => {
  it('sends the same encoded string to every immediate subscriber', () => {
    const f = new ChannelFanout();
    const a = new FakeConnection('a');
    const b = new FakeConnection('b');
    f.add(a, 0, 0);
    f.add(b, 0, 0);
    const env = delta(1, 'x');
    const text = encodeEnvelope(env);
    f.publish(env, text);
    expect(a.frames).toEqual([text]);
    expect(b.frames[0]).toBe(a.frames[0]);
  });

  it('skips envelopes a joining subscriber already has in its snapshot', () => {
    const f = new ChannelFanout();
    const late = new FakeConnection('late');
    f.add(late, 5, 3); // snapshot taken at seq 5 while 4 and 5 were not yet delivered
    f.publish(delta(4, 'a'), encodeEnvelope(delta(4, 'a')));
    f.publish(delta(5, 'b'), encodeEnvelope(delta(5, 'b')));
    f.publish(delta(6, 'c'), encodeEnvelope(delta(6, 'c')));
    f.publish(delta(7, 'd'), encodeEnvelope(delta(7, 'd')));
    expect(late.envelopes().map((e) => e.serverSeq)).toEqual([6, 7]);
  });

  it('coalesces consecutive deltas for one part within maxLatencyMs and reduces to the same state', () => {
    const timers = manualScheduler();
    const f = new ChannelFanout(undefined, timers.schedule);
    const slow = new FakeConnection('slow');
    const fast = new FakeConnection('fast');
    f.add(slow, 0, 0, 50);
    f.add(fast, 0, 0, 0);
    const envs = [delta(1, 'Hel'), delta(2, 'lo '), delta(3, 'other', 'p2'), delta(4, 'wor'), delta(5, 'ld', 'p1', { origin: { clientId: 'c', clientSeq: 1 } }), delta(6, '!')];
    for (const e of envs) f.publish(e, encodeEnvelope(e));
    expect(slow.frames).toEqual([]);
    timers.fireAll();
    const got = slow.envelopes();
    // 1+2 merge; 3 is another part; 4+5+6 merge (5's origin is another connection's, which is not
    // among these receivers, so it is dropped for them).
    expect(got.map((e) => e.serverSeq)).toEqual([2, 3, 6]);
    expect(got[0]!.action['content']).toBe('Hello ');
    expect(got[2]!.origin).toBeUndefined();
    expect(fast.envelopes().map((e) => e.serverSeq)).toEqual([1, 2, 3, 4, 5, 6]);

    const start: ChatState = {
      ...initialChatState('ahp-chat:/c', 'c', '1970-01-01T00:00:00.000Z'),
      activeTurn: {
        id: 't1',
        startedAt: '1970-01-01T00:00:00.000Z',
        message: { text: 'hi', origin: { kind: 'user' } },
        responseParts: [
          { kind: 'markdown', id: 'p1', content: '' },
          { kind: 'markdown', id: 'p2', content: '' },
        ],
      },
    } as ChatState;
    const fold = (list: ActionEnvelope[]) => list.reduce((s, e) => chatReducer(s, e.action), start);
    expect(fold(got)).toEqual(fold(fast.envelopes()));
  });

  it('gives the dispatcher its own unmerged echoes while others get the merged envelope', () => {
    const timers = manualScheduler();
    const f = new ChannelFanout(undefined, timers.schedule);
    const agent = new FakeConnection('agent');
    const watcher = new FakeConnection('watcher');
    f.add(agent, 0, 0, 20);
    f.add(watcher, 0, 0, 20);
    for (let seq = 1; seq <= 3; seq++) {
      const env = delta(seq, `${seq}`, 'p1', { origin: { clientId: 'agent', clientSeq: seq } });
      const text = encodeEnvelope(env);
      f.publish(env, text, agent);
      f.sendTo(agent, env, text);
    }
    timers.fireAll();
    expect(watcher.envelopes().map((e) => [e.serverSeq, e.action['content'], e.origin])).toEqual([[3, '123', undefined]]);
    expect(agent.envelopes().map((e) => e.origin?.clientSeq)).toEqual([1, 2, 3]);
  });

  it('never merges across parts, turns, kinds or _meta', () => {
    expect(mergeStreamingEnvelopes(delta(1, 'a'), delta(2, 'b', 'p2'))).toBeUndefined();
    expect(mergeStreamingEnvelopes(delta(1, 'a'), { ...delta(2, 'b'), action: { ...delta(2, 'b').action, turnId: 't2' } })).toBeUndefined();
    expect(mergeStreamingEnvelopes(delta(1, 'a'), { ...delta(2, 'b'), action: { ...delta(2, 'b').action, type: 'chat/reasoning' } })).toBeUndefined();
    expect(mergeStreamingEnvelopes(delta(1, 'a'), { ...delta(2, 'b'), action: { ...delta(2, 'b').action, _meta: { x: 1 } } })).toBeUndefined();
    expect(mergeStreamingEnvelopes(delta(1, 'a'), delta(2, 'b'))?.action['content']).toBe('ab');
  });

  it('keeps a private rejection in order behind buffered envelopes for a coalescing subscriber', () => {
    const timers = manualScheduler();
    const f = new ChannelFanout(undefined, timers.schedule);
    const c = new FakeConnection('c');
    f.add(c, 0, 0, 20);
    const echo = delta(1, 'a', 'p1', { origin: { clientId: 'c', clientSeq: 1 } });
    f.publish(echo, encodeEnvelope(echo));
    const rejection: ActionEnvelope = { ...delta(1, 'b'), origin: { clientId: 'c', clientSeq: 2 }, rejectionReason: 'no' };
    f.sendTo(c, rejection, encodeEnvelope(rejection));
    expect(c.frames).toEqual([]);
    timers.fireAll();
    expect(c.envelopes().map((e) => e.origin?.clientSeq)).toEqual([1, 2]);
  });

  it('closes a subscriber that does not read (slow consumer) instead of buffering without bound', () => {
    const f = new ChannelFanout({ maxBufferedBytes: 10, maxCoalescedEnvelopes: 10 });
    const c = new FakeConnection('c');
    f.add(c, 0, 0);
    c.bufferedAmount = 11;
    f.publish(delta(1, 'a'), encodeEnvelope(delta(1, 'a')));
    expect(c.frames).toEqual([]);
    expect(c.closed?.code).toBe(4008);
  });
});
