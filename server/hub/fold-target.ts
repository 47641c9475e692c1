/**
 * Cluster mode: what the write gate (write-gate.ts) and the fold while waiting for the turn
 * (turn-wait-fold.ts) need of the hub to apply records other processes appended. Its own module
 * so neither of the two imports the other for it.
 */
import type { LogRecord } from '../storage/action-log.js';

export interface FoldTarget {
  /** Last serverSeq applied in memory. */
  readonly serverSeq: number;
  /** True while records sequenced locally are not yet appended. */
  hasPendingRecords(): boolean;
  /** Why a batch whose append failed is still in doubt (see commit-pipeline.ts), else undefined. */
  readonly inDoubt: string | undefined;
  /** Applies records another process appended, in order, and delivers them to local subscribers. */
  foldRemote(records: readonly LogRecord[]): void;
  /** The log failed in a way this process cannot recover from. */
  fail(error: unknown): void;
}
