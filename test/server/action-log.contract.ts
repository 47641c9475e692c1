/**
 * The behaviour every ActionLog engine must share. Each engine's test file calls
 * describeActionLogContract with a factory; engines that persist pass `reopen` so the suite can
 * also check that everything survives close + reopen.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ActionLog, LogRecord } from '../../server/storage/action-log.js';

export interface ActionLogHarness {
  readonly log: ActionLog;
  /** Opens the same storage again; called only after `log` has been closed. */
  readonly reopen?: () => Promise<ActionLog>;
  /** Closes whatever is still open and removes any files. */
  readonly cleanup: () => Promise<void>;
}

const CHANNEL = 'ahp://sessions/s1';

function record(serverSeq: number, extra: Partial<Omit<LogRecord, 'serverSeq'>> = {}): LogRecord {
  return { serverSeq, channel: CHANNEL, action: { type: 'test/tick', n: serverSeq }, ...extra };
}

/** Records from..to inclusive. */
function records(from: number, to: number): LogRecord[] {
  return Array.from({ length: to - from + 1 }, (_, i) => record(from + i));
}

function seqs(list: readonly LogRecord[]): number[] {
  return list.map((r) => r.serverSeq);
}

async function readAll(log: ActionLog): Promise<LogRecord[]> {
  return log.read(0, Number.POSITIVE_INFINITY);
}

/** Values that must survive the JSON round trip bit for bit. */
const AWKWARD_VALUES = {
  unicode: ['héllo', '日本語', 'שלום', '👩‍👩‍👧‍👦', 'e\u0301', '\u0000nul', 'lone \ud800 surrogate', '\u2028\u2029', 'quote " back \\ slash'],
  numbers: [0, -1, 1.5, 0.1 + 0.2, 1e-300, 5e-324, 1.7976931348623157e308, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER],
  nested: { a: [{ b: { c: [[], {}, [null, true, false, '']] } }], 'key.with.dots': 1, ключ: 'значение', '': 'empty key' },
  nothing: null,
};

/**
 * `persistent` engines must pass `reopen` from their factory; the close + reopen cases are only
 * defined for them (a memory log has nothing to reopen, so those cases would not be tests).
 */
export function describeActionLogContract(name: string, makeLog: () => Promise<ActionLogHarness>, options: { persistent: boolean }): void {
  describe(`ActionLog contract: ${name}`, () => {
    let harness: ActionLogHarness;
    let log: ActionLog;

    beforeEach(async () => {
      harness = await makeLog();
      log = harness.log;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    describe('empty log', () => {
      it('has head 0, oldestSeq 1, no records and no snapshot', async () => {
        expect(await log.head()).toBe(0);
        expect(await log.oldestSeq()).toBe(1);
        expect(await log.read(0, 100)).toEqual([]);
        expect(await log.latestSnapshot()).toBeUndefined();
      });
    });

    describe('append', () => {
      it('appends single records and batches, reporting the new head', async () => {
        expect(await log.append(0, [record(1)])).toEqual({ ok: true, head: 1 });
        expect(await log.append(1, records(2, 5))).toEqual({ ok: true, head: 5 });
        expect(await log.head()).toBe(5);
        expect(seqs(await readAll(log))).toEqual([1, 2, 3, 4, 5]);
      });

      it('an empty batch at the head succeeds and changes nothing', async () => {
        await log.append(0, records(1, 2));
        expect(await log.append(2, [])).toEqual({ ok: true, head: 2 });
        expect(await log.head()).toBe(2);
      });

      it('with a stale or future expectedHead fails with the actual head and writes nothing', async () => {
        await log.append(0, records(1, 3));
        expect(await log.append(1, records(2, 4))).toEqual({ ok: false, head: 3 });
        expect(await log.append(5, records(6, 7))).toEqual({ ok: false, head: 3 });
        expect(await log.append(0, [])).toEqual({ ok: false, head: 3 });
        expect(await log.head()).toBe(3);
        expect(seqs(await readAll(log))).toEqual([1, 2, 3]);
      });

      it('lets exactly one of two racing appends at the same head win', async () => {
        const results = await Promise.all([log.append(0, [record(1, { channel: 'ahp://a' })]), log.append(0, [record(1, { channel: 'ahp://b' })])]);
        expect(results.filter((r) => r.ok)).toHaveLength(1);
        expect(results.filter((r) => !r.ok)).toEqual([{ ok: false, head: 1 }]);
        expect(await readAll(log)).toHaveLength(1);
      });

      it('throws (not a conflict) on non-contiguous seqs, and writes nothing, not even a valid prefix', async () => {
        await log.append(0, records(1, 2));
        const malformed: LogRecord[][] = [
          [record(4)], // does not start at expectedHead + 1
          [record(3), record(5)], // gap
          [record(3), record(3)], // duplicate
          [record(4), record(3)], // out of order
          [record(2)], // already taken
        ];
        for (const batch of malformed) {
          await expect(log.append(2, batch)).rejects.toThrow(/contiguous/);
        }
        // Malformed input is a bug whatever the head is, so it throws even on a head mismatch.
        await expect(log.append(7, [record(9)])).rejects.toThrow(/contiguous/);
        expect(await log.head()).toBe(2);
        expect(seqs(await readAll(log))).toEqual([1, 2]);
      });

      it('rejects invalid arguments and payloads that JSON cannot carry', async () => {
        await expect(log.append(-1, [])).rejects.toThrow(RangeError);
        await expect(log.append(0.5, [])).rejects.toThrow(RangeError);
        await expect(log.append(0, [record(1, { channel: '' })])).rejects.toThrow(/channel/);
        await expect(log.append(0, [record(1, { action: { type: 'x', big: 1n } })])).rejects.toThrow(/JSON/);
        expect(await log.head()).toBe(0);
      });

      it('keeps what was appended even if the caller mutates its objects afterwards', async () => {
        const mutable = { type: 'test/mutable', list: [1, 2] };
        await log.append(0, [record(1, { action: mutable })]);
        mutable.list.push(3);
        const [stored] = await readAll(log);
        expect(stored?.action).toEqual({ type: 'test/mutable', list: [1, 2] });
      });
    });

    describe('read', () => {
      beforeEach(async () => {
        await log.append(0, records(1, 4));
        await log.append(4, records(5, 10));
      });

      it('returns records after afterSeq, ascending, at most limit', async () => {
        expect(seqs(await log.read(0, 100))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(seqs(await log.read(3, 4))).toEqual([4, 5, 6, 7]);
        expect(seqs(await log.read(8, 100))).toEqual([9, 10]);
        expect(seqs(await log.read(9, 1))).toEqual([10]);
        expect(await log.read(10, 100)).toEqual([]);
        expect(await log.read(50, 100)).toEqual([]);
        expect(await log.read(0, 0)).toEqual([]);
        expect(seqs(await log.read(0, Number.POSITIVE_INFINITY))).toHaveLength(10);
      });

      it('returns the records as appended', async () => {
        expect(await log.read(6, 1)).toStrictEqual([record(7)]);
      });

      it('rejects a negative or fractional afterSeq or limit', async () => {
        await expect(log.read(-1, 10)).rejects.toThrow(RangeError);
        await expect(log.read(0, -1)).rejects.toThrow(RangeError);
        await expect(log.read(0, 1.5)).rejects.toThrow(RangeError);
      });
    });

    describe('round trip', () => {
      it('distinguishes a record without origin (no key at all) from one with origin', async () => {
        const withOrigin = record(2, { origin: { clientId: 'client-7', clientSeq: 42 } });
        await log.append(0, [record(1), withOrigin]);
        const [plain, originated] = await readAll(log);
        expect(plain).toStrictEqual(record(1));
        expect(plain !== undefined && 'origin' in plain).toBe(false);
        expect(originated).toStrictEqual(withOrigin);
      });

      it('treats origin: undefined like an absent origin', async () => {
        await log.append(0, [record(1, { origin: undefined })]);
        const [stored] = await readAll(log);
        expect(stored !== undefined && 'origin' in stored).toBe(false);
      });

      it('round-trips unicode, nested structures and numbers exactly', async () => {
        const action = { type: 'test/awkward', ...AWKWARD_VALUES };
        const channel = 'ahp://sessions/ünïcødé/👩‍👩‍👧‍👦';
        await log.append(0, [record(1, { channel, action })]);
        expect(await readAll(log)).toStrictEqual([{ serverSeq: 1, channel, action }]);
        await log.saveSnapshot({ serverSeq: 1, data: AWKWARD_VALUES });
        expect(await log.latestSnapshot()).toStrictEqual({ serverSeq: 1, data: AWKWARD_VALUES });
      });

      it('applies JSON semantics: undefined properties vanish, like they would on disk', async () => {
        await log.append(0, [record(1, { action: { type: 'test/sparse', gone: undefined, kept: null } })]);
        const [stored] = await readAll(log);
        expect(stored?.action).toStrictEqual({ type: 'test/sparse', kept: null });
      });
    });

    describe('snapshots', () => {
      beforeEach(async () => {
        await log.append(0, records(1, 10));
      });

      it('returns the newest snapshot (highest serverSeq)', async () => {
        await log.saveSnapshot({ serverSeq: 3, data: { at: 3 } });
        expect(await log.latestSnapshot()).toEqual({ serverSeq: 3, data: { at: 3 } });
        await log.saveSnapshot({ serverSeq: 7, data: { at: 7 } });
        expect(await log.latestSnapshot()).toEqual({ serverSeq: 7, data: { at: 7 } });
        await log.saveSnapshot({ serverSeq: 5, data: { at: 5 } });
        expect(await log.latestSnapshot()).toEqual({ serverSeq: 7, data: { at: 7 } });
      });

      it('replaces a snapshot saved again at the same serverSeq', async () => {
        await log.saveSnapshot({ serverSeq: 4, data: 'first' });
        await log.saveSnapshot({ serverSeq: 4, data: 'second' });
        expect(await log.latestSnapshot()).toEqual({ serverSeq: 4, data: 'second' });
      });

      it('accepts any JSON value as data, including a snapshot of the empty prefix', async () => {
        for (const data of [null, 0, 'text', [1, [2]], { deep: { er: true } }]) {
          await log.saveSnapshot({ serverSeq: 0, data });
          expect(await log.latestSnapshot()).toStrictEqual({ serverSeq: 0, data });
        }
      });

      it('refuses a snapshot beyond the head or with data JSON cannot carry', async () => {
        await expect(log.saveSnapshot({ serverSeq: 11, data: {} })).rejects.toThrow(/beyond the log head 10/);
        await expect(log.saveSnapshot({ serverSeq: 5, data: undefined })).rejects.toThrow(/JSON/);
        await expect(log.saveSnapshot({ serverSeq: -1, data: {} })).rejects.toThrow(RangeError);
        expect(await log.latestSnapshot()).toBeUndefined();
      });
    });

    describe('compaction', () => {
      beforeEach(async () => {
        await log.append(0, records(1, 10));
      });

      it('drops records up to uptoSeq but keeps the head', async () => {
        await log.saveSnapshot({ serverSeq: 6, data: { upTo: 6 } });
        await log.compact(6);
        expect(seqs(await readAll(log))).toEqual([7, 8, 9, 10]);
        expect(seqs(await log.read(2, 2))).toEqual([7, 8]);
        expect(await log.head()).toBe(10);
        expect(await log.oldestSeq()).toBe(7);
        // Compacting again, or less, is a no-op.
        await log.compact(6);
        await log.compact(3);
        expect(await log.oldestSeq()).toBe(7);
      });

      it('compacting everything leaves head unchanged and oldestSeq at head + 1; appends continue', async () => {
        await log.saveSnapshot({ serverSeq: 10, data: { upTo: 10 } });
        await log.compact(10);
        expect(await readAll(log)).toEqual([]);
        expect(await log.head()).toBe(10);
        expect(await log.oldestSeq()).toBe(11);
        expect(await log.append(0, [record(1)])).toEqual({ ok: false, head: 10 });
        expect(await log.append(10, [record(11)])).toEqual({ ok: true, head: 11 });
        expect(seqs(await readAll(log))).toEqual([11]);
        expect(await log.oldestSeq()).toBe(11);
      });

      it('refuses to drop records no saved snapshot covers', async () => {
        await expect(log.compact(3)).rejects.toThrow(/snapshot/);
        await log.saveSnapshot({ serverSeq: 4, data: {} });
        await expect(log.compact(5)).rejects.toThrow(/only up to 4/);
        expect(await log.oldestSeq()).toBe(1);
        await log.compact(0); // covers nothing, needs nothing
        expect(await log.oldestSeq()).toBe(1);
      });
    });

    describe('close', () => {
      it('is idempotent, and the log rejects use afterwards', async () => {
        await log.close();
        await log.close();
        await expect(log.head()).rejects.toThrow(/closed/);
        await expect(log.append(0, [record(1)])).rejects.toThrow(/closed/);
        await expect(log.read(0, 1)).rejects.toThrow(/closed/);
      });
    });

    if (options.persistent)
      describe('reopen', () => {
        it('keeps records, origins, snapshots and head across close + reopen', async () => {
          if (harness.reopen === undefined) throw new Error(`${name} is persistent but its harness has no reopen`);
          const withOrigin = record(3, { origin: { clientId: 'c', clientSeq: 1 } });
          await log.append(0, [record(1), record(2), withOrigin]);
          await log.saveSnapshot({ serverSeq: 2, data: AWKWARD_VALUES });
          await log.close();

          const again = await harness.reopen();
          expect(await again.head()).toBe(3);
          expect(await readAll(again)).toStrictEqual([record(1), record(2), withOrigin]);
          expect(await again.latestSnapshot()).toStrictEqual({ serverSeq: 2, data: AWKWARD_VALUES });
          expect(await again.append(3, [record(4)])).toEqual({ ok: true, head: 4 });
        });

        it('keeps head and oldestSeq after compaction across close + reopen', async () => {
          if (harness.reopen === undefined) throw new Error(`${name} is persistent but its harness has no reopen`);
          await log.append(0, records(1, 8));
          await log.saveSnapshot({ serverSeq: 5, data: 'five' });
          await log.compact(5);
          await log.close();

          let again = await harness.reopen();
          expect(await again.head()).toBe(8);
          expect(await again.oldestSeq()).toBe(6);
          expect(seqs(await readAll(again))).toEqual([6, 7, 8]);

          // The case a MAX(seq) head would get wrong: no records left at all.
          await again.saveSnapshot({ serverSeq: 8, data: 'eight' });
          await again.compact(8);
          await again.close();
          again = await harness.reopen();
          expect(await again.head()).toBe(8);
          expect(await again.oldestSeq()).toBe(9);
          expect(await again.latestSnapshot()).toEqual({ serverSeq: 8, data: 'eight' });
          expect(await again.append(8, [record(9)])).toEqual({ ok: true, head: 9 });
        });
      });
  });
}
