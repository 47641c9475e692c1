/**
 * An in-memory `ClientTransport`: the client talks to a server in the same process with no
 * socket. Each connection attempt calls `serve(link)`; the server answers with what it does with
 * the client's frames and opens the link with `link.accept()`. Every hop goes through a
 * microtask, in order, as a socket's would, so neither side is re-entered from its own send.
 *
 *   const transport = memoryTransport((link) => {
 *     link.accept();
 *     return { frame: (text) => server.handle(text, (answer) => link.send(answer)), closed: () => server.drop() };
 *   });
 *   const client = new AhpClient({ transport });
 */
import type { ClientTransport, TransportEvents, TransportFactory } from './transport.js';

/** The server's end of one link. */
export interface MemoryLink {
  /** The URL the client asked for (its token appended, if it has one). */
  readonly url: string;
  /** Opens the link: the client hears `opened`. */
  accept(): void;
  /** A frame to the client; dropped once the link is closed. */
  send(frame: string): void;
  /** Closes from the server's side: the client hears `closed(code, reason)`. */
  close(code?: number, reason?: string): void;
  readonly isOpen: boolean;
}

/** What the server does with one link: its frames, and the client closing it. */
export interface MemoryLinkHandler {
  frame(text: string): void;
  closed?(): void;
}

export function memoryTransport(serve: (link: MemoryLink) => MemoryLinkHandler): TransportFactory {
  return (url) => new MemoryClientEnd(url, serve);
}

class MemoryClientEnd implements ClientTransport {
  readonly #url: string;
  readonly #serve: (link: MemoryLink) => MemoryLinkHandler;
  #events: TransportEvents | undefined;
  #handler: MemoryLinkHandler | undefined;
  /** 0 connecting, 1 open, 2 closed. */
  #phase = 0;

  constructor(url: string, serve: (link: MemoryLink) => MemoryLinkHandler) {
    this.#url = url;
    this.#serve = serve;
  }

  open(events: TransportEvents): void {
    this.#events = events;
    const end = this;
    const link: MemoryLink = {
      url: this.#url,
      get isOpen() {
        return end.#phase === 1;
      },
      accept: () => {
        if (this.#phase !== 0) return;
        this.#phase = 1;
        later(() => this.#events?.opened());
      },
      send: (frame) => {
        if (this.#phase !== 1) return;
        later(() => this.#events?.message(frame));
      },
      close: (code = 1000, reason = '') => {
        if (this.#phase === 2) return;
        this.#phase = 2;
        later(() => this.#events?.closed(code, reason));
      },
    };
    this.#handler = this.#serve(link);
  }

  send(frame: string): void {
    if (this.#phase !== 1) throw new Error('memory link not open');
    const handler = this.#handler;
    later(() => handler?.frame(frame));
  }

  close(): void {
    if (this.#phase === 2) return;
    this.#phase = 2;
    this.#events = undefined;
    const handler = this.#handler;
    later(() => handler?.closed?.());
  }
}

/** The next microtask (shared/ has no DOM or Node typings for `queueMicrotask`). */
function later(fn: () => void): void {
  void Promise.resolve().then(fn);
}
