/**
 * Three hub processes under write load while PostgreSQL goes away again and again: five fast
 * restarts (`pg_ctl stop -m fast`, then start), two immediate ones (`-m immediate`) and five
 * terminations of every backend the hubs hold (`pg_terminate_backend`, aimed at a moment when a
 * write turn is open). After every fault:
 * all three processes are still running, and each accepts a write within 10 s of the database
 * being back. At the end: every action a writer saw echoed is in the log exactly once and in every
 * node's state, and the three replicas are equal.
 *
 * Before the fix a node holding a write turn (or any checked-out pooled client) died on the
 * first fault with "Unhandled 'error' event" (57P01), and a node whose batch failed exited.
 *
 * This file stops its server, so it runs its own PostgreSQL instead of the run's shared one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HubProcess } from '../helpers/hub-process.js';
import { startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { queuedMessageCountsInLog, startCluster, subscribeWhenKnown, type Cluster } from '../cluster/cluster.js';
import { Writer } from '../cluster/writer.js';
import { terminateHubBackends } from './pg-faults.js';

const alive = (n: HubProcess): boolean => n.child.exitCode === null && n.child.signalCode === null;
type Queued = { queuedMessages?: Array<{ id: string }> };
/** Actions each writer gets echoed per cycle (it keeps sending through the fault). */
const PER_WRITER = 30;

/** Dispatches one probe on `node` until it is accepted (refusals while the log is away are retried). */
async function acceptsWrite(node: HubProcess, chat: string, id: string): Promise<void> {
  await waitFor(
    async () => {
      if (!alive(node)) return Promise.reject(new Error(`${node.url} exited: ${node.stderr().slice(-1500)}`));
      // A fresh client per attempt: a tenant reload closes the node's connections (4503).
      const client = await RpcClient.open(node.wsUrl);
      try {
        await client.subscribe(chat);
        const echo = await client.dispatchAndWait(chat, { type: 'chat/pendingMessageSet', kind: 'queued', id, message: { text: id, origin: { kind: 'user' } } });
        return echo.rejectionReason === undefined || /already applied/.test(echo.rejectionReason) ? true : undefined;
      } finally {
        await client.close();
      }
    },
    { what: `a write on ${node.url} to be accepted`, timeoutMs: 20_000 },
  );
}

/** A new session on `node` (its connection may be closed by a tenant reload, so one per call). */
async function createSessionOn(node: HubProcess, title: string): Promise<string> {
  return waitFor(
    async () => {
      const client = await RpcClient.open(node.wsUrl);
      try {
        return (await client.createSession(title)).chat;
      } finally {
        await client.close();
      }
    },
    { what: `a session on ${node.url}`, timeoutMs: 20_000 },
  );
}

describe('PostgreSQL outages under load (three nodes)', () => {
  let server: RunningPostgres;
  let cluster: Cluster;
  const clients: RpcClient[] = [];
  beforeAll(async () => {
    server = await startPostgres();
    cluster = await startCluster(3, server.url);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await cluster?.stop().catch(() => undefined);
    server?.stop();
  });

  it('five fast restarts, two immediate ones and five terminations of every hub backend: nodes stay up, write again within 10 s, lose nothing echoed, end equal', async () => {
    const nodes = cluster.nodes as [HubProcess, HubProcess, HubProcess];
    const probeChat = await createSessionOn(nodes[0], 'probes');
    // Five fast restarts and five terminations (the acceptance run), plus two immediate restarts
    // (no clean shutdown: PostgreSQL runs crash recovery when it starts again).
    const faults: Array<'fast' | 'immediate' | 'terminate'> = ['fast', 'terminate', 'fast', 'terminate', 'immediate', 'fast', 'terminate', 'fast', 'terminate', 'immediate', 'fast', 'terminate'];
    const allWriters: Writer[] = [];
    const recoveries: number[] = [];
    let turnsCut = 0;
    for (const [cycle, fault] of faults.entries()) {
      // Fresh chats and clients each cycle (a chat holds at most 100 queued messages).
      const writers: Array<{ writer: Writer; home: HubProcess }> = [];
      for (const [index, home] of nodes.entries()) {
        const chat = await createSessionOn(home, `load-${cycle}-${index}`);
        const client = await RpcClient.open(home.wsUrl);
        await subscribeWhenKnown(client, chat);
        writers.push({ writer: new Writer(`c${cycle}n${index}`, client, chat), home });
      }
      allWriters.push(...writers.map((w) => w.writer));
      // A writer whose connection the node closed (its tenant reopened) moves back to the same node.
      let moving = false;
      const keepConnected = setInterval(() => {
        if (moving) return;
        const closed = writers.find((w) => w.writer.client.closed && alive(w.home));
        if (!closed) return;
        moving = true;
        void closed.writer
          .moveTo(closed.home.wsUrl)
          .catch(() => undefined)
          .finally(() => (moving = false));
      }, 20);
      const runs = writers.map((w) => w.writer.run(PER_WRITER, 2));
      await waitFor(() => (writers.every((w) => w.writer.echoed.size >= 3) ? true : undefined), { what: 'load before the fault', timeoutMs: 20_000 });

      if (fault !== 'terminate') {
        server.stopServer(fault);
        server.start();
      } else {
        const cut = await terminateHubBackends(server.url, cluster.storeUrl);
        expect(cut.terminated).toBeGreaterThan(0);
        if (cut.duringTurn) turnsCut++;
      }
      const backAt = Date.now();
      // Every node stays up and takes a write within 10 s of the database being back.
      await Promise.all(nodes.map((n, i) => acceptsWrite(n, probeChat, `probe-${cycle}-${i}`)));
      recoveries.push(Date.now() - backAt);
      for (const n of nodes) expect(alive(n), `${n.url} after ${fault} ${cycle}: ${n.stderr().slice(-2000)}`).toBe(true);

      await Promise.all(runs);
      clearInterval(keepConnected);
      await Promise.all(writers.map((w) => w.writer.client.close()));
    }
    expect(Math.max(...recoveries), `recovery times ${recoveries.join(', ')} ms`).toBeLessThan(10_000);
    expect(turnsCut).toBeGreaterThan(0);

    // Every echoed action is in the log once and in every node's state, and the replicas are equal.
    const counts = await queuedMessageCountsInLog(cluster.storeUrl);
    for (const w of allWriters) {
      expect(w.echoed.size).toBe(PER_WRITER);
      for (const id of w.echoed) expect(counts.get(id), id).toBe(1);
    }
    const readers = await Promise.all(nodes.map((n) => RpcClient.open(n.wsUrl)));
    clients.push(...readers);
    for (const chat of [probeChat, ...allWriters.map((w) => w.chat)]) {
      const states = await waitFor(
        async () => {
          const snaps = await Promise.all(readers.map((r) => r.subscribe<Queued>(chat)));
          const texts = snaps.map((s) => JSON.stringify(s.state));
          return texts.every((t) => t === texts[0]) ? snaps : undefined;
        },
        { what: `the replicas of ${chat} to be equal`, timeoutMs: 15_000 },
      );
      const writer = allWriters.find((w) => w.chat === chat);
      if (writer) {
        const ids = new Set((states[0]!.state.queuedMessages ?? []).map((m) => m.id));
        for (const id of writer.echoed) expect(ids.has(id), `${id} in the state of ${chat}`).toBe(true);
      }
    }
  }, 240_000);
});
