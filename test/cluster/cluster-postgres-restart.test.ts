/**
 * PostgreSQL restarts (fast shutdown) while clients on two hub processes keep dispatching. While
 * it is down, the nodes say so (/healthz 200 `degraded` naming the log) and refuse writes with a clear
 * reason instead of hanging or accepting what they cannot make durable. No node exits: a batch
 * that was mid-commit is retried, or, when another node appended in its place, its tenant is
 * reloaded from the log in-process (test/faults/postgres-outages.test.ts has the heavier run).
 * Afterwards nothing acknowledged is lost and nothing is applied twice.
 *
 * This file stops its server, so it runs its own PostgreSQL instead of the run's shared one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HubProcess } from '../helpers/hub-process.js';
import { startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { queuedMessageCountsInLog, startCluster, subscribeWhenKnown, type Cluster } from './cluster.js';
import { Writer } from './writer.js';

const alive = (n: HubProcess): boolean => n.child.exitCode === null && n.child.signalCode === null;

async function health(node: HubProcess): Promise<{ status: number; body: { status: string; message?: string } } | undefined> {
  try {
    const res = await fetch(`${node.url}/healthz`);
    return { status: res.status, body: (await res.json()) as { status: string; message?: string } };
  } catch {
    return undefined;
  }
}

describe('PostgreSQL restarts under load', () => {
  let server: RunningPostgres;
  let cluster: Cluster;
  const clients: RpcClient[] = [];
  beforeAll(async () => {
    server = await startPostgres();
    cluster = await startCluster(2, server.url);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await cluster?.stop().catch(() => undefined);
    server?.stop();
  });

  it('nodes report the outage, refuse writes clearly while it lasts, and lose no acknowledged action', async () => {
    const [n1, n2] = cluster.nodes as [HubProcess, HubProcess];
    const owner = await RpcClient.open(n1.wsUrl);
    clients.push(owner);
    // One chat per writer: a chat holds at most 100 queued messages.
    const writers: Writer[] = [];
    for (const [index, node] of [n1, n2, n1, n2].entries()) {
      const { chat } = await owner.createSession(`outage-${index}`);
      const client = await RpcClient.open(node.wsUrl);
      clients.push(client);
      await subscribeWhenKnown(client, chat);
      writers.push(new Writer(`w${index}`, client, chat));
    }
    const PER_WRITER = 80;
    const runs = writers.map((w) => w.run(PER_WRITER));
    await waitFor(() => (writers.reduce((n, w) => n + w.echoed.size, 0) >= PER_WRITER ? true : undefined), { what: 'load', timeoutMs: 20_000 });
    const echoedBefore = writers.reduce((n, w) => n + w.echoed.size, 0);

    server.stopServer();
    // Every node says its storage fails, by name, on its health check: up and answering (200
    // `degraded`, issue 33.6), so the proxy keeps routing to nodes that all share the outage.
    const reporting = await waitFor(
      async () => {
        const live = cluster.nodes.filter(alive);
        const checks = await Promise.all(live.map(health));
        const down = (c: Awaited<ReturnType<typeof health>>): boolean => c !== undefined && c.status === 200 && c.body.status === 'degraded' && /action log/i.test(c.body.message ?? '');
        return checks.every((c) => c === undefined || down(c)) && checks.some(down) ? live.filter((_, i) => down(checks[i])) : undefined;
      },
      { what: 'nodes to report the outage', timeoutMs: 30_000 },
    );
    // A write on such a node is refused with a reason, not hung and not acknowledged.
    const probe = await RpcClient.open(reporting[0]!.wsUrl);
    clients.push(probe);
    const echo = await probe.dispatchAndWait(writers[0]!.chat, { type: 'chat/pendingMessageSet', kind: 'queued', id: 'probe', message: { text: 'probe', origin: { kind: 'user' } } });
    expect(echo.rejectionReason).toMatch(/action log is unavailable/);
    expect(writers.reduce((n, w) => n + w.echoed.size, 0)).toBeLessThanOrEqual(echoedBefore + writers.length * 4);

    server.start();
    for (const node of [n1, n2]) expect(alive(node), node.stderr().slice(-1000)).toBe(true);
    await waitFor(
      async () => {
        const checks = await Promise.all(cluster.nodes.filter(alive).map(health));
        return checks.every((c) => c?.status === 200 && c.body.status === 'ok') ? true : undefined;
      },
      { what: 'nodes healthy again', timeoutMs: 15_000 },
    );
    // A node whose in-doubt batch was appended by the other node reloads its tenant and closes its
    // connections (4503), possibly after it is healthy again: a writer the hub closed reconnects
    // to its node, as an SDK client does, until every writer has all its actions answered.
    let finished = false;
    void Promise.all(runs).then(() => (finished = true));
    await waitFor(
      async () => {
        for (const w of writers) {
          if (!w.client.closed) continue;
          const home = [n1, n2].find((n) => w.client.ws.url.startsWith(n.wsUrl))!;
          await w.moveTo(home.wsUrl);
          clients.push(w.client);
        }
        return finished ? true : undefined;
      },
      { what: 'every writer to have each action answered (reconnecting any the hub closed)', timeoutMs: 60_000 },
    );

    const allEchoed = writers.flatMap((w) => [...w.echoed]);
    expect(allEchoed).toHaveLength(PER_WRITER * writers.length);
    const counts = await queuedMessageCountsInLog(cluster.storeUrl);
    for (const id of allEchoed) expect(counts.get(id), id).toBe(1);
    expect(counts.has('probe')).toBe(false);
    // Every live node converges on the state holding every acknowledged action.
    const live = cluster.nodes.filter(alive);
    const reader = await RpcClient.open(live[live.length - 1]!.wsUrl);
    clients.push(reader);
    for (const w of writers) {
      const state = await waitFor(
        async () => {
          const snap = await reader.subscribe<{ queuedMessages?: Array<{ id: string }> }>(w.chat);
          const ids = new Set((snap.state.queuedMessages ?? []).map((m) => m.id));
          return [...w.echoed].every((id) => ids.has(id)) ? ids : undefined;
        },
        { what: `every action ${w.name} saw acknowledged in its chat` },
      );
      expect(state.size).toBe(w.echoed.size);
    }
  }, 120_000);
});
