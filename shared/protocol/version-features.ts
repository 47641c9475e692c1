/**
 * What a connection's negotiated protocol version knows: the one place the hub asks "may this
 * connection receive this action?" and "does this version have that feature?".
 *
 * AHP's rule (upstream `docs/specification/versioning.md`, "Backward Compatibility"): a host
 * never uses newer-version-only behaviour on a connection, and only sends action types known to
 * the negotiated version. Upstream keeps the same kind of table (`ACTION_INTRODUCED_IN` in
 * `types/version/registry.ts`); the entries below are the action types this hub sends whose
 * version is newer than the oldest one it negotiates (0.8.0). Every other standard type is
 * older than 0.8 (0.1–0.8 in upstream's table). `x-` types are this hub's implementation-defined
 * extensions: they only touch `_meta["hub/…"]`, no version knows them, and the protocol tells
 * every client to ignore an unrecognised type, so they go to every version alike.
 *
 * When a channel changes by an action a receiver's version does not know, the hub sends the
 * older action that says the same (`DOWNGRADES`), or, when there is none, has that receiver
 * fetch a fresh snapshot (`RESYNC_CLOSE_CODE`, then `reconnect` answers snapshots).
 */
import type { WireAction } from './messages.js';
import { compare, parseSemVer, type SemVer } from './version.js';

const parsed = new Map<string, SemVer | undefined>();
function semver(v: string): SemVer | undefined {
  let s = parsed.get(v);
  if (s === undefined && !parsed.has(v)) {
    s = parseSemVer(v);
    if (parsed.size < 64) parsed.set(v, s);
  }
  return s;
}

function cmp(a: string, b: string): number {
  const x = semver(a);
  const y = semver(b);
  if (!x || !y) return 0;
  return compare(x, y);
}

/** Action types newer than 0.8.0, with the version that introduced them. */
export const ACTION_INTRODUCED_IN: Readonly<Record<string, string>> = {
  // 0.9.0 (upstream's registry: chat read/archived flags, turn resume, chat order).
  'chat/isReadChanged': '0.9.0',
  'chat/isArchivedChanged': '0.9.0',
  'chat/turnResume': '0.9.0',
  'session/chatsReordered': '0.9.0',
  // 0.9.0 (this hub's version history, shared/protocol/version.ts): the steering-message list.
  'chat/steeringMessageSet': '0.9.0',
  'chat/steeringMessageRemoved': '0.9.0',
};

const INTRODUCED = new Map(Object.entries(ACTION_INTRODUCED_IN));

/** The version that introduced `type`, when it is newer than 0.8.0; undefined otherwise. */
export function introducedIn(type: string): string | undefined {
  return INTRODUCED.get(type);
}

/** Features gated by version: the AHP 1.1 wire additions (speaksChannelReconnect and the others below ask here). */
export const FEATURE_INTRODUCED_IN = {
  /** `reconnect { subscriptions: [{channel, lastSeenServerSeq}] }`, one recovery per channel. */
  perChannelReconnect: '1.1.0',
  /** Credit windows, `channel/frame`, `channel/credit`, `channel/ready`, `channel/reset`, `channel/snapshot`. */
  windowedDelivery: '1.1.0',
  /** The 1.1 steering message list and session artifacts. */
  steeringList: '1.1.0',
  artifacts: '1.1.0',
} as const;
export type VersionFeature = keyof typeof FEATURE_INTRODUCED_IN;

/**
 * The newest version any entry above names: a connection at or above it knows every action the
 * hub sends, so the fan-out skips every check for it (the common path).
 */
export const NEWEST_ACTION_VERSION: string = Object.values(ACTION_INTRODUCED_IN).reduce((a, b) => (cmp(a, b) >= 0 ? a : b), '0.8.0');

/** True when `type` exists in `version` (unknown and `x-` types: true, see above). */
export function isActionKnownToVersion(type: string, version: string): boolean {
  const introduced = INTRODUCED.get(type);
  return introduced === undefined || cmp(introduced, version) <= 0;
}

/** True when a connection at `version` knows every action type the hub sends. */
export function knowsEveryAction(version: string): boolean {
  return cmp(version, NEWEST_ACTION_VERSION) >= 0;
}

/** True when `version` has `feature`; an unparseable or absent version has none (the one comparison for features: `isAtLeast`). */
export function supports(version: string | undefined, feature: VersionFeature): boolean {
  return isAtLeast(version, FEATURE_INTRODUCED_IN[feature]);
}

/**
 * Older actions that express the same change as a newer one, for a receiver whose version does
 * not know the newer type. None of the 0.9 types above has one (a 0.8 chat has no action that
 * sets its read or archived flag, resumes a turn or lists steering messages), so those receivers
 * resync; an entry returns undefined where it cannot say the same for that version.
 */
export const DOWNGRADES: Readonly<Record<string, (action: WireAction, version: string) => WireAction | undefined>> = {};

/** What a receiver at `version` gets for `action`: the action, an older equivalent, or 'resync'. */
export function actionForVersion(action: WireAction, version: string): WireAction | 'resync' {
  if (isActionKnownToVersion(action.type, version)) return action;
  return DOWNGRADES[action.type]?.(action, version) ?? 'resync';
}

export { RESYNC_CLOSE_CODE } from './close-codes.js';

/** True when `version` (MAJOR.MINOR.PATCH) is at least `min`; an unparseable or absent version never is. */
export function isAtLeast(version: string | undefined, min: string): boolean {
  const v = version === undefined ? undefined : semver(version);
  const m = semver(min);
  if (!v || !m) return false;
  return compare(v, m) >= 0;
}

/** The first version with per-channel reconnect, windowed delivery and the steering capability. */
export const AHP_1_1 = '1.1.0';

/** Per-channel reconnect cursors and `ChannelRecovery` results. */
export const speaksChannelReconnect = (version: string | undefined): boolean => supports(version, 'perChannelReconnect');
/** `flowControl` on subscribe, `channel/frame`, `channel/credit`, `channel/ready`, `channel/reset`, `channel/snapshot`. */
export const speaksWindowedDelivery = (version: string | undefined): boolean => supports(version, 'windowedDelivery');
/** `InitializeResult.steeringMessages`: the steering list is advertised as its own capability. */
export const advertisesSteeringList = (version: string | undefined): boolean => supports(version, 'steeringList');
