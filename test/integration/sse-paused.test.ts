/**
 * A paused SSE listener (connected, never reading) used to be kept forever, with megabytes queued
 * for it (issue 18, item 3). Now a stream whose unsent bytes have not drained for `maxStalledMs`
 * is closed, while a listener that reads stays connected.
 */
import { connect, type Socket } from 'node:net';
import { request, type IncomingMessage } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import { createInteractionsFeature } from '../../server/interactions/feature.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

let server: TestServer | undefined;
let client: RpcClient | undefined;
let paused: Socket | undefined;
let reader: IncomingMessage | undefined;

afterEach(async () => {
  paused?.destroy();
  reader?.destroy();
  await client?.close();
  await server?.close();
  server = undefined;
});

async function gauge(name: string): Promise<number> {
  const text = await (await fetch(`${server!.url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
}

it('a listener that stops reading is closed once its unsent bytes stall; one that reads stays', async () => {
  // The byte bound is set far out of reach: only the time bound can close the paused stream.
  server = await startTestServer({ features: [createInteractionsFeature({ streams: { maxStalledMs: 300, maxQueuedBytesPerListener: 256 * 1024 * 1024 } })] });
  client = await RpcClient.open(server.wsUrl);
  const { session, chat } = await client.request<{ defaultChat: string }>('createSession', { channel: 'ahp-session:/paused', provider: 'remote' }).then((r) => ({ session: 'paused', chat: r.defaultChat }));
  const path = `/v2/sessions/${session}/events`;
  const { port } = new URL(server.url);

  // The paused listener: sends its request and never reads a byte.
  paused = connect(Number(port), '127.0.0.1');
  paused.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  // The reading listener drains everything it gets.
  let received = 0;
  reader = await new Promise<IncomingMessage>((resolve) => request(`${server!.url}${path}`, { agent: false }, resolve).end());
  reader.on('data', (d: Buffer) => (received += d.length));
  await waitFor(async () => ((await gauge('ahp_hub_sse_streams')) === 2 ? true : undefined), { what: 'both streams to be open' });

  // Large turn starts, each one event of ~100 KB, until the paused stream is let go.
  const big = 'x'.repeat(99_000);
  let turns = 0;
  await waitFor(
    async () => {
      for (let i = 0; i < 10; i++, turns++) {
        const turnId = `t${turns}`;
        await client!.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: userMessage(big) });
        await client!.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId, duration: 1 });
      }
      return (await gauge('ahp_hub_sse_streams')) === 1 ? true : undefined;
    },
    { what: 'the paused stream to be closed', timeoutMs: 60_000 },
  );
  expect(turns).toBeGreaterThan(0);
  // The reader is still connected and got (nearly) everything.
  expect(reader.destroyed).toBe(false);
  await waitFor(() => (received >= turns * 99_000 ? true : undefined), { what: 'the reader to have every event' });
}, 90_000);
