/**
 * Cluster mode: the shared update log of collaborative documents. Every Yjs update a node's room
 * makes (a member typing, the server merging a non-Yjs draft) is appended here before other
 * nodes hear of it; a node opening a room reads the document's whole history, so every node's
 * Y.Doc of one request holds the same items and the text merges character by character across
 * nodes (docs/cluster.md "Text merge across nodes"). The cluster bus only carries the wake-up.
 */

/** One stored update: its id (increasing in append order) and its Yjs bytes. */
export interface CollabLogRow {
  readonly id: number;
  readonly update: Uint8Array;
}

export interface CollabLog {
  /**
   * The document's history. When it has none, `seed` (the server's first insert of the current
   * drafts) is stored first, atomically, so two nodes opening the document at once never both
   * seed it (which would duplicate the text).
   */
  open(channel: string, doc: string, seed: Uint8Array): Promise<CollabLogRow[]>;
  /** Appends one update; resolves with its id. Rejects when the store is unreachable. */
  append(channel: string, doc: string, update: Uint8Array): Promise<number>;
  /** Updates after `afterId` (catching up after the bus reconnected). */
  readSince(channel: string, doc: string, afterId: number): Promise<CollabLogRow[]>;
  /** The document ended (request answered, turn over, chat gone): its history goes. */
  remove(channel: string, doc: string): Promise<void>;
  /** Documents with stored updates (tests, metrics). */
  documentCount(): Promise<number>;
}

/** The `FeatureContext.services` key of the tenant's collab log (cluster mode only). */
export const COLLAB_LOG_SERVICE = 'collabLog';
