/**
 * What the hub needs of a client connection. The WebSocket transport adapts `ws` to this; tests
 * can use a fake. The hub never imports `ws`.
 */
export interface Connection {
  readonly id: string;
  /** Sends one text frame. Must not throw; a dead connection drops the frame. */
  send(text: string): void;
  /** Closes with a WebSocket close code and a short reason. */
  close(code: number, reason: string): void;
  /** Bytes queued but not yet written to the socket (slow-consumer detection). */
  readonly bufferedAmount: number;
  /** False once the connection can no longer send (frames held for it are dropped); absent = unknown. */
  readonly isOpen?: boolean;
  /** Calls `fn` once when the bytes queued for the socket have been written out (absent: polled). */
  whenDrained?(fn: () => void): void;
  /**
   * Cuts the connection without the closing handshake, freeing what it holds unsent at once (a
   * consumer far behind would read a close frame only after all of it, and the handshake waits 30 s).
   */
  terminate?(): void;
  /** The principal's budget of unsent data across its connections (`UnsentBudget`); absent: none. */
  readonly unsentBudget?: UnsentNotes | undefined;
}

/** What a connection's sends tell its unsent budget (`UnsentBudget` in unsent-budget.ts, which imports this file). */
export interface UnsentNotes {
  /** `conn` holds `bytes` unsent now; the budget may close the slowest connections. */
  note(conn: Connection, bytes: number): void;
}

/** Application close codes (4000–4999 are ours). */
export const CloseCode = {
  Normal: 1000,
  GoingAway: 1001,
  /** The client did not read fast enough; it may reconnect and resume. */
  SlowConsumer: 4008,
  /** The connection exceeded its message rate for too long. */
  RateLimited: 4029,
  /** The protocol version could not be negotiated. */
  UnsupportedVersion: 4005,
} as const;

/**
 * The protocol version each connection negotiated (set by `initialize`, or by `reconnect` when
 * that opens the connection). The fan-out and `reconnect` read it to send a connection only
 * actions its version knows (shared/protocol/version-features.ts). Absent: an in-process
 * receiver, treated as the newest version.
 */
const versions = new WeakMap<Connection, string>();
export function setConnectionVersion(conn: Connection, version: string): void {
  versions.set(conn, version);
}
export function connectionVersion(conn: Connection): string | undefined {
  return versions.get(conn);
}
