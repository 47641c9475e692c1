/**
 * JSON-RPC and AHP error codes. Action rejections are not errors: they are echoed envelopes
 * with `rejectionReason`. These codes are for requests that cannot be answered.
 */
export const ErrorCode = {
  /** Frame is not valid JSON. The connection stays open. */
  ParseError: -32700,
  /** Valid JSON but not a JSON-RPC 2.0 request/notification object. */
  InvalidRequest: -32600,
  /** Unknown method. */
  MethodNotFound: -32601,
  /** Params do not match the method's schema (the message says which field). */
  InvalidParams: -32602,
  /** A bug on our side; the message never carries a stack trace. */
  InternalError: -32603,
  /** Session does not exist, or belongs to another tenant (indistinguishable on purpose). */
  SessionNotFound: -32001,
  /** No agent provider with that id. */
  ProviderNotFound: -32002,
  /** `createSession` with a URI that is taken. */
  SessionAlreadyExists: -32003,
  /** The operation needs no active turn. */
  TurnInProgress: -32004,
  /** No offered protocol version is supported; `data.supportedVersions` lists ours. */
  UnsupportedProtocolVersion: -32005,
  /** Authentication required. */
  AuthRequired: -32007,
  /** Generic not found (e.g. chat). */
  NotFound: -32008,
  /** The caller's role may not do this. */
  PermissionDenied: -32009,
  /** Something with that id already exists. */
  AlreadyExists: -32010,
  /** A limit was hit (too many subscriptions, sessions, chats, rate). Not retryable as is. */
  LimitExceeded: -32020,
  /**
   * A quota on what one user or tenant makes the hub hold is used up (state, fresh clientIds);
   * the message names which (`user_state_quota`, `tenant_state_quota`, `client_id_quota`) and
   * what frees some. Retry after freeing some, not as is.
   */
  QuotaExceeded: -32024,
  /** `initialize` must come first. */
  NotInitialized: -32021,
  /** A steering input refused as closed or rejected (HTTP 409/422); `data.code` says which. */
  InputRejected: -32030,
  /**
   * The durable log cannot take writes right now (database away, disk full, data dir read-only):
   * nothing was applied; retry later (HTTP 503). Action rejections say the same with a
   * `rejectionReason` starting "the action log is unavailable".
   */
  StorageUnavailable: -32040,
  /** The tenant's log and snapshots are over its disk quota (`--tenant-disk-quota`): writes are refused (HTTP 507). */
  StorageQuotaExceeded: -32041,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];
