/**
 * The steering input contract on the wire (issue "steering a running turn"): the `x-input/*`
 * JSON-RPC methods and the shapes shared by the hub's HTTP and WebSocket surfaces, the SDK and the
 * headless CLI. The hub validates requests by hand (server/steering/inputs.ts) because every
 * refusal needs its own stable code; these are the shapes it accepts and answers with.
 */

/** `_meta` key on the steering message and the transcript part that link them to the receipt. */
export const USER_INPUT_META = 'hub/userInput';
/** Response part kind for a consumed input: an AHP user `Message` inside the turn. */
export const USER_MESSAGE_PART = 'userMessage';

export const InputMethod = {
  Capabilities: 'x-input/capabilities',
  Submit: 'x-input/submit',
  Status: 'x-input/status',
} as const;

/** The open turn an input is meant for: captured when the user clicks, never redirected. */
export interface InputTarget {
  readonly historyEpoch: string;
  readonly turnId: string;
}

export type InputContent = { readonly text: string } | { readonly blocks: ReadonlyArray<{ readonly t: 'text'; readonly text: string }> };

export interface InputSubmission {
  /** Client-chosen, stable across retries of the same addition. */
  readonly inputId: string;
  readonly target: InputTarget;
  readonly content: InputContent;
  /** Only 'memory' is supported; omitted means 'memory'. 'durable' is refused (`durable_ack_unsupported`). */
  readonly ack?: 'memory';
}

export type InputReceiptState = 'accepted' | 'consumed' | 'closed' | 'cancelled';
export type InputSource = 'http' | 'ws';

export interface InputReceipt {
  readonly inputId: string;
  /** The path part of `ahp-session:/<id>` (what HTTP routes call `{sessionId}`). */
  readonly sessionId: string;
  readonly historyEpoch: string;
  readonly turnId: string;
  /** 1-based acceptance order inside the turn. */
  readonly ordinal: number;
  /** 1 when accepted; +1 on every state change. */
  readonly revision: number;
  readonly source: InputSource;
  readonly state: InputReceiptState;
  /** 'log': the receipt is folded from the durable log, so it answers the same after a restart of the hub or of every node. */
  readonly durability: 'log';
  /** Why an input ended unconsumed (`closed` / `cancelled`). */
  readonly reason?: string;
  readonly acceptedAt: string;
  readonly updatedAt: string;
}
