/**
 * The smallest socket surface the client needs. Both the browser's `WebSocket` and the `ws`
 * package's `WebSocket` satisfy it, so shared/ never has to name either (no DOM lib, no `ws`).
 *
 *   Node:    createSocket: (url) => new WebSocket(url)   // import WebSocket from 'ws'
 *   Browser: createSocket: (url) => new WebSocket(url)
 */

/**
 * Handler property type. Written through a method signature on purpose: method parameters are
 * compared bivariantly, so `ws`'s `(event: WebSocket.MessageEvent) => void` and the DOM's
 * `(this: WebSocket, ev: MessageEvent) => any` are both assignable to it, although each event
 * type carries more fields than we read (the same trick React's event handler types use).
 */
type Handler<E> = { bivarianceHack(event: E): void }['bivarianceHack'];

export interface WebSocketLike {
  /** 0 CONNECTING, 1 OPEN, 2 CLOSING, 3 CLOSED (RFC 6455 / WHATWG numbering). */
  readonly readyState: number;
  /** Sends one text frame; AHP puts exactly one JSON-RPC message in each. */
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: Handler<unknown> | null;
  /** `data` is a string for text frames; anything else is a protocol violation we log and drop. */
  onmessage: Handler<{ readonly data: unknown }> | null;
  onclose: Handler<{ readonly code?: number; readonly reason?: unknown }> | null;
  onerror: Handler<unknown> | null;
}

export const SocketReadyState = { Connecting: 0, Open: 1, Closing: 2, Closed: 3 } as const;

/** Builds a socket for a URL. Called once per connection attempt (initial connect and every reconnect). */
export type CreateSocket = (url: string) => WebSocketLike;
