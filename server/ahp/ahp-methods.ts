/**
 * The AHP core methods on the JSON-RPC router: initialize, ping, subscribe, unsubscribe,
 * dispatchAction, reconnect, listSessions, createSession, disposeSession, createChat, disposeChat.
 */

import { z } from 'zod';
import { ProtocolError } from '../../shared/protocol/errors.js';
import type { ErrorKind } from '../../shared/protocol/error-kinds.js';
import {
  createChatParamsSchema,
  createSessionParamsSchema,
  dispatchActionParamsSchema,
  disposeChatParamsSchema,
  disposeSessionParamsSchema,
  initializeParamsSchema,
  listSessionsParamsSchema,
  EPOCH_META_KEY,
  Method,
  pingParamsSchema,
  unsubscribeParamsSchema,
  type InitializeResult,
  type Snapshot,
} from '../../shared/protocol/messages.js';
import { reconnect11ParamsSchema, subscribeParams11Schema } from '../../shared/protocol/messages-1-1.js';
import { ROOT_URI, channelKind } from '../../shared/protocol/uris.js';
import { advertisesSteeringList, AHP_1_1, knowsEveryAction, speaksChannelReconnect, speaksWindowedDelivery } from '../../shared/protocol/version-features.js';
import { negotiateVersion, parseSemVer, SUPPORTED_VERSIONS } from '../../shared/protocol/version.js';
import { CloseCode, setConnectionVersion, type Connection } from '../hub/connection.js';
import { accepted } from '../hub/entry.js';
import type { Hub } from '../hub/hub.js';
import type { RpcContext, RpcRouter } from './rpc.js';
import { WindowedSubscriptions } from './windowed-subscriptions.js';

export const SERVER_INFO = { name: 'ahp-hub', version: '0.1.0' };

function requireRoot(channel: string, method: string): void {
  if (channel !== ROOT_URI) throw new ProtocolError('invalid_params', `${method} is a root command: channel must be ${ROOT_URI}`);
}

function clientOf(ctx: RpcContext, conn: Connection = ctx.conn) {
  return { conn, principal: ctx.principal, clientId: ctx.state.clientId ?? ctx.conn.id };
}

function unsupportedVersionMessage(offered: readonly string[]): string {
  const shown = offered
    .slice(0, 8)
    .map((v) => JSON.stringify(v.slice(0, 40)))
    .join(', ');
  const malformed = offered.some((v) => parseSemVer(v) === undefined) ? ' (versions are MAJOR.MINOR.PATCH, no pre-release part)' : '';
  return `none of the offered protocol versions (${shown || 'none'}) is supported${malformed}; this hub accepts ^${SUPPORTED_VERSIONS.join(', ^')}`;
}

/** Binds the connection's clientId to its principal, or throws the named refusal. */
function claimOrRefuse(hub: Hub, ctx: RpcContext, clientId: string): void {
  const claim = hub.claimClientId(ctx.principal, clientId, ctx.conn);
  if (claim === 'in_use') {
    throw new ProtocolError('already_exists', 'clientId is in use by another principal: generate a fresh random clientId', { code: 'client_id_in_use' });
  }
  if (claim === 'client_id_quota') {
    throw new ProtocolError('quota_exceeded', 'quota exceeded (client_id_quota): this principal has made too many fresh clientIds within the last minutes; reconnect with a clientId it used before', { code: 'client_id_quota' });
  }
}

/**
 * The version a client id last initialized with, for a later connection that opens with
 * `reconnect` (which offers no version): only versions that need older forms of actions are
 * kept, at most `MAX_REMEMBERED_VERSIONS` (oldest forgotten first; a forgotten one speaks ours).
 */
const MAX_REMEMBERED_VERSIONS = 4096;
class RememberedVersions {
  readonly #byClient = new Map<string, string>();
  set(key: string, version: string): void {
    this.#byClient.delete(key);
    if (knowsEveryAction(version)) return;
    if (this.#byClient.size >= MAX_REMEMBERED_VERSIONS) this.#byClient.delete(this.#byClient.keys().next().value!);
    this.#byClient.set(key, version);
  }
  get(key: string): string | undefined {
    return this.#byClient.get(key);
  }
}

export function registerAhpMethods(router: RpcRouter, hub: Hub): void {
  const remembered = new RememberedVersions();
  const keyOf = (ctx: RpcContext, clientId: string) => `${ctx.principal.user}\u0000${clientId}`;
  router.request(Method.Initialize, {
    params: initializeParamsSchema,
    beforeInitialize: true,
    handle(ctx, params): InitializeResult {
      requireRoot(params.channel, Method.Initialize);
      if (ctx.state.protocolVersion !== undefined) throw new ProtocolError('invalid_request', 'already initialized: initialize is sent once per connection');
      const version = negotiateVersion(params.protocolVersions);
      if (!version) {
        // AHP: answer -32005 with our versions, then close; there is no renegotiation.
        // The error answer is queued when the handler returns; close only after it has gone out.
        setImmediate(() => hub.afterDelivered(() => ctx.conn.close(CloseCode.UnsupportedVersion, 'unsupported protocol version')));
        throw new ProtocolError('unsupported_protocol_version', unsupportedVersionMessage(params.protocolVersions), { supportedVersions: [...SUPPORTED_VERSIONS] });
      }
      claimOrRefuse(hub, ctx, params.clientId);
      ctx.state.protocolVersion = version;
      setConnectionVersion(ctx.conn, version);
      remembered.set(keyOf(ctx, params.clientId), version);
      ctx.state.clientId = params.clientId;
      const snapshots: Snapshot[] = [];
      const missing: string[] = [];
      for (const channel of params.initialSubscriptions ?? []) {
        try {
          snapshots.push(hub.subscribe(ctx.conn, ctx.principal, channel));
        } catch {
          missing.push(channel);
        }
      }
      const result: InitializeResult = { protocolVersion: version, serverSeq: hub.serverSeq, serverInfo: SERVER_INFO, snapshots };
      // 1.1: the steering list (chat/steeringMessageSet/Removed) is advertised as its own capability.
      if (advertisesSteeringList(version)) result['steeringMessages'] = {};
      result._meta = { 'hub/principal': { user: ctx.principal.user, role: ctx.principal.role } };
      if (missing.length > 0) result._meta['hub/missingSubscriptions'] = missing;
      if (hub.epochs) result._meta[EPOCH_META_KEY] = hub.epochs.current;
      return result;
    },
  });

  router.request(Method.Ping, { params: pingParamsSchema, beforeInitialize: true, handle: () => ({}) });

  // AHP 1.1 windowed delivery (windowed-subscriptions.ts): `flowControl` before 1.1 is ignored,
  // as a host may decline framing by answering without it.
  const windowed = new WindowedSubscriptions(hub);
  windowed.register(router);

  router.request(Method.Subscribe, {
    params: subscribeParams11Schema,
    handle(ctx, params) {
      if (params.flowControl && speaksWindowedDelivery(ctx.state.protocolVersion)) return windowed.subscribe(ctx, params.channel, params.flowControl.receive);
      windowed.unsubscribe(ctx.conn, params.channel);
      return { snapshot: hub.subscribe(ctx.conn, ctx.principal, params.channel, params.delivery?.maxLatencyMs ?? 0) };
    },
  });

  router.notification(Method.Unsubscribe, {
    params: unsubscribeParamsSchema,
    handle(ctx, params) {
      windowed.unsubscribe(ctx.conn, params.channel);
      hub.unsubscribe(ctx.conn, params.channel);
    },
  });

  router.notification(Method.DispatchAction, {
    params: dispatchActionParamsSchema,
    handle(ctx, params) {
      // On a windowed channel the echo (or rejection) goes out framed, in order with the channel.
      // The door echoes a rejection or a duplicate to the sender as it decides (in order); a notification has no answer.
      const client = clientOf(ctx, windowed.connectionFor(ctx.conn, params.channel));
      void hub.door.enter({ op: 'dispatch', by: { from: 'client', client, clientSeq: params.clientSeq }, channel: params.channel, action: params.action });
    },
  });

  // A client whose socket dropped may open the new connection with `reconnect` (AHP lifecycle):
  // it then stands in for `initialize`, adopting the client id it had, so re-sent dispatches are
  // recognised by that id. No version is offered here: the connection speaks the version this
  // client id last initialized with (so an older client is still sent only what it knows), else
  // ours, or 1.1 when the request has per-channel cursors (only 1.1 has them).
  router.request(Method.Reconnect, {
    params: reconnect11ParamsSchema,
    beforeInitialize: true,
    handle(ctx, params) {
      requireRoot(params.channel, Method.Reconnect);
      const perChannel = !('lastSeenServerSeq' in params);
      if (ctx.state.protocolVersion === undefined) {
        claimOrRefuse(hub, ctx, params.clientId);
        const version = remembered.get(keyOf(ctx, params.clientId)) ?? (perChannel ? AHP_1_1 : SUPPORTED_VERSIONS[0]);
        ctx.state.protocolVersion = version;
        setConnectionVersion(ctx.conn, version);
        ctx.state.clientId = params.clientId;
      } else if (params.clientId !== ctx.state.clientId) {
        throw new ProtocolError('invalid_params', 'clientId must be the one sent in initialize on this connection');
      } else if (perChannel && !speaksChannelReconnect(ctx.state.protocolVersion)) {
        throw new ProtocolError('invalid_params', `per-channel reconnect cursors need protocol 1.1; this connection negotiated ${ctx.state.protocolVersion}: send lastSeenServerSeq with a list of channel URIs`);
      }
      // Cluster: the cursor may come from a node that was ahead of this one.
      const furthest = perChannel ? Math.max(0, ...params.subscriptions.map((s) => s.lastSeenServerSeq)) : params.lastSeenServerSeq;
      const behind = hub.caughtUpTo(furthest);
      // The epoch the client's cursors belong to from now on (docs/continuity.md#epoch).
      const withEpoch = <R extends object>(result: R): R => (hub.epochs ? { ...result, _meta: { ...(result as { _meta?: Record<string, unknown> })._meta, [EPOCH_META_KEY]: hub.epochs.current } } : result);
      const answer = () => {
        if (perChannel || !params.windows || !speaksWindowedDelivery(ctx.state.protocolVersion)) return withEpoch(hub.reconnect(ctx.conn, ctx.principal, params));
        // Windowed channels resume from their own applied checkpoints, not the connection-wide cursor.
        const windowedChannels = new Set(params.windows.items.map((w) => w.channel));
        const result = hub.reconnect(ctx.conn, ctx.principal, { ...params, subscriptions: params.subscriptions.filter((c) => !windowedChannels.has(c)) });
        const resumed = windowed.resume(ctx, params);
        return withEpoch({ ...result, missing: [...result.missing, ...resumed.missing], windows: { items: resumed.items } });
      };
      return behind ? behind.then(answer) : answer();
    },
  });

  router.request(Method.ListSessions, {
    params: listSessionsParamsSchema,
    handle(ctx, params) {
      requireRoot(params.channel, Method.ListSessions);
      const all = hub.listSessions(ctx.principal);
      const offset = params.cursor === undefined ? 0 : Number.parseInt(params.cursor, 10);
      if (!Number.isSafeInteger(offset) || offset < 0 || String(offset) !== (params.cursor ?? '0')) {
        throw new ProtocolError('invalid_params', 'unrecognised pagination cursor');
      }
      const limit = params.limit ?? all.length;
      const items = all.slice(offset, offset + limit);
      const result: { items: typeof items; nextCursor?: string } = { items };
      if (offset + limit < all.length) result.nextCursor = String(offset + limit);
      return result;
    },
  });

  router.request(Method.CreateSession, {
    params: createSessionParamsSchema,
    async handle(ctx, params) {
      const o = accepted(await hub.door.enter({ op: 'createSession', principal: ctx.principal, uri: params.channel, provider: params.provider, title: params.title }));
      return { defaultChat: o.defaultChat! };
    },
  });

  router.request(Method.DisposeSession, {
    params: disposeSessionParamsSchema,
    async handle(ctx, params) {
      if (channelKind(params.channel) !== 'session') throw new ProtocolError('invalid_params', 'channel must be a session URI');
      accepted(await hub.door.enter({ op: 'disposeSession', principal: ctx.principal, uri: params.channel }));
      return {};
    },
  });

  router.request(Method.CreateChat, {
    params: createChatParamsSchema,
    async handle(ctx, params) {
      const o = accepted(await hub.door.enter({ op: 'createChat', principal: ctx.principal, session: params.channel, chat: params.chat, title: params.title }));
      return { chat: o.chat! };
    },
  });

  router.request(Method.DisposeChat, {
    params: disposeChatParamsSchema,
    async handle(ctx, params) {
      accepted(await hub.door.enter({ op: 'disposeChat', principal: ctx.principal, chat: params.channel }));
      return {};
    },
  });
}

/**
 * Dispatches refused before their handler ran (over the rate budget, or JSON out of bounds) are
 * echoed as rejections so the client's pending queue never stalls. The echo carries only the
 * action's `type`, never the refused value itself.
 */
export function throttledDispatchHandler(hub: Hub) {
  return (ctx: RpcContext, method: string, params: unknown, reason = 'rate limit exceeded: slow down and dispatch again', kind: ErrorKind = 'rate_limited'): boolean => {
    if (method !== Method.DispatchAction) return false;
    const refused = refusedDispatchSchema.safeParse(params);
    if (!refused.success) return false;
    const { channel, clientSeq, action } = refused.data;
    void hub.door.enter({ op: 'dispatch', by: { from: 'client', client: clientOf(ctx), clientSeq }, channel, action: { type: action.type }, refused: { kind, message: reason } });
    return true;
  };
}

/**
 * The few fields a refused dispatch is echoed with. The params were never bounds-checked, so
 * this schema names only shallow fields (a non-loose object does not walk unknown keys).
 */
const refusedDispatchSchema = z.object({
  channel: z.string().max(512),
  clientSeq: z.int().min(0),
  action: z.object({ type: z.string().min(1).max(128) }),
});
