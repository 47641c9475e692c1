/**
 * The cluster's ephemeral channel: messages between hub processes that must NOT be durable
 * (presence). Nothing sent here is ever replayed, ordered with the log, or guaranteed to arrive:
 * a receiver that misses a message simply sees presence a moment late or until it expires.
 * Durable facts go through the shared action log, never through this bus.
 */

/** One message between processes; `from` is the sending process, so nobody handles its own. */
export interface BusMessage {
  readonly from: string;
  readonly kind: string;
  readonly [field: string]: unknown;
}

export interface ClusterBus {
  /** This process's id on the bus (fresh per start). */
  readonly nodeId: string;
  /**
   * Sends to every other process. Returns false when the message was not sent: larger than the
   * bus carries (`maxMessageBytes`) or the bus is down. Never throws; never waits.
   */
  publish(message: Omit<BusMessage, 'from'>): boolean;
  /** Messages from other processes (never this one's own). */
  onMessage(handler: (message: BusMessage) => void): () => void;
  /**
   * Called each time the bus (re)connects: whatever was published while it was down was lost, so
   * users re-announce their current state then.
   */
  onConnected(handler: () => void): () => void;
  readonly maxMessageBytes: number;
  close(): Promise<void>;
}

/** The `FeatureContext.services` key the composition root puts the bus under (cluster mode only). */
export const CLUSTER_BUS_SERVICE = 'clusterBus';

/**
 * One tenant's view of the bus. Each tenant has its own hub state and features, and two tenants
 * may use the same session or chat id, so a message is marked with its tenant when published and
 * heard only by the same tenant's features on other processes. Closing the view does nothing; the
 * composition root closes the bus itself.
 */
export function tenantBus(bus: ClusterBus, tenant: string): ClusterBus {
  // The mark costs `,"tenant":"…"` in every message (its object form less the braces, plus a
  // comma); the view's limit leaves exactly that much room.
  const markBytes = Buffer.byteLength(JSON.stringify({ tenant })) - 1;
  return {
    get nodeId() {
      return bus.nodeId;
    },
    maxMessageBytes: bus.maxMessageBytes - markBytes,
    publish: (message) => bus.publish({ ...message, tenant }),
    onMessage: (handler) =>
      bus.onMessage((message) => {
        if (message['tenant'] === tenant) handler(message);
      }),
    onConnected: (handler) => bus.onConnected(handler),
    close: async () => undefined,
  };
}
