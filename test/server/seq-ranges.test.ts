import { describe, expect, it } from 'vitest';
import { rangesAdd, rangesBound, rangesHave } from '../../server/hub/seq-ranges.js';

describe('clientSeq ranges (issue 33.5g)', () => {
  it('adds seqs in any order, merging neighbours, and leaves gaps as gaps', () => {
    const r: number[] = [];
    for (const seq of [5, 1, 3, 2, 7, 4, 9, 4]) rangesAdd(r, seq);
    expect(r).toEqual([1, 5, 7, 7, 9, 9]);
    expect([0, 1, 5, 6, 7, 8, 9, 10].map((s) => rangesHave(r, s))).toEqual([false, true, true, false, true, false, true, false]);
    rangesAdd(r, 8);
    expect(r).toEqual([1, 5, 7, 9]);
  });

  it('past the bound joins the lowest ranges (their gap then counts as decided), keeping the newest apart', () => {
    const r: number[] = [];
    for (const seq of [1, 3, 5, 7]) rangesAdd(r, seq);
    rangesBound(r, 2);
    expect(r).toEqual([1, 5, 7, 7]);
    expect(rangesHave(r, 2)).toBe(true);
    expect(rangesHave(r, 6)).toBe(false);
  });
});
