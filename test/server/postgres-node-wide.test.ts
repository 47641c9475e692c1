/**
 * The node-wide machinery of a PostgresStore against a REAL PostgreSQL server: the head poll
 * (postgres-follower.ts) and the lease sweep (postgres-lease-sweeper.ts), each one statement for
 * every partition of the process. A second store on the same database stands in for another
 * hub process.
 */
import { describe, expect, it } from 'vitest';
import type { LeaseClaims } from '../../server/storage/postgres-lease-sweeper.js';
import { postgresStoreFixtures } from '../helpers/postgres-store-fixtures.js';
import { waitFor } from '../helpers/wait-for.js';

describe('PostgresStore node-wide following', () => {
  const { database, openStore, sql } = postgresStoreFixtures('pgnode');

  it('hands every watched partition its own head from the node-wide poll, also a head that moved without any wake-up', async () => {
    const url = await database();
    const store = await openStore(url);
    const names = Array.from({ length: 50 }, (_, i) => `tenant-${i}`);
    const heard = new Map<string, number[]>();
    for (const name of names) {
      const log = await store.actionLog(name);
      heard.set(name, []);
      log.watchHead((head) => heard.get(name)!.push(head));
    }
    // A head moved by hand sends no NOTIFY: only the poll can tell the watcher.
    await sql(url, `UPDATE ahp_log_head SET head = 7 WHERE partition = 'tenant-13'`);
    await waitFor(() => (heard.get('tenant-13')!.includes(7) ? true : undefined), { what: 'the poll to report the moved head', timeoutMs: 10_000 });
    // Every other watcher heard its own head (0), never another partition's.
    for (const name of names.filter((n) => n !== 'tenant-13')) {
      await waitFor(() => (heard.get(name)!.length > 0 ? true : undefined), { what: `${name}'s head` });
      expect(new Set(heard.get(name))).toEqual(new Set([0]));
    }
  });

  it('one sweep renews this node’s leases and claims, per partition, the leases other nodes let expire or handed over', async () => {
    const url = await database();
    const dead = await openStore(url);
    const live = await openStore(url);
    const claims = new Map<string, LeaseClaims[]>();
    const partitions = ['acme', 'globex', 'initech'];
    // The dead node's leases lapse at once (ttl 0); it hands one over in initech as it drains.
    for (const p of ['acme', 'globex']) await dead.agentLeases(p, { node: 'dead', ttlMs: 0 }).hold('ahp-session:/lost');
    const drainer = dead.agentLeases('initech', { node: 'drainer', ttlMs: 60_000 });
    await drainer.hold('ahp-session:/handed');
    expect(await drainer.handOver(['ahp-session:/handed'])).toBe(1);
    // The live node holds a lease of its own in acme, which its sweeps keep renewed.
    const liveLeases = partitions.map((p) => live.agentLeases(p, { node: 'live', ttlMs: 400 }));
    await liveLeases[0]!.hold('ahp-session:/mine');
    const offs = liveLeases.map((leases, i) =>
      leases.onSweep(async (c) => {
        const list = claims.get(partitions[i]!) ?? [];
        list.push(c);
        claims.set(partitions[i]!, list);
      }),
    );
    await waitFor(() => (claims.size === 3 ? true : undefined), { what: 'a sweep to claim in all three partitions' });
    expect(claims.get('acme')).toEqual([{ expired: ['ahp-session:/lost'], handedOver: [] }]);
    expect(claims.get('globex')).toEqual([{ expired: ['ahp-session:/lost'], handedOver: [] }]);
    expect(claims.get('initech')).toEqual([{ expired: [], handedOver: ['ahp-session:/handed'] }]);
    // Several lifetimes later the live node's own lease is still there: every sweep renewed it.
    const firstExpiry = (await sql(url, `SELECT expires_at FROM ahp_agent_leases WHERE session = 'ahp-session:/mine'`)).rows[0].expires_at as Date;
    await waitFor(
      async () => {
        const r = await sql(url, `SELECT expires_at FROM ahp_agent_leases WHERE session = 'ahp-session:/mine'`);
        return (r.rows[0].expires_at as Date).getTime() > firstExpiry.getTime() + 1_000 ? true : undefined;
      },
      { what: 'the live lease to be renewed past its first lifetime' },
    );
    expect((await sql(url, `SELECT partition, session, node FROM ahp_agent_leases ORDER BY partition, session`)).rows).toEqual([
      { partition: 'acme', session: 'ahp-session:/mine', node: 'live' },
      { partition: 'initech', session: 'ahp-session:/handed', node: 'live' },
    ]);
    // Nothing is claimed twice: later sweeps found nothing more.
    for (const list of claims.values()) expect(list).toHaveLength(1);
    await Promise.all(offs.map((off) => off()));
  });
});
