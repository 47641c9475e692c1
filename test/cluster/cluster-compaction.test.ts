/**
 * Compaction of the shared log: on a schedule, one node at a time (a PostgreSQL try-lock per
 * tenant) prunes every snapshot but the newest and every record older than both the newest
 * snapshot and the replay window. Here the window is 30 records and nodes snapshot every 10 of
 * their appends, so after writing 180 actions the tenant's partition holds one snapshot and
 * exactly the last 30 records; a client reconnecting from before them gets a snapshot (never a
 * replay with a gap), on a running node and on a node started after the compaction.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { ReconnectResult } from '../../shared/protocol/messages.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { clusterPerFile, subscribeWhenKnown } from './cluster.js';
import { Writer } from './writer.js';

const WINDOW = 30;
const WRITES = 90;

interface Retained {
  head: number;
  records: number;
  oldest: number;
  snapshots: number[];
}

async function retained(storeUrl: string): Promise<Retained> {
  const db = new pg.Client({ connectionString: storeUrl });
  await db.connect();
  try {
    const head = await db.query<{ head: string }>(`SELECT head FROM ahp_log_head WHERE partition = 'dev'`);
    const records = await db.query<{ n: string; oldest: string | null }>(`SELECT COUNT(*) AS n, MIN(seq) AS oldest FROM ahp_records WHERE partition = 'dev'`);
    const snapshots = await db.query<{ seq: string }>(`SELECT seq FROM ahp_snapshots WHERE partition = 'dev' ORDER BY seq`);
    return {
      head: Number(head.rows[0]?.head ?? 0),
      records: Number(records.rows[0]?.n ?? 0),
      oldest: Number(records.rows[0]?.oldest ?? 0),
      snapshots: snapshots.rows.map((r) => Number(r.seq)),
    };
  } finally {
    await db.end();
  }
}

describe('shared log compaction', () => {
  const fx = clusterPerFile(2, [], { HUB_COMPACT_INTERVAL_MS: '200', HUB_REPLAY_WINDOW: String(WINDOW), HUB_SNAPSHOT_EVERY: '10' });

  it('keeps only the newest snapshot and the replay window, reports what it keeps, and answers an old reconnect with a snapshot', async () => {
    const [n1, n2] = fx.cluster.nodes;
    const alice = await RpcClient.open(n1!.wsUrl);
    fx.clients.push(alice);
    const { chat } = await alice.createSession('compaction');
    const { fromSeq: early } = await alice.subscribe(chat);
    const watcher = await RpcClient.open(n2!.wsUrl);
    fx.clients.push(watcher);
    await subscribeWhenKnown(watcher, chat);

    // Two chats (a chat queues at most 100 messages), so the log outgrows the nodes' in-memory
    // replay windows too (30 envelopes, trimmed in chunks of 64): an old reconnect cannot be replayed.
    const bob = await RpcClient.open(n1!.wsUrl);
    fx.clients.push(bob);
    const other = await bob.createSession('more writes');
    await bob.subscribe(other.chat);
    const writers = [new Writer('w', alice, chat), new Writer('v', bob, other.chat)];
    for (const w of writers) await w.run(WRITES);
    for (const w of writers) expect(w.echoed.size).toBe(WRITES);

    // Compaction rounds run every 200 ms on both nodes; wait for the partition to settle at the bound.
    const kept = await waitFor(
      async () => {
        const r = await retained(fx.cluster.storeUrl);
        return r.snapshots.length === 1 && r.head - r.snapshots[0]! <= WINDOW && r.records === WINDOW ? r : undefined;
      },
      { what: `the partition to hold one snapshot and the last ${WINDOW} records`, timeoutMs: 20_000 },
    );
    expect(kept.head).toBeGreaterThan(2 * WRITES);
    expect(kept.oldest).toBe(kept.head - WINDOW + 1);

    // The retained bytes are a per-tenant metric.
    const metrics = await (await fetch(`${n1!.url}/metrics`)).text();
    const bytes = Number(/^ahp_hub_log_retained_bytes\{tenant="dev"\} (\d+)/m.exec(metrics)?.[1]);
    expect(bytes).toBeGreaterThan(0);

    // A client that last saw the chat before everything kept reconnects: snapshots, not a gap.
    const reconnectFromEarly = async (wsUrl: string): Promise<ReconnectResult> => {
      const late = await RpcClient.open(wsUrl);
      fx.clients.push(late);
      return late.request<ReconnectResult>('reconnect', { channel: 'ahp-root://', clientId: late.clientId, lastSeenServerSeq: early, subscriptions: [chat] });
    };
    const queued = (r: ReconnectResult): number => {
      if (r.type !== 'snapshot') throw new Error(`expected snapshots, got a ${r.type} of ${r.actions.length} actions`);
      const snap = r.snapshots.find((s) => s.resource === chat) as { state: { queuedMessages?: unknown[] } } | undefined;
      return snap?.state.queuedMessages?.length ?? -1;
    };
    expect(queued(await reconnectFromEarly(n2!.wsUrl))).toBe(WRITES);
    // A node started after the compaction loads the snapshot and the kept records.
    const n3 = await fx.cluster.addNode();
    expect(queued(await reconnectFromEarly(n3.wsUrl))).toBe(WRITES);
  }, 90_000);
});
