/**
 * The framing and credit rules of AHP 1.1 windowed delivery (server/hub/windowed-delivery.ts),
 * against an in-memory connection: fragments never exceed the frame size nor the credit, never
 * split a surrogate pair, reassemble to the message, and two subscriptions interleave.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_FANOUT_LIMITS } from '../../server/hub/fanout.js';
import { unsentOf } from '../../server/hub/lag-queue.js';
import { grantLimits, WindowedLink } from '../../server/hub/windowed-delivery.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { waitFor } from '../helpers/wait-for.js';

interface Frame {
  channel: string;
  data: string;
  final: boolean;
}

function frames(conn: FakeConnection): Frame[] {
  return conn
    .messages()
    .filter((m) => m['method'] === 'channel/frame')
    .map((m) => m['params'] as Frame);
}

const limits = { windowBytes: 64, maximumFrameBytes: 16, maximumMessageBytes: 4096 };

describe('windowed delivery', () => {
  it('interleaves two subscriptions fragment by fragment and stops each at zero credit', async () => {
    const conn = new FakeConnection('c1');
    const link = new WindowedLink(conn, DEFAULT_FANOUT_LIMITS, () => {});
    const a = link.open('ahp-session:/a', limits);
    const b = link.open('ahp-session:/b', limits);
    a.send(JSON.stringify({ jsonrpc: '2.0', method: 'action', params: { text: 'a'.repeat(100) } }));
    b.send(JSON.stringify({ jsonrpc: '2.0', method: 'action', params: { text: 'b'.repeat(100) } }));
    a.start();
    b.start();
    await waitFor(() => (a.sentBytes === 64 && b.sentBytes === 64 ? true : undefined), { what: 'both windows used up' });
    const sent = frames(conn);
    // 16-byte frames = 8 code units; 64 bytes of credit = 4 frames each, alternating a, b, a, b…
    expect(sent.map((f) => f.channel.slice(-1)).join('')).toBe('abababab');
    expect(sent.every((f) => f.data.length === 8 && !f.final)).toBe(true);
    expect(conn.messages().filter((m) => m['method'] === 'channel/ready')).toHaveLength(2);
    // Credit for a only: only a moves.
    a.credit(64);
    await waitFor(() => (a.sentBytes === 128 ? true : undefined), { what: 'a resumed' });
    expect(b.sentBytes).toBe(64);
    expect(() => b.credit(65)).toThrow(/past the 64 bytes sent/);
    for (let consumed = 64; !frames(conn).some((f) => f.channel.endsWith('b') && f.final); ) {
      consumed = b.sentBytes;
      b.credit(consumed);
      await waitFor(() => (b.sentBytes > consumed || frames(conn).some((f) => f.channel.endsWith('b') && f.final) ? true : undefined), { what: 'b progressed' });
    }
    const whole = frames(conn)
      .filter((f) => f.channel.endsWith('b'))
      .map((f) => f.data)
      .join('');
    expect(JSON.parse(whole)).toEqual({ jsonrpc: '2.0', method: 'action', params: { text: 'b'.repeat(100) } });
  });

  it('never ends a fragment inside a surrogate pair', async () => {
    const conn = new FakeConnection('c2');
    const link = new WindowedLink(conn, DEFAULT_FANOUT_LIMITS, () => {});
    const r = link.open('ahp-session:/u', { windowBytes: 4096, maximumFrameBytes: 16, maximumMessageBytes: 4096 });
    const text = JSON.stringify({ t: `A\u00e9${'\u{1F600}'.repeat(20)}` });
    r.send(text);
    r.start();
    await waitFor(() => (frames(conn).some((f) => f.final) ? true : undefined), { what: 'final frame' });
    const fs = frames(conn);
    for (const f of fs) {
      const last = f.data.charCodeAt(f.data.length - 1);
      expect(last >= 0xd800 && last <= 0xdbff, `fragment ends in a high surrogate: ${JSON.stringify(f.data)}`).toBe(false);
    }
    expect(fs.map((f) => f.data).join('')).toBe(text);
  });

  it('resets a subscription whose message is over the client limit', async () => {
    const conn = new FakeConnection('c3');
    let ended = '';
    const link = new WindowedLink(conn, DEFAULT_FANOUT_LIMITS, (_r, reason) => (ended = reason));
    const r = link.open('ahp-session:/big', { windowBytes: 64, maximumFrameBytes: 16, maximumMessageBytes: 40 });
    r.start();
    r.send('x'.repeat(21));
    await waitFor(() => (ended ? true : undefined), { what: 'reset' });
    expect(ended).toBe('messageTooLarge');
    expect(conn.messages().find((m) => m['method'] === 'channel/reset')?.['params']).toEqual({ channel: 'ahp-session:/big', reason: 'messageTooLarge' });
    expect(link.receivers.size).toBe(0);
  });

  it('bounds what all windows of a connection hold together, and counts it as its unsent data', async () => {
    const conn = new FakeConnection('c4');
    const resets: string[] = [];
    const link = new WindowedLink(conn, { ...DEFAULT_FANOUT_LIMITS, maxBufferedBytes: 100 }, (r, reason) => resets.push(`${r.channel} ${reason}`));
    const a = link.open('ahp-session:/a', limits);
    const b = link.open('ahp-session:/b', limits);
    a.send('x'.repeat(60));
    expect(unsentOf(conn)).toBe(60);
    b.send('y'.repeat(60));
    await waitFor(() => (resets.length > 0 ? true : undefined), { what: 'an overflow reset' });
    expect(resets).toEqual(['ahp-session:/b overflow']);
    expect(unsentOf(conn)).toBe(60);
    a.start();
    await waitFor(() => (a.sentBytes === 64 ? true : undefined), { what: 'a sent its window' });
    a.credit(64);
    await waitFor(() => (frames(conn).some((f) => f.final) ? true : undefined), { what: 'a finished' });
    expect(unsentOf(conn)).toBe(0);
  });

  it('never grants more than asked, and refuses windows too small to carry a code unit run', () => {
    expect(grantLimits({ windowBytes: 1000, maximumFrameBytes: 5000, maximumMessageBytes: 10 })).toEqual({ windowBytes: 1000, maximumFrameBytes: 1000, maximumMessageBytes: 10 });
    expect(() => grantLimits({ windowBytes: 8, maximumFrameBytes: 8, maximumMessageBytes: 8 })).toThrow(/at least 16/);
  });
});
