/**
 * The link the client SDK runs on, given to `AhpClient` as a constructor argument
 * (`options.transport`): one `ClientTransport` per connection attempt, built by a
 * `TransportFactory` from the URL (token appended). The client only opens it, sends text frames,
 * closes it, and hears three events: opened, a frame, closed.
 *
 * The default is `webSocketTransport`: the browser's `WebSocket`, Node's global one, or the
 * `createSocket` a caller passes (e.g. `ws`). Tests and embedders can pass any other link, such
 * as `memoryTransport` (memory-transport.ts), with no socket at all.
 */
import { SocketReadyState, type CreateSocket, type WebSocketLike } from './websocket-like.js';

/**
 * What a transport reports to the connection that opened it; every event of one link, in order,
 * and never from inside a call of `send` (the client relies on that: a dispatch is added to its
 * view's pending actions right after it is sent).
 */
export interface TransportEvents {
  /** The link is open: frames may be sent. */
  opened(): void;
  /** One frame arrived (a string for text frames; anything else is a protocol violation). */
  message(data: unknown): void;
  /** The link closed, by either side, before or after opening. Reported at most once. */
  closed(code: number | undefined, reason: string): void;
}

export interface ClientTransport {
  /** Starts opening the link; the outcome is reported to `events` (`opened` or `closed`). Called once. */
  open(events: TransportEvents): void;
  /** Sends one text frame (one JSON-RPC message). May throw if the link is going away. */
  send(frame: string): void;
  /** Closes the link; idempotent. No event is reported after `close`. */
  close(code?: number): void;
}

/** Builds the transport of one connection attempt (the first connect and every reconnect). */
export type TransportFactory = (url: string) => ClientTransport;

const NORMAL_CLOSURE = 1000;

/** A WebSocket as a `ClientTransport`: the browser's, Node's (global or `ws`), anything `WebSocketLike`. */
export function webSocketTransport(createSocket: CreateSocket = globalWebSocket): TransportFactory {
  return (url) => {
    let socket: WebSocketLike | undefined;
    return {
      open(events) {
        const s = createSocket(url);
        socket = s;
        s.onopen = () => events.opened();
        s.onmessage = (event) => events.message(event.data);
        s.onclose = (event) => events.closed(event.code, typeof event.reason === 'string' ? event.reason : '');
        // Browsers and `ws` follow an error with a close event; that is the one we report.
        s.onerror = () => {};
        if (s.readyState === SocketReadyState.Open) events.opened();
      },
      send(frame) {
        if (!socket) throw new Error('transport not open');
        socket.send(frame);
      },
      close(code = NORMAL_CLOSURE) {
        const s = socket;
        if (!s) return;
        s.onopen = s.onmessage = s.onclose = null;
        if (s.readyState === SocketReadyState.Closed || s.readyState === SocketReadyState.Closing) return;
        try {
          s.close(code);
        } catch {
          // Already unusable; nothing else to release.
        }
      },
    };
  };
}

/** The runtime's own `WebSocket` (browsers, Node ≥ 22); Node 20 needs `createSocket` from `ws`. */
function globalWebSocket(url: string): WebSocketLike {
  const WebSocketCtor = (globalThis as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket;
  if (typeof WebSocketCtor !== 'function') throw new TypeError('no WebSocket in this runtime: pass createSocket (e.g. from ws) or a transport');
  return new WebSocketCtor(url);
}
