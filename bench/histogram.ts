/**
 * A small log-linear latency histogram (µs, ≤0.8% relative error above 256 µs, exact below) that
 * can be shipped between threads as a plain Float64Array and merged. Keeps the exact max.
 */

const SUB = 128;
const LINEAR = 2 * SUB; // values below this are exact
const MAX_SHIFT = 32; // up to ~2^39 µs, far beyond any run
export const HISTOGRAM_BUCKETS = LINEAR + MAX_SHIFT * SUB;

export class Histogram {
  readonly counts: Float64Array;
  count = 0;
  max = 0;
  sum = 0;

  constructor(counts?: Float64Array) {
    this.counts = counts ?? new Float64Array(HISTOGRAM_BUCKETS);
  }

  /** Records one value in µs (negative values are clamped to 0). */
  record(us: number): void {
    const v = us > 0 ? Math.floor(us) : 0;
    this.counts[bucketOf(v)]! += 1;
    this.count++;
    this.sum += v;
    if (v > this.max) this.max = v;
  }

  merge(other: { counts: Float64Array; count: number; max: number; sum: number }): void {
    for (let i = 0; i < HISTOGRAM_BUCKETS; i++) this.counts[i]! += other.counts[i]!;
    this.count += other.count;
    this.sum += other.sum;
    if (other.max > this.max) this.max = other.max;
  }

  reset(): void {
    this.counts.fill(0);
    this.count = 0;
    this.max = 0;
    this.sum = 0;
  }

  /** The value (µs) at quantile q in [0, 1]; NaN when empty. */
  quantile(q: number): number {
    if (this.count === 0) return Number.NaN;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < HISTOGRAM_BUCKETS; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.min(this.max, bucketMid(i));
    }
    return this.max;
  }

  toJSON(): { count: number; max: number; sum: number; counts: number[] } {
    return { count: this.count, max: this.max, sum: this.sum, counts: Array.from(this.counts) };
  }
}

function bucketOf(v: number): number {
  if (v < LINEAR) return v;
  const shift = Math.min(MAX_SHIFT, Math.floor(Math.log2(v)) - 7);
  const idx = LINEAR + (shift - 1) * SUB + (Math.floor(v / 2 ** shift) - SUB);
  return Math.min(HISTOGRAM_BUCKETS - 1, idx);
}

function bucketMid(i: number): number {
  if (i < LINEAR) return i;
  const shift = Math.floor((i - LINEAR) / SUB) + 1;
  const mant = ((i - LINEAR) % SUB) + SUB;
  return (mant + 0.5) * 2 ** shift;
}
