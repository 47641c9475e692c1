/**
 * A receiver that falls behind a long stream is not dropped: while it does not read, the hub holds
 * what it has not been sent and merges the streamed deltas it holds (server/hub/lag-queue.ts), so
 * the bytes waiting for it grow with the text, not with the number of deltas. Real hub, real
 * sockets, the real client SDK; the reader stops reading its socket (as a busy browser tab does)
 * while an agent streams many times its send buffer in small deltas, each its own envelope.
 */
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { AhpClient } from '../../shared/client/ahp-client.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

/** Unsent bytes per connection before the hub closes it (the default is 4 MiB). */
const MAX_BUFFERED = 512 * 1024;
const DELTAS = 24_000;

describe('a reader that falls behind a long stream', () => {
  let server: TestServer | undefined;
  const teardown: Array<() => unknown> = [];
  afterEach(async () => {
    for (const step of teardown.splice(0).reverse()) await step();
    await server?.stop();
    server = undefined;
  });

  it('is sent the deltas it missed merged, is not closed, and ends with exactly the streamed text', async () => {
    // The reader does not answer pings while it does not read: keep the heartbeat out of the way.
    server = await startTestServer({ heartbeatMs: 600_000, limits: { fanout: { maxBufferedBytes: MAX_BUFFERED, maxCoalescedEnvelopes: 1024 } } });
    const agent = await RpcClient.open(server.wsUrl);
    teardown.push(() => agent.close());
    const turnId = 'long-answer';
    const openChat = async (): Promise<string> => {
      const { defaultChat } = await agent.request<{ defaultChat: string }>('createSession', { channel: `ahp-session:/${crypto.randomUUID()}`, provider: 'remote' });
      await agent.dispatchAndWait(defaultChat, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: { text: 'write a lot', origin: { kind: 'user' } } });
      await agent.dispatchAndWait(defaultChat, { type: 'chat/responsePart', turnId, part: { kind: 'markdown', id: 'md', content: '' } });
      return defaultChat;
    };
    const chat = await openChat();
    // A second answer streamed at the same time, which the reader does not follow: its deltas sit
    // between the first chat's in every hub batch, so nearly every delta of the first chat
    // reaches the reader as an envelope of its own (as when an agent streams slower than the hub
    // commits), instead of one merged envelope per batch.
    const otherChat = await openChat();

    const sockets: WebSocket[] = [];
    const closeCodes: number[] = [];
    const reader = new AhpClient({
      url: server.wsUrl,
      createSocket: (url) => {
        const ws = new WebSocket(url);
        ws.on('close', (code) => closeCodes.push(code));
        sockets.push(ws);
        return ws;
      },
      reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
    });
    teardown.push(() => reader.close());
    await reader.connect();
    const view = await reader.subscribe(chat);
    const streamed = (): string | undefined => {
      const state = view.state as ChatState;
      const part = state.activeTurn?.responseParts.find((p) => p.kind === 'markdown');
      return part && 'content' in part && typeof part.content === 'string' ? part.content : undefined;
    };

    // The reader stops reading its socket for the whole stream.
    sockets[0]!.pause();
    let text = '';
    let lastSeq = 0;
    for (let i = 0; i < DELTAS; i++) {
      const piece = `${i.toString(36)} `.padEnd(10, '.');
      text += piece;
      lastSeq = agent.dispatch(chat, { type: 'chat/delta', turnId, partId: 'md', content: piece });
      agent.dispatch(otherChat, { type: 'chat/delta', turnId, partId: 'md', content: piece });
      // The agent reads its echoes as it goes (one that does not is itself a slow consumer).
      if (i % 128 === 127) {
        await new Promise((r) => setImmediate(r));
        while (agent.ws.bufferedAmount > 128 * 1024) await new Promise((r) => setTimeout(r, 1));
        expect(agent.closed).toBe(false);
      }
    }
    await waitFor(() => agent.envelopes.find((e) => e.origin?.clientSeq === lastSeq), { what: 'the echo of the last delta', timeoutMs: 60_000 });
    expect(agent.envelopes.filter((e) => e.rejectionReason !== undefined)).toEqual([]);
    // What the reader would be sent one envelope per delta: far more than its limit.
    const perDelta = JSON.stringify({ jsonrpc: '2.0', method: 'action', params: { channel: chat, action: { type: 'chat/delta', turnId, partId: 'md', content: '0'.repeat(10) }, serverSeq: 100_000 } }).length;
    expect(perDelta * DELTAS).toBeGreaterThan(4 * MAX_BUFFERED);
    expect(text.length).toBeLessThan(MAX_BUFFERED / 2);

    sockets[0]!.resume();
    await waitFor(() => (streamed()?.length === text.length ? true : undefined), { what: 'the whole streamed text at the reader', timeoutMs: 60_000 });
    expect(streamed()).toBe(text);
    expect(closeCodes).toEqual([]);
    expect(sockets).toHaveLength(1);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/^ahp_hub_slow_consumer_closes_total 0$/m);
  }, 180_000);
});
