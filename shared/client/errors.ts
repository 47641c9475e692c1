/**
 * Errors the client surfaces. Action rejections are NOT errors: `dispatch` resolves
 * `{accepted: false, reason}` for those (AHP §1.5, §1.8).
 */
import type { JsonRpcError } from '../protocol/messages.js';
import { isErrorKind, kindOfRpcError, type ErrorKind } from '../protocol/error-kinds.js';

/**
 * The one base of every error the client throws: catch `AhpError` for "the hub or the link said
 * no". `kind` is the refusal's kind of the one table (shared/protocol/error-kinds.ts) when the hub
 * named one (a JSON-RPC error, a refused upgrade), undefined for failures of the link itself
 * (timeouts, a dropped socket, a malformed answer).
 */
export abstract class AhpError extends Error {
  abstract readonly kind: ErrorKind | undefined;
}

/** The server answered a request with a JSON-RPC error (codes in shared/protocol/errors.ts). */
export class AhpRequestError extends AhpError {
  readonly code: number;
  readonly data: unknown;
  /** What was refused, from the one table (`error.data.kind`, shared/protocol/error-kinds.ts): branch on this. */
  readonly kind: ErrorKind;
  /** The request method, for logs; not part of the wire error. */
  readonly method: string;
  constructor(method: string, error: JsonRpcError) {
    super(error.message);
    this.name = 'AhpRequestError';
    this.method = method;
    this.code = error.code;
    this.data = error.data;
    this.kind = kindOfRpcError(error);
  }
}

/**
 * The request (or dispatch) could not complete because of the connection. `permanent` is true
 * when the client is closed for good (close(), fatal handshake error, reconnect disabled or
 * exhausted); false when the socket merely dropped and the client is reconnecting — the request
 * may or may not have reached the server, so retry only if it is idempotent.
 */
export class AhpConnectionError extends AhpError {
  readonly permanent: boolean;
  /** The kind of the hub's refusal, when it named one (`AhpAuthError`); undefined when the link failed. */
  readonly kind: ErrorKind | undefined;
  constructor(message: string, permanent: boolean, options?: { cause?: unknown; kind?: ErrorKind }) {
    super(message, options);
    this.name = 'AhpConnectionError';
    this.permanent = permanent;
    this.kind = options?.kind;
  }
}

/**
 * The hub refused the connection because the token is missing or invalid (it answers the upgrade
 * with HTTP 401 before any frame). Permanent: connecting again with the same token fails the same
 * way, so ask for another token instead of retrying. Browsers do not show a refused upgrade's
 * status, so the client learns it by asking the same URL over plain HTTP (see `refusalProbe`).
 */
export class AhpAuthError extends AhpConnectionError {
  /** The HTTP status the hub answered (401). */
  readonly status: number;
  /** The refusal's kind when the hub named it (`unauthorized`, `token_expired`, `token_audience_mismatch`…; docs/errors.md). */
  readonly code: string | undefined;
  /** The hub's words for it (e.g. "the access token has expired: …"), when it said. */
  readonly reason: string | undefined;
  constructor(status: number, options?: { cause?: unknown; code?: string; reason?: string }) {
    // The body's code is the kind (`token_expired`…) for every refusal of the upgrade's 401.
    super('token missing or invalid', true, { ...(options?.cause !== undefined && { cause: options.cause }), kind: isErrorKind(options?.code) ? options.code : 'unauthorized' });
    this.name = 'AhpAuthError';
    this.status = status;
    this.code = options?.code;
    this.reason = options?.reason;
  }
}

/** No response within the request timeout. The request may still be processed by the server. */
export class AhpTimeoutError extends AhpError {
  readonly kind: undefined = undefined;
  readonly method: string;
  readonly timeoutMs: number;
  constructor(method: string, timeoutMs: number) {
    super(`${method}: no response within ${timeoutMs} ms`);
    this.name = 'AhpTimeoutError';
    this.method = method;
    this.timeoutMs = timeoutMs;
  }
}

/** The server sent something that does not match the protocol (bad result shape, bad version). */
export class AhpProtocolError extends AhpError {
  readonly kind: undefined = undefined;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AhpProtocolError';
  }
}
