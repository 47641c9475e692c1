/**
 * The Web Push payload's wire shape, one definition for both ends: the hub builds it
 * (server/push/payload.ts), the service worker reads it (app/push-payload.ts, app/sw.ts). The
 * field names are a contract with service workers already installed on people's devices
 * (docs/notifications.md#payload): add fields, never rename them. Types only, no imports, so the
 * worker bundle and its WebWorker type check take it as it is.
 */

export const PUSH_PAYLOAD_VERSION = 1;

/** The notification buttons a service worker answers through `POST /api/push/actions`. */
export type PushActionName = 'approve' | 'deny';

export interface PushButton {
  readonly action: PushActionName;
  readonly title: string;
}

/** What a push says about the request it shows. */
export interface PushRequestFields {
  /** `chat:<chat uri>`: one notification per chat, the newest request replacing the one before. */
  readonly tag: string;
  readonly title: string;
  readonly body: string;
  /** Where a click on the notification leads: a path of the hub's origin (the chat at its request). */
  readonly url: string;
  readonly session: string;
  readonly chat: string;
  readonly requestId: string;
  readonly requestKind: 'permission' | 'question';
}

/** The JSON a push carries, before encryption (RFC 8291). */
export interface PushPayload extends PushRequestFields {
  readonly v: typeof PUSH_PAYLOAD_VERSION;
  /** `resolved`: withdraw the notification of `requestId` (same tag). */
  readonly kind: 'request' | 'resolved';
  readonly tool?: string;
  /** Empty for questions, viewers and withdrawals. */
  readonly actions: readonly PushButton[];
  /** The capability the buttons answer with; absent where there are no buttons. */
  readonly actionToken?: string;
}
