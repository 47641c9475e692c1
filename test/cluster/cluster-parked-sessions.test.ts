/**
 * Parked sessions in cluster mode (docs/architecture.md, "Parked sessions"): two hub processes on
 * one PostgreSQL log, each parking what nobody on it watches. A record another node appends for a
 * session parked here (and a write here to one) loads it; afterwards both nodes show the same
 * snapshot, with everything written before and while it was parked.
 */
import { describe, expect, it } from 'vitest';
import { type HubProcess, metricOf } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { clusterPerFile, headOf, subscribeWhenKnown } from './cluster.js';

const SESSIONS = 12;

const parkedOn = (node: HubProcess, count: number, what: string): Promise<true> => waitFor(async () => ((await metricOf(node, 'ahp_hub_parked_sessions')) >= count ? true : undefined), { what, timeoutMs: 30_000 });

interface ChatLike {
  queuedMessages?: Array<{ id: string }>;
}

describe('parked sessions on a two-node cluster', () => {
  const fx = clusterPerFile(2, [], { HUB_PARK_IDLE_MS: '300' });

  async function open(node: number): Promise<RpcClient> {
    const client = await RpcClient.open(fx.cluster.nodes[node]!.wsUrl);
    fx.clients.push(client);
    return client;
  }

  it('folds a peer record into a session parked here by loading it, and both nodes then show the same snapshot', async () => {
    const [first, second] = fx.cluster.nodes as [HubProcess, HubProcess];
    const writer = await open(0);
    const chats: string[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const { chat } = await writer.createSession(`parked ${i}`);
      for (let m = 0; m < 3; m++) {
        const echo = await writer.dispatchAndWait(chat, { type: 'chat/pendingMessageSet', kind: 'queued', id: `m${m}`, message: { text: `session ${i} message ${m}`, origin: { kind: 'user' } } });
        expect(echo.rejectionReason).toBeUndefined();
      }
      chats.push(chat);
    }
    // Nobody subscribes anywhere: both nodes park every session once it has been idle.
    await parkedOn(first, SESSIONS, 'node 1 parks every session');
    await waitFor(async () => ((await headOf(second)) >= (await headOf(first)) ? true : undefined), { what: 'node 2 caught up' });
    await parkedOn(second, SESSIONS, 'node 2 parks every session');

    // Node 1 writes to a session parked on both: node 2 folds the record by loading it.
    const target = chats[5]!;
    const late = await writer.dispatchAndWait(target, { type: 'chat/pendingMessageSet', kind: 'queued', id: 'late', message: { text: 'written while parked on node 2', origin: { kind: 'user' } } });
    expect(late.rejectionReason).toBeUndefined();
    // And a client on node 2 writes to another one parked there, without subscribing first.
    const other = chats[7]!;
    const reader = await open(1);
    const fromTwo = await reader.dispatchAndWait(other, { type: 'chat/pendingMessageSet', kind: 'queued', id: 'from-two', message: { text: 'written on node 2', origin: { kind: 'user' } } });
    expect(fromTwo.rejectionReason).toBeUndefined();

    const watcher = await open(0);
    for (const chat of [target, other, chats[0]!]) {
      const onTwo = await subscribeWhenKnown<ChatLike>(reader, chat);
      const onOne = await subscribeWhenKnown<ChatLike>(watcher, chat);
      expect(onTwo.state).toEqual(onOne.state);
    }
    const queued = (await subscribeWhenKnown<ChatLike>(reader, target)).state.queuedMessages?.map((m) => m.id);
    expect(queued).toEqual(['m0', 'm1', 'm2', 'late']);
    expect((await subscribeWhenKnown<ChatLike>(watcher, other)).state.queuedMessages?.map((m) => m.id)).toEqual(['m0', 'm1', 'm2', 'from-two']);
    // The subscribed sessions stay in memory; the rest stay parked.
    expect(await metricOf(second, 'ahp_hub_resident_sessions')).toBeGreaterThanOrEqual(3);
    expect(await metricOf(second, 'ahp_hub_parked_sessions')).toBeLessThanOrEqual(SESSIONS - 3);
  }, 120_000);
});
