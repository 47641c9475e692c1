/**
 * One clock for every thread and process of the bench: `process.hrtime()` reads CLOCK_MONOTONIC,
 * which is shared by all threads and processes of the machine, so a timestamp taken by the
 * producer (main thread) can be compared with a receive time taken in a subscriber worker.
 *
 * Each update's text carries `@T<µs>;` markers. Coalesced deltas concatenate their contents, so a
 * merged frame still carries every original timestamp; receivers scan for all of them.
 */

export function nowUs(): number {
  const [s, ns] = process.hrtime();
  return s * 1e6 + ns / 1e3;
}

export const MARK_PREFIX = '@T';

/** Delta text: a few words of filler plus the send timestamp (whole µs). */
export function stampedText(sentUs: number, filler: string): string {
  return `${filler}${MARK_PREFIX}${Math.floor(sentUs)}; `;
}

/** Calls `onStamp` for every `@T<digits>;` marker in a string. */
export function scanString(text: string, onStamp: (sentUs: number) => void): number {
  let found = 0;
  let i = text.indexOf(MARK_PREFIX);
  while (i >= 0) {
    let j = i + 2;
    let v = 0;
    for (;;) {
      const c = text.charCodeAt(j);
      if (c < 48 || c > 57) break;
      v = v * 10 + (c - 48);
      j++;
    }
    if (j > i + 2 && text.charCodeAt(j) === 59 /* ; */) {
      onStamp(v);
      found++;
    }
    i = text.indexOf(MARK_PREFIX, j);
  }
  return found;
}

const AT = 64; // '@'
const T = 84; // 'T'

/** Same as scanString over raw bytes (Yjs updates carry inserted strings as UTF-8). */
export function scanBytes(buf: Uint8Array, onStamp: (sentUs: number) => void): number {
  let found = 0;
  const n = buf.length;
  let i = buf.indexOf(AT);
  while (i >= 0 && i < n - 2) {
    if (buf[i + 1] !== T) {
      i = buf.indexOf(AT, i + 1);
      continue;
    }
    let j = i + 2;
    let v = 0;
    while (j < n) {
      const c = buf[j]!;
      if (c < 48 || c > 57) break;
      v = v * 10 + (c - 48);
      j++;
    }
    if (j > i + 2 && j < n && buf[j] === 59) {
      onStamp(v);
      found++;
    }
    i = buf.indexOf(AT, j);
  }
  return found;
}
