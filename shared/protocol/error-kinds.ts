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
import { ErrorCode } from './rpc-codes.js';

export interface ErrorSurfaces {
  /** JSON-RPC `error.code`. */
  readonly rpc: number;
  /** HTTP status. */
  readonly http: number;
}

/** A finer kind: its own HTTP status and body `code`, and the coarse kind a client that knows only those sees. */
export interface FinerSurfaces extends ErrorSurfaces {
  /** The coarse kind it belongs to: JSON-RPC `data.kind` and the metrics name this one. */
  readonly family: CoarseKind;
  /** The HTTP body's `code` when it is not the kind's own name (two kinds that share a historic code). */
  readonly httpCode?: string;
  /** The kind a DataWorks envelope shows it as (`Error.ErrorCode`, `Error.Code`), when not itself. */
  readonly dataWorksAs?: CoarseKind;
}

/** The coarse kinds: what clients branch on (`error.data.kind`, `rejectionKind`, the metrics' `reason`). */
export const COARSE_KINDS = {
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
  /** This node is shutting down: nothing was decided; send again to reach another node. */
  draining: { rpc: ErrorCode.InternalError, http: 503 },
} as const satisfies Record<string, ErrorSurfaces>;

export type CoarseKind = keyof typeof COARSE_KINDS;

const RPC = ErrorCode;
/**
 * The finer kinds (docs/errors.md, "Finer codes, by surface"): each route's historic HTTP `code`,
 * with its own status, folded into the one table under the coarse kind it belongs to.
 */
export const FINER_KINDS = {
  // Transport: the WebSocket upgrade and every HTTP route.
  too_many_connections: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 429 },
  hub_connections_full: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 503, httpCode: 'too_many_connections' },
  too_many_streams: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 429 },
  upgrade_required: { family: 'invalid_request', rpc: RPC.InvalidRequest, http: 426 },
  invalid_url: { family: 'invalid_request', rpc: RPC.InvalidRequest, http: 400 },
  method_not_allowed: { family: 'method_not_found', rpc: RPC.MethodNotFound, http: 405 },
  unsupported_media_type: { family: 'invalid_request', rpc: RPC.InvalidRequest, http: 415, dataWorksAs: 'invalid_request' },
  body_too_large: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 413, dataWorksAs: 'invalid_request' },
  host_not_allowed: { family: 'permission_denied', rpc: RPC.PermissionDenied, http: 421 },
  origin_not_allowed: { family: 'permission_denied', rpc: RPC.PermissionDenied, http: 403 },
  tenant_too_large_to_load: { family: 'storage_unavailable', rpc: RPC.StorageUnavailable, http: 503 },
  // The prompt routes (`/v2/sessions/{id}/prompt`, qwen's).
  invalid_prompt: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  prompt_unsupported_content: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400, httpCode: 'unsupported_content' },
  prompt_too_large: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 413 },
  prompt_rejected: { family: 'action_refused', rpc: RPC.InvalidParams, http: 400 },
  prompt_queue_full: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 503 },
  no_default_chat: { family: 'action_refused', rpc: RPC.InvalidParams, http: 409 },
  too_many_listeners: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 429 },
  // qwen-serve's session routes.
  invalid_session_id: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  session_limit: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 429 },
  state_quota: { family: 'quota_exceeded', rpc: RPC.QuotaExceeded, http: 429 },
  ambiguous_request_id: { family: 'action_refused', rpc: RPC.InvalidParams, http: 409 },
  // Permission replies (DataWorks `Error.ErrorCode` is the name in UPPER_SNAKE; qwen's routes send it as is).
  permission_request_not_found: { family: 'not_found', rpc: RPC.NotFound, http: 404 },
  daemon_permission_unavailable: { family: 'not_enabled', rpc: RPC.MethodNotFound, http: 501 },
  reply_not_applied: { family: 'internal_error', rpc: RPC.InternalError, http: 503, httpCode: 'internal_error', dataWorksAs: 'internal_error' },
  missing_id: { family: 'invalid_request', rpc: RPC.InvalidRequest, http: 400 },
  missing_params: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  invalid_permission_request_id: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  missing_outcome: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  invalid_outcome: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  missing_option_id: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  invalid_option_id: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  invalid_answers: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  invalid_answer_key: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  invalid_answer: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  missing_required_answer: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  answers_not_expected: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  // Steering inputs (`/v2/sessions/{id}/inputs`, `x-input/*`): the body adds `outcome`.
  input_malformed: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400, httpCode: 'invalid_request' },
  turn_closed: { family: 'input_rejected', rpc: RPC.InputRejected, http: 409 },
  input_conflict: { family: 'input_rejected', rpc: RPC.InputRejected, http: 409 },
  empty_content: { family: 'input_rejected', rpc: RPC.InputRejected, http: 422 },
  content_too_large: { family: 'input_rejected', rpc: RPC.InputRejected, http: 422 },
  unsupported_content: { family: 'input_rejected', rpc: RPC.InputRejected, http: 422 },
  image_unsupported: { family: 'input_rejected', rpc: RPC.InputRejected, http: 422 },
  steering_unavailable: { family: 'input_rejected', rpc: RPC.InputRejected, http: 422 },
  durable_ack_unsupported: { family: 'input_rejected', rpc: RPC.InputRejected, http: 422 },
  unsupported_ack: { family: 'input_rejected', rpc: RPC.InputRejected, http: 422 },
  input_quota_exceeded: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 429 },
  input_limit_exceeded: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 429 },
  input_not_found: { family: 'not_found', rpc: RPC.NotFound, http: 404 },
  input_not_recorded: { family: 'internal_error', rpc: RPC.InternalError, http: 500 },
  // Search and export.
  search_query_empty: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  search_query_too_long: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  search_limit_invalid: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  export_format_invalid: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  // Push notifications.
  push_subscription_invalid: { family: 'invalid_params', rpc: RPC.InvalidParams, http: 400 },
  push_subscriptions_exceeded: { family: 'limit_exceeded', rpc: RPC.LimitExceeded, http: 429 },
  push_subscription_not_found: { family: 'not_found', rpc: RPC.NotFound, http: 404 },
  push_token_invalid: { family: 'unauthorized', rpc: RPC.AuthRequired, http: 401 },
  push_token_expired: { family: 'unauthorized', rpc: RPC.AuthRequired, http: 401 },
  already_answered: { family: 'action_refused', rpc: RPC.InvalidParams, http: 409 },
  push_unavailable: { family: 'not_enabled', rpc: RPC.MethodNotFound, http: 501 },
} as const satisfies Record<string, FinerSurfaces>;

export const ERROR_TABLE = { ...COARSE_KINDS, ...FINER_KINDS } as const;

export type ErrorKind = keyof typeof ERROR_TABLE;

export const ERROR_KINDS = Object.keys(ERROR_TABLE) as ErrorKind[];

/** One row of the table, with the optional fields of a finer kind readable on every row. */
function rowOf(kind: ErrorKind): Partial<FinerSurfaces> & ErrorSurfaces {
  return ERROR_TABLE[kind];
}

/** The coarse kind of a kind (itself when it is coarse). */
export function familyOf(kind: ErrorKind): CoarseKind {
  return rowOf(kind).family ?? (kind as CoarseKind);
}

/** The HTTP body's `code` for a kind: its name, or the historic code it shares with another. */
export function httpCodeOf(kind: ErrorKind): string {
  return rowOf(kind).httpCode ?? kind;
}

export function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === 'string' && Object.hasOwn(ERROR_TABLE, value);
}

/** The kind a JSON-RPC code means when nothing finer was said (first kind listed with that code). */
const KIND_OF_RPC = new Map<number, CoarseKind>();
for (const kind of Object.keys(COARSE_KINDS) as CoarseKind[]) if (!KIND_OF_RPC.has(COARSE_KINDS[kind].rpc)) KIND_OF_RPC.set(COARSE_KINDS[kind].rpc, kind);

export function kindOfRpcCode(code: number): CoarseKind {
  return KIND_OF_RPC.get(code) ?? 'internal_error';
}

export function rpcCodeOf(kind: ErrorKind): number {
  return ERROR_TABLE[kind].rpc;
}

export function httpStatusOf(kind: ErrorKind): number {
  return ERROR_TABLE[kind].http;
}

/** The kind a DataWorks envelope names for a kind (a body error is `invalid_request` there). */
export function dataWorksKindOf(kind: ErrorKind): ErrorKind {
  return rowOf(kind).dataWorksAs ?? kind;
}

/** The DataWorks `Error.ErrorCode` of a kind (`PERMISSION_DENIED`). */
export function dataWorksCode(kind: ErrorKind): string {
  return dataWorksKindOf(kind).toUpperCase();
}

/** The kind of a DataWorks `Error.ErrorCode` (`MISSING_ID` → `missing_id`), or undefined. */
export function kindOfDataWorksCode(code: string): ErrorKind | undefined {
  const kind = code.toLowerCase();
  return isErrorKind(kind) ? kind : undefined;
}

/**
 * A JSON-RPC error's `data` with the kind added (the coarse kind of `kind`): an object keeps its
 * fields (a kind it already names wins), anything else is replaced by `{kind}` only when absent.
 */
export function withKind(kind: ErrorKind, data: unknown): unknown {
  if (data === undefined) return { kind: familyOf(kind) };
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return data;
  const named = (data as { kind?: unknown }).kind;
  return isErrorKind(named) ? data : { ...data, kind: familyOf(kind) };
}

/** The kind a JSON-RPC error names (`error.data.kind`), else the one its code means. */
export function kindOfRpcError(error: { readonly code: number; readonly data?: unknown }): ErrorKind {
  const named = typeof error.data === 'object' && error.data !== null ? (error.data as { kind?: unknown }).kind : undefined;
  return isErrorKind(named) ? named : kindOfRpcCode(error.code);
}
