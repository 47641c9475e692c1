import { afterEach, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

describe('limits on what a client can make the server hold', () => {
  let server: TestServer;
  const clients: RpcClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await server.stop();
  });

  it('caps subscriptions per connection with -32020', async () => {
    server = await startTestServer({ limits: { maxSubscriptionsPerConnection: 2 } });
    const c = await RpcClient.open(server.wsUrl);
    clients.push(c);
    const a = await c.createSession();
    const b = await c.createSession();
    await c.subscribe(a.chat);
    await c.subscribe(b.chat);
    await expect(c.subscribe(a.session)).rejects.toMatchObject({ code: -32020 });
    await c.subscribe(a.chat); // re-subscribing an existing channel is not a new one
  });

  /** Sends frames in one socket write, so the hub reads them in one go (as a flood arrives). */
  const sendTogether = <T>(c: RpcClient, frames: unknown[], andThen?: () => T): T | undefined => {
    const socket = (c.ws as unknown as { _socket: { cork(): void; uncork(): void } })._socket;
    socket.cork();
    for (const f of frames) c.sendRaw(JSON.stringify(f));
    const result = andThen?.();
    socket.uncork();
    return result;
  };
  const draft = (chat: string, clientSeq: number, text: string) => ({
    jsonrpc: '2.0',
    method: 'dispatchAction',
    params: { channel: chat, clientSeq, action: { type: 'chat/draftChanged', draft: { text, origin: { kind: 'user' } } } },
  });

  it('slows a connection over its budget instead of refusing it; only frames beyond the overdraft get -32020 or a rejection echo', async () => {
    let now = 0;
    server = await startTestServer({ rateLimit: { perSecond: 1, burst: 5, overdraft: 3 }, now: () => now });
    const c = await RpcClient.open(server.wsUrl); // initialize: 1 of 5
    clients.push(c);
    const { chat } = await c.createSession(); // 2
    await c.subscribe(chat); // 3
    // Two frames within budget and three on overdraft are all applied; the next two were read
    // while the hub had already stopped reading (one socket read), beyond the overdraft: refused.
    const refusedPing = sendTogether(c, [draft(chat, 1, 'a'), draft(chat, 2, 'b'), draft(chat, 3, 'c'), draft(chat, 4, 'd'), draft(chat, 5, 'e'), draft(chat, 6, 'f')], () => c.request('ping', {}));
    await expect(refusedPing).rejects.toMatchObject({ code: -32020 });
    for (const seq of [1, 2, 3, 4, 5]) expect((await c.waitForEnvelope((e) => e.origin?.clientSeq === seq)).rejectionReason).toBeUndefined();
    expect((await c.waitForEnvelope((e) => e.origin?.clientSeq === 6)).rejectionReason).toMatch(/rate limit exceeded/);
    // Reading is paused until the budget refills; a request sent now is answered once it has.
    const ping = c.request('ping', {});
    now += 10_000;
    await expect(ping).resolves.toEqual({});
    expect(c.closed).toBe(false);
  });

  it('closes a connection with 4029 when it stays over budget after being slowed down', async () => {
    const now = 0;
    server = await startTestServer({ rateLimit: { perSecond: 1, burst: 5, overdraft: 3 }, now: () => now });
    const c = await RpcClient.open(server.wsUrl);
    const observer = await RpcClient.open(server.wsUrl);
    clients.push(c, observer);
    const { chat } = await c.createSession();
    await c.subscribe(chat);
    sendTogether(
      c,
      Array.from({ length: 12 }, (_, i) => draft(chat, i + 1, `d${i + 1}`)),
    );
    await waitFor(() => (c.closed ? true : undefined));
    expect(c.closeCode).toBe(4029);
    // What was admitted (2 in budget + 3 on overdraft) was applied; nothing after it.
    await waitFor(async () => ((await observer.subscribe<{ draft?: { text: string } }>(chat)).state.draft?.text === 'd5' ? true : undefined));
  });

  it('closes a connection that sends a frame over the size limit (1009) and keeps serving others', async () => {
    server = await startTestServer({ maxPayloadBytes: 4096 });
    const big = await RpcClient.open(server.wsUrl);
    const other = await RpcClient.open(server.wsUrl);
    clients.push(big, other);
    big.sendRaw(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { channel: 'ahp-root://', _meta: { pad: 'x'.repeat(10_000) } } }));
    await waitFor(() => (big.closed ? true : undefined));
    expect(big.closeCode).toBe(1009);
    await expect(other.request('ping', {})).resolves.toEqual({});
  });
});
