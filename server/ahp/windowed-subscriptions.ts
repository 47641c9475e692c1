/**
 * The AHP 1.1 windowed subscriptions of one tenant's hub (`windowed-delivery.ts` frames them):
 * `subscribe` with `flowControl`, `channel/credit`, `unsubscribe`, dispatches on a windowed
 * channel (their echoes stay in order with its frames), and `reconnect` with `windows`
 * checkpoints, which resumes each retained windowed channel from its own applied serverSeq.
 *
 * A windowed subscription's limits are retained for its clientId when the connection drops, so
 * a reconnect can re-open the same window; bounded to `MAX_RETAINED_CLIENTS` clientIds (oldest
 * forgotten first) of at most `MAX_WINDOWED_PER_CONNECTION` channels each.
 */
import { ProtocolError } from '../../shared/protocol/errors.js';
import { ChannelMethod, channelCreditParamsSchema, type GrantedFlowControl, type ReceiveLimits, type WindowedReconnectParams } from '../../shared/protocol/messages-1-1.js';
import type { Snapshot } from '../../shared/protocol/messages.js';
import { ROOT_URI } from '../../shared/protocol/uris.js';
import type { Connection } from '../hub/connection.js';
import { encodeEnvelope, encodeNotification } from '../hub/envelope-text.js';
import type { Hub } from '../hub/hub.js';
import type { RpcContext, RpcRouter } from './rpc.js';
import { grantLimits, HOST_RECEIVE, MAX_WINDOWED_PER_CONNECTION, WindowedLink, type WindowedReceiver } from '../hub/windowed-delivery.js';

const MAX_RETAINED_CLIENTS = 1_024;

export interface WindowRecovery {
  channel: string;
  flowControl: GrantedFlowControl;
  recovery: 'replay' | 'snapshot';
}

export class WindowedSubscriptions {
  readonly #links = new WeakMap<Connection, WindowedLink>();
  /** `${tenant}\0${clientId}` → channel → granted limits, of connections that dropped. */
  readonly #retained = new Map<string, Map<string, ReceiveLimits>>();
  /** The clientId each link's connection uses, for retention. */
  readonly #clientKeys = new WeakMap<WindowedLink, string>();

  constructor(private readonly hub: Hub) {
    hub.hook('windowed', { disconnected: (conn) => this.#dropped(conn) });
  }

  register(router: RpcRouter): void {
    router.notification(ChannelMethod.Credit, {
      params: channelCreditParamsSchema,
      handle: (ctx, params) => {
        const receiver = this.#links.get(ctx.conn)?.receivers.get(params.channel);
        if (!receiver) throw new ProtocolError('invalid_params', `channel/credit: ${params.channel} is not a windowed subscription of this connection`);
        receiver.credit(params.consumedBytes);
      },
    });
  }

  /** The receiver that stands for `conn` on a windowed channel, else `conn` itself. */
  connectionFor(conn: Connection, channel: string): Connection {
    return this.#links.get(conn)?.receivers.get(channel) ?? conn;
  }

  /** Ends `conn`'s windowed subscription of `channel`, if it has one. */
  unsubscribe(conn: Connection, channel: string): void {
    const link = this.#links.get(conn);
    const receiver = link?.receivers.get(channel);
    if (!link || !receiver) return;
    link.remove(receiver);
    this.hub.disconnect(receiver);
  }

  /** `subscribe` with `flowControl` on a 1.1 connection: the snapshot, then frames after `channel/ready`. */
  subscribe(ctx: RpcContext, channel: string, asked: ReceiveLimits): { snapshot: Snapshot; flowControl: GrantedFlowControl } {
    const granted = grantLimits(asked);
    const receiver = this.#open(ctx, channel, granted);
    try {
      const snapshot = this.hub.subscribe(receiver, ctx.principal, channel, 0);
      this.#startAfterAnswer(receiver);
      return { snapshot, flowControl: { clientReceive: granted, hostReceive: HOST_RECEIVE } };
    } catch (err) {
      this.unsubscribe(ctx.conn, channel);
      throw err;
    }
  }

  /**
   * `reconnect` with `windows`: each checkpoint whose windowed subscription this clientId had
   * resumes windowed from its own `lastAppliedServerSeq` (the missed envelopes, or a
   * `channel/snapshot`, go out framed after `channel/ready`). Returns the recovered windows and
   * the checkpointed channels that could not be resumed (not retained, gone or not visible).
   */
  resume(ctx: RpcContext, params: WindowedReconnectParams): { items: WindowRecovery[]; missing: string[] } {
    const items: WindowRecovery[] = [];
    const missing: string[] = [];
    const retained = this.#retained.get(this.#keyOf(ctx, params.clientId));
    for (const { channel, lastAppliedServerSeq } of params.windows?.items ?? []) {
      const limits = retained?.get(channel);
      if (!limits) {
        missing.push(channel);
        continue;
      }
      const receiver = this.#open(ctx, channel, limits);
      const [recovery] = this.hub.reconnect(receiver, ctx.principal, { channel: ROOT_URI, clientId: params.clientId, subscriptions: [{ channel, lastSeenServerSeq: lastAppliedServerSeq }] }).channels;
      if (!recovery || recovery.kind === 'missing') {
        this.unsubscribe(ctx.conn, channel);
        missing.push(channel);
        continue;
      }
      if (recovery.kind === 'replay') for (const envelope of recovery.actions) receiver.send(encodeEnvelope(envelope));
      else receiver.send(encodeNotification(ChannelMethod.Snapshot, { channel, snapshot: recovery.snapshot }));
      this.#startAfterAnswer(receiver);
      items.push({ channel, flowControl: { clientReceive: limits, hostReceive: HOST_RECEIVE }, recovery: recovery.kind });
    }
    this.#retained.delete(this.#keyOf(ctx, params.clientId));
    return { items, missing };
  }

  #open(ctx: RpcContext, channel: string, limits: ReceiveLimits): WindowedReceiver {
    let link = this.#links.get(ctx.conn);
    if (!link) {
      link = new WindowedLink(ctx.conn, this.hub.limits.fanout, (receiver) => this.hub.disconnect(receiver));
      this.#links.set(ctx.conn, link);
      this.#clientKeys.set(link, this.#keyOf(ctx, ctx.state.clientId ?? ctx.conn.id));
    }
    // One subscription per channel and connection: windowed replaces ordinary (and an older window).
    this.unsubscribe(ctx.conn, channel);
    this.hub.unsubscribe(ctx.conn, channel);
    return link.open(channel, limits);
  }

  /** The subscribe/reconnect answer is queued when the handler returns; frames only after it. */
  #startAfterAnswer(receiver: WindowedReceiver): void {
    setImmediate(() => this.hub.afterDelivered(() => receiver.start()));
  }

  #keyOf(ctx: RpcContext, clientId: string): string {
    return `${ctx.principal.tenant}\0${clientId}`;
  }

  /** A connection closed: its windows are retained for its clientId, its receivers unsubscribed. */
  #dropped(conn: Connection): void {
    const link = this.#links.get(conn);
    if (!link) return;
    this.#links.delete(conn);
    const key = this.#clientKeys.get(link);
    const kept = new Map<string, ReceiveLimits>();
    for (const receiver of [...link.receivers.values()]) {
      if (kept.size < MAX_WINDOWED_PER_CONNECTION) kept.set(receiver.channel, receiver.limits);
      link.remove(receiver);
      this.hub.disconnect(receiver);
    }
    if (key === undefined || kept.size === 0) return;
    this.#retained.delete(key);
    this.#retained.set(key, kept);
    if (this.#retained.size > MAX_RETAINED_CLIENTS) this.#retained.delete(this.#retained.keys().next().value as string);
  }
}
