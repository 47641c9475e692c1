/**
 * The client's reconnect policy, free of I/O: after an open link drops, how long to wait before
 * the next handshake (none for RECONNECT_NOW_CLOSE_CODE), when to give up (attempts run out,
 * reconnect disabled), and which handshake errors retrying cannot help. The client (ahp-client.ts)
 * runs the timer and the handshake and asks this policy between attempts.
 */
import { ErrorCode } from '../protocol/errors.js';
import { reconnectDelay } from './backoff.js';
import type { ReconnectOptions } from './client-types.js';
import { AhpConnectionError, AhpProtocolError, AhpRequestError } from './errors.js';

export function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/** Errors after which retrying the same handshake cannot succeed. */
export function isFatalHandshakeError(error: unknown): boolean {
  return (error instanceof AhpRequestError && error.code === ErrorCode.UnsupportedProtocolVersion) || error instanceof AhpProtocolError;
}

/** The next step after a drop: wait `delayMs` and try again, or close for good with `giveUp`. */
export type ReconnectStep = { readonly delayMs: number } | { readonly giveUp: AhpConnectionError };

export class ReconnectPolicy {
  readonly #options: ReconnectOptions | undefined;
  readonly #random: () => number;
  #attempt = 0;

  /** `options` undefined: reconnect is disabled. */
  constructor(options: ReconnectOptions | undefined, random: () => number) {
    this.#options = options;
    this.#random = random;
  }

  /** A handshake succeeded: the next drop starts the back-off from the beginning. */
  reset(): void {
    this.#attempt = 0;
  }

  /** `closeCode`: why the open link closed (RECONNECT_NOW_CLOSE_CODE skips the back-off). */
  next(closeCode?: number): ReconnectStep {
    const options = this.#options;
    if (!options) return { giveUp: new AhpConnectionError('connection lost and reconnect is disabled', true) };
    if (options.maxAttempts !== undefined && this.#attempt >= options.maxAttempts) {
      return { giveUp: new AhpConnectionError(`gave up after ${this.#attempt} reconnect attempts`, true) };
    }
    const delayMs = reconnectDelay(closeCode, this.#attempt, options, this.#random);
    this.#attempt++;
    return { delayMs };
  }
}
