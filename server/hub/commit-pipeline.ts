/**
 * The commit pipeline: sequencing, group commit to the `ActionLog`, and delivery in order.
 *
 * The rule it enforces: NOTHING REACHES A CLIENT BEFORE IT IS DURABLE, AND ANSWERS NEVER OVERTAKE
 * ENVELOPES. Every accepted action is `sequence`d: it gets the next serverSeq of this hub (each
 * tenant has its own; see tenant-stack.ts), is applied to the in-memory state at once (so the
 * next decision sees it) and is queued twice, as a record for the log and as an item in the
 * outbox. Everything else the hub sends in order with those
 * envelopes — rejection echoes, root-catalogue notifications, JSON-RPC answers (`sendInOrder`),
 * callbacks (`afterDelivered`) and durability waiters (`durable`) — joins the same outbox. Once
 * per event-loop turn the pending records are appended in one batch (group commit); only after
 * that append resolves is the outbox delivered, front to back. So an echo means "durable", a
 * snapshot in an answer never shows state a crash could take back, and nothing queued later is
 * sent earlier.
 *
 * When an append fails (database away, disk full), the batch is IN DOUBT: its records are in
 * memory but maybe not in the log (or, when the failure hit the commit's answer, maybe in it).
 * Nothing of it is delivered. The pipeline retries (`Appender.retry`) with backoff until the log
 * either takes the batch or shows that it already holds it — then it is delivered as usual — or
 * holds other records at those positions (another cluster process appended there): then the
 * batch is abandoned, its senders get a `StorageUnavailable` rejection, and `onAppendFailed`
 * tells the hub its memory is no longer the log's. While in doubt, `storageProblem` says why,
 * the hub refuses new writes, and refusals and answers are sent at once rather than held behind
 * the batch (see `sendPrivate`, `sendInOrder`).
 *
 * The same rule holds for every other way out of the process (SSE streams, answers written to an
 * agent, collaboration frames, follow-up dispatches): those happen in the hooks' delivered phase
 * (`hub-port.ts`), which the sequencer hands to `sequence` / `adoptDurable` as a `DeliveredPhase` and
 * which runs here, right after that record's envelope, in serverSeq order. Commit-phase hooks only fold
 * state. A dispatch made while delivering is sequenced after everything being delivered and goes
 * out with the next batch.
 *
 * The pipeline also writes a snapshot every `snapshotEvery` records (the image is the hub's,
 * see `recovery.ts`), so recovery replays at most that many records.
 *
 * Coalescing of envelopes and subscribers' latency windows are `fanout.ts`'s; who subscribes to
 * what is `subscriptions.ts`'s.
 */
import type { ActionEnvelope, ActionOrigin, WireAction } from '../../shared/protocol/messages.js';
import { isSharedActionLog, type ActionLog, type LogRecord } from '../storage/action-log.js';
import type { Logger } from '../log.js';
import { errorFields, errorMessage } from '../log.js';
import { CATALOGUE_CHANNEL } from './catalogue.js';
import type { Actor } from './client-ledger.js';
import { CloseCode, type Connection } from './connection.js';
import { deliverEnvelopeRun, deliverPrivate, sendOrCloseSlow, type FanoutLimits, type QueuedEnvelope } from './fanout.js';
import { encodeNotification, mergeStreamingActions } from './envelope-text.js';
import type { ReplayWindow } from './replay-window.js';
import { type Appender, type CommitPipelineOptions, logLacksBatch, type Receivers, retryOnSoleLog } from './commit-ports.js';

/** Backoff between retries of a batch in doubt. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2_000;
/**
 * A single-writer log (SQLite) that still fails a batch this long after its first failure, and
 * whose head shows it does not hold it, gets the batch abandoned: its senders are answered (issue
 * 33.6: on a disk that stayed full they had no answer at all) and the tenant is reloaded.
 */
const ABANDON_SOLE_WRITER_BATCH_AFTER_MS = 1_000;

/** A commit's delivered phase as data: the sequencer sets `run` (HookList's) after the commit phase; the pipeline calls it once durable, never back into the sequencer. */
export interface DeliveredPhase {
  run?: (() => void) | undefined;
}

type OutboxItem =
  /** A sequenced envelope for the channel's subscribers; `source` (the dispatching connection) gets its echo too. */
  | { readonly kind: 'envelope'; readonly envelope: ActionEnvelope; readonly source?: Connection | undefined; readonly onDelivered?: DeliveredPhase | undefined }
  /** An envelope for one connection only (a rejection echo, the original echo of a re-sent action). */
  | { readonly kind: 'private'; readonly conn: Connection; readonly envelope: ActionEnvelope }
  /** An encoded root-catalogue notification for one tenant's root subscribers. */
  | { readonly kind: 'root'; readonly tenant: string; readonly text: string }
  /** A JSON-RPC answer. */
  | { readonly kind: 'reply'; readonly conn: Connection; readonly text: string }
  | { readonly kind: 'call'; readonly fn: () => void }
  | { readonly kind: 'durable'; readonly resolve: () => void; readonly reject: (err: Error) => void };

type EnvelopeItem = Extract<OutboxItem, { kind: 'envelope' }>;

/** The envelope clients get for a record: never the actor (stored for the ledger only). */
export function envelopeOf(record: LogRecord): ActionEnvelope {
  const envelope: ActionEnvelope = { channel: record.channel, action: record.action as WireAction, serverSeq: record.serverSeq };
  if (record.origin) envelope.origin = { clientId: record.origin.clientId, clientSeq: record.origin.clientSeq };
  return envelope;
}

export class CommitPipeline {
  readonly #log: ActionLog;
  readonly #logger: Logger;
  readonly #state: CommitPipelineOptions['state'];
  readonly #receivers: Receivers;
  readonly #replay: ReplayWindow;
  readonly #fanoutLimits: FanoutLimits;
  readonly #snapshotEvery: number;
  readonly #keepBehindSnapshot: number;
  readonly #snapshotImage: () => unknown;
  readonly #onAppendFailed: (err: unknown) => void;
  /** The log, or (cluster mode) the write gate, which appends under the write turn. */
  #appender: Appender;

  /** Last serverSeq sequenced (applied in memory). */
  #seq: number;
  /** Last serverSeq appended durably. */
  #durableSeq: number;
  /** Last serverSeq whose envelope was handed to subscribers. */
  #deliveredSeq: number;
  #recordsSinceSnapshot = 0;

  #pendingRecords: LogRecord[] = [];
  /** The last record sequenced, while a following streaming action may still merge into it. */
  #mergeable: LogRecord | undefined;
  #outbox: OutboxItem[] = [];
  #flushScheduled = false;
  #flushing: Promise<void> | undefined;
  /** Why the batch in doubt could not be appended yet (see the header), else undefined. */
  #storageProblem: string | undefined;
  /** Resolved (and replaced) each time a batch goes into doubt: start-up stops waiting then. */
  #inDoubt = deferred();
  #stopping = false;
  /** Characters of answers waiting in the outbox per connection (see `sendInOrder`). */
  readonly #heldReplyChars = new WeakMap<Connection, number>();

  /** The outbox being delivered and where the current envelope run starts (see `#deliver`). */
  #delivering: OutboxItem[] = [];
  #runStart = 0;
  // Bound once, not per envelope: delivery is the hot path.
  readonly #followingEnvelope = (k: number): QueuedEnvelope | undefined => {
    const next = this.#delivering[this.#runStart + k];
    return next?.kind === 'envelope' ? next : undefined;
  };
  readonly #keepForReplay = (envelope: ActionEnvelope, text: string): void => this.#replay.keep(envelope, text);

  constructor(options: CommitPipelineOptions) {
    this.#log = options.log;
    this.#appender = options.log;
    this.#logger = options.logger;
    this.#state = options.state;
    this.#receivers = options.receivers;
    this.#replay = options.replay;
    this.#fanoutLimits = options.fanoutLimits;
    this.#snapshotEvery = options.snapshotEvery;
    this.#keepBehindSnapshot = options.keepBehindSnapshot;
    this.#snapshotImage = options.snapshotImage;
    this.#onAppendFailed = options.onAppendFailed;
    this.#seq = this.#durableSeq = this.#deliveredSeq = options.headSeq;
  }

  /** Cluster mode: append through the write gate (which holds the write turn) instead of the log. */
  appendThrough(appender: Appender): void {
    this.#appender = appender;
  }

  /**
   * Last serverSeq sequenced: what the in-memory state reflects (maybe not durable yet). Whoever
   * reads it may hand it out (a snapshot's `fromSeq`, `initialize`), so the record at that seq is
   * sealed: nothing merges into it any more (see `sequence`).
   */
  get serverSeq(): number {
    this.#mergeable = undefined;
    return this.#seq;
  }

  /** While a batch is in doubt: why the log refuses it. */
  get storageProblem(): string | undefined {
    return this.#storageProblem;
  }

  /** Resolves when a batch next goes into doubt. */
  whenInDoubt(): Promise<void> {
    return this.#inDoubt.promise;
  }

  /** At shutdown: stop retrying a batch in doubt (its envelopes are never delivered). */
  stopRetrying(): void {
    this.#stopping = true;
  }

  /** Last serverSeq whose envelope was handed to subscribers. */
  get deliveredSeq(): number {
    return this.#deliveredSeq;
  }

  /** True while records sequenced here are not yet durable (queued, or being appended). */
  get hasPendingRecords(): boolean {
    return this.#pendingRecords.length > 0 || this.#seq !== this.#durableSeq;
  }

  /**
   * Gives the action the next serverSeq, applies it to the state and queues it for the log and
   * (unless it is a catalogue record, which clients never see) for delivery. `source` is the
   * connection that dispatched it; `actor` is stored in the log's origin, never sent.
   * `onDelivered` (the hooks' delivered phase) runs once the record is durable, after its envelope.
   */
  sequence(channel: string, action: WireAction, origin?: ActionOrigin, source?: Connection, actor?: Actor, onDelivered?: DeliveredPhase): number {
    if (origin === undefined && source === undefined) {
      const merged = this.#mergeIntoLast(channel, action, onDelivered);
      if (merged !== undefined) return merged;
    }
    const serverSeq = ++this.#seq;
    const record: LogRecord = origin ? { serverSeq, channel, action, origin: actor ? { ...origin, actor } : origin } : { serverSeq, channel, action };
    this.#state.applyRecord(record);
    this.#pendingRecords.push(record);
    this.#queueDelivery(record, source, onDelivered);
    this.#mergeable = origin === undefined && source === undefined && channel !== CATALOGUE_CHANNEL ? record : undefined;
    return serverSeq;
  }

  #queueDelivery(record: LogRecord, source: Connection | undefined, onDelivered: DeliveredPhase | undefined): void {
    if (record.channel !== CATALOGUE_CHANNEL) this.#outbox.push({ kind: 'envelope', envelope: envelopeOf(record), source, onDelivered });
    else if (onDelivered) this.#outbox.push({ kind: 'call', fn: () => onDelivered.run?.() });
    this.#scheduleFlush();
  }

  /**
   * THE MERGE RULE (ingest). A streaming-only action without origin (a server-side agent's
   * `chat/delta` / `chat/reasoning`) that continues the record sequenced just before it — same
   * channel, turn and part, no `_meta`, nothing queued in between, not yet appended, and its
   * serverSeq not yet handed out (`serverSeq` seals it) — is folded into that record: one log
   * record, one envelope, one serverSeq for both, and the state is exactly the one applying both
   * gives. Nobody can tell: the record was neither durable nor seen. Returns the record's seq
   * (so `dispatchServer` callers of both fragments get the same one). Each fragment keeps its own
   * delivered phase (hooks see both, in order, with that one serverSeq), chained after the
   * earlier fragments' once the merged record is durable.
   *
   * Client dispatches (with an origin) never merge into one record: AHP confirms one pending
   * action per echo, and a client drops an echo whose serverSeq is not above the last it applied,
   * so every clientSeq keeps its own record and echo (other receivers still get a run of them as
   * one envelope, see `deliverEnvelopeRun`).
   */
  #mergeIntoLast(channel: string, action: WireAction, onDelivered: DeliveredPhase | undefined): number | undefined {
    const last = this.#mergeable;
    if (last === undefined || last.channel !== channel || last.serverSeq !== this.#seq) return undefined;
    const pendingAt = this.#pendingRecords.length - 1;
    // Durability waiters queued after it (each `dispatchServer` adds one) resolve at the same
    // point whether or not more is folded in, so they do not stand in the way.
    let queuedAt = this.#outbox.length - 1;
    while (this.#outbox[queuedAt]?.kind === 'durable') queuedAt--;
    const queued = this.#outbox[queuedAt];
    if (this.#pendingRecords[pendingAt] !== last || queued?.kind !== 'envelope' || queued.envelope.serverSeq !== last.serverSeq) return undefined;
    const combined = mergeStreamingActions(last.action as WireAction, action);
    if (combined === undefined) return undefined;
    this.#state.applyRecord({ serverSeq: last.serverSeq, channel, action });
    const record: LogRecord = { serverSeq: last.serverSeq, channel, action: combined };
    this.#pendingRecords[pendingAt] = record;
    const earlier = queued.onDelivered;
    const both = (): void => {
      earlier?.run?.();
      onDelivered?.run?.();
    };
    const chained: DeliveredPhase | undefined = earlier && onDelivered ? { run: both } : (earlier ?? onDelivered);
    this.#outbox[queuedAt] = { ...queued, envelope: envelopeOf(record), onDelivered: chained };
    this.#mergeable = record;
    return record.serverSeq;
  }

  /**
   * Cluster mode: a record another process appended (so already durable), applied and queued for
   * delivery like a local one. Only while nothing local is pending, and only the next seq.
   */
  adoptDurable(record: LogRecord, onDelivered?: DeliveredPhase): void {
    if (this.hasPendingRecords) throw new Error('internal: folding remote records while local ones are pending');
    if (record.serverSeq !== this.#seq + 1) throw new Error(`folding record ${record.serverSeq} after ${this.#seq}: the log has a gap`);
    this.#state.applyRecord(record);
    this.#seq = this.#durableSeq = record.serverSeq;
    this.#queueDelivery(record, undefined, onDelivered);
  }

  /** An envelope for `conn` alone (a rejection, an original echo), in order with the rest. */
  sendPrivate(conn: Connection, envelope: ActionEnvelope): void {
    // In doubt: a refusal must not wait behind a batch that may never be delivered.
    if (this.#storageProblem !== undefined) return deliverPrivate(this.#receivers.fanoutOf(envelope.channel), conn, envelope, this.#fanoutLimits);
    this.#outbox.push({ kind: 'private', conn, envelope });
    this.#scheduleFlush();
  }

  /** A root-catalogue notification for the tenant's root subscribers; encoded only if there are any. */
  sendRoot(tenant: string, method: string, params: unknown): void {
    if (!this.#receivers.rootSubscribersOf(tenant)?.size) return;
    this.#outbox.push({ kind: 'root', tenant, text: encodeNotification(method, params) });
    this.#scheduleFlush();
  }

  /**
   * Sends `text` (a JSON-RPC answer) to `conn` after everything sequenced so far is durable and
   * delivered. A snapshot in a `subscribe` answer, or `serverSeq` in `initialize`, may include
   * actions applied in memory but not yet appended; holding the answer until they are durable means
   * no client ever sees state that a crash could take back, and the answer never arrives after
   * envelopes that follow it.
   */
  sendInOrder(conn: Connection, text: string): void {
    // In doubt, the hub answers only with errors or state that excludes the batch (it refuses
    // reads that would show it), so nothing here waits for the batch.
    if (this.#storageProblem !== undefined || (this.#outbox.length === 0 && this.#pendingRecords.length === 0 && !this.#flushing)) {
      sendOrCloseSlow(conn, text, this.#fanoutLimits);
      return;
    }
    // Answers waiting for durability count against the connection's limit too: a client that
    // asks for big snapshots faster than the log commits must not pile them up here instead.
    // Same rule as for sending: more than the limit already waiting → close, else queue this one.
    const held = this.#heldReplyChars.get(conn) ?? 0;
    if (held + conn.bufferedAmount > this.#fanoutLimits.maxBufferedBytes) {
      conn.close(CloseCode.SlowConsumer, 'slow consumer: reconnect and resume');
      return;
    }
    this.#heldReplyChars.set(conn, held + text.length);
    this.#outbox.push({ kind: 'reply', conn, text });
    this.#scheduleFlush();
  }

  /** Runs `fn` after everything queued so far (envelopes and answers) has been delivered. */
  afterDelivered(fn: () => void): void {
    this.#outbox.push({ kind: 'call', fn });
    this.#scheduleFlush();
  }

  /** Resolves once everything sequenced so far is durable and delivered; rejects if its batch is abandoned. */
  durable(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#outbox.push({ kind: 'durable', resolve, reject });
      this.#scheduleFlush();
    });
  }

  /** Resolves when no flush is running (after `durable`, at shutdown). */
  async settled(): Promise<void> {
    await this.#flushing;
  }

  /** At shutdown: a last snapshot when records were appended since the previous one. */
  async snapshotIfBehind(): Promise<void> {
    if (this.#durableSeq > 0 && this.#recordsSinceSnapshot > 0) await this.#writeSnapshot();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    // setImmediate, not a microtask: frames that arrive in the same I/O turn share one append.
    setImmediate(() => {
      this.#flushScheduled = false;
      if (!this.#flushing) this.#flushing = this.#flushLoop().finally(() => (this.#flushing = undefined));
    });
  }

  /** Group commit: append what is pending in one batch, then (and only then) deliver the outbox. */
  async #flushLoop(): Promise<void> {
    while (this.#outbox.length > 0 || this.#pendingRecords.length > 0) {
      const records = this.#pendingRecords;
      const outbox = this.#outbox;
      this.#pendingRecords = [];
      this.#outbox = [];
      if (records.length > 0) {
        let failure: unknown;
        try {
          const result = await this.#appender.append(this.#durableSeq, records);
          if (!result.ok) failure = new Error(`action log head moved to ${result.head}; another writer appended (expected ${this.#durableSeq})`);
        } catch (err) {
          failure = err;
        }
        if (failure !== undefined && !(await this.#settleInDoubt(records, failure))) {
          this.#abandon(outbox, failure);
          return;
        }
        this.#durableSeq = records[records.length - 1]!.serverSeq;
        this.#recordsSinceSnapshot += records.length;
      }
      this.#deliver(outbox);
      if (this.#recordsSinceSnapshot >= this.#snapshotEvery) await this.#writeSnapshot();
    }
  }

  /**
   * A batch whose append failed: retries until the log holds it (true) or holds other records at
   * its positions, or the hub is closing (false). See the header.
   */
  async #settleInDoubt(records: readonly LogRecord[], failure: unknown): Promise<boolean> {
    const expectedHead = this.#durableSeq;
    this.#storageProblem = errorMessage(failure);
    this.#logger.error('action log append failed; the batch is kept and retried, writes are refused meanwhile', { ...errorFields(failure), records: records.length, expectedHead });
    const signal = this.#inDoubt;
    this.#inDoubt = deferred();
    signal.resolve();
    let wait = RETRY_FIRST_MS;
    // Only where nobody else appends: the head then tells for sure that the batch is not in the log.
    const abandonAt = isSharedActionLog(this.#log) ? Number.POSITIVE_INFINITY : Date.now() + ABANDON_SOLE_WRITER_BATCH_AFTER_MS;
    try {
      while (!this.#stopping) {
        await new Promise((resolve) => setTimeout(resolve, Math.max(10, Math.min(wait, abandonAt - Date.now()))).unref());
        wait = Math.min(wait * 2, RETRY_MAX_MS);
        if (this.#stopping) break;
        try {
          const landed = await (this.#appender.retry ? this.#appender.retry(expectedHead, records) : retryOnSoleLog(this.#log, expectedHead, records));
          this.#logger.warn(landed ? 'the action log took the batch in doubt; writes resume' : 'the action log holds other records where the batch in doubt was to go', { expectedHead, records: records.length });
          return landed;
        } catch (err) {
          this.#storageProblem = errorMessage(err);
          if (Date.now() >= abandonAt && (await logLacksBatch(this.#log, expectedHead))) {
            this.#logger.warn('the action log still fails the batch in doubt: its senders are told it was not applied, and the tenant is reloaded', { expectedHead, records: records.length });
            return false;
          }
        }
      }
      return false;
    } finally {
      this.#storageProblem = undefined;
    }
  }

  /**
   * The batch in doubt is not in the log: its senders are told (a `StorageUnavailable`
   * rejection, so they may send it again), durability waiters fail, and nothing else of its
   * outbox is delivered (answers and notifications that showed its state).
   */
  #abandon(outbox: readonly OutboxItem[], failure: unknown): void {
    const reason = `${STORAGE_UNAVAILABLE_REASON}: the action was not applied (${errorMessage(failure)}); send it again`;
    const error = new Error(reason);
    for (const item of outbox) {
      if (item.kind === 'envelope' && item.source && item.envelope.origin) {
        deliverPrivate(this.#receivers.fanoutOf(item.envelope.channel), item.source, { ...item.envelope, serverSeq: this.#durableSeq, rejectionReason: reason, rejectionKind: 'storage_unavailable' }, this.#fanoutLimits);
      } else if (item.kind === 'durable') {
        item.reject(error);
      }
    }
    // Everything queued behind the batch is dropped too: it was decided on state that included it.
    for (const item of this.#outbox.splice(0)) if (item.kind === 'durable') item.reject(error);
    this.#pendingRecords = [];
    if (!this.#stopping) this.#onAppendFailed(failure);
  }

  #deliver(outbox: OutboxItem[]): void {
    this.#delivering = outbox;
    const limits = this.#fanoutLimits;
    for (let i = 0; i < outbox.length; i++) {
      const item = outbox[i]!;
      switch (item.kind) {
        case 'envelope': {
          // Adjacent envelopes may leave as one (fanout.ts decides); `consumed` says how many followed.
          this.#runStart = i;
          const run = deliverEnvelopeRun(this.#receivers.fanoutOf(item.envelope.channel), item, this.#followingEnvelope, limits, this.#keepForReplay);
          this.#deliveredSeq = run.lastSeq;
          // The delivered phase of each envelope of the run, in serverSeq order.
          for (let k = 0; k <= run.consumed; k++) (outbox[i + k] as EnvelopeItem).onDelivered?.run?.();
          i += run.consumed;
          break;
        }
        case 'private':
          deliverPrivate(this.#receivers.fanoutOf(item.envelope.channel), item.conn, item.envelope, limits);
          break;
        case 'root': {
          const subs = this.#receivers.rootSubscribersOf(item.tenant);
          if (subs) for (const conn of subs) sendOrCloseSlow(conn, item.text, limits);
          break;
        }
        case 'reply': {
          const held = (this.#heldReplyChars.get(item.conn) ?? 0) - item.text.length;
          if (held > 0) this.#heldReplyChars.set(item.conn, held);
          else this.#heldReplyChars.delete(item.conn);
          sendOrCloseSlow(item.conn, item.text, limits);
          break;
        }
        case 'call':
          item.fn();
          break;
        case 'durable':
          item.resolve();
          break;
      }
    }
    this.#delivering = [];
  }

  async #writeSnapshot(): Promise<void> {
    // The in-memory image includes every sequenced record, so it can only be labelled with a seq
    // when nothing sequenced is still waiting to be appended; otherwise try again after the next batch.
    if (this.hasPendingRecords) return;
    const seq = this.#durableSeq;
    this.#recordsSinceSnapshot = 0;
    try {
      await this.#log.saveSnapshot({ serverSeq: seq, data: this.#snapshotImage() });
      // Keep the replay window's worth of records; older ones are covered by the snapshot. The
      // window is bounded by bytes as well as count, so what stays behind a snapshot is too. A
      // shared log is not compacted by a hub: another process may not have read them yet.
      const keepFrom = Math.max(seq - this.#keepBehindSnapshot, (this.#replay.oldestSeq ?? seq + 1) - 1);
      if (keepFrom > 0 && !isSharedActionLog(this.#log)) await this.#log.compact(keepFrom);
    } catch (err) {
      this.#logger.warn('snapshot failed; recovery will replay more records', errorFields(err));
    }
  }
}

/**
 * How every `StorageUnavailable` refusal of an action begins (rejection echoes have no code
 * field, so this prefix is what clients match; JSON-RPC errors carry `ErrorCode.StorageUnavailable`).
 */
export const STORAGE_UNAVAILABLE_REASON = 'the action log is unavailable';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
