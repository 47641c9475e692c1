/**
 * The PostgreSQL action log (one partition of a PostgresStore) against a REAL PostgreSQL server
 * (started once per run by the globalSetup in test/helpers/postgres-global-setup.ts, or the one
 * PG_URL names): the shared contract, then what only a network engine shares between processes.
 * Partitions against each other: postgres-store.test.ts.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { LogRecord } from '../../server/storage/action-log.js';
import { LOG_NOTIFY_CHANNEL, type PostgresActionLog } from '../../server/storage/postgres-action-log.js';
import { PostgresStore } from '../../server/storage/postgres-store.js';
import { freshDatabase } from '../helpers/postgres.js';
import { postgresStoreFixtures } from '../helpers/postgres-store-fixtures.js';
import { waitFor } from '../helpers/wait-for.js';
import { describeActionLogContract } from './action-log.contract.js';

/** A partition name that would break any SQL it were pasted into: it must only ever be a parameter. */
const CONTRACT_PARTITION = `tenant "O'Brien"); DROP TABLE ahp_records; --`;

// The contract runs on one partition while a neighbour partition of the same database holds
// records, a snapshot and a compaction: the partition under test must behave as if alone.
describeActionLogContract(
  'PostgresActionLog (a partition of PostgresStore)',
  async () => {
    const db = await freshDatabase('contract');
    const stores: PostgresStore[] = [];
    const open = async (): Promise<PostgresActionLog> => {
      const store = await PostgresStore.open({ url: db.url });
      stores.push(store);
      return store.actionLog(CONTRACT_PARTITION);
    };
    const log = await open();
    const neighbour = await stores[0]!.actionLog('neighbour');
    await neighbour.append(
      0,
      [1, 2, 3, 4, 5].map((n) => tick(n)),
    );
    await neighbour.saveSnapshot({ serverSeq: 4, data: 'neighbour snapshot' });
    await neighbour.compact(2);
    return {
      log,
      reopen: open,
      cleanup: async () => {
        for (const store of stores) await store.close();
        await db.drop();
      },
    };
  },
  { persistent: true },
);

function tick(serverSeq: number): LogRecord {
  return { serverSeq, channel: 'ahp://sessions/s1', action: { type: 'test/tick', n: serverSeq } };
}

describe('PostgresActionLog specifics', () => {
  const { cleanups, database, openStore, sql } = postgresStoreFixtures('pglog');
  async function open(url: string, partition = 'acme'): Promise<PostgresActionLog> {
    return (await openStore(url)).actionLog(partition);
  }
  it('creates its schema (version 2) on first open, and several processes opening an empty database at once agree on one', async () => {
    const url = await database();
    const logs = await Promise.all([open(url), open(url), open(url)]);
    const version = await sql(url, `SELECT value FROM ahp_meta WHERE key = 'schema_version'`);
    expect(version.rows).toEqual([{ value: '2' }]);
    expect(await logs[2]!.head()).toBe(0);
    expect((await sql(url, 'SELECT partition, head FROM ahp_log_head')).rows).toEqual([{ partition: 'acme', head: '0' }]);
  });

  it('of many pools appending at the same head of a partition, exactly one wins each round and the log has no gap', async () => {
    const url = await database();
    const logs = await Promise.all([open(url), open(url), open(url)]);
    for (let round = 0; round < 10; round++) {
      const head = await logs[0]!.head();
      const results = await Promise.all(logs.map((log) => log.append(head, [tick(head + 1), tick(head + 2)])));
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.filter((r) => !r.ok)).toEqual([
        { ok: false, head: head + 2 },
        { ok: false, head: head + 2 },
      ]);
    }
    expect((await logs[1]!.read(0, 100)).map((r) => r.serverSeq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('notifies on the ahp_log channel with the partition and its new head (JSON) after each committed append', async () => {
    const url = await database();
    const log = await open(url, 'acme');
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    cleanups.push(() => listener.end());
    const payloads: string[] = [];
    listener.on('notification', (n) => payloads.push(n.payload ?? ''));
    await listener.query(`LISTEN ${LOG_NOTIFY_CHANNEL}`);
    await log.append(0, [tick(1)]);
    await log.append(1, [tick(2), tick(3)]);
    expect(await log.append(1, [tick(2)])).toEqual({ ok: false, head: 3 }); // a lost race notifies nothing
    await waitFor(() => (payloads.length >= 2 ? true : undefined), { what: 'two notifications' });
    expect(payloads.map((p) => JSON.parse(p))).toEqual([
      { partition: 'acme', head: 1 },
      { partition: 'acme', head: 3 },
    ]);
  });

  it('refuses a database with a newer schema version, with a clear error', async () => {
    const url = await database();
    await (await PostgresStore.open({ url })).close();
    await sql(url, `UPDATE ahp_meta SET value = '99' WHERE key = 'schema_version'`);
    await expect(PostgresStore.open({ url })).rejects.toThrow(/schema version 99.*newer build.*up to 2/);
  });

  it('names the server (never the password) when it cannot connect', async () => {
    await expect(PostgresStore.open({ url: 'postgres://someone:s3cret@127.0.0.1:1/nowhere' })).rejects.toThrow(/cannot open PostgreSQL store at postgres:\/\/someone@127\.0\.0\.1:1\/nowhere/);
    await expect(PostgresStore.open({ url: 'postgres://someone:s3cret@127.0.0.1:1/nowhere' })).rejects.not.toThrow(/s3cret/);
  });

  it('reports corrupt rows and gaps by seq instead of crashing', async () => {
    const url = await database();
    const log = await open(url, 'acme');
    await log.append(0, [tick(1), tick(2), tick(3)]);
    await sql(url, `UPDATE ahp_records SET action = '{"type": broken' WHERE partition = 'acme' AND seq = 2`);
    await expect(log.read(0, 10)).rejects.toThrow(/record 2 is corrupt: action column is not valid JSON/);
    await sql(url, `DELETE FROM ahp_records WHERE partition = 'acme' AND seq = 2`);
    await expect(log.read(0, 10)).rejects.toThrow(/partition "acme" is corrupt: records 2\.\.2 are missing/);
  });
});
