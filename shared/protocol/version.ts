/**
 * Protocol versions this hub speaks.
 * History:
 * - 0.8.0: upstream main 2026-08-04 (the conformance fixtures' tree); input requests as response parts.
 * - 0.9.0: idempotent chat/turnStarted, steering-message list, error response parts (additive).
 * - 1.0.0: first stable line; same wire shapes as 0.9.0 for everything this hub implements.
 */
export const PROTOCOL_VERSION = '1.0.0';
export const SUPPORTED_VERSIONS = ['1.0.0', '0.9.0', '0.8.0'] as const;

interface SemVer { major: number; minor: number; patch: number }

function parseSemVer(v: string): SemVer | undefined {
  const m = /^(\d{1,6})\.(\d{1,6})\.(\d{1,6})$/.exec(v);
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) };
}

function compare(a: SemVer, b: SemVer): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** Caret compatibility: 0.x needs the same minor, >=1 the same major, and not older than the baseline. */
function caretCompatible(offered: SemVer, baseline: SemVer): boolean {
  if (compare(offered, baseline) < 0) return false;
  if (baseline.major === 0) return offered.major === 0 && offered.minor === baseline.minor;
  return offered.major === baseline.major;
}

/**
 * Picks the highest offered version that is caret-compatible with one of ours, and answers with
 * our own baseline string for it (the server never claims a version it has not implemented).
 * Returns undefined when nothing fits: the caller answers -32005 with SUPPORTED_VERSIONS.
 */
export function negotiateVersion(offered: readonly string[]): string | undefined {
  let best: { offered: SemVer; ours: string } | undefined;
  for (const o of offered) {
    const ov = parseSemVer(o);
    if (!ov) continue;
    for (const ours of SUPPORTED_VERSIONS) {
      const bv = parseSemVer(ours);
      if (bv && caretCompatible(ov, bv) && (!best || compare(ov, best.offered) > 0)) {
        best = { offered: ov, ours };
      }
    }
  }
  return best?.ours;
}
