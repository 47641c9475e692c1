/**
 * The history epochs (server/storage/history-epochs.ts): which cursors belong to a log's history,
 * and SQLite keeping them across reopen while a restored copy has only the epochs it had.
 */
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HistoryEpochs, EPOCHS_KEPT, parseEpochSpans, withNewEpoch } from '../../server/storage/history-epochs.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { PostgresStore } from '../../server/storage/postgres-store.js';
import { SqliteActionLog } from '../../server/storage/sqlite-action-log.js';
import { freshDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/start-server.js';

const record = (serverSeq: number) => ({ serverSeq, channel: 'ahp-chat:/c', action: { type: 'chat/activityChanged', activity: `a${serverSeq}` } });

describe('HistoryEpochs.admits', () => {
  const epochs = new HistoryEpochs([
    { epoch: 'e1', fromSeq: 1 },
    { epoch: 'e2', fromSeq: 11 },
    { epoch: 'e3', fromSeq: 21 },
  ]);
  it('a cursor inside its epoch span belongs; outside it, or of an unknown epoch, does not', () => {
    expect(epochs.current).toBe('e3');
    expect(epochs.admits('e2', 15, 30)).toBe(true);
    expect(epochs.admits('e2', 20, 30)).toBe(true);
    expect(epochs.admits('e2', 10, 30)).toBe(true); // seen nothing of e2 yet: its start - 1
    expect(epochs.admits('e2', 21, 30)).toBe(false); // e2 never reached 21 here: another history
    expect(epochs.admits('e3', 30, 30)).toBe(true);
    expect(epochs.admits('e-unknown', 5, 30)).toBe(false);
    expect(epochs.admits(undefined, 30, 30)).toBe(true);
    expect(epochs.admits(undefined, 31, 30)).toBe(false);
  });
  it('keeps at most EPOCHS_KEPT epochs and ignores malformed stored text', () => {
    let spans = parseEpochSpans(undefined);
    for (let i = 0; i < EPOCHS_KEPT + 5; i++) spans = withNewEpoch(spans, i);
    expect(spans).toHaveLength(EPOCHS_KEPT);
    expect(parseEpochSpans('not json')).toEqual([]);
    expect(parseEpochSpans('[{"epoch":1,"fromSeq":1},{"epoch":"a","fromSeq":2}]')).toEqual([{ epoch: 'a', fromSeq: 2 }]);
  });
});

describe('openEpoch', () => {
  const dirs: Array<{ remove(): void }> = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) d.remove();
  });

  it('SQLite: each open starts an epoch after the head, kept across reopen; a restored copy has only its own', async () => {
    const dir = tempDir('epochs-');
    dirs.push(dir);
    const file = join(dir.dir, 'hub.db');
    let log = SqliteActionLog.open({ file });
    const first = await log.openEpoch();
    expect(first).toEqual([{ epoch: expect.any(String), fromSeq: 1 }]);
    await log.append(0, [record(1), record(2)]);
    await log.close();
    for (const suffix of ['', '-wal', '.head']) if (existsSync(file + suffix)) copyFileSync(file + suffix, join(dir.dir, `backup.db${suffix}`));
    log = SqliteActionLog.open({ file });
    const second = await log.openEpoch();
    expect(second).toEqual([first[0], { epoch: expect.any(String), fromSeq: 3 }]);
    expect(second[1]!.epoch).not.toBe(first[0]!.epoch);
    await log.close();
    const restored = SqliteActionLog.open({ file: join(dir.dir, 'backup.db') });
    const third = await restored.openEpoch();
    expect(third.map((s) => s.epoch)).not.toContain(second[1]!.epoch);
    expect(third[0]).toEqual(first[0]);
    await restored.close();
  });

  it('memory: the same', async () => {
    const log = new MemoryActionLog();
    const a = await log.openEpoch();
    await log.append(0, [record(1)]);
    const b = await log.openEpoch();
    expect(b).toEqual([a[0], { epoch: expect.any(String), fromSeq: 2 }]);
  });
});

describe('openEpoch on PostgreSQL', () => {
  it('one epoch per partition, created with it: every handle (node) answers the same; another partition its own', async () => {
    const db = await freshDatabase('epochs');
    const a = await PostgresStore.open({ url: db.url });
    const b = await PostgresStore.open({ url: db.url });
    try {
      const first = await (await a.actionLog('t1')).openEpoch();
      const again = await (await b.actionLog('t1')).openEpoch();
      const other = await (await a.actionLog('t2')).openEpoch();
      expect(first).toEqual([{ epoch: expect.any(String), fromSeq: 1 }]);
      expect(again).toEqual(first);
      expect(other[0]!.epoch).not.toBe(first[0]!.epoch);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
