/**
 * Hocuspocus 2.x baseline, run as a child process by bench/fanout.ts:
 * `node dist/bench/hocuspocus-server.js` prints `listening on http://127.0.0.1:PORT`.
 * Stock server, no extensions: documents live in memory only (no persistence, no auth hook).
 */
import { Server } from '@hocuspocus/server';

const server = Server.configure({ address: '127.0.0.1', port: 0, quiet: true });
await server.listen();
process.stdout.write(`listening on http://127.0.0.1:${server.address.port}\n`);
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
