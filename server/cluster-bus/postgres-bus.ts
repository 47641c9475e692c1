/**
 * The cluster bus on PostgreSQL LISTEN/NOTIFY (channel `ahp_bus`, separate from the log's
 * `ahp_log` wake-ups). One dedicated connection both LISTENs and sends (`pg_notify`); when it
 * drops it is re-established every second, and what is sent meanwhile is dropped (the bus is
 * ephemeral by design). PostgreSQL refuses NOTIFY payloads of 8000 bytes or more, so `publish`
 * refuses (returns false) any message whose JSON is larger than `maxMessageBytes`; callers split
 * what they send into small messages (one awareness client per message).
 */
import { randomUUID } from 'node:crypto';
import { ListeningConnection } from '../storage/postgres-listener.js';
import type { BusMessage, ClusterBus } from './cluster-bus.js';

const BUS_NOTIFY_CHANNEL = 'ahp_bus';
/** Below PostgreSQL's 8000-byte NOTIFY payload limit, with room to spare. */
export const MAX_BUS_MESSAGE_BYTES = 7_900;

export interface PostgresBusOptions {
  readonly url: string;
  readonly onConnectionError?: (error: Error) => void;
}

export class PostgresClusterBus implements ClusterBus {
  readonly nodeId = randomUUID();
  readonly maxMessageBytes = MAX_BUS_MESSAGE_BYTES;
  readonly #handlers = new Set<(message: BusMessage) => void>();
  readonly #connectedHandlers = new Set<() => void>();
  /** The one connection that both LISTENs and sends. */
  readonly #connection: ListeningConnection;
  /** Resolves once the first connection attempt finished (tests and start-up wait for it). */
  readonly ready: Promise<void>;

  constructor(options: PostgresBusOptions) {
    this.#connection = new ListeningConnection({
      url: options.url,
      channel: BUS_NOTIFY_CHANNEL,
      what: 'bus',
      onConnectionError: options.onConnectionError,
      onNotification: (payload) => this.#received(payload),
      onConnected: () => {
        for (const h of this.#connectedHandlers) h();
      },
    });
    this.ready = this.#connection.ready;
  }

  publish(message: Omit<BusMessage, 'from'>): boolean {
    // Undefined while the connection is down, and from the moment close() is called.
    const client = this.#connection.client;
    if (!client) return false;
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

  /** Safe to call more than once (the connection's close is). */
  async close(): Promise<void> {
    await this.#connection.close();
  }

  #received(payload: string): void {
    let message: unknown;
    try {
      message = JSON.parse(payload);
    } catch {
      return;
    }
    if (typeof message !== 'object' || message === null) return;
    const m = message as BusMessage;
    if (typeof m.from !== 'string' || typeof m.kind !== 'string' || m.from === this.nodeId) return;
    for (const h of this.#handlers) h(m);
  }
}
