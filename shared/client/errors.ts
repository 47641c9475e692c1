/**
 * Errors the client surfaces, all `AhpError`s: each carries its `kind`, so a caller branches on
 * one field whatever went wrong. A refusal by the hub has the kind the hub named (`error.data.kind`
 * of the JSON-RPC error, one of `ErrorKind` in shared/protocol/error-kinds.ts); what only the
 * client can see (the link dropped, no answer in time, an answer of the wrong shape) has one of
 * the four `ClientErrorKind`s, which never travel on the wire.
 *
 * Action rejections are NOT errors: `dispatch` resolves `{accepted: false, reason}` for those
 * (AHP §1.5, §1.8).
 */
import type { JsonRpcError } from '../protocol/messages.js';
import { isErrorKind, kindOfRpcError, type ErrorKind } from '../protocol/error-kinds.js';

/**
 * Kinds only the client sees: `connection_lost` (the link dropped; the client reconnects),
 * `client_closed` (closed for good), `timeout` (no answer in time), `unexpected_response` (the
 * hub answered something the protocol does not allow).
 */
export type ClientErrorKind = 'connection_lost' | 'client_closed' | 'timeout' | 'unexpected_response';

export type AhpErrorKind = ErrorKind | ClientErrorKind;

/** The one base of every client error: `kind` says what happened. */
export class AhpError extends Error {
  readonly kind: AhpErrorKind;
  constructor(kind: AhpErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AhpError';
    this.kind = kind;
  }
}

/** The server answered a request with a JSON-RPC error (codes in shared/protocol/errors.ts). */
export class AhpRequestError extends AhpError {
  readonly code: number;
  readonly data: unknown;
  /** What was refused, from the one table (`error.data.kind`, shared/protocol/error-kinds.ts): branch on this. */
  declare readonly kind: ErrorKind;
  /** The request method, for logs; not part of the wire error. */
  readonly method: string;
  constructor(method: string, error: JsonRpcError) {
    super(kindOfRpcError(error), error.message);
    this.name = 'AhpRequestError';
    this.method = method;
    this.code = error.code;
    this.data = error.data;
  }
}

/**
 * The request (or dispatch) could not complete because of the connection. `permanent` is true
 * when the client is closed for good (close(), fatal handshake error, reconnect disabled or
 * exhausted; kind `client_closed`); false when the socket merely dropped and the client is
 * reconnecting (kind `connection_lost`) — the request may or may not have reached the server, so
 * retry only if it is idempotent.
 */
export class AhpConnectionError extends AhpError {
  readonly permanent: boolean;
  constructor(message: string, permanent: boolean, options?: { cause?: unknown; kind?: AhpErrorKind }) {
    super(options?.kind ?? (permanent ? 'client_closed' : 'connection_lost'), message, options);
    this.name = 'AhpConnectionError';
    this.permanent = permanent;
  }
}

/**
 * The hub refused the connection because the token is missing or invalid (it answers the upgrade
 * with HTTP 401 before any frame). Permanent: connecting again with the same token fails the same
 * way, so ask for another token instead of retrying. Browsers do not show a refused upgrade's
 * status, so the client learns it by asking the same URL over plain HTTP (see `refusalProbe`).
 * Its kind is the one the hub named (`token_expired`…), else `unauthorized`.
 */
export class AhpAuthError extends AhpConnectionError {
  /** The HTTP status the hub answered (401). */
  readonly status: number;
  /** The refusal's kind when the hub named it (`unauthorized`, `token_expired`, `token_audience_mismatch`…; docs/errors.md). */
  readonly code: string | undefined;
  /** The hub's words for it (e.g. "the access token has expired: …"), when it said. */
  readonly reason: string | undefined;
  constructor(status: number, options?: { cause?: unknown; code?: string; reason?: string }) {
    super('token missing or invalid', true, { ...options, kind: isErrorKind(options?.code) ? options.code : 'unauthorized' });
    this.name = 'AhpAuthError';
    this.status = status;
    this.code = options?.code;
    this.reason = options?.reason;
  }
}

/** No response within the request timeout (kind `timeout`). The request may still be processed by the server. */
export class AhpTimeoutError extends AhpError {
  readonly method: string;
  readonly timeoutMs: number;
  constructor(method: string, timeoutMs: number) {
    super('timeout', `${method}: no response within ${timeoutMs} ms`);
    this.name = 'AhpTimeoutError';
    this.method = method;
    this.timeoutMs = timeoutMs;
  }
}

/** The server sent something that does not match the protocol (bad result shape, bad version; kind `unexpected_response`). */
export class AhpProtocolError extends AhpError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('unexpected_response', message, options);
    this.name = 'AhpProtocolError';
  }
}
