/**
 * PostgresStore partitions against a REAL PostgreSQL server: each partition (one tenant's hub)
 * has its own log, serverSeqs, snapshots, write turn, wake-ups and agent leases, while the store
 * shares one pool and one LISTEN connection. A second store on the same database stands in for
 * another hub process.
 */
import { describe, expect, it } from 'vitest';
import type { LogRecord } from '../../server/storage/action-log.js';
import { PostgresStore } from '../../server/storage/postgres-store.js';
import { postgresStoreFixtures } from '../helpers/postgres-store-fixtures.js';
import { waitFor } from '../helpers/wait-for.js';

function record(serverSeq: number, tenant: string): LogRecord {
  return { serverSeq, channel: 'ahp-session:/x', action: { type: 'test/tick', tenant, n: serverSeq } };
}

function records(from: number, to: number, tenant: string): LogRecord[] {
  return Array.from({ length: to - from + 1 }, (_, i) => record(from + i, tenant));
}

describe('PostgresStore partitions', () => {
  const { cleanups, database, openStore, sql } = postgresStoreFixtures('pgstore');
  it('gives two partitions independent heads and serverSeqs from 1; reads, snapshots and compaction never see the other', async () => {
    const store = await openStore(await database());
    const acme = await store.actionLog('acme');
    const globex = await store.actionLog('globex');

    expect(await acme.append(0, records(1, 5, 'acme'))).toEqual({ ok: true, head: 5 });
    expect(await globex.append(0, records(1, 2, 'globex'))).toEqual({ ok: true, head: 2 });
    // Appending at the other partition's head is a lost race, not a success.
    expect(await globex.append(5, [record(6, 'globex')])).toEqual({ ok: false, head: 2 });
    expect(await acme.head()).toBe(5);
    expect(await globex.head()).toBe(2);
    expect(await acme.read(0, 100)).toStrictEqual(records(1, 5, 'acme'));
    expect(await globex.read(0, 100)).toStrictEqual(records(1, 2, 'globex'));

    await acme.saveSnapshot({ serverSeq: 4, data: 'acme at 4' });
    expect(await globex.latestSnapshot()).toBeUndefined();
    // globex has no snapshot of its own, so compacting it is refused (acme's does not count).
    await expect(globex.compact(1)).rejects.toThrow();
    await acme.compact(4);
    expect(await acme.oldestSeq()).toBe(5);
    expect(await acme.read(0, 100)).toStrictEqual([record(5, 'acme')]);
    expect(await globex.oldestSeq()).toBe(1);
    expect(await globex.read(0, 100)).toStrictEqual(records(1, 2, 'globex'));

    // Snapshot pruning (two kept) counts per partition too.
    await globex.saveSnapshot({ serverSeq: 1, data: 'globex at 1' });
    await acme.saveSnapshot({ serverSeq: 5, data: 'acme at 5' });
    await acme.append(5, [record(6, 'acme')]);
    await acme.saveSnapshot({ serverSeq: 6, data: 'acme at 6' });
    expect(await globex.latestSnapshot()).toEqual({ serverSeq: 1, data: 'globex at 1' });

    // A write turn on globex hands over globex's records only.
    const turn = await globex.beginWriteTurn(0);
    expect(turn.head).toBe(2);
    expect(turn.missed).toStrictEqual(records(1, 2, 'globex'));
    expect(await turn.append([record(3, 'globex')])).toEqual({ ok: true, head: 3 });
    expect(await acme.head()).toBe(6);
  });

  it('a write turn held on one partition does not block an append on another, but does block its own partition', async () => {
    const url = await database();
    const store = await openStore(url);
    const acme = await store.actionLog('acme');
    const globex = await store.actionLog('globex');
    const acmeTurn = await acme.beginWriteTurn(0);
    cleanups.push(() => acmeTurn.release());

    // If globex waited on acme's row lock, this await would never resolve (the test would time out).
    expect(await globex.append(0, [record(1, 'globex')])).toEqual({ ok: true, head: 1 });
    const globexTurn = await globex.beginWriteTurn(1);
    expect(await globexTurn.append([record(2, 'globex')])).toEqual({ ok: true, head: 2 });

    // The control: another process's append to acme waits on acme's head row while the turn is held.
    const otherProcess = await (await openStore(url)).actionLog('acme');
    let settled = false;
    const blocked = otherProcess.append(0, [record(1, 'acme')]).finally(() => {
      settled = true;
    });
    await waitFor(
      async () => {
        const waiting = await sql(
          url,
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'SELECT head FROM ahp_log_head%FOR UPDATE'`,
        );
        return waiting.rows[0].n === 1 ? true : undefined;
      },
      { what: "the other process's acme append to wait on acme's head row" },
    );
    expect(settled).toBe(false);
    expect(await acmeTurn.append([record(1, 'acme')])).toEqual({ ok: true, head: 1 });
    expect(await blocked).toEqual({ ok: false, head: 1 });
  });

  it('wakes only the listeners of the partition appended to, also for appends by another process, over one LISTEN connection', async () => {
    const url = await database();
    const store = await openStore(url);
    const acme = await store.actionLog('acme');
    const globex = await store.actionLog('globex');
    const initech = await store.actionLog('initech');
    // The longest name, each character escaped to 6 bytes of JSON: the NOTIFY payload (limit
    // 8000 bytes) still carries it whole.
    const longest = '\u0001'.repeat(256);
    const longestLog = await store.actionLog(longest);
    const heard: Record<string, number[]> = { acme: [], globex: [], initech: [], longest: [] };
    acme.onAppended((head) => heard['acme']!.push(head));
    globex.onAppended((head) => heard['globex']!.push(head));
    initech.onAppended((head) => heard['initech']!.push(head));
    longestLog.onAppended((head) => heard['longest']!.push(head));

    const other = await openStore(url);
    const otherAcme = await other.actionLog('acme');
    const otherGlobex = await other.actionLog('globex');
    const otherLongest = await other.actionLog(longest);
    // The LISTEN starts in the background: append to acme until acme's listener hears it.
    let acmeHead = 0;
    await waitFor(
      async () => {
        if (heard['acme']!.length > 0) return true;
        await otherAcme.append(acmeHead, [record(acmeHead + 1, 'acme')]);
        acmeHead++;
        return undefined;
      },
      { what: 'the store to be listening' },
    );
    await waitFor(() => (heard['acme']!.includes(acmeHead) ? true : undefined), { what: 'the last warm-up wake-up' });
    heard['acme'] = [];

    expect(await otherGlobex.append(0, records(1, 3, 'globex'))).toEqual({ ok: true, head: 3 });
    expect(await otherLongest.append(0, records(1, 2, 'longest'))).toEqual({ ok: true, head: 2 });
    expect(await otherAcme.append(acmeHead, [record(acmeHead + 1, 'acme')])).toEqual({ ok: true, head: acmeHead + 1 });
    // Notifications arrive in commit order, so once acme's is heard globex's has been delivered.
    await waitFor(() => (heard['acme']!.includes(acmeHead + 1) ? true : undefined), { what: "acme's wake-up" });
    expect(heard['acme']).toEqual([acmeHead + 1]);
    expect(heard['globex']).toEqual([3]);
    expect(heard['initech']).toEqual([]);
    expect(heard['longest']).toEqual([2]);

    // Four partitions listening, one connection doing it.
    const listening = await sql(url, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN ahp_log'`);
    expect(listening.rows[0].n).toBe(1);
  });

  it('a wake-up listener that throws is reported, and the other listeners still hear every append', async () => {
    const url = await database();
    const reported: string[] = [];
    const store = await PostgresStore.open({ url, onConnectionError: (error) => reported.push(error.message) });
    cleanups.push(() => store.close());
    const acme = await store.actionLog('acme');
    const heard: number[] = [];
    acme.onAppended(() => {
      throw new Error('listener bug');
    });
    acme.onAppended((head) => heard.push(head));
    let head = 0;
    await waitFor(
      async () => {
        if (heard.length > 0) return true;
        await acme.append(head, [record(head + 1, 'acme')]);
        head++;
        return undefined;
      },
      { what: 'the first wake-up' },
    );
    expect(await acme.append(head, [record(head + 1, 'acme')])).toEqual({ ok: true, head: head + 1 });
    await waitFor(() => (heard.includes(head + 1) ? true : undefined), { what: 'the wake-up after a listener threw' });
    expect(reported.length).toBeGreaterThan(0);
    expect(reported[0]).toBe('a wake-up listener of partition "acme" threw: listener bug');
  });

  it('keeps the leases of the same session name in two partitions apart', async () => {
    const url = await database();
    const store = await openStore(url);
    const session = 'ahp-session:/x';
    const acmeLeases = store.agentLeases('acme', { node: 'node-1', ttlMs: 60_000 });
    const globexLeases = store.agentLeases('globex', { node: 'node-2', ttlMs: 0 });
    await acmeLeases.hold(session);
    await globexLeases.hold(session);
    const holders = await sql(url, 'SELECT partition, session, node FROM ahp_agent_leases ORDER BY partition');
    expect(holders.rows).toEqual([
      { partition: 'acme', session, node: 'node-1' },
      { partition: 'globex', session, node: 'node-2' },
    ]);

    // globex's lease lapses (ttl 0): only globex claims it; acme's holder and lease stay.
    expect(await acmeLeases.claimExpired()).toEqual([]);
    expect(
      await waitFor(
        async () => {
          const claimed = await globexLeases.claimExpired();
          return claimed.length > 0 ? claimed : undefined;
        },
        { what: "globex's expired lease" },
      ),
    ).toEqual([session]);
    expect((await sql(url, 'SELECT partition, node FROM ahp_agent_leases')).rows).toEqual([{ partition: 'acme', node: 'node-1' }]);

    // The same node id in two partitions: renewing in one leaves the other's expiry alone.
    const acmeAsNode2 = store.agentLeases('acme', { node: 'node-2', ttlMs: 60_000 });
    const globexAsNode2 = store.agentLeases('globex', { node: 'node-2', ttlMs: 60_000 });
    await acmeAsNode2.hold('ahp-session:/y');
    await sql(url, `UPDATE ahp_agent_leases SET expires_at = now() - interval '1 hour' WHERE session = 'ahp-session:/y'`);
    await globexAsNode2.renew();
    expect(await acmeAsNode2.claimExpired()).toEqual(['ahp-session:/y']);
  });

  it('refuses a schema-1 database (one log for all tenants, development builds only) with what to do, and changes nothing', async () => {
    const url = await database();
    // The schema-1 layout as the development builds created it.
    await sql(
      url,
      `
      CREATE TABLE ahp_meta (key text PRIMARY KEY, value text NOT NULL);
      CREATE TABLE ahp_log_head (only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row), head bigint NOT NULL CHECK (head >= 0));
      CREATE TABLE ahp_records (seq bigint PRIMARY KEY, channel text NOT NULL, action text NOT NULL, origin text);
      CREATE TABLE ahp_snapshots (seq bigint PRIMARY KEY, data text NOT NULL);
      CREATE TABLE ahp_agent_leases (session text PRIMARY KEY, node text NOT NULL, expires_at timestamptz NOT NULL);
      INSERT INTO ahp_log_head (head) VALUES (1);
      INSERT INTO ahp_records (seq, channel, action) VALUES (1, 'ahp-session:/x', '{"type":"test/tick"}');
      INSERT INTO ahp_meta (key, value) VALUES ('schema_version', '1');
    `,
    );
    await expect(PostgresStore.open({ url })).rejects.toThrow(/schema version 1: it was created by a development build before per-tenant partitions.*Drop its ahp_\* tables.*or give the hub a new, empty database/);
    expect((await sql(url, `SELECT value FROM ahp_meta WHERE key = 'schema_version'`)).rows).toEqual([{ value: '1' }]);
    expect((await sql(url, 'SELECT seq, channel FROM ahp_records')).rows).toEqual([{ seq: '1', channel: 'ahp-session:/x' }]);
  });

  it('accepts any partition name of 1..256 characters as data, and refuses the rest with a clear error', async () => {
    const url = await database();
    const store = await openStore(url);
    const names = ["x'; DROP TABLE ahp_records; --", '日本', 'a'.repeat(256), 'dev', 'Dev', ' dev', '👩‍👩‍👧'];
    for (const [i, name] of names.entries()) {
      const log = await store.actionLog(name);
      expect(await log.append(0, records(1, i + 1, name))).toEqual({ ok: true, head: i + 1 });
    }
    for (const [i, name] of names.entries()) {
      expect(await (await store.actionLog(name)).read(0, 100)).toStrictEqual(records(1, i + 1, name));
    }
    const stored = await sql(url, 'SELECT partition FROM ahp_log_head ORDER BY partition');
    expect(stored.rows.map((r) => r.partition).sort()).toEqual([...names].sort());

    await expect(store.actionLog('')).rejects.toThrow(/partition name must be a string of 1\.\.256 characters, got 0 characters/);
    await expect(store.actionLog('a'.repeat(257))).rejects.toThrow(/1\.\.256 characters, got 257 characters/);
    await expect(store.actionLog('nul\u0000')).rejects.toThrow(/must not contain the NUL character/);
    await expect(store.actionLog('half \ud83d')).rejects.toThrow(/well-formed Unicode/);
    expect(() => store.agentLeases('', { node: 'n', ttlMs: 1 })).toThrow(/1\.\.256 characters/);
  });

  it('closing a partition log or its leases leaves the store and its other partitions working; closing the store ends them all', async () => {
    const url = await database();
    const store = await openStore(url);
    const acme = await store.actionLog('acme');
    const globex = await store.actionLog('globex');
    const leases = store.agentLeases('acme', { node: 'n', ttlMs: 60_000 });
    const heardByGlobex: number[] = [];
    globex.onAppended((head) => heardByGlobex.push(head));

    await acme.close();
    await leases.close();
    await expect(acme.head()).rejects.toThrow(/PostgresActionLog for .*partition "acme" is closed/);
    await expect(leases.hold('s')).rejects.toThrow(/closed/);
    // The LISTEN starts in the background: append until globex's listener hears one.
    let globexHead = 0;
    await waitFor(
      async () => {
        if (heardByGlobex.length > 0) return true;
        expect(await globex.append(globexHead, [record(globexHead + 1, 'globex')])).toEqual({ ok: true, head: globexHead + 1 });
        globexHead++;
        return undefined;
      },
      { what: "globex's wake-up after acme closed" },
    );
    expect(await (await store.actionLog('acme')).head()).toBe(0);
    await store.agentLeases('acme', { node: 'n', ttlMs: 60_000 }).hold('s');

    await store.close();
    await expect(globex.head()).rejects.toThrow(/PostgresStore of .*partition "globex" is closed/);
    await expect(store.actionLog('acme')).rejects.toThrow(/PostgresStore for .* is closed/);
    await store.close(); // idempotent
  });
});
