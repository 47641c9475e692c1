/**
 * The JSON-RPC 2.0 surface of the hub at `ws://HOST:PORT/ahp`: one message per text frame.
 * Zod schemas here are the single source for every request, notification and result shape;
 * types come from z.infer.
 *
 * Requests (client → server, with `id`): initialize, ping, subscribe, reconnect, listSessions,
 * createSession, disposeSession, createChat, disposeChat, and the implementation-defined
 * `x-…` methods. Notifications (no `id`): dispatchAction, unsubscribe (client → server);
 * action, root/sessionAdded, root/sessionRemoved, root/sessionSummaryChanged (server → client).
 */
import { z } from 'zod';
import { sessionSummarySchema } from './state.js';
import { anyActionSchema, type AnyAction } from './actions.js';

export const JSONRPC = '2.0';

/** Upper bounds on what a client can make the server hold per message. */
export const Limits = {
  maxIdLength: 256,
  maxMethodLength: 128,
  maxSubscriptionsPerRequest: 256,
  maxProtocolVersions: 16,
} as const;

const uri = z.string().min(1).max(512);
const meta = z.record(z.string(), z.unknown()).optional();

export const requestIdSchema = z.union([z.string().max(Limits.maxIdLength), z.number().finite()]);
export type RequestId = z.infer<typeof requestIdSchema>;

/** Any well-formed JSON-RPC message from a client: request (has id) or notification (no id). */
export const jsonRpcInboundSchema = z.object({
  jsonrpc: z.literal(JSONRPC),
  id: requestIdSchema.optional(),
  method: z.string().min(1).max(Limits.maxMethodLength),
  params: z.unknown().optional(),
});
export type JsonRpcInbound = z.infer<typeof jsonRpcInboundSchema>;

export const jsonRpcErrorSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});
export type JsonRpcError = z.infer<typeof jsonRpcErrorSchema>;

/** A response from the server (success or error) or a server notification. */
export const jsonRpcOutboundSchema = z.union([
  z.object({ jsonrpc: z.literal(JSONRPC), id: requestIdSchema.nullable(), result: z.unknown() }),
  z.object({ jsonrpc: z.literal(JSONRPC), id: requestIdSchema.nullable(), error: jsonRpcErrorSchema }),
  z.object({ jsonrpc: z.literal(JSONRPC), method: z.string(), params: z.unknown() }),
]);
export type JsonRpcOutbound = z.infer<typeof jsonRpcOutboundSchema>;

// ─── Envelopes ────────────────────────────────────────────────────────────────

export const actionOriginSchema = z.object({
  clientId: z.string().min(1).max(Limits.maxIdLength),
  clientSeq: z.number().int().nonnegative(),
});
export type ActionOrigin = z.infer<typeof actionOriginSchema>;

/**
 * An action as it travels in envelopes: any `{type}` object (`anyActionSchema`); actions are
 * validated per type elsewhere (`parseAction`).
 */
export type WireAction = AnyAction;

/** `action` notification params. `origin` absent = server-originated. */
export const actionEnvelopeSchema = z.object({
  channel: uri,
  action: anyActionSchema,
  /** For a rejection echo: the last seq assigned when it was decided (0 on an empty log). */
  serverSeq: z.number().int().nonnegative(),
  origin: actionOriginSchema.optional(),
  rejectionReason: z.string().optional(),
  /** Hub extension: the rejection's `ErrorKind` (error-kinds.ts), for clients that branch on it. */
  rejectionKind: z.string().optional(),
});
export type ActionEnvelope = z.infer<typeof actionEnvelopeSchema>;

export const snapshotSchema = z.object({
  resource: uri,
  state: z.unknown(),
  fromSeq: z.number().int().nonnegative(),
  /** Outside `state` on purpose: facts no standard reducer keeps (a chat's `hub/answeredBy` index). */
  _meta: z.record(z.string(), z.unknown()).optional(),
});
export type Snapshot = z.infer<typeof snapshotSchema>;

// ─── Requests ────────────────────────────────────────────────────────────────

export const initializeParamsSchema = z.object({
  channel: uri,
  /** May be empty: nothing offered is "no match" (-32005 with `supportedVersions`), as upstream answers. */
  protocolVersions: z.array(z.string().max(32)).max(Limits.maxProtocolVersions),
  clientId: z.string().min(1).max(Limits.maxIdLength),
  clientInfo: z.looseObject({ name: z.string().max(256), version: z.string().max(64).optional() }).optional(),
  initialSubscriptions: z.array(uri).max(Limits.maxSubscriptionsPerRequest).optional(),
  locale: z.string().max(64).optional(),
  capabilities: z.record(z.string(), z.unknown()).optional(),
  _meta: meta,
});
export type InitializeParams = z.infer<typeof initializeParamsSchema>;

export const initializeResultSchema = z.looseObject({
  protocolVersion: z.string(),
  /** The hub's current serverSeq; everything up to it is durable when this answer arrives. */
  serverSeq: z.number().int().nonnegative(),
  serverInfo: z.looseObject({ name: z.string(), version: z.string() }),
  /** One per `initialSubscriptions` entry the caller may see (others are listed in `_meta["hub/missingSubscriptions"]`). */
  snapshots: z.array(snapshotSchema),
  _meta: meta,
});
export type InitializeResult = z.infer<typeof initializeResultSchema>;

/** Keep-alive; lenient on purpose: a missing channel is taken as the root channel. */
export const pingParamsSchema = z.object({ channel: uri.optional(), _meta: meta }).optional();

export const deliveryOptionsSchema = z.object({
  /** Upper bound on intentional buffering/coalescing, ms. 0 = immediate. */
  maxLatencyMs: z.number().int().min(0).max(60_000).optional(),
});

export const subscribeParamsSchema = z.object({
  channel: uri,
  delivery: deliveryOptionsSchema.optional(),
  view: z.looseObject({ turns: z.number().int().positive().optional() }).optional(),
  _meta: meta,
});
export type SubscribeParams = z.infer<typeof subscribeParamsSchema>;
export const subscribeResultSchema = z.looseObject({ snapshot: snapshotSchema.optional() });
export type SubscribeResult = z.infer<typeof subscribeResultSchema>;

export const unsubscribeParamsSchema = z.object({ channel: uri, _meta: meta });

export const dispatchActionParamsSchema = z.object({
  channel: uri,
  clientSeq: z.number().int().nonnegative(),
  action: anyActionSchema,
  _meta: meta,
});
export type DispatchActionParams = z.infer<typeof dispatchActionParamsSchema>;

export const reconnectParamsSchema = z.object({
  channel: uri,
  clientId: z.string().min(1).max(Limits.maxIdLength),
  lastSeenServerSeq: z.number().int().nonnegative(),
  subscriptions: z.array(uri).max(Limits.maxSubscriptionsPerRequest),
  _meta: meta,
});
export type ReconnectParams = z.infer<typeof reconnectParamsSchema>;
/**
 * `_meta` key of the hub's history epoch (docs/continuity.md#epoch): answered by `initialize` and
 * `reconnect`, sent back in `reconnect`'s `_meta` with the cursor it belongs to. Standard clients
 * ignore it; a hub without epochs ignores it too.
 */
export const EPOCH_META_KEY = 'hub/epoch';
/** The epoch a `reconnect`'s cursor belongs to, when the client sent one. */
export function cursorEpochOf(params: { readonly _meta?: Record<string, unknown> | undefined }): string | undefined {
  const epoch = params._meta?.[EPOCH_META_KEY];
  return typeof epoch === 'string' ? epoch : undefined;
}
/** Replay when the hub's replay window covers the gap, else snapshots; `missing` = channels gone or not visible. */
export const reconnectResultSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('replay'), actions: z.array(actionEnvelopeSchema), missing: z.array(z.string()).default([]) }),
  z.looseObject({ type: z.literal('snapshot'), snapshots: z.array(snapshotSchema), missing: z.array(z.string()).default([]) }),
]);
export type ReconnectResult = z.infer<typeof reconnectResultSchema>;

export const listSessionsParamsSchema = z.object({
  channel: uri,
  limit: z.number().int().positive().max(1000).optional(),
  cursor: z.string().max(256).optional(),
  _meta: meta,
});

export const listSessionsResultSchema = z.looseObject({
  /** Most recently modified first. */
  items: z.array(sessionSummarySchema),
  nextCursor: z.string().optional(),
});
export type ListSessionsResult = z.infer<typeof listSessionsResultSchema>;

export const createSessionParamsSchema = z.object({
  /** Client-chosen `ahp-session:/<uuid>`. */
  channel: uri,
  provider: z.string().max(128).optional(),
  title: z.string().max(512).optional(),
  _meta: meta,
});
export type CreateSessionParams = z.infer<typeof createSessionParamsSchema>;
export const createSessionResultSchema = z.looseObject({ defaultChat: uri });
export type CreateSessionResult = z.infer<typeof createSessionResultSchema>;

export const disposeSessionParamsSchema = z.object({ channel: uri, _meta: meta });

export const createChatParamsSchema = z.object({
  /** The session that will own the chat. */
  channel: uri,
  /** Optional client-chosen `ahp-chat:/<id>`; allocated by the server when absent. */
  chat: uri.optional(),
  title: z.string().max(512).optional(),
  _meta: meta,
});
export const createChatResultSchema = z.looseObject({ chat: uri });
export type CreateChatResult = z.infer<typeof createChatResultSchema>;

export const disposeChatParamsSchema = z.object({ channel: uri, _meta: meta });

// ─── Server notifications ────────────────────────────────────────────────────

/** `root/sessionAdded`: a session of the subscriber's tenant was created. */
export const sessionAddedParamsSchema = z.looseObject({ channel: uri, summary: sessionSummarySchema });
/** `root/sessionRemoved`: a session of the subscriber's tenant was disposed. */
export const sessionRemovedParamsSchema = z.looseObject({ channel: uri, session: uri });
/** `root/sessionSummaryChanged`: only the mutable fields that changed (status, title, activity, modifiedAt, …). */
export const sessionSummaryChangedParamsSchema = z.looseObject({ channel: uri, session: uri, changes: sessionSummarySchema.partial() });
export type SessionAddedParams = z.infer<typeof sessionAddedParamsSchema>;
export type SessionRemovedParams = z.infer<typeof sessionRemovedParamsSchema>;
export type SessionSummaryChangedParams = z.infer<typeof sessionSummaryChangedParamsSchema>;

export const ServerNotification = {
  Action: 'action',
  SessionAdded: 'root/sessionAdded',
  SessionRemoved: 'root/sessionRemoved',
  SessionSummaryChanged: 'root/sessionSummaryChanged',
} as const;

export const Method = {
  Initialize: 'initialize',
  Ping: 'ping',
  Subscribe: 'subscribe',
  Unsubscribe: 'unsubscribe',
  DispatchAction: 'dispatchAction',
  Reconnect: 'reconnect',
  ListSessions: 'listSessions',
  CreateSession: 'createSession',
  DisposeSession: 'disposeSession',
  CreateChat: 'createChat',
  DisposeChat: 'disposeChat',
} as const;
