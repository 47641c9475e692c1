/**
 * The hub frames an envelope once and writes the same bytes to every receiver's socket
 * (`textFrameOf` in server/transport/ws-transport.ts) instead of letting `ws` frame the text again
 * per receiver. The frames are read back by `ws`'s own receiver (the parser every client library
 * built on `ws` uses) at each payload-length boundary of RFC 6455 §5.2, with multi-byte UTF-8 text
 * on both sides of each boundary; then over real sockets, many frames to one receiver in one tick
 * (the corked path) followed by a close frame `ws` writes itself, in order.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import * as wsModule from 'ws';
import WebSocket, { WebSocketServer } from 'ws';
import { textFrameOf } from '../../server/transport/ws-transport.js';

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

  it('arrive whole and in order, many in one tick, before the close frame ws writes', async () => {
    server = createServer();
    const wss = new WebSocketServer({ server, perMessageDeflate: false });
    const texts = Array.from({ length: 200 }, (_, i) => `${i}:${textOfBytes(i * 700)}`);
    wss.on('connection', (ws, req) => {
      // As WsConnection.send does: corked for the tick, uncorked at its end (the first frame here is
      // written uncorked, as by ws or another sender before the tick began).
      const raw = req.socket;
      raw.write(textFrameOf(texts[0]!));
      raw.cork();
      for (const text of texts.slice(1)) raw.write(textFrameOf(text));
      process.nextTick(() => {
        raw.uncork();
        ws.close(4000, 'done');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const received: string[] = [];
    client.on('message', (data: Buffer) => received.push(data.toString('utf8')));
    const [code] = (await once(client, 'close')) as [number];
    expect(code).toBe(4000);
    expect(received).toEqual(texts);
  });
});
