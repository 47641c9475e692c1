/**
 * The client's automatic reconnects: after an open socket drops, wait the back-off delay (none
 * for RECONNECT_NOW_CLOSE_CODE), run the handshake again, and repeat until it succeeds, the
 * attempts run out, or an error says retrying cannot help. What a handshake is and what closing
 * for good means belong to the AhpClient facade (`ReconnectHost`).
 */
import { ErrorCode } from '../protocol/errors.js';
import { reconnectDelay, type Scheduler } from './backoff.js';
import type { AhpClientLogger, ReconnectOptions } from './client-types.js';
import { AhpConnectionError, AhpProtocolError, AhpRequestError } from './errors.js';

export interface ReconnectHost {
  readonly closedError: AhpConnectionError | undefined;
  /** The reconnect handshake on a new socket. */
  establish(): Promise<unknown>;
  /** Closes the client for good. */
  shutdown(error: AhpConnectionError): void;
  abandonSocket(error: Error): void;
  /** A reconnect is scheduled. */
  onReconnecting(): void;
}

export function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/** Errors after which retrying the same handshake cannot succeed. */
function isFatalHandshakeError(error: unknown): boolean {
  return (error instanceof AhpRequestError && error.code === ErrorCode.UnsupportedProtocolVersion) || error instanceof AhpProtocolError;
}

export interface ReconnectLoopOptions {
  /** `undefined`: reconnect is disabled. */
  readonly backoff: ReconnectOptions | undefined;
  readonly scheduler: Scheduler;
  readonly random: () => number;
  readonly logger: AhpClientLogger;
  readonly host: ReconnectHost;
}

export class ReconnectLoop {
  readonly #options: ReconnectOptions | undefined;
  readonly #scheduler: Scheduler;
  readonly #random: () => number;
  readonly #logger: AhpClientLogger;
  readonly #host: ReconnectHost;
  #reconnectAttempt = 0;
  #reconnectTimer: unknown;

  constructor(options: ReconnectLoopOptions) {
    this.#options = options.backoff;
    this.#scheduler = options.scheduler;
    this.#random = options.random;
    this.#logger = options.logger;
    this.#host = options.host;
  }

  /** A handshake succeeded: the next drop starts the back-off from the beginning. */
  reset(): void {
    this.#reconnectAttempt = 0;
  }

  cancel(): void {
    if (this.#reconnectTimer !== undefined) {
      this.#scheduler.clearTimeout(this.#reconnectTimer);
      this.#reconnectTimer = undefined;
    }
  }

  /** `closeCode`: why the open socket closed (RECONNECT_NOW_CLOSE_CODE skips the back-off). */
  schedule(closeCode?: number): void {
    const options = this.#options;
    if (!options) {
      this.#host.shutdown(new AhpConnectionError('connection lost and reconnect is disabled', true));
      return;
    }
    if (options.maxAttempts !== undefined && this.#reconnectAttempt >= options.maxAttempts) {
      this.#host.shutdown(new AhpConnectionError(`gave up after ${this.#reconnectAttempt} reconnect attempts`, true));
      return;
    }
    const delay = reconnectDelay(closeCode, this.#reconnectAttempt, options, this.#random);
    this.#reconnectAttempt++;
    this.#host.onReconnecting();
    this.#reconnectTimer = this.#scheduler.setTimeout(() => {
      this.#reconnectTimer = undefined;
      void this.#attemptReconnect();
    }, delay);
  }

  async #attemptReconnect(): Promise<void> {
    if (this.#host.closedError) return;
    try {
      await this.#host.establish();
    } catch (error) {
      if (this.#host.closedError) return;
      if (isFatalHandshakeError(error)) {
        this.#host.shutdown(new AhpConnectionError(`reconnect failed: ${toError(error).message}`, true, { cause: error }));
        return;
      }
      this.#logger.warn('reconnect attempt failed', error);
      this.#host.abandonSocket(new AhpConnectionError('reconnect attempt failed', false, { cause: error }));
      this.schedule();
    }
  }
}
