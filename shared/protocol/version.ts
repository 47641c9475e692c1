/**
 * Protocol versions this hub speaks.
 * History:
 * - 0.8.0: upstream main 2026-08-04 (the conformance fixtures' tree); input requests as response parts.
 * - 0.9.0: idempotent chat/turnStarted, steering-message list, error response parts (additive).
 * - 1.0.0: first stable line; same wire shapes as 0.9.0 for everything this hub implements.
 * - 1.1.0: upstream main, negotiated inside ^1.0.0 (per-channel reconnect and the other 1.1
 *   additions are gated by `supports(version, feature)` in version-features.ts).
 *
 * Which action types each version knows, and what the hub sends a connection of an older
 * version instead, is `version-features.ts`.
 *
 * SUPPORTED_VERSIONS are compatibility baselines, not an exhaustive list: a client offering any
 * version caret-compatible with one of them (1.x.y ≥ 1.0.0, 0.9.y, 0.8.y) is accepted, and the
 * hub answers with the client's own string. Upstream's released baselines are 1.0.0 and 0.9.0;
 * 0.8 is kept because the hub can serve it faithfully: it never sends a 0.8 connection an action
 * 0.8 does not know (version-features.ts, docs/protocol.md#versions).
 */
export const PROTOCOL_VERSION = '1.0.0';
export const SUPPORTED_VERSIONS = ['1.0.0', '0.9.0', '0.8.0'] as const;

export interface SemVer {
  major: number;
  minor: number;
  patch: number;
}

/** MAJOR.MINOR.PATCH, non-negative integers without leading zeros; no pre-release or build part. */
export function parseSemVer(v: string): SemVer | undefined {
  const m = /^(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})$/.exec(v);
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) };
}

export function compare(a: SemVer, b: SemVer): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** Caret compatibility: 0.x needs the same minor, >=1 the same major, and not older than the baseline. */
function caretCompatible(offered: SemVer, baseline: SemVer): boolean {
  if (compare(offered, baseline) < 0) return false;
  if (baseline.major === 0) return offered.major === 0 && offered.minor === baseline.minor;
  return offered.major === baseline.major;
}

const BASELINES = SUPPORTED_VERSIONS.map((v) => parseSemVer(v)).filter((v): v is SemVer => v !== undefined);

/**
 * Picks the highest offered version (by SemVer, whatever the offer order) that is caret-compatible
 * with one of our baselines, and returns that exact offered string: the server answers with one
 * of the client's `protocolVersions`, never a string the client did not send. Malformed entries
 * are never chosen. Returns undefined when nothing fits: the caller answers -32005 with
 * SUPPORTED_VERSIONS.
 */
export function negotiateVersion(offered: readonly string[]): string | undefined {
  let best: { version: SemVer; offered: string } | undefined;
  for (const o of offered) {
    const ov = parseSemVer(o);
    if (!ov || !BASELINES.some((b) => caretCompatible(ov, b))) continue;
    if (!best || compare(ov, best.version) > 0) best = { version: ov, offered: o };
  }
  return best?.offered;
}
