/**
 * The error carrier and the protocol's numeric codes (`ErrorCode`, in `./rpc-codes.ts`, re-exported
 * here); the kinds and every surface's code for them are in `./error-kinds.ts`.
 */
import { familyOf, httpStatusOf, rpcCodeOf, type CoarseKind, type ErrorKind } from './error-kinds.js';

export { ErrorCode } from './rpc-codes.js';

/**
 * The one error carrier: a refusal meant for the client, on any surface. It is built from a kind
 * of the one table (`new ProtocolError('not_found', 'no chat c1')`) and reads everything else
 * from it: `code` (JSON-RPC), `status` (HTTP), `family` (the coarse kind). `data` is the JSON-RPC
 * error's `data`; over HTTP its fields come before `code` and `message` in the body (the
 * renderers: `server/ahp/rpc.ts`, `server/transport/http-reply.ts`).
 */
export class ProtocolError extends Error {
  readonly kind: ErrorKind;
  readonly data: unknown;
  constructor(kind: ErrorKind, message: string, data?: unknown) {
    super(message);
    this.name = 'ProtocolError';
    this.kind = kind;
    this.data = data;
  }

  /** The JSON-RPC `error.code`. */
  get code(): number {
    return rpcCodeOf(this.kind);
  }

  /** The HTTP status. */
  get status(): number {
    return httpStatusOf(this.kind);
  }

  /** The coarse kind clients that know only those see (`error.data.kind`, metrics). */
  get family(): CoarseKind {
    return familyOf(this.kind);
  }
}

/**
 * The codes of ACP `session/attach` (multi-client attach, ACP RFD #533), answered by the editor
 * bridge on its ACP side only; the kind still travels in `data.kind` (docs/errors.md). They are
 * the RFD's numbers, which differ from ACP v1's own (-32002 is "resource not found" there, and
 * the bridge's other methods keep that meaning).
 */
export const AcpAttachErrorCode = {
  /** No such session behind this bridge, or it was disposed (`data.sessionId`). */
  SessionNotFound: -32001,
  /** The role asked for is not allowed (a hub viewer asking to control), or an observer tried to act. */
  NotAuthorised: -32002,
  /** The hub offers no presence room for the chat, so attached clients cannot be known. */
  NoAttachCapability: -32003,
} as const;
