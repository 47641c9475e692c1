/**
 * What a connection's negotiated protocol version allows, for the AHP 1.1 wire additions
 * (per-channel reconnect, windowed delivery, the steering capability). Every 1.1 behaviour of the
 * hub asks here; a 1.0 (or 0.x) connection keeps the connection-wide reconnect and ordinary
 * delivery. Versions are the client's exact string as negotiated (`version.ts`).
 */
import { parseSemVer } from './version.js';

/** True when `version` (MAJOR.MINOR.PATCH) is at least `min`; an unparseable version is never. */
export function isAtLeast(version: string | undefined, min: string): boolean {
  const v = version === undefined ? undefined : parseSemVer(version);
  const m = parseSemVer(min);
  if (!v || !m) return false;
  return v.major !== m.major ? v.major > m.major : v.minor !== m.minor ? v.minor > m.minor : v.patch >= m.patch;
}

/** The first version with per-channel reconnect, windowed delivery and the steering capability. */
export const AHP_1_1 = '1.1.0';

/** Per-channel reconnect cursors and `ChannelRecovery` results. */
export const speaksChannelReconnect = (version: string | undefined): boolean => isAtLeast(version, AHP_1_1);
/** `flowControl` on subscribe, `channel/frame`, `channel/credit`, `channel/ready`, `channel/reset`, `channel/snapshot`. */
export const speaksWindowedDelivery = (version: string | undefined): boolean => isAtLeast(version, AHP_1_1);
/** `InitializeResult.steeringMessages`: the steering list is advertised as its own capability. */
export const advertisesSteeringList = (version: string | undefined): boolean => isAtLeast(version, AHP_1_1);
