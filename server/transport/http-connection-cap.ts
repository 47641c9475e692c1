/**
 * A cap on plain HTTP connections (WebSocket connections have their own caps once upgraded).
 * Without one, a client can open sockets that never finish their request headers until the
 * process runs out of file descriptors, and `/healthz` stops answering. At the cap, the oldest
 * connection with no request in flight (a half-open request or an idle keep-alive) is dropped to
 * make room; only when every connection is busy serving a request is the new one refused.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export function capHttpConnections(server: Server, max: number): { readonly count: () => number } {
  /** Sockets with no request in flight, oldest first (Set keeps insertion order). */
  const idle = new Set<Socket>();
  /** Sockets serving requests → how many are in flight (pipelining can make it more than one). */
  const busy = new Map<Socket, number>();
  const forget = (socket: Socket): void => {
    idle.delete(socket);
    busy.delete(socket);
  };
  server.on('connection', (socket: Socket) => {
    if (idle.size + busy.size >= max) {
      const oldest = idle.values().next().value;
      if (oldest === undefined) {
        socket.destroy();
        return;
      }
      forget(oldest);
      oldest.destroy();
    }
    idle.add(socket);
    socket.once('close', () => forget(socket));
  });
  server.on('request', (req, res) => {
    const socket = req.socket;
    if (socket.destroyed) return;
    idle.delete(socket);
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const n = (busy.get(socket) ?? 0) - 1;
      if (n > 0) return void busy.set(socket, n);
      busy.delete(socket);
      if (!socket.destroyed) idle.add(socket);
    });
  });
  // An upgraded socket belongs to the WebSocket transport and its caps from here on.
  server.on('upgrade', (_req, socket: Socket) => forget(socket));
  return { count: () => idle.size + busy.size };
}
