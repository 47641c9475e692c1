/**
 * The write gate folds what other nodes append while it waits for the write turn
 * (server/hub/turn-wait-fold.ts), against a REAL PostgreSQL: so the turn, once held, hands over
 * only the batch committed just before it, not every batch since this node's last turn. Three
 * stores on one database stand in for three hub processes; the node under test is a WriteGate
 * over a fold target that records what it folds. Also: the write-turn metrics the cluster bench reads.
 */
import { describe, expect, it } from 'vitest';
import type { LogRecord, SharedActionLog, WriteTurn } from '../../server/storage/action-log.js';
import { WriteGate, type FoldTarget } from '../../server/hub/write-gate.js';
import { silentLogger } from '../../server/log.js';
import { HubMetrics } from '../../server/metrics.js';
import { postgresStoreFixtures } from '../helpers/postgres-store-fixtures.js';
import { waitFor } from '../helpers/wait-for.js';

function records(from: number, to: number, node: string): LogRecord[] {
  return Array.from({ length: to - from + 1 }, (_, i) => ({ serverSeq: from + i, channel: 'ahp-session:/x', action: { type: 'test/tick', node, n: from + i } }));
}

/** A fold target like the hub's: applies in order, remembers every record it folded. */
function foldTarget(): FoldTarget & { folded: LogRecord[]; failures: unknown[] } {
  const folded: LogRecord[] = [];
  const failures: unknown[] = [];
  return {
    folded,
    failures,
    get serverSeq() {
      return folded.length === 0 ? 0 : folded[folded.length - 1]!.serverSeq;
    },
    inDoubt: undefined,
    hasPendingRecords: () => false,
    foldRemote(batch) {
      for (const r of batch) {
        if (r.serverSeq !== this.serverSeq + 1) throw new Error(`folded ${r.serverSeq} after ${this.serverSeq}`);
        folded.push(r);
      }
    },
    fail: (error) => failures.push(error),
  };
}

/** The log as the gate sees it, remembering what each write turn handed over under the lock. */
function watched(log: SharedActionLog, handedOver: LogRecord[][]): SharedActionLog {
  return new Proxy(log, {
    get(target, key) {
      if (key === 'beginWriteTurn') {
        return async (afterSeq: number | (() => number)): Promise<WriteTurn> => {
          const turn = await target.beginWriteTurn(afterSeq);
          handedOver.push([...turn.missed]);
          return turn;
        };
      }
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('write turn: folding while waiting for the lock', () => {
  const { cleanups, database, openStore, sql } = postgresStoreFixtures('waitfold');

  async function lockWaiters(url: string): Promise<number> {
    const r = await sql(url, "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
    return (r.rows[0] as { n: number }).n;
  }

  it('folds what was committed before and while it waits, so the turn hands over only the batch of the turn before; nothing is folded twice or out of order', async () => {
    const url = await database();
    const nodeA = await (await openStore(url)).actionLog('dev');
    const nodeC = await (await openStore(url)).actionLog('dev');
    const handedOver: LogRecord[][] = [];
    const target = foldTarget();
    const gate = new WriteGate(watched(await (await openStore(url)).actionLog('dev'), handedOver), target, silentLogger);
    cleanups.push(() => gate.close());

    // A holds the turn and C waits for it. Only one node ever waits at a time: two waiters woken by
    // one commit race for the head row (PostgreSQL re-locks the updated row version, and either may
    // win), so a test that needs C to go before the gate must not queue them together.
    const turnA = await nodeA.beginWriteTurn(0);
    const turnC = nodeC.beginWriteTurn(0);
    // If the test fails half-way, the turns must not hold the lock the teardown waits on.
    cleanups.push(
      () => turnA.release(),
      async () => (await turnC).release(),
    );
    await waitFor(async () => (await lockWaiters(url)) === 1, { timeoutMs: 10_000, what: 'C waiting for the head lock' });
    expect(await turnA.append(records(1, 3, 'A'))).toEqual({ ok: true, head: 3 });
    const heldByC = await turnC;

    // C holds the turn; the gate waits behind it and folds A's batch meanwhile, outside the turn.
    const gateTurn = gate.turn();
    await waitFor(async () => (await lockWaiters(url)) === 1, { timeoutMs: 10_000, what: 'the gate waiting behind C' });
    await waitFor(() => target.folded.length === 3, { timeoutMs: 10_000, what: "the gate folding A's batch while it waits" });
    expect(handedOver).toEqual([]);

    // C appends 4..5; the gate's turn then hands over only those.
    expect(await heldByC.append(records(4, 5, 'C'))).toEqual({ ok: true, head: 5 });
    await gateTurn;
    expect(gate.isOpen).toBe(true);
    expect(handedOver).toEqual([records(4, 5, 'C')]);
    expect(target.folded).toStrictEqual([...records(1, 3, 'A'), ...records(4, 5, 'C')]);
    expect(target.failures).toEqual([]);

    // The turn is the gate's: its batch lands at head 5.
    expect(await gate.append(5, records(6, 6, 'B'))).toEqual({ ok: true, head: 6 });
    expect(await nodeA.read(0, 100)).toStrictEqual([...records(1, 3, 'A'), ...records(4, 5, 'C'), ...records(6, 6, 'B')]);
  });

  it('/metrics counts write turns, the records they appended and the records they handed over', async () => {
    const url = await database();
    const other = await (await openStore(url)).actionLog('dev');
    const metrics = new HubMetrics();
    const log = metrics.timed(await (await openStore(url)).actionLog('dev')) as SharedActionLog;
    expect(await other.append(0, records(1, 2, 'other'))).toEqual({ ok: true, head: 2 });

    const turn = await log.beginWriteTurn(0);
    expect(turn.missed).toStrictEqual(records(1, 2, 'other'));
    expect(await turn.append(records(3, 5, 'this'))).toEqual({ ok: true, head: 5 });
    const empty = await log.beginWriteTurn(5);
    await empty.release();

    const { text } = await metrics.render();
    const sample = (name: string): number => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(sample('ahp_hub_write_turn_wait_seconds_count')).toBe(2);
    expect(sample('ahp_hub_write_turn_records_total{kind="appended"}')).toBe(3);
    expect(sample('ahp_hub_write_turn_records_total{kind="handed_over"}')).toBe(2);
  });

  it('a reconnect cursor beyond the log head (issue 33.5d) is answered at once: one read of the head, no follow reads, no wait', async () => {
    const url = await database();
    const other = await (await openStore(url)).actionLog('dev');
    expect(await other.append(0, records(1, 3, 'other'))).toEqual({ ok: true, head: 3 });
    const calls = { head: 0, read: 0 };
    const counted = new Proxy(await (await openStore(url)).actionLog('dev'), {
      get(target, key) {
        const value: unknown = Reflect.get(target, key);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (key === 'head') calls.head++;
          if (key === 'read') calls.read++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as SharedActionLog;
    const target = foldTarget();
    const gate = new WriteGate(counted, target, silentLogger);
    cleanups.push(() => gate.close());

    // Up to the real head it folds (a client coming from a node further ahead).
    await gate.reach(3, 10_000);
    expect(target.serverSeq).toBe(3);
    const readsToCatchUp = calls.read;
    // A cursor no node ever handed out: nothing to wait for, and the log is not polled for it.
    await gate.reach(1_000_000_000_000, 10_000);
    expect({ reads: calls.read - readsToCatchUp, folded: target.serverSeq }).toEqual({ reads: 0, folded: 3 });
    expect(calls.head).toBeLessThanOrEqual(2);
  });
});
