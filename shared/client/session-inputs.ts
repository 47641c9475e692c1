/**
 * Steering a running turn from the SDK: the four session methods of the input contract over the
 * hub's `x-input/*` JSON-RPC methods (see server/steering/feature.ts and the README's steering section).
 * `client.sessionInputs(uri)` returns one.
 *
 *   const inputs = new SessionInputs(client, session);   // or withInputs(client, session)
 *   const target = await inputs.getInputTarget();          // null when idle → start a turn instead
 *   const request = { inputId: crypto.randomUUID(), target, content: { text: 'also check X' } };
 *   await retainDraft(request);                             // host keeps id + target + content first
 *   const result = await inputs.submitInput(request);       // accepted | closed | rejected
 *
 * Retry discipline (the seed's rules; the SDK never breaks them on its own):
 * - Mint the `inputId` once, when the user clicks "add", together with the target captured at
 *   that moment, and keep `{inputId, target, content}` in the host *before* submitting.
 * - After a network error or timeout the outcome is unknown: first call
 *   `getInputStatus(inputId, target)`; if it returns null, resend the *identical* request (same
 *   id, same target, same content). Never mint a new id, never change the target, never fall back
 *   to starting a new turn — any of those can add the text twice.
 * - An identical retry returns the original receipt whatever its state now: read
 *   `receipt.state` (`accepted` is "held in memory", `consumed` "applied to the turn's history",
 *   `closed`/`cancelled` "ended unconsumed", see `reason`), never just the outer `outcome`.
 * - `getInputStatus` → null only means "no receipt in the retention window" (current and last
 *   ended turn; memory only, gone after a hub restart) — not "never applied". Show it as
 *   unconfirmed and leave the next step to the user.
 * - Session and auth errors are thrown as `AhpRequestError` (e.g. `data.code ===
 *   'session_not_found'`); they are never turned into "not found" or "closed".
 */
import type { RpcRequester } from './client-types.js';
import { AhpRequestError } from './errors.js';
import { InputMethod, type InputReceipt, type InputSubmission, type InputTarget } from '../protocol/steering.js';
export { InputMethod };
export type { InputContent, InputReceipt, InputReceiptState, InputSubmission, InputTarget } from '../protocol/steering.js';

export interface InputCapabilities {
  readonly version: number;
  readonly durableAck: false;
  readonly image: false;
  /** Receipts are folded from the hub's durable log: a receipt id answers the same after a restart of the hub or of every node. */
  readonly durableReceipts?: boolean;
  readonly target: InputTarget | null;
  readonly content: readonly string[];
  readonly ack: readonly string[];
  readonly retention: { readonly turns: readonly string[]; readonly current: InputTarget | null; readonly lastEnded: InputTarget | null };
  readonly quotaPerTurn: number;
  /** Present when the session's agent cannot take input mid-turn (an ACP agent without a channel): why. */
  readonly targetUnavailable?: { readonly code: string; readonly message: string };
  readonly [key: string]: unknown;
}

/**
 * What `submitInput` resolves to. `closed`: the target turn is not open (`turn_closed`; never
 * redirected). `rejected`: refused with a machine-readable `code` (`input_conflict`,
 * `input_quota_exceeded`, `empty_content`, `image_unsupported`, `unsupported_content`,
 * `durable_ack_unsupported`, `invalid_request`, …); `status` is the HTTP status the same refusal
 * gets over HTTP.
 */
export type SubmitInputResult =
  | { readonly outcome: 'accepted'; readonly receipt: InputReceipt; readonly duplicate?: boolean }
  | { readonly outcome: 'closed'; readonly code: string; readonly message: string; readonly status: number }
  | { readonly outcome: 'rejected'; readonly code: string; readonly message: string; readonly status: number; readonly receipt?: InputReceipt };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The input-level refusal carried by an AhpRequestError, or undefined for session/auth/other errors. */
export function inputRefusal(error: unknown): Extract<SubmitInputResult, { outcome: 'closed' | 'rejected' }> | undefined {
  if (!(error instanceof AhpRequestError) || !isRecord(error.data)) return undefined;
  const { outcome, code, message, status } = error.data;
  if ((outcome !== 'closed' && outcome !== 'rejected') || typeof code !== 'string') return undefined;
  const base = { code, message: typeof message === 'string' ? message : error.message, status: typeof status === 'number' ? status : 0 };
  if (outcome === 'closed') return { outcome, ...base };
  const receipt = isRecord(error.data['receipt']) ? (error.data['receipt'] as unknown as InputReceipt) : undefined;
  return receipt ? { outcome, ...base, receipt } : { outcome, ...base };
}

export class SessionInputs {
  constructor(
    readonly client: RpcRequester,
    /** `ahp-session:/<id>`. */
    readonly session: string,
  ) {}

  /** `version: 1`, text/blocks + memory support, `durableAck: false`, `image: false`, the current target and the retention range. */
  async inputCapabilities(): Promise<InputCapabilities> {
    return (await this.client.request(InputMethod.Capabilities, { channel: this.session })) as InputCapabilities;
  }

  /**
   * The active turn as `{historyEpoch, turnId}`, or null when idle. Capture it when the user
   * starts an addition; a closed target is refused later, never swapped for a newer turn.
   */
  async getInputTarget(): Promise<InputTarget | null> {
    return (await this.inputCapabilities()).target;
  }

  /**
   * Adds user text to the target turn. Resolves with the outcome; input-level refusals resolve
   * as `closed` / `rejected` with their `code`. Throws for session/auth errors and for transport
   * failures — after which: query first, then resend the identical request (see file comment).
   */
  async submitInput(submission: InputSubmission): Promise<SubmitInputResult> {
    try {
      const params = { channel: this.session, inputId: submission.inputId, target: submission.target, content: submission.content, ...(submission.ack !== undefined && { ack: submission.ack }) };
      return (await this.client.request(InputMethod.Submit, params)) as SubmitInputResult;
    } catch (error) {
      const refusal = inputRefusal(error);
      if (refusal) return refusal;
      throw error;
    }
  }

  /**
   * The receipt for `(inputId, target)`, or null when none is in the retention window. Never
   * re-runs the input or any tool.
   */
  async getInputStatus(inputId: string, target: InputTarget): Promise<InputReceipt | null> {
    const result = await this.client.request(InputMethod.Status, { channel: this.session, inputId, target });
    return isRecord(result) && isRecord(result['receipt']) ? (result['receipt'] as unknown as InputReceipt) : null;
  }
}

/** A session object with the four input methods attached: `withInputs(client, session).submitInput(…)`. */
export function withInputs(client: RpcRequester, session: string): SessionInputs {
  return new SessionInputs(client, session);
}
