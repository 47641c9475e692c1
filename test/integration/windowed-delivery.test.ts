/**
 * AHP 1.1 windowed delivery over a real hub and WebSocket: a subscription that opts in with
 * `flowControl` gets `channel/ready`, then its messages as `channel/frame` fragments within its
 * credit window; it stops at zero credit, resumes on `channel/credit`, a large message arrives
 * whole, another windowed subscription is not held up behind it, and a reconnect with applied-
 * action checkpoints resumes the window. A 1.0 connection's `flowControl` is ignored.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { subscribeResult11Schema, windowedReconnectResultSchema } from '../../shared/protocol/messages-1-1.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

interface Frame {
  channel: string;
  data: string;
  final: boolean;
}

const WINDOW = { windowBytes: 640, maximumFrameBytes: 64, maximumMessageBytes: 1024 * 1024 };

function framesOf(c: RpcClient, channel: string): Frame[] {
  return c.notifications.filter((n) => n.method === 'channel/frame' && n.params['channel'] === channel).map((n) => n.params as unknown as Frame);
}
const bytesOf = (frames: readonly Frame[]): number => frames.reduce((n, f) => n + f.data.length * 2, 0);

/** The whole messages the frames of `channel` reassemble to so far. */
function messagesOf(c: RpcClient, channel: string): Array<{ method: string; params: Record<string, unknown> }> {
  const out: Array<{ method: string; params: Record<string, unknown> }> = [];
  let text = '';
  for (const f of framesOf(c, channel)) {
    text += f.data;
    if (!f.final) continue;
    out.push(JSON.parse(text) as { method: string; params: Record<string, unknown> });
    text = '';
  }
  return out;
}

describe('windowed delivery (AHP 1.1)', () => {
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
  const subscribeWindowed = async (c: RpcClient, channel: string) => subscribeResult11Schema.parse(await c.request('subscribe', { channel, flowControl: { receive: WINDOW } }));
  /** Gives back every byte sent so far on `channel`, until its frames end a message. */
  async function drain(c: RpcClient, channel: string): Promise<void> {
    while (!framesOf(c, channel).at(-1)?.final) {
      const sent = bytesOf(framesOf(c, channel));
      c.notify('channel/credit', { channel, consumedBytes: sent });
      await waitFor(() => (bytesOf(framesOf(c, channel)) > sent ? true : undefined), { what: `frames after credit on ${channel}` });
    }
  }

  it('frames within the credit, stops at zero, resumes on credit; a large message arrives whole and does not hold up another subscription', async () => {
    server = await startTestServer();
    const writer = await open(['1.0.0']);
    const s1 = (await writer.createSession('one')).session;
    const s2 = (await writer.createSession('two')).session;
    const reader = await open(['1.1.0']);
    const granted = await subscribeWindowed(reader, s1);
    expect(granted.flowControl?.clientReceive).toEqual(WINDOW);
    expect(granted.flowControl?.hostReceive.windowBytes).toBeGreaterThan(0);
    await subscribeWindowed(reader, s2);
    await waitFor(() => (reader.notifications.filter((n) => n.method === 'channel/ready').length === 2 ? true : undefined), { what: 'two channel/ready' });

    const long = 'x'.repeat(1000);
    await writer.dispatchAndWait(s1, { type: 'session/titleChanged', title: long });
    await waitFor(() => (bytesOf(framesOf(reader, s1)) === WINDOW.windowBytes ? true : undefined), { what: 'the window filled' });
    await reader.request('ping', { channel: 'ahp-root://' });
    // Zero credit: exactly the window went out, no fragment over the frame size, the message unfinished.
    expect(bytesOf(framesOf(reader, s1))).toBe(WINDOW.windowBytes);
    expect(framesOf(reader, s1).every((f) => f.data.length * 2 <= WINDOW.maximumFrameBytes && !f.final)).toBe(true);
    expect(reader.envelopes).toEqual([]);

    // The other subscription is not stuck behind the first one's message.
    await writer.dispatchAndWait(s2, { type: 'session/titleChanged', title: 'short' });
    await waitFor(() => (messagesOf(reader, s2).length === 1 ? true : undefined), { what: 'the second subscription got its message' });
    expect((messagesOf(reader, s2)[0]!.params as unknown as ActionEnvelope).action).toMatchObject({ type: 'session/titleChanged', title: 'short' });
    expect(bytesOf(framesOf(reader, s1))).toBe(WINDOW.windowBytes);

    await drain(reader, s1);
    const [message] = messagesOf(reader, s1);
    expect(message?.method).toBe('action');
    expect((message!.params as unknown as ActionEnvelope).action).toMatchObject({ type: 'session/titleChanged', title: long });
    expect(framesOf(reader, s1).length).toBeGreaterThan(10);
  });

  it('refuses credit past what was sent, and ignores flowControl on a 1.0 connection', async () => {
    server = await startTestServer();
    const writer = await open(['1.0.0']);
    const s1 = (await writer.createSession('one')).session;
    const reader = await open(['1.1.0']);
    await subscribeWindowed(reader, s1);
    await reader.waitForNotification((n) => n.method === 'channel/ready');
    reader.notify('channel/credit', { channel: s1, consumedBytes: 10 });
    await waitFor(() => reader.errors.find((e) => e.code === -32602 && e.message.includes('past the 0 bytes sent')), { what: 'credit refused' });

    const old = await open(['1.0.0']);
    const result = subscribeResult11Schema.parse(await old.request('subscribe', { channel: s1, flowControl: { receive: WINDOW } }));
    expect(result.flowControl).toBeUndefined();
    await writer.dispatchAndWait(s1, { type: 'session/titleChanged', title: 'plain' });
    await old.waitForEnvelope((e) => e.action['title'] === 'plain');
    expect(old.notifications.some((n) => n.method.startsWith('channel/'))).toBe(false);
  });

  it('resumes a windowed channel from its applied-action checkpoint on reconnect', async () => {
    server = await startTestServer();
    const writer = await open(['1.0.0']);
    const s1 = (await writer.createSession('one')).session;
    const reader = await open(['1.1.0']);
    const snap = await subscribeWindowed(reader, s1);
    await writer.dispatchAndWait(s1, { type: 'session/titleChanged', title: 'seen' });
    await waitFor(() => (messagesOf(reader, s1).length === 1 ? true : undefined), { what: 'first message' });
    const applied = (messagesOf(reader, s1)[0]!.params as unknown as ActionEnvelope).serverSeq;
    expect(applied).toBeGreaterThan(snap.snapshot!.fromSeq);
    await reader.close();
    await writer.dispatchAndWait(s1, { type: 'session/titleChanged', title: 'missed' });

    const back = await RpcClient.connect(server.wsUrl, { clientId: reader.clientId });
    clients.push(back);
    await back.initialize([], ['1.1.0']);
    const result = windowedReconnectResultSchema.parse(
      await back.request('reconnect', { channel: 'ahp-root://', clientId: reader.clientId, lastSeenServerSeq: applied + 1000, subscriptions: [s1], windows: { items: [{ channel: s1, lastAppliedServerSeq: applied }] } }),
    );
    expect(result.windows?.items).toEqual([{ channel: s1, flowControl: { clientReceive: WINDOW, hostReceive: expect.any(Object) }, recovery: 'replay' }]);
    expect(result.type === 'replay' ? result.actions : []).toEqual([]);
    await waitFor(() => (messagesOf(back, s1).length === 1 ? true : undefined), { what: 'the missed action, framed' });
    expect((messagesOf(back, s1)[0]!.params as unknown as ActionEnvelope).action).toMatchObject({ title: 'missed' });
    expect(back.notifications.findIndex((n) => n.method === 'channel/ready')).toBeLessThan(back.notifications.findIndex((n) => n.method === 'channel/frame'));
  });

  it('resumes by a framed channel/snapshot when the gap is gone from the replay window, and frees the old subscription', async () => {
    server = await startTestServer({ limits: { replayBufferSize: 8 } });
    const writer = await open(['1.0.0']);
    const s1 = (await writer.createSession('one')).session;
    const reader = await open(['1.1.0']);
    const snap = await subscribeWindowed(reader, s1);
    const before = server.hub.subscriptionCount;
    await reader.close();
    await waitFor(() => (server.hub.subscriptionCount === before - 1 ? true : undefined), { what: 'the windowed subscription freed on close' });
    for (let i = 0; i < 120; i++) writer.dispatch(s1, { type: 'session/titleChanged', title: `burst ${i}` });
    await writer.waitForEnvelope((e) => e.action['title'] === 'burst 119');

    const back = await RpcClient.connect(server.wsUrl, { clientId: reader.clientId });
    clients.push(back);
    await back.initialize([], ['1.1.0']);
    const result = windowedReconnectResultSchema.parse(
      await back.request('reconnect', {
        channel: 'ahp-root://',
        clientId: reader.clientId,
        lastSeenServerSeq: snap.snapshot!.fromSeq,
        subscriptions: [s1],
        windows: { items: [{ channel: s1, lastAppliedServerSeq: snap.snapshot!.fromSeq }] },
      }),
    );
    expect(result.windows?.items.map((w) => w.recovery)).toEqual(['snapshot']);
    await drain(back, s1);
    const [message] = messagesOf(back, s1);
    expect(message?.method).toBe('channel/snapshot');
    expect((message!.params['snapshot'] as { state: { title: string } }).state.title).toBe('burst 119');
  });
});
