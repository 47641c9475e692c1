/**
 * The commit pipeline's seams: who receives what it delivers (`Receivers`), where its records are
 * appended (`Appender`), what it is built from (`CommitPipelineOptions`), and the record
 * comparison an appender uses to tell whether a batch in doubt is already in the log. Kept apart
 * from `commit-pipeline.ts` so that module holds only sequencing, group commit and delivery.
 */
import type { AppendResult, ActionLog, LogRecord } from '../storage/action-log.js';
import type { Logger } from '../log.js';
import type { Connection } from './connection.js';
import type { ChannelFanout, FanoutLimits } from './fanout.js';
import type { ReplayWindow } from './replay-window.js';

/** Who receives what the pipeline delivers (implemented by `Subscriptions`). */
export interface Receivers {
  fanoutOf(channel: string): ChannelFanout | undefined;
  rootSubscribersOf(tenant: string): ReadonlySet<Connection> | undefined;
}

/** Where records are appended: the log itself, or the cluster's write gate in front of it. */
export interface Appender {
  append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult>;
  /**
   * After `append` failed: appends the same batch at the same head again, or finds it already
   * there. Resolves true when the log holds the batch, false when it holds other records at those
   * positions; throws while the log is still unreachable. Without it, the log is asked directly.
   */
  retry?(expectedHead: number, records: readonly LogRecord[]): Promise<boolean>;
}

export interface CommitPipelineOptions {
  readonly log: ActionLog;
  readonly logger: Logger;
  /** The in-memory state every sequenced record is applied to, at once. */
  readonly state: { applyRecord(record: LogRecord): void };
  readonly receivers: Receivers;
  /** Gets every envelope as it is delivered (reconnect replay, duplicate echoes). */
  readonly replay: ReplayWindow;
  readonly fanoutLimits: FanoutLimits;
  /** A snapshot is written after this many records. */
  readonly snapshotEvery: number;
  /** Records kept in the log behind a snapshot (the replay window's worth). */
  readonly keepBehindSnapshot: number;
  /** The image a snapshot stores (everything recovery needs besides the log). */
  readonly snapshotImage: () => unknown;
  /** The last serverSeq already in the log (recovered): sequencing continues after it. */
  readonly headSeq: number;
  /** A batch in doubt was abandoned (the log holds other records there): memory is not the log's. */
  readonly onAppendFailed: (err: unknown) => void;
}

/** True when the log's records are exactly `records` (same positions, channels, actions, origins). */
export function sameRecords(stored: readonly LogRecord[], records: readonly LogRecord[]): boolean {
  if (stored.length !== records.length) return false;
  return records.every((r, i) => {
    const s = stored[i]!;
    return s.serverSeq === r.serverSeq && s.channel === r.channel && JSON.stringify(s.action) === JSON.stringify(r.action) && JSON.stringify(s.origin ?? null) === JSON.stringify(r.origin ?? null);
  });
}

/** `Appender.retry` on a log with one writer (SQLite, memory): append again, or find the batch already there. */
export async function retryOnSoleLog(log: ActionLog, expectedHead: number, records: readonly LogRecord[]): Promise<boolean> {
  const result = await log.append(expectedHead, records);
  if (result.ok) return true;
  return sameRecords(await log.read(expectedHead, records.length), records);
}

/** True when the log's head shows that nothing was appended at `expectedHead` (false when it cannot be read). */
export async function logLacksBatch(log: ActionLog, expectedHead: number): Promise<boolean> {
  try {
    return (await log.head()) === expectedHead;
  } catch {
    return false;
  }
}
