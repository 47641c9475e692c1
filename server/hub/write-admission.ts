/**
 * Whether the hub takes a write right now, checked where every write starts (`enter`): open,
 * writable (no batch in doubt, memory still the log's), under the tenant's disk quota, and — in
 * cluster mode — holding the write turn. Every write the door (`door.ts`) lets in enters through
 * here, so the refusals and their kinds are written once.
 */
import { ProtocolError } from '../../shared/protocol/errors.js';
import type { ActionLog, LogRecord, SharedActionLog } from '../storage/action-log.js';
import { errorMessage, type Logger } from '../log.js';
import { STORAGE_UNAVAILABLE_REASON, type CommitPipeline } from './commit-pipeline.js';
import { WriteGate } from './write-gate.js';

/** How every `StorageQuotaExceeded` refusal begins (rejection echoes have no code field). */
export const STORAGE_QUOTA_REASON = 'storage quota exceeded';
/** How long a disk-usage measurement is reused before the next decision measures again. */
const DISK_USAGE_TTL_MS = 100;

/** What admission reads of the hub. */
export interface AdmissionHost {
  /** The pipeline's problem (a batch in doubt), if any. */
  readonly pipelineProblem: string | undefined;
  /** The hub's whole storage problem (pipeline, gate, failure). */
  readonly storageProblem: string | undefined;
  readonly gate: WriteGate | undefined;
  readonly failed: Error | undefined;
  readonly closed: boolean;
}

export class WriteAdmission {
  /** The last disk-usage measurement and when it was taken (see `quotaRefusal`). */
  #diskUsage = { bytes: 0, at: Number.NEGATIVE_INFINITY };

  constructor(
    /** Read at every check (the gate is set after the hub is built). */
    private readonly hostNow: () => AdmissionHost,
    private readonly log: ActionLog,
    private readonly now: () => number,
    private readonly maxTenantDiskBytes: number,
  ) {}

  /**
   * Where every decision that writes starts: open, writable, then (cluster) the write turn.
   * Refuses a write now (closed, storage away) or, in cluster mode, returns the write turn to
   * await. On one node it returns undefined and the caller decides without awaiting anything:
   * `await undefined` would still defer the decision by a microtask, and the hub's rule is that
   * a dispatch is decided synchronously within the call (AGENTS.md).
   */
  enter(): Promise<void> | undefined {
    this.assertOpen();
    this.assertWritable();
    if (!this.hostNow().gate) return undefined;
    // The log may have failed while this call waited for the turn.
    return this.writeTurn().then(() => this.assertWritable());
  }

  /** Cluster mode: waits for the write turn; a log that cannot be reached is a clear error. */
  async writeTurn(): Promise<void> {
    try {
      await this.hostNow().gate!.turn();
    } catch (err) {
      throw new ProtocolError(this.hostNow().closed ? 'internal_error' : 'storage_unavailable', errorMessage(err));
    }
  }

  /** Why a write would be refused now (a `StorageUnavailable` reason), or undefined. */
  writeRefusal(): string | undefined {
    // Not the gate's last failure: taking the turn finds out whether the log is back.
    const problem = this.hostNow().pipelineProblem ?? (this.hostNow().failed ? this.hostNow().storageProblem : undefined);
    return problem === undefined ? undefined : `${STORAGE_UNAVAILABLE_REASON}: ${problem}`;
  }

  assertWritable(): void {
    const refusal = this.writeRefusal();
    if (refusal !== undefined) throw new ProtocolError('storage_unavailable', refusal);
  }

  /**
   * While a batch is in doubt memory holds records the log may never take: a snapshot now could
   * show them, so reads that answer with state are refused exactly when writes are.
   */
  assertReadable(): void {
    this.assertWritable();
  }

  /**
   * Why a client's write would be refused for the tenant's disk quota, or undefined. Measured at
   * most every DISK_USAGE_TTL_MS, so a burst may overshoot by what it writes in that time.
   */
  quotaRefusal(): string | undefined {
    if (!this.log.storedBytes) return undefined;
    const now = this.now();
    if (now - this.#diskUsage.at >= DISK_USAGE_TTL_MS) {
      try {
        this.#diskUsage = { bytes: this.log.storedBytes(), at: now };
      } catch {
        return undefined; // the log is failing: the append will say so
      }
    }
    const { bytes } = this.#diskUsage;
    const max = this.maxTenantDiskBytes;
    if (bytes <= max) return undefined;
    return (
      `${STORAGE_QUOTA_REASON}: this tenant's log and snapshots take ${mib(bytes)} MiB of its ${mib(max)} MiB disk quota; ` +
      'writes are refused until sessions are disposed (space returns as the log is compacted) or the quota (--tenant-disk-quota) is raised'
    );
  }

  assertQuota(): void {
    const refusal = this.quotaRefusal();
    if (refusal !== undefined) throw new ProtocolError('storage_quota_exceeded', refusal);
  }

  /**
   * A lookup that may load a parked session (chat-table.ts): when that failed (the hub failed,
   * `Hub.#fail`), the caller gets `StorageUnavailable`, never "not found" for a chat that exists.
   */
  lookup<T>(read: () => T): T {
    try {
      return read();
    } finally {
      if (this.hostNow().failed) this.assertReadable();
    }
  }

  assertOpen(): void {
    if (this.hostNow().closed && this.hostNow().failed) throw new ProtocolError('storage_unavailable', `${STORAGE_UNAVAILABLE_REASON}: this tenant is being reloaded from its log`);
    if (this.hostNow().closed) throw new ProtocolError('internal_error', 'the hub is shutting down');
  }
}

/**
 * Cluster mode: the write gate on a shared log (see write-gate.ts), told how far this process
 * has sequenced and how to fold what others appended; the pipeline appends through it.
 */
export function gateFor(log: SharedActionLog, pipeline: CommitPipeline, foldRemote: (records: readonly LogRecord[]) => void, fail: (err: unknown) => void, logger: Logger): WriteGate {
  const gate = new WriteGate(
    log,
    {
      get serverSeq() {
        return pipeline.serverSeq;
      },
      get inDoubt() {
        return pipeline.storageProblem;
      },
      hasPendingRecords: () => pipeline.hasPendingRecords,
      foldRemote,
      fail,
    },
    logger,
  );
  pipeline.appendThrough(gate);
  return gate;
}

function mib(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}
