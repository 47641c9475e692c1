/**
 * What an idle cluster node costs PostgreSQL: a real hub process on a fresh database with
 * TENANTS tenants (one token each), each given a session and a message, then left alone. Its
 * transactions over a window are read from `pg_stat_database` (xact_commit + xact_rollback of
 * the hub's database, read from another database so the measuring itself is not counted).
 *
 * The bound, IDLE_TX_PER_SECOND_BOUND for the whole node, is what a node pays whatever its tenant
 * count: one head poll for every tenant at once (1/s) and one lease sweep for every tenant at once
 * (every ttl/4 = 1.25 s), ~2 transactions/s. Anything a node did per tenant on a timer would break
 * it: with TENANTS tenants, one statement per tenant every 30 s already makes 10/s.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { postgresUrl } from '../helpers/postgres.js';
import { tempDir } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';
import { startCluster, type Cluster } from './cluster.js';

const TENANTS = 300;
const IDLE_TX_PER_SECOND_BOUND = 10;
/** Long enough to span several rounds of every node-wide timer (head poll, lease sweep). */
const WINDOW_MS = 15_000;
const COMPACT_INTERVAL_MS = 5_000;
const SETTLE_MS = COMPACT_INTERVAL_MS + 12_000;

const tokenOf = (i: number): string => `idle-tenant-token-${String(i).padStart(6, '0')}`;

/** Committed plus rolled-back transactions of `database` so far (PostgreSQL's own counters). */
async function transactionsOf(admin: pg.Client, database: string): Promise<number> {
  const r = await admin.query<{ n: string }>('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [database]);
  return Number(r.rows[0]?.n ?? Number.NaN);
}

/** Lets time pass: the measurement window itself, not a wait for some condition. */
const elapse = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('an idle cluster node', () => {
  const dir = tempDir();
  let cluster: Cluster | undefined;
  const admin = new pg.Client({ connectionString: postgresUrl() });
  afterAll(async () => {
    await admin.end().catch(() => undefined);
    await cluster?.stop();
    dir.remove();
  });

  it(`costs PostgreSQL at most ${IDLE_TX_PER_SECOND_BOUND} transactions/s with ${TENANTS} tenants, whatever their number`, async () => {
    const tokens = Array.from({ length: TENANTS }, (_, i) => ({ token: tokenOf(i), user: `user-${i}`, tenant: `tenant-${i}`, role: 'user' }));
    const authFile = join(dir.dir, 'tokens.json');
    writeFileSync(authFile, JSON.stringify({ tokens }));
    // Compaction every COMPACT_INTERVAL_MS (not 60 s): its rounds over the setup's records end
    // before the window, and every round after them falls inside it.
    cluster = await startCluster(1, undefined, ['--auth', authFile], { HUB_COMPACT_INTERVAL_MS: String(COMPACT_INTERVAL_MS) });
    const node = cluster.nodes[0]!;

    // A little data in every tenant, a few tenants at a time.
    for (let i = 0; i < TENANTS; i += 20) {
      await Promise.all(
        tokens.slice(i, i + 20).map(async ({ token }) => {
          const client = await RpcClient.open(node.wsUrl, { token });
          try {
            const { chat } = await client.createSession('idle');
            await client.subscribe(chat);
            await client.dispatchAndWait(chat, { type: 'chat/draftChanged', draft: userMessage('hello') });
          } finally {
            await client.close();
          }
        }),
      );
    }

    await admin.connect();
    const database = new URL(cluster.storeUrl).pathname.slice(1);
    // Idle means the setup is behind: the compaction round over its records is over, and
    // PostgreSQL has published the counters of the backends that ran it (a backend that flushed
    // them less than a second before going idle holds the rest for 10 s, PGSTAT_IDLE_INTERVAL).
    await elapse(SETTLE_MS);
    const startedAt = Date.now();
    const before = await transactionsOf(admin, database);
    await elapse(WINDOW_MS);
    const after = await transactionsOf(admin, database);
    const perSecond = (after - before) / ((Date.now() - startedAt) / 1_000);
    console.log(`idle node, ${TENANTS} tenants: ${perSecond.toFixed(1)} PostgreSQL transactions/s over ${WINDOW_MS / 1_000} s`);
    expect(perSecond).toBeLessThanOrEqual(IDLE_TX_PER_SECOND_BOUND);
    // The node still serves its tenants afterwards.
    const client = await RpcClient.open(node.wsUrl, { token: tokenOf(TENANTS - 1) });
    try {
      const { chat } = await client.createSession('after');
      await client.subscribe(chat);
      expect((await client.dispatchAndWait(chat, { type: 'chat/draftChanged', draft: userMessage('still here') })).serverSeq).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  }, 240_000);
});
