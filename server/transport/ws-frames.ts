/**
 * How the WebSocket transport writes frames (`ws-transport.ts`): each envelope framed once
 * (`textFrameOf`), and each connection's frames of one tick written together at its end.
 */

/** A connection holding frames until the tick ends (`WsConnection`). */
export interface HoldsFrames {
  /** Writes what it holds, in order. */
  flush(): void;
}

/**
 * Frames leave in one write per connection per tick: a connection's frames of this tick are held
 * (`WsConnection`) and written at the end of the tick (one scheduled callback for all of
 * them): one frame as it is, several (a group commit's echoes) joined into one buffer. Unlike
 * `cork`/`uncork`, a connection sent one frame costs one plain write and none of the stream's
 * buffering objects (issue 32: 480 → 200 heap bytes per delivery in the socket layer at N=100).
 */
let tickEndScheduled = false;
/**
 * The connections holding frames, `holding[0 … holdingCount)`. The array keeps its length between ticks
 * (slots are cleared, not dropped), so a tick's pushes reallocate nothing.
 */
const holding: (HoldsFrames | undefined)[] = [];
let holdingCount = 0;
export function holdUntilTickEnd(conn: HoldsFrames): void {
  holding[holdingCount++] = conn;
  if (!tickEndScheduled) {
    tickEndScheduled = true;
    process.nextTick(endTick);
  }
}
function endTick(): void {
  // A write may call back into a send (more connections held): read the live count.
  for (let i = 0; i < holdingCount; i++) {
    holding[i]!.flush();
    holding[i] = undefined;
  }
  holdingCount = 0;
  tickEndScheduled = false;
}

/**
 * The same envelope string goes to every receiver in a row: its WebSocket frame (RFC 6455 §5.2:
 * FIN + text opcode, unmasked as server frames are, payload length in 7, 16 or 64 bits, then the
 * UTF-8 bytes) is built once and the same bytes are written to every receiver's socket, instead of
 * `ws` encoding the string and framing it again for each one.
 */
let lastText: string | undefined;
let lastFrame: Buffer = Buffer.alloc(0);
export function textFrameOf(text: string): Buffer {
  if (text === lastText) return lastFrame;
  const length = Buffer.byteLength(text, 'utf8');
  const header = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(header + length);
  frame[0] = 0x81;
  if (header === 2) frame[1] = length;
  else if (header === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  frame.write(text, header, 'utf8');
  lastText = text;
  lastFrame = frame;
  return frame;
}
