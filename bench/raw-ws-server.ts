/**
 * The "plain ws broadcast" baseline, run as a child process by bench/fanout.ts:
 * `node dist/bench/raw-ws-server.js` prints `listening on http://127.0.0.1:PORT`.
 *
 * Connections to `/producer` are producers: every frame one of them sends is broadcast, as the
 * identical bytes, to every other connection (the textbook `ws` broadcast loop). Anything else is
 * a subscriber, whose frames are ignored. No parsing, no validation, no log.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, WebSocket, type RawData } from 'ws';

const http = createServer((_req, res) => {
  res.writeHead(404).end();
});
const wss = new WebSocketServer({ server: http, perMessageDeflate: false, maxPayload: 1024 * 1024 });

wss.on('connection', (ws, req) => {
  ws.on('error', () => {});
  if (!req.url?.startsWith('/producer')) return;
  ws.on('message', (data: RawData, isBinary: boolean) => {
    for (const client of wss.clients) {
      if (client !== ws && client.readyState === WebSocket.OPEN) client.send(data, { binary: isBinary });
    }
  });
});

http.listen(0, '127.0.0.1', () => {
  const { port } = http.address() as AddressInfo;
  process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
