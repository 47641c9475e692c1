/**
 * A minimal WebSocket client over `net` for the bench subscribers: RFC 6455 handshake, unmasked
 * server frames parsed in place (no fragmentation: neither `ws` servers nor the hub fragment
 * messages), masked client frames, ping → pong, close. No UTF-8 validation, no stream layers, no
 * per-frame event objects: with 1000 sockets in one thread the `ws` client's per-read overhead,
 * not the server, caps what the bench can measure on a 2-core machine.
 *
 * Both clients expose the same small `Link` so a run can pick either (`--client ws|lean`).
 */
import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';

export interface LinkHandlers {
  open(): void;
  /** One complete message payload (text or binary). Valid only during the call. */
  message(payload: Buffer): void;
  close(code: number): void;
  error(err: Error): void;
}

export interface Link {
  send(data: string | Uint8Array): void;
  terminate(): void;
}

export function wsLink(url: string, h: LinkHandlers): Link {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  ws.binaryType = 'nodebuffer';
  ws.on('open', () => h.open());
  ws.on('message', (raw: Buffer) => h.message(raw));
  ws.on('close', (code) => h.close(code));
  ws.on('error', (err) => h.error(err));
  return {
    send: (d) => ws.send(d),
    terminate: () => {
      ws.removeAllListeners('close');
      ws.on('close', () => {});
      ws.terminate();
    },
  };
}

const OP_TEXT = 1;
const OP_BINARY = 2;
const OP_CLOSE = 8;
const OP_PING = 9;

function maskedFrame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  const ext = len < 126 ? 0 : len < 65_536 ? 2 : 8;
  const frame = Buffer.allocUnsafe(2 + ext + 4 + len);
  frame[0] = 0x80 | opcode;
  if (ext === 0) frame[1] = 0x80 | len;
  else if (ext === 2) {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(len, 2);
  } else {
    frame[1] = 0x80 | 127;
    frame.writeUInt32BE(0, 2);
    frame.writeUInt32BE(len, 6);
  }
  const maskAt = 2 + ext;
  randomBytes(4).copy(frame, maskAt);
  for (let i = 0; i < len; i++) frame[maskAt + 4 + i] = payload[i]! ^ frame[maskAt + (i & 3)]!;
  return frame;
}

export function leanLink(url: string, h: LinkHandlers): Link {
  const u = new URL(url);
  const socket: Socket = connect({ host: u.hostname, port: Number(u.port) });
  socket.setNoDelay(true);
  let upgraded = false;
  let closed = false;
  let pending: Buffer | undefined;

  const finish = (code: number): void => {
    if (closed) return;
    closed = true;
    h.close(code);
  };

  socket.on('connect', () => {
    const key = randomBytes(16).toString('base64');
    socket.write(`GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  });

  const parse = (buf: Buffer): void => {
    let off = 0;
    const n = buf.length;
    while (n - off >= 2) {
      const b0 = buf[off]!;
      const b1 = buf[off + 1]!;
      let len = b1 & 0x7f;
      let head = 2;
      if (len === 126) {
        if (n - off < 4) break;
        len = buf.readUInt16BE(off + 2);
        head = 4;
      } else if (len === 127) {
        if (n - off < 10) break;
        len = buf.readUInt32BE(off + 2) * 2 ** 32 + buf.readUInt32BE(off + 6);
        head = 10;
      }
      if (b1 & 0x80) head += 4; // servers never mask; tolerate it anyway by skipping the key
      if (n - off < head + len) break;
      const payload = buf.subarray(off + head, off + head + len);
      off += head + len;
      const opcode = b0 & 0x0f;
      if (opcode === OP_TEXT || opcode === OP_BINARY) h.message(payload);
      else if (opcode === OP_PING) socket.write(maskedFrame(0xa, Buffer.from(payload)));
      else if (opcode === OP_CLOSE) {
        finish(len >= 2 ? payload.readUInt16BE(0) : 1005);
        socket.destroy();
        return;
      }
    }
    pending = off < n ? Buffer.from(buf.subarray(off)) : undefined;
  };

  socket.on('data', (chunk: Buffer) => {
    if (!upgraded) {
      pending = pending ? Buffer.concat([pending, chunk]) : chunk;
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = pending.subarray(0, end).toString('latin1');
      if (!/^HTTP\/1\.1 101 /.test(head)) {
        h.error(new Error(`upgrade refused: ${head.split('\r\n', 1)[0]}`));
        socket.destroy();
        return;
      }
      upgraded = true;
      const rest = pending.subarray(end + 4);
      pending = undefined;
      h.open();
      if (rest.length > 0) parse(rest);
      return;
    }
    parse(pending ? Buffer.concat([pending, chunk]) : chunk);
  });
  socket.on('error', (err) => h.error(err));
  socket.on('close', () => finish(1006));

  return {
    send: (d) => {
      const opcode = typeof d === 'string' ? OP_TEXT : OP_BINARY;
      socket.write(maskedFrame(opcode, typeof d === 'string' ? Buffer.from(d) : Buffer.from(d.buffer, d.byteOffset, d.byteLength)));
    },
    terminate: () => {
      closed = true;
      socket.destroy();
    },
  };
}
