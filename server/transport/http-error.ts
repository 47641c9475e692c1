/**
 * The one way an HTTP error body is built: throw an `HttpError` (or a subclass such as steering's
 * `InputError`) from a route and the router answers `err.status` with `err.body()`. A route that
 * must answer an error without throwing calls `sendError`. No Node imports, so pure modules
 * (steering's input rules) can build their refusals as HTTP errors.
 */

import { httpStatusOf, type ErrorKind } from '../../shared/protocol/error-kinds.js';

/** An error that becomes the JSON body `{...extra, code, message}` with the given HTTP status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Fields added before `code` and `message` (in this order on the wire). */
    readonly extra: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }

  /** The error for a kind of the one table (shared/protocol/error-kinds.ts): its status, the kind as `code`. */
  static of(kind: ErrorKind, message: string, extra: Readonly<Record<string, unknown>> = {}): HttpError {
    return new HttpError(httpStatusOf(kind), kind, message, extra);
  }

  /** The JSON body: `extra`'s fields, then `code` and `message` (a stable machine-readable code and words for people). */
  body(): Record<string, unknown> {
    return { ...this.extra, code: this.code, message: this.message };
  }
}
