/**
 * The fan-out sends each receiver only actions its negotiated version knows
 * (shared/protocol/version-features.ts): a 0.8 subscriber is closed with the resync code on a
 * 0.9 action (immediate or coalescing), while 1.0 subscribers share the one frame; a receiver
 * that has not negotiated (in process) counts as the newest version.
 */
import { describe, expect, it } from 'vitest';
import { ChannelFanout } from '../../server/hub/fanout.js';
import { encodeEnvelope } from '../../server/hub/envelope-text.js';
import { setConnectionVersion } from '../../server/hub/connection.js';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { actionForVersion, introducedIn, isActionKnownToVersion, knowsEveryAction, RESYNC_CLOSE_CODE, supports } from '../../shared/protocol/version-features.js';
import { reconnectDelay } from '../../shared/client/backoff.js';
import { FakeConnection } from '../helpers/fake-connection.js';

const env = (serverSeq: number, action: ActionEnvelope['action']): ActionEnvelope => ({ channel: 'ahp-chat:/c', serverSeq, action });
const conn = (id: string, version?: string) => {
  const c = new FakeConnection(id);
  if (version) setConnectionVersion(c, version);
  return c;
};

describe('version-features', () => {
  it('dates the 0.9 types and knows everything older, unknown and x- types in every version', () => {
    expect(introducedIn('chat/isReadChanged')).toBe('0.9.0');
    expect(introducedIn('constructor')).toBeUndefined();
    expect(isActionKnownToVersion('chat/isReadChanged', '0.8.0')).toBe(false);
    expect(isActionKnownToVersion('chat/isReadChanged', '0.9.0')).toBe(true);
    expect(isActionKnownToVersion('chat/isArchivedChanged', '1.0.0')).toBe(true);
    expect(isActionKnownToVersion('chat/delta', '0.8.0')).toBe(true);
    expect(isActionKnownToVersion('x-session/toolApprovalRemembered', '0.8.0')).toBe(true);
    expect(knowsEveryAction('0.8.3')).toBe(false);
    expect(knowsEveryAction('0.9.0')).toBe(true);
    expect(supports('1.0.0', 'perChannelReconnect')).toBe(false);
    expect(supports('1.1.0', 'perChannelReconnect')).toBe(true);
    // One comparison for every feature: an unparseable or absent version has none.
    expect(supports('1.x', 'perChannelReconnect')).toBe(false);
    expect(supports(undefined, 'windowedDelivery')).toBe(false);
    expect(actionForVersion({ type: 'chat/isReadChanged', isRead: true }, '0.8.0')).toBe('resync');
  });

  it('the shared client reconnects at once after the resync close, without back-off', () => {
    const options = { initialDelayMs: 500, maxDelayMs: 10_000 };
    expect(reconnectDelay(RESYNC_CLOSE_CODE, 3, options, () => 0.5)).toBe(0);
    expect(reconnectDelay(1006, 3, options, () => 0.5)).toBeGreaterThan(0);
  });
});

describe('ChannelFanout by version', () => {
  it('closes a 0.8 subscriber with the resync code on a 0.9 action; 1.0 and unversioned share the frame', () => {
    const f = new ChannelFanout();
    const old = conn('old', '0.8.0');
    const v10 = conn('v10', '1.0.0');
    const inProcess = conn('in-process');
    for (const c of [old, v10, inProcess]) f.add(c, 0, 0);
    const first = env(1, { type: 'chat/activityChanged', activity: 'thinking' });
    f.publish(first, encodeEnvelope(first));
    expect(old.frames).toHaveLength(1);
    const read = env(2, { type: 'chat/isReadChanged', isRead: true });
    const text = encodeEnvelope(read);
    f.publish(read, text);
    expect(old.frames).toHaveLength(1);
    expect(old.closed?.code).toBe(RESYNC_CLOSE_CODE);
    expect(f.has(old)).toBe(false);
    expect(v10.frames[1]).toBe(text);
    expect(inProcess.frames[1]).toBe(text);
  });

  it('a coalescing 0.8 subscriber is resynced too, and gets nothing after its last known action', () => {
    const timers: Array<() => void> = [];
    const f = new ChannelFanout(undefined, (fn) => {
      timers.push(fn);
      return { cancel() {} };
    });
    const old = conn('old-coalescing', '0.8.0');
    f.add(old, 0, 0, 50);
    f.publish(env(1, { type: 'chat/isArchivedChanged', isArchived: true }), encodeEnvelope(env(1, { type: 'chat/isArchivedChanged', isArchived: true })));
    for (const t of timers) t();
    expect(old.frames).toEqual([]);
    expect(old.closed?.code).toBe(RESYNC_CLOSE_CODE);
  });

  it('the origin of a 0.9 action is not closed for its own echo', () => {
    const f = new ChannelFanout();
    const old = conn('old-origin', '0.8.0');
    f.add(old, 0, 0);
    const read = env(1, { type: 'chat/isReadChanged', isRead: true });
    f.publish(read, encodeEnvelope(read), old);
    expect(old.closed).toBeUndefined();
  });
});
