/**
 * The cluster bus on PostgreSQL LISTEN/NOTIFY (channel `ahp_bus`, separate from the log's
 * `ahp_log` wake-ups). One dedicated connection both LISTENs and sends (`pg_notify`); when it
 * drops it is re-established every second, and what is sent meanwhile is dropped (the bus is
 * ephemeral by design). PostgreSQL refuses NOTIFY payloads of 8000 bytes or more, so `publish`
 * refuses (returns false) any message whose JSON is larger than `maxMessageBytes`; callers split
 * what they send into small messages (one awareness client per message).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { BusMessage, ClusterBus } from './cluster-bus.js';

export const BUS_NOTIFY_CHANNEL = 'ahp_bus';
/** Below PostgreSQL's 8000-byte NOTIFY payload limit, with room to spare. */
export const MAX_BUS_MESSAGE_BYTES = 7_900;

export interface PostgresBusOptions {
  readonly url: string;
  readonly onConnectionError?: (error: Error) => void;
}

export class PostgresClusterBus implements ClusterBus {
  readonly nodeId = randomUUID();
  readonly maxMessageBytes = MAX_BUS_MESSAGE_BYTES;
  readonly #url: string;
  readonly #onConnectionError: ((error: Error) => void) | undefined;
  readonly #handlers = new Set<(message: BusMessage) => void>();
  readonly #connectedHandlers = new Set<() => void>();
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;
  /** Resolves once the first connection attempt finished (tests and start-up wait for it). */
  readonly ready: Promise<void>;

  constructor(options: PostgresBusOptions) {
    this.#url = options.url;
    this.#onConnectionError = options.onConnectionError;
    this.ready = this.#connect();
  }

  publish(message: Omit<BusMessage, 'from'>): boolean {
    const client = this.#client;
    if (!client || this.#closed) return false;
    const text = JSON.stringify({ ...message, from: this.nodeId });
    if (Buffer.byteLength(text) > this.maxMessageBytes) return false;
    client.query('SELECT pg_notify($1, $2)', [BUS_NOTIFY_CHANNEL, text]).catch(() => undefined);
    return true;
  }

  onMessage(handler: (message: BusMessage) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  onConnected(handler: () => void): () => void {
    this.#connectedHandlers.add(handler);
    return () => this.#connectedHandlers.delete(handler);
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
    const client = new pg.Client({ connectionString: this.#url });
    const retry = (error: Error): void => {
      if (this.#client === client) this.#client = undefined;
      client.end().catch(() => undefined);
      if (this.#closed || this.#retry !== undefined) return;
      this.#onConnectionError?.(error);
      this.#retry = setTimeout(() => void this.#connect(), 1_000);
      this.#retry.unref();
    };
    client.on('error', retry);
    client.on('end', () => {
      if (this.#client === client) retry(new Error('the bus connection ended'));
    });
    client.on('notification', (n) => {
      if (n.channel !== BUS_NOTIFY_CHANNEL || n.payload === undefined) return;
      let message: unknown;
      try {
        message = JSON.parse(n.payload);
      } catch {
        return;
      }
      if (typeof message !== 'object' || message === null) return;
      const m = message as BusMessage;
      if (typeof m.from !== 'string' || typeof m.kind !== 'string' || m.from === this.nodeId) return;
      for (const h of this.#handlers) h(m);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${BUS_NOTIFY_CHANNEL}`);
      if (this.#closed) {
        await client.end();
        return;
      }
      this.#client = client;
      for (const h of this.#connectedHandlers) h();
    } catch (error) {
      retry(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
