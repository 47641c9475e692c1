/**
 * The one error vocabulary: every refusal the hub answers, on any surface, names an `ErrorKind`,
 * and each surface's code for it is read from `ERROR_TABLE` (written once, here):
 *
 * - JSON-RPC (WebSocket `/ahp`, the CLI, the ACP bridge): the numeric `error.code` clients
 *   already branch on, with the kind in `error.data.kind` (`withKind`);
 * - AHP rejection echoes: `rejectionKind` beside the free-text `rejectionReason`;
 * - HTTP (steering inputs, the prompt route, qwen-serve): the status, with the kind as `code` in
 *   the body (a route may use a finer code, e.g. `turn_closed`, listed under its kind in
 *   docs/errors.md);
 * - DataWorks reply envelopes: `Error.ErrorCode` is the kind in UPPER_SNAKE (`dataWorksCode`);
 * - metrics count rejections by kind.
 *
 * The same fact gets the same kind everywhere: a viewer refused anywhere is `permission_denied`.
 * docs/errors.md has the table as prose; `test/integration/error-kinds.test.ts` checks a viewer
 * gets the same kind on every surface.
 */
import { ErrorCode } from './errors.js';

export interface ErrorSurfaces {
  /** JSON-RPC `error.code`. */
  readonly rpc: number;
  /** HTTP status. */
  readonly http: number;
}

export const ERROR_TABLE = {
  /** The frame or body is not valid JSON. */
  invalid_json: { rpc: ErrorCode.ParseError, http: 400 },
  /** Not a request of the protocol (bad framing, JSON out of bounds, a body that is not an object). */
  invalid_request: { rpc: ErrorCode.InvalidRequest, http: 400 },
  /** No such method or route. */
  method_not_found: { rpc: ErrorCode.MethodNotFound, http: 404 },
  /** Params or body fields are wrong (the message says which); an action that fails its schema. */
  invalid_params: { rpc: ErrorCode.InvalidParams, http: 400 },
  /** An action the current state does not allow (not client-dispatchable, not the active turn, ...). */
  action_refused: { rpc: ErrorCode.InvalidParams, http: 409 },
  /** A bug or shutdown on our side; never a stack trace. */
  internal_error: { rpc: ErrorCode.InternalError, http: 500 },
  /** The session does not exist, or belongs to another tenant (indistinguishable on purpose). */
  session_not_found: { rpc: ErrorCode.SessionNotFound, http: 404 },
  /** No agent provider with that id. */
  provider_not_found: { rpc: ErrorCode.ProviderNotFound, http: 404 },
  /** A session with that id exists. */
  session_exists: { rpc: ErrorCode.SessionAlreadyExists, http: 409 },
  /** A turn is running; the operation needs none. */
  turn_in_progress: { rpc: ErrorCode.TurnInProgress, http: 409 },
  /** None of the offered protocol versions is ours. */
  unsupported_protocol_version: { rpc: ErrorCode.UnsupportedProtocolVersion, http: 400 },
  /** A valid token is required. */
  unauthorized: { rpc: ErrorCode.AuthRequired, http: 401 },
  /** A bearer JWT (OpenID Connect access token) that has expired: get a new one (docs/sign-in.md). */
  token_expired: { rpc: ErrorCode.AuthRequired, http: 401 },
  /** A bearer JWT issued for another audience (resource) than this hub's. */
  token_audience_mismatch: { rpc: ErrorCode.AuthRequired, http: 401 },
  /** A bearer JWT whose signature does not verify against the issuer's keys (JWKS). */
  token_signature_invalid: { rpc: ErrorCode.AuthRequired, http: 401 },
  /** A bearer JWT from an issuer this hub does not trust. */
  token_issuer_unknown: { rpc: ErrorCode.AuthRequired, http: 401 },
  /** A bearer JWT that is malformed or whose claims this hub cannot use (tenant, role, subject). */
  token_invalid: { rpc: ErrorCode.AuthRequired, http: 401 },
  /** Sign-in with the identity provider cannot be done now (provider unreachable, a failed code exchange). */
  sign_in_failed: { rpc: ErrorCode.AuthRequired, http: 502 },
  /** Something else (a chat, an input, a permission request) does not exist or is not visible. */
  not_found: { rpc: ErrorCode.NotFound, http: 404 },
  /** The caller's role may not do this (a viewer writing, a non-admin reading metrics). */
  permission_denied: { rpc: ErrorCode.PermissionDenied, http: 403 },
  /** Something with that id exists. */
  already_exists: { rpc: ErrorCode.AlreadyExists, http: 409 },
  /** A re-sent clientSeq that was already decided: it is never applied twice. */
  duplicate: { rpc: ErrorCode.AlreadyExists, http: 409 },
  /** A count or size limit (subscriptions, sessions, chats, listeners, a channel's size). */
  limit_exceeded: { rpc: ErrorCode.LimitExceeded, http: 429 },
  /** Sent faster than the connection's budget. */
  rate_limited: { rpc: ErrorCode.LimitExceeded, http: 429 },
  /** A user's or tenant's state quota, or its clientIds, are used up. */
  quota_exceeded: { rpc: ErrorCode.QuotaExceeded, http: 429 },
  /** `initialize` must come first. */
  not_initialized: { rpc: ErrorCode.NotInitialized, http: 400 },
  /** A steering input refused as closed or rejected (`data.code` says which). */
  input_rejected: { rpc: ErrorCode.InputRejected, http: 422 },
  /** The durable log cannot take writes now; nothing was applied, retry later. */
  storage_unavailable: { rpc: ErrorCode.StorageUnavailable, http: 503 },
  /** The tenant is over its disk quota. */
  storage_quota_exceeded: { rpc: ErrorCode.StorageQuotaExceeded, http: 507 },
  /** A feature is switched off on this hub (permission replies). */
  not_enabled: { rpc: ErrorCode.MethodNotFound, http: 501 },
} as const satisfies Record<string, ErrorSurfaces>;

export type ErrorKind = keyof typeof ERROR_TABLE;

export const ERROR_KINDS = Object.keys(ERROR_TABLE) as ErrorKind[];

export function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === 'string' && Object.hasOwn(ERROR_TABLE, value);
}

/** The kind a JSON-RPC code means when nothing finer was said (first kind listed with that code). */
const KIND_OF_RPC = new Map<number, ErrorKind>();
for (const kind of ERROR_KINDS) if (!KIND_OF_RPC.has(ERROR_TABLE[kind].rpc)) KIND_OF_RPC.set(ERROR_TABLE[kind].rpc, kind);

export function kindOfRpcCode(code: number): ErrorKind {
  return KIND_OF_RPC.get(code) ?? 'internal_error';
}

export function rpcCodeOf(kind: ErrorKind): number {
  return ERROR_TABLE[kind].rpc;
}

export function httpStatusOf(kind: ErrorKind): number {
  return ERROR_TABLE[kind].http;
}

/** The DataWorks `Error.ErrorCode` of a kind (`PERMISSION_DENIED`). */
export function dataWorksCode(kind: ErrorKind): string {
  return kind.toUpperCase();
}

/**
 * A JSON-RPC error's `data` with the kind added: an object keeps its fields (a kind it already
 * names wins), anything else is replaced by `{kind}` only when absent.
 */
export function withKind(code: number, data: unknown): unknown {
  if (data === undefined) return { kind: kindOfRpcCode(code) };
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return data;
  const named = (data as { kind?: unknown }).kind;
  return isErrorKind(named) ? data : { ...data, kind: kindOfRpcCode(code) };
}

/** The kind a JSON-RPC error names (`error.data.kind`), else the one its code means. */
export function kindOfRpcError(error: { readonly code: number; readonly data?: unknown }): ErrorKind {
  const named = typeof error.data === 'object' && error.data !== null ? (error.data as { kind?: unknown }).kind : undefined;
  return isErrorKind(named) ? named : kindOfRpcCode(error.code);
}
