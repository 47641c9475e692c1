/**
 * Per-channel coverage of the replay window (AHP 1.1 per-channel reconnect): a cursor is covered
 * exactly when every kept envelope of its channel after it is still in the window, and the
 * memory of trimmed channels stays bounded.
 */
import { describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { ReplayWindow } from '../../server/hub/replay-window.js';

const env = (channel: string, serverSeq: number): ActionEnvelope => ({ channel, serverSeq, action: { type: 'session/titleChanged', title: `t${serverSeq}` } });

describe('ReplayWindow per-channel coverage', () => {
  it('covers a quiet channel however much another channel wrote, and not a trimmed one', () => {
    const w = new ReplayWindow(8, 1_000_000);
    expect(w.coversChannel('a', 10, 10)).toBe(true);
    expect(w.coversChannel('a', 9, 10)).toBe(false);
    w.keep(env('a', 11));
    for (let seq = 12; seq < 200; seq++) w.keep(env('b', seq));
    expect(w.oldestSeq).toBeGreaterThan(11);
    // a's only envelope (11) was trimmed: cursors at or past it are covered, older ones not.
    expect(w.coversChannel('a', 11, 199)).toBe(true);
    expect(w.coversChannel('a', 10, 199)).toBe(false);
    // b was trimmed up to just before the oldest kept.
    expect(w.coversChannel('b', w.oldestSeq! - 1, 199)).toBe(true);
    expect(w.coversChannel('b', 100, 199)).toBe(false);
    // A channel never seen since the window began: covered from the window's start on.
    expect(w.coversChannel('c', 10, 199)).toBe(true);
    expect(w.coversChannel('c', 9, 199)).toBe(false);
    const each = w.sinceEach(new Map([['b', w.oldestSeq! + 2]]));
    expect(each.get('b')!.every((e) => e.serverSeq > w.oldestSeq! + 2)).toBe(true);
  });

  it('bounds the channels it remembers by raising a floor', () => {
    const w = new ReplayWindow(8, 1_000_000);
    for (let seq = 1; seq <= 5_000; seq++) w.keep(env(`ch-${seq}`, seq));
    // 1,024 remembered at most: the oldest trimmed channels fall under the floor.
    expect(w.coversChannel('ch-1', 1, 5_000)).toBe(false);
    expect(w.coversChannel('ch-4990', 4_990, 5_000)).toBe(true);
    expect(w.coversChannel('never', 100, 5_000)).toBe(false);
  });
});
