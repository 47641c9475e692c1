/**
 * Several real hub processes (`node dist/server/main.js --store postgres://…`, port 0) on one
 * fresh database of the run's real PostgreSQL server: what a cluster behind a load balancer is,
 * minus the load balancer (tests pick the node each client talks to).
 */
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { freshDatabase } from '../helpers/postgres.js';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';

export interface Cluster {
  readonly storeUrl: string;
  readonly nodes: HubProcess[];
  /** Starts one more node on the same database. */
  addNode(): Promise<HubProcess>;
  stop(): Promise<void>;
}

/**
 * `server`: a PostgreSQL URL other than the run's shared one (tests that stop their server).
 * `args`: more flags for every node (e.g. `--auth FILE`).
 */
export async function startCluster(size: number, server?: string, args: readonly string[] = [], env?: Record<string, string>): Promise<Cluster> {
  const db = await freshDatabase('cluster', server);
  const nodes: HubProcess[] = [];
  const addNode = async (): Promise<HubProcess> => {
    const node = await startHubProcess(['--store', db.url, '--log-level', 'warn', ...args], env ? { env } : {});
    nodes.push(node);
    return node;
  };
  try {
    // One after the other: the first creates the schema (the others would wait on its lock anyway).
    for (let i = 0; i < size; i++) await addNode();
  } catch (error) {
    for (const n of nodes) n.child.kill('SIGKILL');
    await db.drop();
    throw error;
  }
  return {
    storeUrl: db.url,
    nodes,
    addNode,
    stop: async () => {
      await Promise.all(
        nodes.map(async (n) => {
          if (n.child.exitCode === null && n.child.signalCode === null) {
            n.child.kill('SIGTERM');
            await n.exited();
          }
        }),
      );
      await db.drop();
    },
  };
}

/**
 * Subscribes once the node has followed the log far enough to know the channel (a node learns of
 * a session another node created within one wake-up).
 */
export async function subscribeWhenKnown<S = Record<string, unknown>>(client: RpcClient, channel: string): Promise<{ state: S; fromSeq: number }> {
  return waitFor(() => client.subscribe<S>(channel), { what: `${channel} to reach this node`, timeoutMs: 15_000 });
}

/**
 * The newest `serverSeq` a node has folded, as a fresh client's `initialize` reports it (`/healthz`
 * deliberately shows no hub-wide counter).
 */
export async function headOf(node: HubProcess): Promise<number> {
  const client = await RpcClient.connect(node.wsUrl);
  try {
    return (await client.initialize()).serverSeq;
  } finally {
    await client.close();
  }
}

/**
 * How many times each queued message id (`chat/pendingMessageSet`) is in the cluster's log, read
 * straight from PostgreSQL: the writers' tests check every acknowledged action is there once.
 */
export async function queuedMessageCountsInLog(storeUrl: string): Promise<Map<string, number>> {
  const db = new pg.Client({ connectionString: storeUrl });
  await db.connect();
  try {
    const rows = await db.query<{ id: string; n: string }>(`SELECT action::json->>'id' AS id, COUNT(*) AS n FROM ahp_records WHERE action::json->>'type' = 'chat/pendingMessageSet' GROUP BY 1`);
    return new Map(rows.rows.map((r) => [r.id, Number(r.n)]));
  } finally {
    await db.end();
  }
}

/**
 * One cluster for a `describe`: started before its tests, stopped after them, with the clients the
 * tests push onto `clients` closed first. A `beforeAll` registered before this call runs before
 * the cluster starts; an `afterAll` registered after it runs before the cluster stops.
 */
export function clusterPerFile(size: number, args: readonly string[] = [], env?: Record<string, string>): { readonly cluster: Cluster; readonly clients: RpcClient[] } {
  let cluster: Cluster | undefined;
  const clients: RpcClient[] = [];
  beforeAll(async () => {
    cluster = await startCluster(size, undefined, args, env);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await cluster?.stop();
  });
  return {
    get cluster(): Cluster {
      if (!cluster) throw new Error('clusterPerFile: the cluster is not started (use it inside a test)');
      return cluster;
    },
    clients,
  };
}

/** The node's open WebSocket connections, from its /metrics (dev mode lets loopback read it). */
export async function connectionsOn(node: HubProcess): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  const match = /^ahp_hub_connections (\d+)$/m.exec(text);
  if (!match) throw new Error(`no ahp_hub_connections in ${node.url}/metrics`);
  return Number(match[1]);
}

export function hostPort(node: HubProcess): string {
  return new URL(node.url).host;
}
