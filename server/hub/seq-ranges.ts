/**
 * Sets of clientSeqs as sorted, disjoint, non-adjacent inclusive ranges, flattened
 * `[from0, to0, from1, to1, …]`: the duplicate ledger's record of the accepted clientSeqs it no
 * longer holds exactly (client-ledger.ts). Clients number their actions upwards, so a client's
 * accepted seqs are a few ranges, and a seq that was refused (never applied) stays a gap between
 * them instead of being swallowed by a floor (issue 33.5g).
 */

/** Index of the first range whose `from` is above `seq` (ranges are sorted by `from`). */
function firstAbove(ranges: readonly number[], seq: number): number {
  let lo = 0;
  let hi = ranges.length / 2;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid * 2]! > seq) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

export function rangesHave(ranges: readonly number[], seq: number): boolean {
  const i = firstAbove(ranges, seq);
  return i > 0 && seq <= ranges[(i - 1) * 2 + 1]!;
}

export function rangesAdd(ranges: number[], seq: number): void {
  const i = firstAbove(ranges, seq);
  const prevTo = i > 0 ? ranges[(i - 1) * 2 + 1]! : undefined;
  const nextFrom = i * 2 < ranges.length ? ranges[i * 2]! : undefined;
  if (prevTo !== undefined && seq <= prevTo) return;
  const joinsPrev = prevTo !== undefined && seq === prevTo + 1;
  const joinsNext = nextFrom !== undefined && seq === nextFrom - 1;
  if (joinsPrev && joinsNext)
    ranges.splice((i - 1) * 2 + 1, 2); // [a, seq-1] + [seq+1, b] → [a, b]
  else if (joinsPrev) ranges[(i - 1) * 2 + 1] = seq;
  else if (joinsNext) ranges[i * 2] = seq;
  else ranges.splice(i * 2, 0, seq, seq);
}

/**
 * Keeps at most `max` ranges by joining the lowest two (the gap between them then counts as in
 * the set: decided, never applied again — the safe side for a duplicate ledger).
 */
export function rangesBound(ranges: number[], max: number): void {
  while (ranges.length > max * 2) ranges.splice(1, 2);
}
