/** Seed 003 items 53/54: the headless stdin framer. */
import { describe, expect, it } from 'vitest';
import { LineFramer, MAX_LINE_UNITS, type FramerEvent } from '../../cli/line-framer.js';

const lines = (events: FramerEvent[]) => events.map((e) => (e.kind === 'line' ? e.line : `<oversized ${e.length}>`));

describe('LineFramer', () => {
  it('53: reassembles UTF-8 sequences split across reads (every split point)', () => {
    const text = '{"text":"追加要求 😀 ü"}\n';
    const bytes = Buffer.from(text, 'utf8');
    for (let cut = 1; cut < bytes.length; cut++) {
      const f = new LineFramer();
      const out = [...f.push(bytes.subarray(0, cut)), ...f.push(bytes.subarray(cut)), ...f.end()];
      expect(lines(out)).toEqual(['{"text":"追加要求 😀 ü"}']);
    }
    // One byte at a time.
    const f = new LineFramer();
    const out: FramerEvent[] = [];
    for (const b of bytes) out.push(...f.push(Buffer.from([b])));
    expect(lines([...out, ...f.end()])).toEqual(['{"text":"追加要求 😀 ü"}']);
  });

  it('53: LF and CRLF both end a line, also when CR and LF arrive in different reads', () => {
    const f = new LineFramer();
    const out = [...f.push(Buffer.from('a\r\nb\nc\r')), ...f.push(Buffer.from('\nd')), ...f.end()];
    expect(lines(out)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('53: a last line without a newline is delivered at EOF; blank lines are skipped', () => {
    const f = new LineFramer();
    expect(lines(f.push(Buffer.from('\n\r\n  \nfirst\nlast')))).toEqual(['first']);
    expect(lines(f.end())).toEqual(['last']);
  });

  it('54: the limit is 65,536 UTF-16 code units, not bytes', () => {
    expect(MAX_LINE_UNITS).toBe(65_536);
    // 32,768 emoji = 65,536 UTF-16 units = 131,072 bytes: accepted.
    const atLimit = '😀'.repeat(32_768);
    const f = new LineFramer();
    expect(f.push(Buffer.from(atLimit + '\r\n', 'utf8'))).toEqual([{ kind: 'line', line: atLimit }]);
    // One unit more: refused explicitly.
    expect(f.push(Buffer.from(atLimit + 'x\n', 'utf8'))).toEqual([{ kind: 'oversized', length: 65_537 }]);
    // 65,536 ASCII chars are fine; multi-byte text under the unit limit is fine although over 65,536 bytes.
    expect(lines(f.push('é'.repeat(40_000) + '\n'))).toEqual(['é'.repeat(40_000)]);
  });

  it('54: an oversized line is reported once, discarded without buffering, and the next line parses', () => {
    const f = new LineFramer(10);
    const out = [...f.push('0123456789'), ...f.push('abcdef'), ...f.push('ghij\nok\n')];
    expect(out).toEqual([
      { kind: 'oversized', length: 20 },
      { kind: 'line', line: 'ok' },
    ]);
    // Oversized final line without newline is reported at EOF.
    const g = new LineFramer(4);
    expect([...g.push('abcdefgh'), ...g.end()]).toEqual([{ kind: 'oversized', length: 8 }]);
  });
});
