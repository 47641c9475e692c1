/**
 * The commit pipeline on its own (no hub, no decisions): the ordering rule it enforces —
 * nothing reaches a client before it is durable, answers never overtake envelopes — checked
 * against an in-memory log whose appends wait until the test releases them.
 */
import { describe, expect, it } from 'vitest';
import { CommitPipeline } from '../../server/hub/commit-pipeline.js';
import { CATALOGUE_CHANNEL } from '../../server/hub/catalogue.js';
import { DEFAULT_FANOUT_LIMITS } from '../../server/hub/fanout.js';
import { ReplayWindow } from '../../server/hub/replay-window.js';
import { Subscriptions } from '../../server/hub/subscriptions.js';
import { silentLogger } from '../../server/log.js';
import type { AppendResult, LogRecord } from '../../server/storage/action-log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { waitFor } from '../helpers/wait-for.js';

const CHAT = 'ahp-chat:/c1';

/** A log whose appends wait until the test releases them (or fail, when told to). */
class GatedLog extends MemoryActionLog {
  gated = false;
  failNext: Error | undefined;
  #waiting: Array<() => void> = [];
  override async append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult> {
    if (this.gated) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure) throw failure;
    return super.append(expectedHead, records);
  }
  get waitingAppends(): number {
    return this.#waiting.length;
  }
  release(): void {
    this.gated = false;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}

function pipelineOn(log: GatedLog, options: { snapshotEvery?: number; keepBehindSnapshot?: number } = {}) {
  const applied: LogRecord[] = [];
  const failures: unknown[] = [];
  const replay = new ReplayWindow(100, 1_000_000);
  const subscriptions = new Subscriptions(16, DEFAULT_FANOUT_LIMITS, replay);
  const pipeline = new CommitPipeline({
    log,
    logger: silentLogger,
    state: { applyRecord: (r) => applied.push(r) },
    receivers: subscriptions,
    replay,
    fanoutLimits: DEFAULT_FANOUT_LIMITS,
    snapshotEvery: options.snapshotEvery ?? 1_000,
    keepBehindSnapshot: options.keepBehindSnapshot ?? 1_000,
    snapshotImage: () => ({ applied: applied.length }),
    headSeq: 0,
    onAppendFailed: (err) => failures.push(err),
  });
  const subscriber = new FakeConnection('subscriber');
  subscriptions.attach(subscriber, 't', CHAT, 0, 0, 0);
  return { pipeline, applied, failures, subscriber, replay };
}

const delta = (content: string) => ({ type: 'chat/delta', turnId: 't1', partId: 'p1', content, _meta: { keep: 'unmerged' } });

describe('commit pipeline', () => {
  it('applies a sequenced action at once, but sends its envelope, a later answer and later callbacks only after the append, in queue order', async () => {
    const log = new GatedLog();
    const { pipeline, applied, subscriber } = pipelineOn(log);
    log.gated = true;
    const order: string[] = [];
    const seq1 = pipeline.sequence(CHAT, delta('a'));
    pipeline.sendInOrder(subscriber, '{"jsonrpc":"2.0","id":7,"result":{}}');
    const seq2 = pipeline.sequence(CHAT, delta('b'));
    pipeline.afterDelivered(() => order.push(`callback sees ${subscriber.frames.length} frames`));
    const durable = pipeline.durable().then(() => order.push('durable'));

    expect([seq1, seq2]).toEqual([1, 2]);
    // The next decision must see both: they are applied in memory before anything is durable.
    expect(applied.map((r) => r.serverSeq)).toEqual([1, 2]);
    expect(pipeline.hasPendingRecords).toBe(true);
    await waitFor(() => log.waitingAppends === 1 || undefined);
    expect(subscriber.frames).toEqual([]);
    expect(order).toEqual([]);

    log.release();
    await durable;
    expect(await log.head()).toBe(2);
    expect(pipeline.hasPendingRecords).toBe(false);
    // Envelope 1, then the answer queued after it, then envelope 2: the answer neither waits for
    // nor overtakes anything but what was queued before it.
    const sent = subscriber.messages().map((m) => (m['method'] === 'action' ? `envelope ${(m['params'] as { serverSeq: number }).serverSeq}` : `answer ${String(m['id'])}`));
    expect(sent).toEqual(['envelope 1', 'answer 7', 'envelope 2']);
    expect(order).toEqual(['callback sees 3 frames', 'durable']);
    expect(pipeline.deliveredSeq).toBe(2);
  });

  it('sends an answer at once when nothing is waiting for the log', () => {
    const log = new GatedLog();
    const { pipeline, subscriber } = pipelineOn(log);
    pipeline.sendInOrder(subscriber, '{"jsonrpc":"2.0","id":1,"result":{}}');
    expect(subscriber.frames).toHaveLength(1);
  });

  it('never sends catalogue records to clients, but appends them in sequence with the rest', async () => {
    const log = new GatedLog();
    const { pipeline, subscriber } = pipelineOn(log);
    pipeline.sequence(CATALOGUE_CHANNEL, { type: 'hub/chatDisposed', chat: 'ahp-chat:/gone' });
    pipeline.sequence(CHAT, delta('a'));
    await pipeline.durable();
    expect((await log.read(0, 10)).map((r) => r.channel)).toEqual([CATALOGUE_CHANNEL, CHAT]);
    expect(subscriber.envelopes().map((e) => e.serverSeq)).toEqual([2]);
  });

  it('keeps a batch whose append failed in doubt and retries it: nothing of it is sent meanwhile, answers are, and it is delivered once the log takes it', async () => {
    const log = new GatedLog();
    const { pipeline, subscriber, failures } = pipelineOn(log);
    log.failNext = new Error('disk full');
    pipeline.sequence(CHAT, delta('kept'));
    const durable = pipeline.durable();
    await waitFor(() => pipeline.storageProblem);
    expect(pipeline.storageProblem).toBe('disk full');
    expect(await log.head()).toBe(0);
    // In doubt: an answer (an error, say) goes out at once, the envelope does not.
    pipeline.sendInOrder(subscriber, '{"jsonrpc":"2.0","id":2,"error":{}}');
    expect(subscriber.messages().map((m) => m['id'])).toEqual([2]);
    expect(subscriber.envelopes()).toEqual([]);
    // The retry (the next append, which succeeds) lands it: delivered once, in order.
    await durable;
    expect(pipeline.storageProblem).toBeUndefined();
    expect((await log.read(0, 10)).map((r) => r.serverSeq)).toEqual([1]);
    expect(subscriber.envelopes().map((e) => e.serverSeq)).toEqual([1]);
    expect(failures).toEqual([]);
  });

  it('finds a batch whose commit went through although the append reported a failure, and delivers it once', async () => {
    const log = new (class extends GatedLog {
      lostAnswer = true;
      override async append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult> {
        const result = await super.append(expectedHead, records);
        if (this.lostAnswer) {
          this.lostAnswer = false;
          throw new Error('connection terminated during COMMIT');
        }
        return result;
      }
    })();
    const { pipeline, subscriber, failures } = pipelineOn(log);
    pipeline.sequence(CHAT, delta('committed'));
    await pipeline.durable();
    expect((await log.read(0, 10)).map((r) => r.serverSeq)).toEqual([1]);
    expect(subscriber.envelopes().map((e) => e.serverSeq)).toEqual([1]);
    expect(failures).toEqual([]);
  });

  it('abandons a batch in doubt when the log holds other records in its place: its sender gets a StorageUnavailable rejection, waiters fail, the hub is told', async () => {
    const log = new GatedLog();
    const { pipeline, subscriber, failures } = pipelineOn(log);
    const sender = new FakeConnection('sender');
    log.failNext = new Error('connection terminated');
    pipeline.sequence(CHAT, delta('mine'), { clientId: 'c1', clientSeq: 1 }, sender);
    const durable = pipeline.durable();
    await waitFor(() => pipeline.storageProblem);
    // Another process appended at the same position meanwhile.
    await log.append(0, [{ serverSeq: 1, channel: CHAT, action: delta('theirs') }]);
    await expect(durable).rejects.toThrow(/action log is unavailable/);
    expect(failures).toHaveLength(1);
    const [rejection] = sender.envelopes();
    expect(rejection?.origin).toEqual({ clientId: 'c1', clientSeq: 1 });
    expect(rejection?.rejectionReason).toMatch(/^the action log is unavailable: the action was not applied/);
    expect(subscriber.envelopes()).toEqual([]);
  });

  it('writes a snapshot of the image every snapshotEvery records, labelled with the durable seq, and compacts what it covers beyond the kept window', async () => {
    const log = new GatedLog();
    const { pipeline } = pipelineOn(log, { snapshotEvery: 3, keepBehindSnapshot: 1 });
    for (const c of ['a', 'b']) pipeline.sequence(CHAT, delta(c));
    await pipeline.durable();
    expect(await log.latestSnapshot()).toBeUndefined();
    pipeline.sequence(CHAT, delta('c'));
    await pipeline.durable();
    await pipeline.settled();
    expect(await log.latestSnapshot()).toEqual({ serverSeq: 3, data: { applied: 3 } });
    expect(await log.oldestSeq()).toBe(3);
  });

  it('adopts records another process appended only in order and only while nothing local is pending', async () => {
    const log = new GatedLog();
    const { pipeline, subscriber } = pipelineOn(log);
    expect(() => pipeline.adoptDurable({ serverSeq: 2, channel: CHAT, action: delta('gap') })).toThrow(/gap/);
    // Another process appended record 1; this one folds it.
    const remote: LogRecord = { serverSeq: 1, channel: CHAT, action: delta('remote') };
    await log.append(0, [remote]);
    pipeline.adoptDurable(remote);
    await pipeline.durable();
    // Delivered like a local record, and not appended a second time.
    expect(subscriber.envelopes().map((e) => e.serverSeq)).toEqual([1]);
    expect(await log.head()).toBe(1);
    log.gated = true;
    pipeline.sequence(CHAT, delta('local'));
    expect(() => pipeline.adoptDurable({ serverSeq: 3, channel: CHAT, action: delta('remote') })).toThrow(/pending/);
    log.release();
    await pipeline.durable();
    expect(await log.head()).toBe(2);
  });
});
