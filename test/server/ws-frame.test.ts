/**
 * The hub frames an envelope once and writes the same bytes to every receiver's socket
 * (`textFrameOf` in server/transport/ws-transport.ts) instead of letting `ws` frame the text again
 * per receiver. The frames are read back by `ws`'s own receiver (the parser every client library
 * built on `ws` uses) at each payload-length boundary of RFC 6455 §5.2, with multi-byte UTF-8 text
 * on both sides of each boundary; then over real sockets through `WsConnection`: many frames to one
 * receiver in one tick (held, then written as one buffer at the tick's end) followed by a close
 * frame `ws` writes itself, in order; what is held counts as unsent at once.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import * as wsModule from 'ws';
import WebSocket, { WebSocketServer } from 'ws';
import { WsConnection } from '../../server/transport/ws-transport.js';
import { textFrameOf } from '../../server/transport/ws-frames.js';
import { UnsentBudget } from '../../server/hub/unsent-budget.js';

/** ws's frame parser (exported by ws, not described by @types/ws). */
interface FrameReceiver {
  on(event: 'message', fn: (data: Buffer, isBinary: boolean) => void): void;
  on(event: 'error', fn: (err: Error) => void): void;
  write(bytes: Buffer): void;
}
const { Receiver } = wsModule as unknown as { Receiver: new (options: { isServer: boolean; maxPayload: number }) => FrameReceiver };

/** Parses `bytes` as server-to-client frames with ws's receiver; the text messages in order. */
function parseFrames(bytes: Buffer): string[] {
  const texts: string[] = [];
  const receiver = new Receiver({ isServer: false, maxPayload: 0 });
  receiver.on('message', (data: Buffer, isBinary: boolean) => {
    expect(isBinary).toBe(false);
    texts.push(data.toString('utf8'));
  });
  receiver.on('error', (err: Error) => {
    throw err;
  });
  receiver.write(bytes);
  return texts;
}

/** A text of exactly `bytes` UTF-8 bytes that ends in a 2-byte and starts with a 4-byte character. */
function textOfBytes(bytes: number): string {
  if (bytes < 6) return 'x'.repeat(bytes);
  return '😀' + 'a'.repeat(bytes - 6) + 'é';
}

describe('textFrameOf', () => {
  it('builds frames ws reads back exactly, at every payload-length boundary', () => {
    for (const bytes of [0, 1, 5, 6, 125, 126, 127, 65_535, 65_536, 65_537, 300_000]) {
      const text = textOfBytes(bytes);
      expect(Buffer.byteLength(text)).toBe(bytes);
      const frame = textFrameOf(text);
      const header = bytes < 126 ? 2 : bytes < 65_536 ? 4 : 10;
      expect(frame.length).toBe(header + bytes);
      expect(parseFrames(frame)).toEqual([text]);
    }
  });

  it('builds one frame for a text sent to many receivers in a row', () => {
    const text = '{"jsonrpc":"2.0","method":"action","params":{}}';
    const first = textFrameOf(text);
    expect(textFrameOf(text)).toBe(first);
    expect(textFrameOf(`${text} `)).not.toBe(first);
  });
});

describe('frames written to the socket beside ws', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    server = undefined;
  });

  /** A server whose one connection is handed to `onConnection` as the hub's `WsConnection`. */
  async function serveOne(onConnection: (conn: WsConnection, ws: WebSocket) => void): Promise<WebSocket> {
    server = createServer();
    const wss = new WebSocketServer({ server, perMessageDeflate: false });
    wss.on('connection', (ws, req) => {
      const budget = new UnsentBudget(64 * 1024 * 1024, (c) => c.bufferedAmount);
      onConnection(new WsConnection(ws, req.socket, 64 * 1024 * 1024, undefined, budget), ws);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  }

  it('arrive whole and in order, many in one tick, before the close frame ws writes', async () => {
    const texts = Array.from({ length: 200 }, (_, i) => `${i}:${textOfBytes(i * 700)}`);
    const client = await serveOne((conn, ws) => {
      // A frame ws writes itself first (a ping), then 200 held frames, then the close in the same tick.
      ws.ping();
      for (const text of texts) conn.send(text);
      conn.close(4000, 'done');
    });
    const received: string[] = [];
    client.on('message', (data: Buffer) => received.push(data.toString('utf8')));
    const [code] = (await once(client, 'close')) as [number];
    expect(code).toBe(4000);
    expect(received).toEqual(texts);
  });

  it('arrive in order across ticks, one frame a tick and several', async () => {
    const texts = Array.from({ length: 60 }, (_, i) => `${i}:${textOfBytes(i * 37)}`);
    const client = await serveOne((conn) => {
      let i = 0;
      const step = (): void => {
        // 1, 2, 3, … frames per tick.
        for (let k = 0; k <= i % 4 && i < texts.length; k++) conn.send(texts[i++]!);
        if (i < texts.length) setImmediate(step);
        else setImmediate(() => conn.close(4000, 'done'));
      };
      step();
    });
    const received: string[] = [];
    client.on('message', (data: Buffer) => received.push(data.toString('utf8')));
    await once(client, 'close');
    expect(received).toEqual(texts);
  });

  it('count held frames as unsent before the tick ends, and drop them on terminate', async () => {
    let seen: { before: number; after: number; frame: number } | undefined;
    const client = await serveOne((conn) => {
      const before = conn.bufferedAmount;
      const text = 'x'.repeat(1000);
      conn.send(text);
      seen = { before, after: conn.bufferedAmount, frame: textFrameOf(text).length };
      conn.terminate();
      expect(conn.bufferedAmount).toBe(0);
    });
    const received: string[] = [];
    client.on('message', (data: Buffer) => received.push(data.toString('utf8')));
    await once(client, 'close');
    expect(seen).toEqual({ before: 0, after: 1004, frame: 1004 });
    expect(received).toEqual([]);
  });
});
