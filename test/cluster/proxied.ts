/**
 * A cluster behind the real HAProxy for a `describe` (see haproxy.ts and cluster.ts), plus what
 * the drain and rolling-restart tests do to its nodes: drain one with SIGTERM, start it again on
 * the same port (the proxy's configuration names fixed addresses), and read what HAProxy said.
 */
import { afterAll, beforeAll } from 'vitest';
import { isPartOfKind, type ChatState } from '../../shared/protocol/state.js';
import { startHaproxy, type RunningHaproxy } from '../helpers/haproxy.js';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import type { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { clusterPerFile, hostPort, type Cluster } from './cluster.js';
import type { SdkWriter } from './sdk-writer.js';

export interface ProxiedCluster {
  readonly cluster: Cluster;
  readonly proxy: RunningHaproxy;
  readonly clients: RpcClient[];
  readonly writers: SdkWriter[];
}

export function proxiedClusterPerFile(): ProxiedCluster {
  const fx = clusterPerFile(3);
  let proxy: RunningHaproxy | undefined;
  const writers: SdkWriter[] = [];
  beforeAll(async () => {
    proxy = await startHaproxy(fx.cluster.nodes.map(hostPort));
  }, 30_000);
  afterAll(async () => {
    for (const w of writers.splice(0)) w.close();
    await proxy?.stop();
  });
  return {
    get cluster() {
      return fx.cluster;
    },
    get proxy() {
      if (!proxy) throw new Error('the proxy is not started (use it inside a test)');
      return proxy;
    },
    clients: fx.clients,
    writers,
  };
}

/** How many times HAProxy reported `hub-N` going to `state` so far. */
export function proxySaid(proxy: RunningHaproxy, name: string, state: 'UP' | 'DOWN'): number {
  return proxy
    .output()
    .split('\n')
    .filter((line) => line.includes(`Server hubs/${name} is ${state}`)).length;
}

/**
 * SIGTERM: the node drains. Resolves with what its /healthz answered while draining (polled from
 * the signal on) and how it exited.
 */
export async function drain(node: HubProcess): Promise<{ healthDuringDrain: number | undefined; exit: { code: number | null; signal: NodeJS.Signals | null } }> {
  let healthDuringDrain: number | undefined;
  let exited = false;
  const exit = node.exited().then((e) => {
    exited = true;
    return e;
  });
  node.child.kill('SIGTERM');
  await waitFor(
    async () => {
      if (exited) return true;
      const res = await fetch(`${node.url}/healthz`);
      if (res.status !== 200) healthDuringDrain = res.status;
      return res.status !== 200 ? true : undefined;
    },
    { what: 'the draining node to answer /healthz with something other than 200', timeoutMs: 10_000 },
  );
  return { healthDuringDrain, exit: await exit };
}

/** Starts node `index` of the cluster again on its old port, and waits until HAProxy sends clients to it. */
export async function restartOnSamePort(fx: ProxiedCluster, index: number): Promise<HubProcess> {
  const old = fx.cluster.nodes[index]!;
  const name = `hub-${index + 1}`;
  const upsBefore = proxySaid(fx.proxy, name, 'UP');
  const node = await startHubProcess(['--store', fx.cluster.storeUrl, '--log-level', 'warn', '--port', new URL(old.url).port]);
  fx.cluster.nodes[index] = node;
  await waitFor(() => (proxySaid(fx.proxy, name, 'UP') > upsBefore ? true : undefined), { what: `HAProxy to take ${name} back`, timeoutMs: 20_000 });
  return node;
}

export const STREAM_PARTS = 24;
/** A turn that streams `STREAM_PARTS` markdown parts with a pause between them (several seconds). */
export const streamingScript = (label: string): unknown[] => Array.from({ length: STREAM_PARTS }, (_, i) => [{ sleep: 200 }, { say: `${label} part ${i + 1} of ${STREAM_PARTS}.` }]).flat();

/** The markdown the turn holds, in order. */
export function saidIn(state: ChatState, turnId: string): string[] {
  const turn = state.activeTurn?.id === turnId ? state.activeTurn : state.turns.find((t) => t.id === turnId);
  return (turn?.responseParts ?? []).filter((p) => isPartOfKind(p, 'markdown')).map((p) => (p as { content: string }).content);
}
