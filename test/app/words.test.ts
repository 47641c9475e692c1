/** The app's words for receipts, lost races, cut script titles, session ids and presence colours (issue 20). */
import { describe, expect, it } from 'vitest';
import { colorFor, displayTitle, PRESENCE_COLORS, receiptInWords, shortSessionId, wonRaceText } from '../../app/format.js';

/** WCAG relative luminance contrast of white text on a #rrggbb background. */
function contrastWithWhite(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05);
}

describe('words, not codes', () => {
  it('receipts say why an addition was not used, never the reason code', () => {
    expect(receiptInWords('cancelled', 'turn_cancelled')).toEqual({ badge: 'not used', why: 'the turn was stopped before the agent read it' });
    expect(receiptInWords('closed', 'turn_completed')).toEqual({ badge: 'not used', why: 'the turn finished before the agent read it' });
    expect(receiptInWords('consumed', undefined)).toEqual({ badge: 'read by the agent', why: undefined });
    expect(receiptInWords('accepted', undefined).badge).toBe('waiting for the agent');
    // An unknown code is left out rather than shown raw.
    expect(receiptInWords('closed', 'some_new_code').why).toBeUndefined();
  });

  it('the loser of a race reads who won and what they chose', () => {
    const by = { user: 'alice', surface: 'app', at: '2026-01-01T10:00:00.000Z' };
    expect(wonRaceText(by, false, undefined)).toBe('alice denied this first.');
    expect(wonRaceText({ ...by, user: 'bob' }, true, 'Allow once')).toBe('bob approved this first (Allow once).');
    expect(wonRaceText(undefined, true, undefined)).toBe('Someone else approved this first.');
  });

  it('a script title cut mid-JSON (the CLI keeps 80 characters) still reads as a title', () => {
    const script = JSON.stringify({ script: [{ say: 'Checking the "nightly" build' }, { sleep: 10 }, { say: 'done' }] });
    expect(displayTitle(script.slice(0, 50))).toBe('Script: Checking the "nightly" build');
    expect(displayTitle('{"script":[{"sleep":100},{"sle')).toBe('Demo-agent script');
  });

  it('chosen session ids are shown whole, generated UUIDs by their first 8 characters', () => {
    expect(shortSessionId('nightly-build-check-2026')).toBe('nightly-build-check-2026');
    expect(shortSessionId('5bba3a91-0c4e-4b7a-9a51-3c2d1e0f9a8b')).toBe('5bba3a91');
  });

  it('presence colours are distinct, stable, and dark enough for white text (≥ 4.5:1)', () => {
    expect(new Set(PRESENCE_COLORS).size).toBe(PRESENCE_COLORS.length);
    for (const c of PRESENCE_COLORS) expect(contrastWithWhite(c), c).toBeGreaterThanOrEqual(4.5);
    expect(colorFor('alice')).toBe(colorFor('alice'));
    expect(PRESENCE_COLORS).toContain(colorFor('dev-otter-1a2b'));
  });
});
