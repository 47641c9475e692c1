/** Opening a `ws` client socket, shared by the bench producers and the soak. */
import WebSocket from 'ws';

/**
 * Resolves with the socket once it is open; rejects on a connection error or an HTTP answer other
 * than the upgrade (`HTTP <status>`, so callers can tell a 429 apart). `token` goes in the query.
 * No permessage-deflate: the hub and the bench's raw server refuse it anyway.
 */
export function openSocket(url: string, token?: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(token === undefined ? url : `${url}?token=${token}`, { perMessageDeflate: false });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
}
