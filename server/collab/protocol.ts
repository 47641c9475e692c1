/** Server-side limits of the `x-collab/*` feature; the wire protocol is in shared/protocol/collab.ts. */
export interface CollabLimits {
  /** Documents one connection may follow at once. */
  readonly maxDocsPerConnection: number;
  /** Largest base64 payload of one sync or awareness message. */
  readonly maxMessageChars: number;
  /** Total update bytes a document may accumulate before it is dropped. */
  readonly maxDocBytes: number;
  /** Awareness client ids one connection may own in a document. */
  readonly maxAwarenessClientsPerConnection: number;
  /** Largest JSON size of one awareness state. */
  readonly maxAwarenessStateChars: number;
  /** Debounce before merged text is mirrored into AHP drafts. */
  readonly mirrorDelayMs: number;
}

export const DEFAULT_COLLAB_LIMITS: CollabLimits = {
  maxDocsPerConnection: 16,
  maxMessageChars: 128 * 1024,
  maxDocBytes: 2 * 1024 * 1024,
  maxAwarenessClientsPerConnection: 4,
  maxAwarenessStateChars: 4 * 1024,
  mirrorDelayMs: 40,
};
