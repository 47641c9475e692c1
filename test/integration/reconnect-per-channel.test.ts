/**
 * AHP 1.1 per-channel reconnect: `reconnect {clientId, subscriptions: [{channel, lastSeenServerSeq}]}`
 * answers exactly one recovery per requested channel — `replay`, `snapshot` (with `fromSeq`) or
 * `missing` — mixed in one response, and the client's replicas (folded with the standard reducers)
 * then equal fresh snapshots. A 1.0 connection keeps the connection-wide reconnect.
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AhpClient } from '../../shared/client/ahp-client.js';
import type { ActionEnvelope, Snapshot } from '../../shared/protocol/messages.js';
import { channelReconnectResultSchema, type ChannelRecovery } from '../../shared/protocol/messages-1-1.js';
import type { SessionState } from '../../shared/protocol/state.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

const V11 = ['1.1.0'];

/** One client's view of a channel: its state and the last serverSeq it applied there. */
interface Replica {
  state: SessionState;
  lastSeen: number;
}

function fold(replica: Replica, envelopes: readonly ActionEnvelope[]): void {
  for (const e of envelopes) {
    if (e.serverSeq <= replica.lastSeen || e.rejectionReason) continue;
    replica.state = sessionReducer(replica.state, e.action);
    replica.lastSeen = e.serverSeq;
  }
}

describe('per-channel reconnect (AHP 1.1)', () => {
  let server: TestServer;
  const clients: RpcClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await server.stop();
  });
  const open = async (versions: string[], clientId?: string): Promise<RpcClient> => {
    const c = await RpcClient.connect(server.wsUrl, clientId ? { clientId } : {});
    clients.push(c);
    await c.initialize([], versions);
    return c;
  };

  /** Three sessions a 1.1 client follows; returns its replicas, built from snapshot + envelopes. */
  async function follow(replayBufferSize?: number) {
    server = await startTestServer(replayBufferSize ? { limits: { replayBufferSize } } : {});
    const writer = await open(['1.0.0']);
    const current = await writer.createSession('current');
    const lagging = await writer.createSession('lagging');
    const disposed = await writer.createSession('disposed');
    const reader = await open(V11);
    const replicas = new Map<string, Replica>();
    for (const { session } of [current, lagging, disposed]) {
      const snap = await reader.subscribe<SessionState>(session);
      replicas.set(session, { state: snap.state, lastSeen: snap.fromSeq });
    }
    for (const { session } of [current, lagging, disposed]) await writer.dispatchAndWait(session, { type: 'session/titleChanged', title: `${session} 1` });
    await waitFor(() => (reader.envelopes.length >= 3 ? true : undefined), { what: 'the reader saw every title' });
    for (const [channel, r] of replicas)
      fold(
        r,
        reader.envelopes.filter((e) => e.channel === channel),
      );
    return { writer, reader, replicas, current: current.session, lagging: lagging.session, disposed: disposed.session };
  }

  async function reconnectAndCheck(rig: Awaited<ReturnType<typeof follow>>): Promise<Map<string, ChannelRecovery>> {
    const { reader, replicas } = rig;
    await reader.close();
    const back = await RpcClient.connect(server.wsUrl, { clientId: reader.clientId });
    clients.push(back);
    const raw = await back.request('reconnect', {
      channel: 'ahp-root://',
      clientId: reader.clientId,
      subscriptions: [...replicas].map(([channel, r]) => ({ channel, lastSeenServerSeq: r.lastSeen })),
    });
    const result = channelReconnectResultSchema.parse(raw);
    expect(result.channels.map((c) => c.channel)).toEqual([...replicas.keys()]);
    const byChannel = new Map(result.channels.map((c) => [c.channel, c]));
    for (const [channel, recovery] of byChannel) {
      const replica = replicas.get(channel)!;
      if (recovery.kind === 'replay') fold(replica, recovery.actions);
      if (recovery.kind === 'snapshot') replicas.set(channel, { state: recovery.snapshot.state as SessionState, lastSeen: recovery.snapshot.fromSeq });
      if (recovery.kind === 'missing') replicas.delete(channel);
    }
    // Resubscribed at the live edge: a write after the reconnect arrives live on every resumed channel.
    for (const channel of replicas.keys()) await rig.writer.dispatchAndWait(channel, { type: 'session/titleChanged', title: `${channel} live` });
    await waitFor(() => ([...replicas.keys()].every((ch) => back.envelopes.some((e) => e.channel === ch && e.action['title'] === `${ch} live`)) ? true : undefined), {
      what: 'live titles after reconnect',
    });
    for (const [channel, r] of replicas)
      fold(
        r,
        back.envelopes.filter((e) => e.channel === channel),
      );
    const fresh = await open(['1.0.0']);
    for (const [channel, r] of replicas) {
      const snap: Snapshot = (await fresh.request<{ snapshot: Snapshot }>('subscribe', { channel })).snapshot;
      expect(r.state, channel).toEqual(snap.state);
      expect(r.lastSeen, channel).toBeLessThanOrEqual(snap.fromSeq);
    }
    return byChannel;
  }

  it('answers replay, replay and missing in one response when the window covers both gaps', async () => {
    const rig = await follow();
    await rig.reader.close();
    for (let i = 0; i < 3; i++) await rig.writer.dispatchAndWait(rig.lagging, { type: 'session/titleChanged', title: `away ${i}` });
    await rig.writer.request('disposeSession', { channel: rig.disposed });
    const byChannel = await reconnectAndCheck(rig);
    expect(byChannel.get(rig.current)).toEqual({ kind: 'replay', channel: rig.current, actions: [] });
    const lagging = byChannel.get(rig.lagging)!;
    expect(lagging.kind).toBe('replay');
    if (lagging.kind === 'replay') expect(lagging.actions.map((e) => e.action['title'])).toEqual(['away 0', 'away 1', 'away 2']);
    expect(byChannel.get(rig.disposed)).toEqual({ kind: 'missing', channel: rig.disposed });
  });

  it('gives the lagging channel a snapshot while the quiet current channel still replays', async () => {
    const rig = await follow(8);
    await rig.reader.close();
    // Far more than the window holds (it trims 64 past its size), all on the lagging channel: the current one stays quiet.
    for (let i = 0; i < 120; i++) rig.writer.dispatch(rig.lagging, { type: 'session/titleChanged', title: `burst ${i}` });
    await rig.writer.waitForEnvelope((e) => e.action['title'] === 'burst 119');
    await rig.writer.request('disposeSession', { channel: rig.disposed });
    const byChannel = await reconnectAndCheck(rig);
    expect(byChannel.get(rig.current)).toEqual({ kind: 'replay', channel: rig.current, actions: [] });
    const lagging = byChannel.get(rig.lagging)!;
    expect(lagging.kind).toBe('snapshot');
    if (lagging.kind === 'snapshot') expect((lagging.snapshot.state as SessionState).title).toBe('burst 119');
    expect(byChannel.get(rig.disposed)?.kind).toBe('missing');
  });

  it('the shared client sends per-channel cursors after negotiating 1.1, and its views equal fresh snapshots', async () => {
    server = await startTestServer({ limits: { replayBufferSize: 8 } });
    const writer = await open(['1.0.0']);
    const quiet = (await writer.createSession('quiet')).session as `ahp-session:/${string}`;
    const busy = (await writer.createSession('busy')).session as `ahp-session:/${string}`;
    const sockets: WebSocket[] = [];
    const sent: string[] = [];
    const sdk = new AhpClient({
      url: server.wsUrl,
      protocolVersions: ['1.1.0', '1.0.0'],
      reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
      createSocket: (url) => {
        const ws = new WebSocket(url);
        const send = ws.send.bind(ws);
        ws.send = ((data: string) => {
          sent.push(data);
          send(data);
        }) as typeof ws.send;
        sockets.push(ws);
        return ws;
      },
    });
    expect((await sdk.connect()).protocolVersion).toBe('1.1.0');
    const views = [await sdk.subscribe(quiet), await sdk.subscribe(busy)];
    const states: string[] = [];
    sdk.onConnectionState((s) => states.push(s));
    sockets[0]!.terminate();
    await waitFor(() => (states.includes('reconnecting') ? true : undefined), { what: 'reconnecting' });
    for (let i = 0; i < 120; i++) writer.dispatch(busy, { type: 'session/titleChanged', title: `busy ${i}` });
    await writer.waitForEnvelope((e) => e.action['title'] === 'busy 119');
    await waitFor(() => (sdk.connectionState === 'open' ? true : undefined), { what: 'reopened' });
    const reconnect = sent.map((t) => JSON.parse(t) as { method?: string; params: { subscriptions: unknown[] } }).find((m) => m.method === 'reconnect');
    expect(reconnect?.params.subscriptions).toEqual([
      { channel: quiet, lastSeenServerSeq: expect.any(Number) },
      { channel: busy, lastSeenServerSeq: expect.any(Number) },
    ]);
    const fresh = await open(['1.0.0']);
    for (const view of views) {
      const snap = await fresh.subscribe(view.channel);
      await waitFor(() => (JSON.stringify(view.state) === JSON.stringify(snap.state) ? true : undefined), { what: `${view.channel} caught up` });
      expect(view.state).toEqual(snap.state);
    }
    await sdk.close();
  });

  it('advertises the steering list capability to 1.1 clients only', async () => {
    server = await startTestServer();
    const v11 = await RpcClient.connect(server.wsUrl);
    const v10 = await RpcClient.connect(server.wsUrl);
    clients.push(v11, v10);
    expect(await v11.initialize([], V11)).toMatchObject({ protocolVersion: '1.1.0', steeringMessages: {} });
    expect(await v10.initialize([], ['1.0.0'])).not.toHaveProperty('steeringMessages');
  });

  it('refuses per-channel cursors on a 1.0 connection, which keeps the connection-wide answer', async () => {
    server = await startTestServer();
    const old = await open(['1.0.0']);
    const { session } = await old.createSession();
    const err = await old.request('reconnect', { channel: 'ahp-root://', clientId: old.clientId, subscriptions: [{ channel: session, lastSeenServerSeq: 0 }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).code).toBe(-32602);
    expect((err as RpcError).message).toContain('need protocol 1.1');
    // A malformed request is told what its own form lacks.
    const v11 = await open(V11);
    const bad = await v11.request('reconnect', { channel: 'ahp-root://', clientId: v11.clientId, subscriptions: [{ channel: session }] }).catch((e: unknown) => e);
    expect((bad as RpcError).message).toBe('invalid params for reconnect: subscriptions.0.lastSeenServerSeq: Invalid input: expected number, received undefined');
    const legacy = await old.request<{ type: string }>('reconnect', { channel: 'ahp-root://', clientId: old.clientId, lastSeenServerSeq: 0, subscriptions: [session] });
    expect(['replay', 'snapshot']).toContain(legacy.type);
  });
});
