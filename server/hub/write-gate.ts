/**
 * Cluster mode: how one hub process decides and appends while others share the same log.
 *
 * The hub decides every action synchronously against its in-memory state. With one process that
 * state is the log's; with several it is only the log's if nobody appended since this process
 * last folded. So, in cluster mode, every decision waits for the WRITE TURN (a lock on the log's
 * head, see `SharedActionLog.beginWriteTurn`): taking it hands over what other processes appended
 * since, which is folded through the same path recovery uses (`HubState.applyRecord`, via
 * `FoldTarget.foldRemote`); then every waiting decision runs against that up-to-date state, the
 * batch they sequenced is appended and committed, which ends the turn. A decision made this way
 * can never lose an append race, so first-reply-wins, stale request ids and duplicate clientSeqs
 * hold across processes exactly as within one. The price is one lock round trip per batch.
 *
 * Between turns, the process follows the log: each append elsewhere sends a wake-up (NOTIFY),
 * and a slow poll covers wake-ups lost while a connection was down. That poll is the store's,
 * one statement for every tenant of the process (`SharedActionLog.watchHead`), which hands this
 * gate its log's head: it reads the log only when that head is ahead of what it folded. The gate
 * has no timer of its own. Following only ever happens while no local decision is pending, so
 * folded records and local ones never interleave.
 *
 * States: idle → acquiring → open (decisions run) → committing (the batch is being appended;
 * new decisions wait for the next turn) → idle.
 */
import type { AppendResult, HeadWatch, LogRecord, SharedActionLog, WriteTurn } from '../storage/action-log.js';
import type { Logger } from '../log.js';
import { errorFields, errorMessage } from '../log.js';
import { STORAGE_UNAVAILABLE_REASON } from './commit-pipeline.js';
import { sameRecords } from './commit-ports.js';
import type { FoldTarget } from './fold-target.js';
import { TurnWaitFold } from './turn-wait-fold.js';

/** What the gate needs from the hub. */
export type { FoldTarget } from './fold-target.js';

export interface WriteGateOptions {
  /** Records read per page while following. */
  readonly pageSize?: number;
}

type GateState = 'idle' | 'acquiring' | 'open' | 'committing' | 'closed';

export class WriteGate {
  readonly #log: SharedActionLog;
  readonly #target: FoldTarget;
  readonly #logger: Logger;
  readonly #pageSize: number;
  #state: GateState = 'idle';
  #turn: WriteTurn | undefined;
  #waiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  /** Serialises turns and following, so the same records are never folded twice. */
  #chain: Promise<void> = Promise.resolve();
  #knownHead = 0;
  #followQueued = false;
  /** The store's head poll for every tenant (covers lost wake-ups). */
  readonly #headWatch: HeadWatch;
  readonly #stopListening: () => void;
  /** Why writes are refused right now (the log is unreachable), for clear errors. */
  #unavailable: string | undefined;

  constructor(log: SharedActionLog, target: FoldTarget, logger: Logger, options: WriteGateOptions = {}) {
    this.#log = log;
    this.#target = target;
    this.#logger = logger;
    this.#pageSize = options.pageSize ?? 2_000;
    this.#knownHead = target.serverSeq;
    this.#stopListening = log.onAppended((head) => {
      this.#noteHead(head);
      this.#follow();
    });
    this.#headWatch = log.watchHead((head) => {
      this.#noteHead(head);
      // After a failed read or turn, one read that succeeds clears the refusal (/healthz).
      this.#follow(this.#unavailable !== undefined);
    });
  }

  /** True while decisions may run right now (this process holds an open write turn). */
  get isOpen(): boolean {
    return this.#state === 'open';
  }

  /** Why the log is refusing writes, or undefined when it is reachable. */
  get unavailable(): string | undefined {
    return this.#unavailable ?? this.#headWatch.problem;
  }

  /**
   * Resolves when this process holds an open write turn and has folded everything before it.
   * Callers run their synchronous decision right after (in the microtask the promise resolves in).
   */
  turn(): Promise<void> {
    if (this.#state === 'open') return Promise.resolve();
    if (this.#state === 'closed') return Promise.reject(new Error('the hub is shutting down'));
    // A turn taken now could decide nothing (the hub refuses writes while a batch is in doubt)
    // and would hold the head lock the retry of that batch needs.
    const inDoubt = this.#target.inDoubt;
    if (inDoubt !== undefined) return Promise.reject(new Error(`${STORAGE_UNAVAILABLE_REASON}: ${inDoubt}`));
    return new Promise((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      if (this.#state === 'idle') this.#acquire();
    });
  }

  /** The commit pipeline's group commit: appends the batch decided under the open turn, which ends the turn. */
  async append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult> {
    const turn = this.#turn;
    if (this.#state !== 'open' || turn === undefined) {
      throw new Error(`internal: records sequenced outside a write turn (state ${this.#state})`);
    }
    if (expectedHead !== turn.head) throw new Error(`internal: batch expects head ${expectedHead}, the turn holds ${turn.head}`);
    this.#state = 'committing';
    this.#turn = undefined;
    try {
      const result = await turn.append(records);
      this.#unavailable = undefined;
      if (result.ok) this.#noteHead(result.head);
      return result;
    } catch (error) {
      this.#unavailable = errorMessage(error);
      throw error;
    } finally {
      this.#afterTurn();
    }
  }

  /**
   * After the append of a turn failed (commit-pipeline.ts, "in doubt"): takes a new turn at the
   * same head and appends the same batch, or finds it is already there (the commit went through
   * but its answer was lost). False when other processes appended there instead. Throws while
   * the log is unreachable.
   */
  retry(expectedHead: number, records: readonly LogRecord[]): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#enqueue(async () => {
        if (this.#state === 'closed') return reject(new Error('the hub is shutting down'));
        try {
          const turn = await this.#log.beginWriteTurn(expectedHead);
          if (turn.missed.length === 0) {
            const result = await turn.append(records);
            if (result.ok) this.#noteHead(result.head);
            this.#unavailable = undefined;
            return resolve(result.ok);
          }
          await turn.release();
          this.#unavailable = undefined;
          this.#noteHead(turn.head);
          // Whatever others appended after the batch is folded by the next follow.
          resolve(sameRecords(turn.missed.slice(0, records.length), records));
        } catch (error) {
          this.#unavailable = errorMessage(error);
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    });
  }

  /**
   * Resolves once this process has folded the log up to `seq`, or after `timeoutMs` (a cursor
   * from a client that was on a node further ahead; a bogus cursor only delays its own answer).
   */
  async reach(seq: number, timeoutMs: number): Promise<void> {
    if (this.#target.serverSeq >= seq) return;
    // One read of the log's head first: a cursor beyond it was handed out by no node (issue 33.5d:
    // a far-future cursor cost the full wait and a read every 10 ms), so only the part up to the
    // head is worth waiting for. The log away: answer now with what this node has.
    let head: number;
    try {
      head = await this.#log.head();
    } catch {
      return;
    }
    const target = Math.min(seq, head);
    const deadline = Date.now() + timeoutMs;
    while (this.#target.serverSeq < target && Date.now() < deadline && this.#state !== 'closed') {
      this.#noteHead(target);
      this.#follow(true);
      await this.#chain;
      if (this.#target.serverSeq < target) await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  async close(): Promise<void> {
    this.#state = 'closed';
    this.#headWatch.stop();
    this.#stopListening();
    for (const w of this.#waiters.splice(0)) w.reject(new Error('the hub is shutting down'));
    await this.#turn?.release();
    this.#turn = undefined;
    await this.#chain.catch(() => undefined);
  }

  #acquire(): void {
    this.#state = 'acquiring';
    this.#enqueue(async () => {
      if (this.#state !== 'acquiring') return;
      const inDoubt = this.#target.inDoubt;
      if (inDoubt !== undefined) {
        this.#state = 'idle';
        for (const w of this.#waiters.splice(0)) w.reject(new Error(`${STORAGE_UNAVAILABLE_REASON}: ${inDoubt}`));
        return;
      }
      let turn: WriteTurn;
      // Folds what others append while the lock request waits, so the turn hands over (and
      // folds under the lock) only what came after: see turn-wait-fold.ts.
      const waitFold = new TurnWaitFold(this.#log, this.#target, this.#pageSize, () => this.#state === 'acquiring');
      try {
        turn = await this.#log.beginWriteTurn(() => {
          waitFold.stop();
          return this.#target.serverSeq;
        });
      } catch (error) {
        waitFold.stop();
        // The log is unreachable (PostgreSQL down or restarting): every waiting decision gets a
        // clear error now instead of hanging; the next decision tries again.
        this.#unavailable = errorMessage(error);
        this.#logger.warn('cannot take the write turn; refusing writes until the log is reachable', errorFields(error));
        const waiters = this.#waiters.splice(0);
        if (this.#state === 'acquiring') this.#state = 'idle';
        for (const w of waiters) w.reject(new Error(`${STORAGE_UNAVAILABLE_REASON}: ${this.#unavailable}`));
        return;
      }
      this.#unavailable = undefined;
      if (this.#state !== 'acquiring') {
        await turn.release();
        return;
      }
      try {
        if (turn.missed.length > 0) this.#target.foldRemote(turn.missed);
      } catch (error) {
        await turn.release();
        this.#target.fail(error);
        return;
      }
      this.#noteHead(turn.head);
      this.#turn = turn;
      this.#state = 'open';
      for (const w of this.#waiters.splice(0)) w.resolve();
      // The decisions run in the microtasks just queued; the commit pipeline's flush (setImmediate) appends
      // what they sequenced. If they sequenced nothing, give the turn back here.
      setImmediate(() => this.#releaseIfUnused(turn));
    });
  }

  #releaseIfUnused(turn: WriteTurn): void {
    if (this.#turn !== turn || this.#state !== 'open' || this.#target.hasPendingRecords()) return;
    this.#turn = undefined;
    this.#state = 'committing';
    void turn.release().finally(() => this.#afterTurn());
  }

  #afterTurn(): void {
    if (this.#state === 'closed') return;
    this.#state = 'idle';
    if (this.#waiters.length > 0) this.#acquire();
    else this.#follow();
  }

  /** Folds what others appended, when nothing local is pending (else the next turn does it). */
  #follow(poll = false): void {
    if (this.#followQueued || this.#state !== 'idle') return;
    if (!poll && this.#knownHead <= this.#target.serverSeq) return;
    this.#followQueued = true;
    this.#enqueue(async () => {
      this.#followQueued = false;
      for (;;) {
        if (this.#state !== 'idle' || this.#target.hasPendingRecords()) return;
        const from = this.#target.serverSeq;
        let records: LogRecord[];
        try {
          records = await this.#log.read(from, this.#pageSize);
          this.#unavailable = undefined;
        } catch (error) {
          this.#unavailable = errorMessage(error);
          if (!poll) this.#logger.warn('cannot read the shared log; retrying', errorFields(error));
          return;
        }
        if (this.#state !== 'idle' || this.#target.serverSeq !== from) return;
        if (records.length > 0 && records[0]!.serverSeq !== from + 1) {
          this.#target.fail(new Error(`records ${from + 1}..${records[0]!.serverSeq - 1} were compacted before this node read them`));
          return;
        }
        if (records.length > 0) {
          this.#target.foldRemote(records);
          const last = records[records.length - 1]!.serverSeq;
          this.#noteHead(last);
        }
        if (records.length < this.#pageSize) return;
      }
    });
  }

  /** Raises the highest head this process has heard of (it never goes back). */
  #noteHead(head: number): void {
    if (head > this.#knownHead) this.#knownHead = head;
  }

  #enqueue(task: () => Promise<void>): void {
    this.#chain = this.#chain.then(task).catch((error: unknown) => this.#logger.error('write gate task failed', errorFields(error)));
  }
}
