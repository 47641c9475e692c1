/**
 * A dedicated PostgreSQL connection that LISTENs on one channel (pooled connections cannot hold a
 * LISTEN) and comes back by itself: when it drops (PostgreSQL restarted, network cut) it is
 * re-established every second until closed. Notifications sent while it is down are lost, so its
 * users treat them as hints (the log is also polled; presence is re-announced on reconnect).
 * Shared by the log store's append wake-ups and the cluster bus.
 */
import pg from 'pg';

export interface ListeningConnectionOptions {
  readonly url: string;
  readonly channel: string;
  /** Names the connection in the error reported when it ends ("the LISTEN connection ended"). */
  readonly what: string;
  /** Every notification's payload on `channel`. Must not throw. */
  readonly onNotification: (payload: string) => void;
  /** Called after each (re)connection, once the LISTEN is in place. */
  readonly onConnected?: (() => void) | undefined;
  /** Called when the connection fails or drops (before each retry). */
  readonly onConnectionError?: ((error: Error) => void) | undefined;
}

const RETRY_MS = 1_000;

export class ListeningConnection {
  readonly #options: ListeningConnectionOptions;
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  /** Starts connecting; `ready` resolves once the first attempt has finished (either way). */
  constructor(options: ListeningConnectionOptions) {
    this.#options = options;
    this.ready = this.#connect();
  }

  readonly ready: Promise<void>;

  /** The connected client (to send on the same connection), or undefined while down. */
  get client(): pg.Client | undefined {
    return this.#client;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    this.#retry = undefined;
    if (this.#closed) return;
    const { url, channel, what, onNotification, onConnected, onConnectionError } = this.#options;
    const client = new pg.Client({ connectionString: url });
    const retry = (error: Error): void => {
      if (this.#client === client) this.#client = undefined;
      client.end().catch(() => undefined);
      if (this.#closed || this.#retry !== undefined) return;
      onConnectionError?.(error);
      this.#retry = setTimeout(() => void this.#connect(), RETRY_MS);
      this.#retry.unref();
    };
    client.on('error', retry);
    client.on('end', () => {
      if (this.#client === client) retry(new Error(`the ${what} connection ended`));
    });
    client.on('notification', (n) => {
      if (n.channel === channel && n.payload !== undefined) onNotification(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
      if (this.#closed) {
        await client.end();
        return;
      }
      this.#client = client;
      onConnected?.();
    } catch (error) {
      retry(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
