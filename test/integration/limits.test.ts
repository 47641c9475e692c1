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

  it('rate-limits a flooding connection: requests get -32020, dispatches a rejection echo', async () => {
    let now = 0;
    server = await startTestServer({ rateLimit: { perSecond: 1, burst: 5 }, now: () => now });
    const c = await RpcClient.open(server.wsUrl); // initialize used one token
    clients.push(c);
    const { chat } = await c.createSession(); // two
    await c.subscribe(chat); // three
    c.dispatch(chat, { type: 'chat/draftChanged', draft: { text: 'a', origin: { kind: 'user' } } }); // four
    c.dispatch(chat, { type: 'chat/draftChanged', draft: { text: 'b', origin: { kind: 'user' } } }); // five
    const limited = c.dispatch(chat, { type: 'chat/draftChanged', draft: { text: 'c', origin: { kind: 'user' } } });
    const echo = await c.waitForEnvelope((e) => e.origin?.clientSeq === limited);
    expect(echo.rejectionReason).toMatch(/rate limit/);
    await expect(c.request('ping', {})).rejects.toMatchObject({ code: -32020 });
    now += 10_000; // tokens refill with time
    await expect(c.request('ping', {})).resolves.toEqual({});
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
