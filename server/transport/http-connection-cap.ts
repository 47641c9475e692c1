/**
 * A cap on plain HTTP connections (WebSocket connections have their own caps once upgraded).
 * Without one, a client can open sockets that never finish their request headers until the
 * process runs out of file descriptors, and `/healthz` stops answering. At the cap, the connection
 * that has been idle longest (a half-open request, or a keep-alive between requests) is dropped to
 * make room, provided it has been idle for at least `graceMs`: a connection that has only just
 * arrived has not had its chance to send a request yet, so during a burst the newcomers are the
 * ones refused, and once the burst is over a new request displaces the stale ones.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export function capHttpConnections(server: Server, max: number, graceMs: number, now: () => number = Date.now): { readonly count: () => number } {
  /** Sockets with no request in flight → since when, oldest first (a Map keeps insertion order). */
  const idle = new Map<Socket, number>();
  /** Sockets serving requests → how many are in flight (pipelining can make it more than one). */
  const busy = new Map<Socket, number>();
  const forget = (socket: Socket): void => {
    idle.delete(socket);
    busy.delete(socket);
  };
  server.on('connection', (socket: Socket) => {
    if (idle.size + busy.size >= max) {
      const oldest = idle.entries().next().value;
      if (oldest === undefined || now() - oldest[1] < graceMs) {
        socket.destroy();
        return;
      }
      forget(oldest[0]);
      oldest[0].destroy();
    }
    idle.set(socket, now());
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
      if (!socket.destroyed) idle.set(socket, now());
    });
  });
  // An upgraded socket belongs to the WebSocket transport and its caps from here on.
  server.on('upgrade', (_req, socket: Socket) => forget(socket));
  return { count: () => idle.size + busy.size };
}
