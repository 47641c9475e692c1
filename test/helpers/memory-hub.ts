/**
 * A real hub (memory log, the real JSON-RPC router and AHP methods) behind `memoryTransport`:
 * every link a client opens is one hub connection, with no socket. Pass `transport` to
 * `new AhpClient({ transport })`; `links` holds each link's server end and the frames it got.
 */
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { registerAhpMethods } from '../../server/ahp/ahp-methods.js';
import { RpcRouter } from '../../server/ahp/rpc.js';
import type { Connection } from '../../server/hub/connection.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { type MemoryLink, memoryTransport } from '../../shared/client/memory-transport.js';

export interface Served {
  readonly link: MemoryLink;
  readonly frames: string[];
}

export async function hubOverMemory() {
  let n = 0;
  const hub = await Hub.open({ log: new MemoryActionLog(), logger: silentLogger, now: () => Date.parse('2026-12-04T00:00:00.000Z'), newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'R' }], defaultProvider: 'remote' });
  const router = new RpcRouter(
    silentLogger,
    () => 0,
    { perSecond: 1e9, burst: 1e9 },
    undefined,
    (conn, text) => hub.sendInOrder(conn, text),
  );
  registerAhpMethods(router, hub);
  const links: Served[] = [];
  const transport = memoryTransport((link) => {
    const served: Served = { link, frames: [] };
    links.push(served);
    const conn: Connection = {
      id: `mem-${links.length}`,
      send: (text) => link.send(text),
      close: (code, reason) => link.close(code, reason),
      bufferedAmount: 0,
      get isOpen() {
        return link.isOpen;
      },
    };
    const ctx = { conn, principal: DEV_PRINCIPAL, state: router.newConnectionState() };
    // One frame at a time per link, as the WebSocket transport does, so answers keep request order.
    let queue: Promise<void> = Promise.resolve();
    link.accept();
    return {
      frame: (text) => {
        served.frames.push(text);
        queue = queue.then(() => router.handleFrame(ctx, text));
      },
      closed: () => hub.disconnect(conn),
    };
  });
  return { hub, transport, links };
}
