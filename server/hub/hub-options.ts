/**
 * What a hub is built from and reports to: its limits (with the defaults `npm start` uses), the
 * options the composition root passes, the metrics observer, and the client handle dispatches
 * come with. Apart from `hub.ts` so the facade holds behaviour only; `hub.ts` re-exports these.
 */
import type { ErrorKind } from '../../shared/protocol/error-kinds.js';
import type { AgentInfo } from '../agents/agent.js';
import type { Logger } from '../log.js';
import type { ActionLog } from '../storage/action-log.js';
import { DEFAULT_MAX_CHANNEL_JSON_CHARS, DEFAULT_MAX_TENANT_STATE_CHARS, DEFAULT_MAX_USER_STATE_CHARS } from './channel-budget.js';
import { LEDGER_LIMITS, type LedgerLimits } from './client-ledger.js';
import { DEFAULT_FANOUT_LIMITS, type FanoutLimits } from './fanout.js';
import { defaultMaxLoadStateChars } from './load-guard.js';

export interface HubLimits {
  readonly maxSessionsPerTenant: number;
  readonly maxChatsPerSession: number;
  readonly maxSubscriptionsPerConnection: number;
  /** Envelopes kept in memory for `reconnect` replay; older gaps get snapshots. */
  readonly replayBufferSize: number;
  /** …and at most this many characters of encoded envelopes, whichever bound is hit first. */
  readonly replayBufferChars: number;
  /** Largest encoded state (JSON characters) one chat or session may grow to. */
  readonly maxChannelJsonChars: number;
  /** Everything the sessions one user owns may hold together (JSON characters; channel-budget.ts). */
  readonly maxUserStateChars: number;
  /** Everything this tenant's sessions may hold together (JSON characters). */
  readonly maxTenantStateChars: number;
  /** A log holding more state than this is refused at start with a message saying what to do (load-guard.ts). */
  readonly maxLoadStateChars: number;
  /** A snapshot is written after this many records, so recovery replays at most that many. */
  readonly snapshotEvery: number;
  /**
   * Bytes the tenant's log and snapshots may take on disk (`ActionLog.storedBytes`; SQLite). Over
   * it, writes from clients are refused with `StorageQuotaExceeded`; agents can still end turns.
   */
  readonly maxTenantDiskBytes: number;
  readonly fanout: FanoutLimits;
  /** The duplicate ledger's bounds per principal (client-ledger.ts). */
  readonly ledger: LedgerLimits;
  /** Sessions unwatched and unused this long are parked out of memory (session-parking.ts); 0 = never. */
  readonly parkIdleMs: number;
}

/** Default per-tenant disk quota (`--tenant-disk-quota`). */
export const DEFAULT_TENANT_DISK_BYTES = 1024 * 1024 * 1024;

export const DEFAULT_HUB_LIMITS: HubLimits = {
  maxSessionsPerTenant: 10_000,
  maxChatsPerSession: 64,
  maxSubscriptionsPerConnection: 1_024,
  replayBufferSize: 20_000,
  replayBufferChars: 64 * 1024 * 1024,
  maxChannelJsonChars: DEFAULT_MAX_CHANNEL_JSON_CHARS,
  maxUserStateChars: DEFAULT_MAX_USER_STATE_CHARS,
  maxTenantStateChars: DEFAULT_MAX_TENANT_STATE_CHARS,
  maxLoadStateChars: defaultMaxLoadStateChars(),
  snapshotEvery: 5_000,
  maxTenantDiskBytes: DEFAULT_TENANT_DISK_BYTES,
  fanout: DEFAULT_FANOUT_LIMITS,
  ledger: LEDGER_LIMITS,
  parkIdleMs: 0,
};

export interface HubOptions {
  readonly log: ActionLog;
  readonly logger: Logger;
  /** Wall clock in ms; the only source of time. Reducers never read a clock. */
  readonly now: () => number;
  /** Fresh opaque ids (chat URIs, tool request ids). */
  readonly newId: () => string;
  readonly agents: readonly AgentInfo[];
  readonly defaultProvider: string;
  readonly limits?: Partial<HubLimits>;
  /** Where parked sessions' cache directory is made (session-parking.ts); default the system's temporary directory (`TMPDIR`). */
  readonly parkDir?: string | undefined;
  /** Told about rejections and reconnect answers (metrics); optional. */
  readonly observer?: HubObserver | undefined;
}

/** What the hub reports for metrics; counters only, called on the hot path. */
export interface HubObserver {
  /** A dispatch was echoed as a rejection, counted by its kind (shared/protocol/error-kinds.ts). */
  dispatchRejected(kind: ErrorKind): void;
  reconnectServed(kind: 'replay' | 'snapshot'): void;
  /** A quota on what a user or tenant holds refused something (`StateRefusal.kind`, `client_id_quota`). */
  quotaRefused?(quota: string): void;
}

/** A client that dispatches actions: the connection it speaks on and who it is. */
export type { ClientHandle } from './entry.js';
