/**
 * The PostgreSQL action log against a REAL PostgreSQL server (started once per run by the
 * globalSetup in test/helpers/postgres-global-setup.ts, or the one PG_URL names): the shared
 * contract, then what only a network engine shares between processes.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { ActionLog, LogRecord } from '../../server/storage/action-log.js';
import { LOG_NOTIFY_CHANNEL, PostgresActionLog } from '../../server/storage/postgres-action-log.js';
import { freshDatabase } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait-for.js';
import { describeActionLogContract } from './action-log.contract.js';

describeActionLogContract('PostgresActionLog', async () => {
  const db = await freshDatabase('contract');
  const opened: ActionLog[] = [];
  const open = async (): Promise<PostgresActionLog> => {
    const log = await PostgresActionLog.open({ url: db.url });
    opened.push(log);
    return log;
  };
  return {
    log: await open(),
    reopen: open,
    cleanup: async () => {
      for (const log of opened) await log.close();
      await db.drop();
    },
  };
}, { persistent: true });

function tick(serverSeq: number): LogRecord {
  return { serverSeq, channel: 'ahp://sessions/s1', action: { type: 'test/tick', n: serverSeq } };
}

describe('PostgresActionLog specifics', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function database(): Promise<string> {
    const db = await freshDatabase('pglog');
    cleanups.push(db.drop);
    return db.url;
  }
  async function open(url: string): Promise<PostgresActionLog> {
    const log = await PostgresActionLog.open({ url });
    cleanups.push(() => log.close());
    return log;
  }
  async function sql(url: string, text: string): Promise<pg.QueryResult> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await client.query(text);
    } finally {
      await client.end();
    }
  }

  it('creates its schema on first open, and several processes opening an empty database at once agree on one', async () => {
    const url = await database();
    const logs = await Promise.all([open(url), open(url), open(url)]);
    const version = await sql(url, `SELECT value FROM ahp_meta WHERE key = 'schema_version'`);
    expect(version.rows).toEqual([{ value: '1' }]);
    expect(await logs[2]!.head()).toBe(0);
  });

  it('of many pools appending at the same head, exactly one wins each round and the log has no gap', async () => {
    const url = await database();
    const logs = await Promise.all([open(url), open(url), open(url)]);
    for (let round = 0; round < 10; round++) {
      const head = await logs[0]!.head();
      const results = await Promise.all(logs.map((log) => log.append(head, [tick(head + 1), tick(head + 2)])));
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.filter((r) => !r.ok)).toEqual([{ ok: false, head: head + 2 }, { ok: false, head: head + 2 }]);
    }
    expect((await logs[1]!.read(0, 100)).map((r) => r.serverSeq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('notifies listeners on the ahp_log channel with the new head after each committed append', async () => {
    const url = await database();
    const log = await open(url);
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    cleanups.push(() => listener.end());
    const heads: string[] = [];
    listener.on('notification', (n) => heads.push(n.payload ?? ''));
    await listener.query(`LISTEN ${LOG_NOTIFY_CHANNEL}`);
    await log.append(0, [tick(1)]);
    await log.append(1, [tick(2), tick(3)]);
    expect(await log.append(1, [tick(2)])).toEqual({ ok: false, head: 3 }); // a lost race notifies nothing
    await waitFor(() => (heads.length >= 2 ? true : undefined), { what: 'two notifications' });
    expect(heads).toEqual(['1', '3']);
  });

  it('refuses a database with a newer schema version, with a clear error', async () => {
    const url = await database();
    await (await open(url)).close();
    await sql(url, `UPDATE ahp_meta SET value = '99' WHERE key = 'schema_version'`);
    await expect(PostgresActionLog.open({ url })).rejects.toThrow(/schema version 99.*newer build.*up to 1/);
  });

  it('names the server (never the password) when it cannot connect', async () => {
    await expect(PostgresActionLog.open({ url: 'postgres://someone:s3cret@127.0.0.1:1/nowhere' })).rejects.toThrow(
      /cannot open PostgreSQL log at postgres:\/\/someone@127\.0\.0\.1:1\/nowhere/,
    );
    await expect(PostgresActionLog.open({ url: 'postgres://someone:s3cret@127.0.0.1:1/nowhere' })).rejects.not.toThrow(/s3cret/);
  });

  it('reports corrupt rows and gaps by seq instead of crashing', async () => {
    const url = await database();
    const log = await open(url);
    await log.append(0, [tick(1), tick(2), tick(3)]);
    await sql(url, `UPDATE ahp_records SET action = '{"type": broken' WHERE seq = 2`);
    await expect(log.read(0, 10)).rejects.toThrow(/record 2 is corrupt: action column is not valid JSON/);
    await sql(url, 'DELETE FROM ahp_records WHERE seq = 2');
    await expect(log.read(0, 10)).rejects.toThrow(/records 2\.\.2 are missing/);
  });
});
