/**
 * A lagging receiver's merged delta is counted against the slow-consumer bound at exactly its
 * encoded size, although the queue no longer encodes the whole merged text on every merge.
 */
import { describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import type { Connection } from '../../server/hub/connection.js';
import { encodeEnvelope, mergeStreamingEnvelopes } from '../../server/hub/envelope-text.js';
import { sendOrQueue } from '../../server/hub/lag-queue.js';

const LAG = 1_000;
/** Texts that JSON escapes (quotes, backslashes, newlines, control characters) and astral characters. */
const PARTS = ['plain ', 'a "quoted" word', ' back\\slash\n', '\u0001ctl\t', ' 😀 emoji ', 'ü-umlaut'];

function envelope(seq: number, content: string): ActionEnvelope {
  return { channel: 'ahp-chat:/s/c', serverSeq: seq, action: { type: 'chat/delta', turnId: 't1', partId: 'p1', content } };
}

function lagging(): Connection & { closed: number[] } {
  const closed: number[] = [];
  // Always more unsent than the lag threshold: every frame is queued, none is sent.
  return { id: 'slow', closed, bufferedAmount: LAG + 1, isOpen: true, send: () => {}, close: (code) => void closed.push(code) };
}

/** Pushes the deltas into a lagging connection whose bound leaves `room` characters for the queue. */
function run(room: number): number[] {
  const conn = lagging();
  const limits = { maxBufferedBytes: conn.bufferedAmount + room, lagBytes: LAG };
  PARTS.forEach((part, i) => {
    const e = envelope(i + 1, part);
    sendOrQueue(conn, encodeEnvelope(e), limits, encodeEnvelope, mergeStreamingEnvelopes, e);
  });
  return conn.closed;
}

describe('lag queue', () => {
  it('counts the merged delta at exactly its encoded length', () => {
    const whole = encodeEnvelope(envelope(PARTS.length, PARTS.join(''))).length;
    // The same envelope the merges build, encoded whole.
    let merged = envelope(1, PARTS[0]!);
    for (let i = 1; i < PARTS.length; i++) merged = mergeStreamingEnvelopes(merged, envelope(i + 1, PARTS[i]!))!;
    expect(encodeEnvelope(merged).length).toBe(whole);
    expect(run(whole)).toEqual([]);
    expect(run(whole - 1)).toEqual([4008]);
  });
});
