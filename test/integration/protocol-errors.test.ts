import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RpcClient, type RpcError } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

describe('JSON-RPC errors keep the connection up', () => {
  let server: TestServer;
  let client: RpcClient;
  beforeEach(async () => {
    server = await startTestServer();
    client = await RpcClient.connect(server.wsUrl);
  });
  afterEach(async () => {
    await client.close();
    await server.stop();
  });

  it('answers ping before initialize', async () => {
    await expect(client.request('ping', { channel: 'ahp-root://' })).resolves.toEqual({});
  });

  it('refuses other methods before initialize', async () => {
    await expect(client.request('listSessions', { channel: 'ahp-root://' })).rejects.toMatchObject({ code: -32021 });
  });

  it('answers malformed JSON with -32700, bad envelopes with -32600, unknown methods with -32601, bad params with -32602', async () => {
    client.sendRaw('{not json');
    client.sendRaw(JSON.stringify({ jsonrpc: '1.0', id: 7, method: 'ping' }));
    client.sendRaw(JSON.stringify([{ jsonrpc: '2.0', id: 8, method: 'ping' }]));
    await waitFor(() => (client.errors.length >= 2 ? true : undefined));
    expect(client.errors[0]).toMatchObject({ code: -32700 });
    await client.initialize();
    await expect(client.request('noSuchMethod', {})).rejects.toMatchObject({ code: -32601 });
    const bad = await client.request('subscribe', { channel: 42 }).catch((e: RpcError) => e);
    expect(bad).toMatchObject({ code: -32602 });
    expect((bad as RpcError).message).toContain('channel');
    client.notify('dispatchAction', { channel: 'ahp-chat:/x' });
    await waitFor(() => client.errors.find((e) => e.code === -32602 && e.message.includes('clientSeq')));
    // Still alive and well.
    await expect(client.request('ping', { channel: 'ahp-root://' })).resolves.toEqual({});
    expect(client.closed).toBe(false);
  });

  it('rejects an action with a wrong shape through a rejection echo, not a disconnect', async () => {
    await client.initialize();
    const { chat } = await client.createSession();
    const echo = await client.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 42 });
    expect(echo.rejectionReason).toMatch(/turnId|message|startedAt/);
  });

  it('answers -32005 with supportedVersions when no version fits, then closes', async () => {
    const err = await client.initialize([], ['9.0.0']).catch((e: RpcError) => e);
    expect(err).toMatchObject({ code: -32005 });
    expect((err as RpcError).data).toMatchObject({ supportedVersions: expect.arrayContaining(['1.0.0']) });
    await waitFor(() => (client.closed ? true : undefined));
  });

  // AHP versioning: the server answers the highest offered version (by SemVer, not offer order)
  // inside a range it implements (^1.0.0, ^0.9.0, ^0.8.0), with the client's exact string.
  const offers: { offered: string[]; answer: string | -32005 }[] = [
    { offered: ['1.1.0'], answer: '1.1.0' },
    { offered: ['0.9.2'], answer: '0.9.2' },
    { offered: ['1.1.0', '0.8.0'], answer: '1.1.0' },
    { offered: ['0.8.3', '1.2.0'], answer: '1.2.0' },
    { offered: ['1.0.0'], answer: '1.0.0' },
    { offered: ['0.8.1', '0.9.0'], answer: '0.9.0' },
    { offered: ['2.0.0', '1.0.7'], answer: '1.0.7' },
    { offered: ['2.0.0', '0.10.0', '0.7.9'], answer: -32005 },
    { offered: ['1.0', '01.0.0', '1.0.0-rc.1'], answer: -32005 },
  ];
  for (const { offered, answer } of offers) {
    it(`answers the offer ${JSON.stringify(offered)} with ${answer === -32005 ? '-32005' : JSON.stringify(answer)}`, async () => {
      const reply = client.request<{ protocolVersion: string }>('initialize', { channel: 'ahp-root://', protocolVersions: offered, clientId: 'c1' });
      if (answer === -32005) {
        const err = await reply.catch((e: RpcError) => e);
        expect(err).toMatchObject({ code: -32005 });
        expect((err as RpcError).data).toEqual({ kind: 'unsupported_protocol_version', supportedVersions: ['1.0.0', '0.9.0', '0.8.0'] });
      } else {
        const r = await reply;
        expect(offered).toContain(r.protocolVersion);
        expect(r.protocolVersion).toBe(answer);
      }
    });
  }

  it('refuses createSession for a taken URI with -32003 and unknown providers with -32002', async () => {
    await client.initialize();
    const { session } = await client.createSession();
    await expect(client.request('createSession', { channel: session })).rejects.toMatchObject({ code: -32003 });
    await expect(client.request('createSession', { channel: 'ahp-session:/p', provider: 'nope' })).rejects.toMatchObject({ code: -32002 });
  });
});
