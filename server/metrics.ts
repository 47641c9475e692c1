/**
 * Prometheus metrics (`GET /metrics`). One registry per hub server; the parts of the hub report
 * through narrow hooks the composition root wires (`HubObserver`, the transport's close callback,
 * a timed log wrapper) and gauges are read only when scraped. The hot path only bumps counters:
 * no per-connection or per-channel labels, so the series count stays fixed whatever clients do.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { isSharedActionLog, type ActionLog, type SharedActionLog } from './storage/action-log.js';
import type { HubObserver } from './hub/hub.js';
import type { ErrorKind } from '../shared/protocol/error-kinds.js';

export class HubMetrics implements HubObserver {
  readonly registry = new Registry();
  readonly #dispatches: Counter<'outcome' | 'reason'>;
  readonly #slowConsumerCloses: Counter;
  readonly #serverCloses: Counter<'code'>;
  readonly #logAppend: Histogram;
  readonly #reconnects: Counter<'kind'>;
  readonly #quotaRefusals: Counter<'quota'>;
  readonly #retainedBytes: Gauge<'tenant'>;
  readonly #turnWait: Histogram;
  readonly #turnRecords: Counter<'kind'>;
  /** Readers per gauge name (see `gauge`). */
  readonly #gaugeReaders = new Map<string, Array<() => number>>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'ahp_hub_' });
    const registers = [this.registry];
    this.#dispatches = new Counter({
      name: 'ahp_hub_dispatches_total',
      help: 'Actions dispatched by clients and accepted (outcome="accepted", reason="") or rejected with an echo (outcome="rejected", reason=its ErrorKind, docs/errors.md).',
      labelNames: ['outcome', 'reason'],
      registers,
    });
    this.#slowConsumerCloses = new Counter({ name: 'ahp_hub_slow_consumer_closes_total', help: 'Connections closed with 4008 because they did not read fast enough.', registers });
    this.#serverCloses = new Counter({ name: 'ahp_hub_server_closes_total', help: 'Connections the hub closed, by WebSocket close code.', labelNames: ['code'], registers });
    this.#logAppend = new Histogram({
      name: 'ahp_hub_log_append_seconds',
      help: 'Time one durable log append (a batch of records) took.',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.#turnWait = new Histogram({
      name: 'ahp_hub_write_turn_wait_seconds',
      help: "Cluster mode: time taking one write turn took (the wait for the tenant's head lock plus the hand-over of what others appended); its count is the turns taken.",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers,
    });
    this.#turnRecords = new Counter({
      name: 'ahp_hub_write_turn_records_total',
      help: 'Cluster mode: records appended in write turns (kind="appended") and records other nodes appended that a turn handed over to fold under the lock (kind="handed_over").',
      labelNames: ['kind'],
      registers,
    });
    this.#reconnects = new Counter({
      name: 'ahp_hub_reconnects_total',
      help: 'reconnect requests answered from the in-memory replay window (kind="replay", a hit) or with snapshots (kind="snapshot").',
      labelNames: ['kind'],
      registers,
    });
    this.#quotaRefusals = new Counter({
      name: 'ahp_hub_quota_refusals_total',
      help: 'Actions, sessions, chats and clientIds refused because a user or tenant quota was used up (quota="user_state_quota", "tenant_state_quota", "client_id_quota").',
      labelNames: ['quota'],
      registers,
    });
    this.#retainedBytes = new Gauge({
      name: 'ahp_hub_log_retained_bytes',
      help: "Cluster mode: bytes a tenant's shared log (records and snapshots) retains, measured after each compaction round.",
      labelNames: ['tenant'],
      registers,
    });
    new Gauge({
      name: 'ahp_hub_heap_used_bytes',
      help: 'V8 heap in use; after a full collection when node runs with --expose-gc, so the figure is what the hub holds rather than garbage not yet collected.',
      registers,
      collect() {
        // Only an operator (or a test) that starts node with --expose-gc pays for the collection.
        (globalThis as { gc?: () => void }).gc?.();
        this.set(process.memoryUsage().heapUsed);
      },
    });
  }

  /** Cluster mode: what a tenant's shared log retains (one series per configured tenant). */
  logRetainedBytes(tenant: string, bytes: number): void {
    this.#retainedBytes.set({ tenant }, bytes);
  }

  /**
   * A gauge whose value is read at scrape time. Registering a name again adds another reader and
   * the gauge reports their sum: every tenant's features register the same gauges.
   */
  gauge(name: string, help: string, read: () => number): void {
    const readers = this.#gaugeReaders.get(name);
    if (readers) {
      readers.push(read);
      return;
    }
    const all = [read];
    this.#gaugeReaders.set(name, all);
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        let sum = 0;
        for (const r of all) sum += r();
        this.set(sum);
      },
    });
  }

  dispatchAccepted(): void {
    this.#dispatches.inc({ outcome: 'accepted', reason: '' });
  }

  dispatchRejected(kind: ErrorKind): void {
    this.#dispatches.inc({ outcome: 'rejected', reason: kind });
  }

  quotaRefused(quota: string): void {
    this.#quotaRefusals.inc({ quota });
  }

  reconnectServed(kind: 'replay' | 'snapshot'): void {
    this.#reconnects.inc({ kind });
  }

  connectionClosedByServer(code: number): void {
    this.#serverCloses.inc({ code: String(code) });
    if (code === 4008) this.#slowConsumerCloses.inc();
  }

  /** Wraps a log so every append's duration lands in the histogram; nothing else changes. */
  timed(log: ActionLog): ActionLog {
    const histogram = this.#logAppend;
    const turnWait = this.#turnWait;
    const turnRecords = this.#turnRecords;
    const time = async <T>(append: () => Promise<T>): Promise<T> => {
      const start = process.hrtime.bigint();
      try {
        return await append();
      } finally {
        histogram.observe(Number(process.hrtime.bigint() - start) / 1e9);
      }
    };
    // A shared (cluster) log appends through write turns: time those appends, keep the rest.
    const shared: Pick<SharedActionLog, 'beginWriteTurn' | 'onAppended' | 'watchHead'> | Record<never, never> = isSharedActionLog(log)
      ? {
          beginWriteTurn: async (afterSeq) => {
            const stop = turnWait.startTimer();
            const turn = await log.beginWriteTurn(afterSeq);
            stop();
            turnRecords.inc({ kind: 'handed_over' }, turn.missed.length);
            const append = (records: Parameters<typeof turn.append>[0]) => {
              turnRecords.inc({ kind: 'appended' }, records.length);
              return time(() => turn.append(records));
            };
            return { head: turn.head, missed: turn.missed, append, release: () => turn.release() };
          },
          onAppended: (listener) => log.onAppended(listener),
          watchHead: (listener) => log.watchHead(listener),
        }
      : {};
    return {
      ...shared,
      head: () => log.head(),
      append: (expectedHead, records) => time(() => log.append(expectedHead, records)),
      read: (afterSeq, limit) => log.read(afterSeq, limit),
      oldestSeq: () => log.oldestSeq(),
      saveSnapshot: (snapshot) => log.saveSnapshot(snapshot),
      latestSnapshot: () => log.latestSnapshot(),
      compact: (uptoSeq) => log.compact(uptoSeq),
      close: () => log.close(),
      ...(log.storedBytes ? { storedBytes: () => log.storedBytes!() } : {}),
      ...(log.probeWrite ? { probeWrite: () => log.probeWrite!() } : {}),
      ...(log.openEpoch ? { openEpoch: () => log.openEpoch!() } : {}),
    };
  }

  async render(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
