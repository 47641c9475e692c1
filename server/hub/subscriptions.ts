/**
 * Who is subscribed to what: every channel's subscribers (one `ChannelFanout` each), the root
 * catalogue's subscribers per tenant (each tenant sees only its own sessions), and each
 * connection's channels, bounded per connection. The commit pipeline delivers through it
 * (`Receivers`).
 *
 * It also answers AHP `reconnect`: when the replay window still covers the client's gap, the
 * envelopes it missed; otherwise fresh snapshots. Either way the connection rejoins each channel
 * at the live edge, so it gets every envelope after what it was given exactly once.
 */
import { ProtocolError } from '../../shared/protocol/errors.js';
import type { ActionEnvelope, ReconnectParams, ReconnectResult, Snapshot } from '../../shared/protocol/messages.js';
import type { ChannelReconnectParams, ChannelReconnectResult, ChannelRecovery } from '../../shared/protocol/messages-1-1.js';
import { actionForVersion, knowsEveryAction } from '../../shared/protocol/version-features.js';
import { ROOT_URI } from '../../shared/protocol/uris.js';
import type { Receivers } from './commit-ports.js';
import { connectionVersion, type Connection } from './connection.js';
import { ChannelFanout, type FanoutLimits } from './fanout.js';
import type { ReplayWindow } from './replay-window.js';

/** What `reconnect` needs from the hub, for one principal. */
export interface ReconnectView {
  /** True when the channel exists and the principal may see it. */
  visible(channel: string): boolean;
  /** The channel's snapshot (only asked for visible channels). */
  snapshot(channel: string): Snapshot;
  /** Last serverSeq sequenced. */
  readonly serverSeq: number;
  /** Last serverSeq delivered to subscribers. */
  readonly deliveredSeq: number;
  /** False when the client's cursor belongs to another history of this log (its epoch, docs/continuity.md#epoch). */
  readonly sameHistory?: boolean;
  /** Per-channel reconnect: whether one channel's cursor belongs to this history (undefined: every cursor does). */
  readonly cursorOfThisHistory?: (seq: number) => boolean;
}

/**
 * The replay in the form the connection's version understands (version-features.ts), or
 * undefined when some envelope has no such form: then the client gets snapshots.
 */
function replayForVersion(actions: ActionEnvelope[], version: string | undefined): ActionEnvelope[] | undefined {
  if (version === undefined || knowsEveryAction(version)) return actions;
  const out: ActionEnvelope[] = [];
  for (const e of actions) {
    const action = actionForVersion(e.action, version);
    if (action === 'resync') return undefined;
    out.push(action === e.action ? e : { ...e, action });
  }
  return out;
}

/** What a reconnect answered, which channels it resumed, and how (metrics). */
export interface ServedReconnect<R> {
  readonly result: R;
  readonly resumed: readonly string[];
  readonly kind: 'replay' | 'snapshot';
}

export class Subscriptions implements Receivers {
  readonly #fanouts = new Map<string, ChannelFanout>();
  readonly #rootSubscribers = new Map<string, Set<Connection>>();
  readonly #channelsByConn = new Map<Connection, Set<string>>();

  constructor(
    private readonly maxPerConnection: number,
    private readonly fanoutLimits: FanoutLimits,
    private readonly replay: ReplayWindow,
  ) {}

  fanoutOf(channel: string): ChannelFanout | undefined {
    return this.#fanouts.get(channel);
  }

  rootSubscribersOf(tenant: string): ReadonlySet<Connection> | undefined {
    return this.#rootSubscribers.get(tenant);
  }

  /**
   * Subscribes `conn` to `channel`; its state already reflects every envelope up to `fromSeq`
   * (`deliveredSeq`: the last one delivered so far). Throws LimitExceeded past the per-connection bound.
   */
  attach(conn: Connection, tenant: string, channel: string, fromSeq: number, deliveredSeq: number, maxLatencyMs: number): void {
    let channels = this.#channelsByConn.get(conn);
    if (!channels) {
      channels = new Set();
      this.#channelsByConn.set(conn, channels);
    }
    if (!channels.has(channel) && channels.size >= this.maxPerConnection) {
      throw new ProtocolError('limit_exceeded', `at most ${this.maxPerConnection} subscriptions per connection`);
    }
    channels.add(channel);
    if (channel === ROOT_URI) {
      let set = this.#rootSubscribers.get(tenant);
      if (!set) {
        set = new Set();
        this.#rootSubscribers.set(tenant, set);
      }
      set.add(conn);
      return;
    }
    let f = this.#fanouts.get(channel);
    if (!f) {
      f = new ChannelFanout(this.fanoutLimits);
      this.#fanouts.set(channel, f);
    }
    f.add(conn, fromSeq, deliveredSeq, maxLatencyMs);
  }

  unsubscribe(conn: Connection, channel: string): void {
    this.#channelsByConn.get(conn)?.delete(channel);
    if (channel === ROOT_URI) {
      for (const set of this.#rootSubscribers.values()) set.delete(conn);
      return;
    }
    const f = this.#fanouts.get(channel);
    if (!f) return;
    f.remove(conn);
    if (f.size === 0) this.#fanouts.delete(channel);
  }

  /** Forgets every subscription of a closed connection. */
  dropConnection(conn: Connection): void {
    const channels = this.#channelsByConn.get(conn);
    if (channels) for (const channel of [...channels]) this.unsubscribe(conn, channel);
    this.#channelsByConn.delete(conn);
  }

  /** A disposed channel: what is buffered for it goes out now, then nobody is subscribed to it. */
  dropChannel(channel: string): void {
    const f = this.#fanouts.get(channel);
    if (f) f.flush();
    this.#fanouts.delete(channel);
    for (const channels of this.#channelsByConn.values()) channels.delete(channel);
  }

  /** Channel subscriptions held by every connection together (metrics). */
  get count(): number {
    let n = 0;
    for (const channels of this.#channelsByConn.values()) n += channels.size;
    return n;
  }

  of(conn: Connection): ReadonlySet<string> {
    return this.#channelsByConn.get(conn) ?? new Set();
  }

  /** Sends what coalescing subscribers have buffered now (shutdown). */
  flushAll(): void {
    for (const f of this.#fanouts.values()) f.flush();
  }

  /**
   * AHP `reconnect`: replays every delivered envelope after `lastSeenServerSeq` on the requested
   * channels when the replay window still covers the gap (in the connection's version's form),
   * else answers snapshots; always snapshots for a cursor from another history (`sameHistory`). Channels that
   * no longer exist (or are not visible) are reported `missing`.
   */
  reconnect(conn: Connection, tenant: string, params: ReconnectParams, view: ReconnectView): ServedReconnect<ReconnectResult> {
    const visible: string[] = [];
    const missing: string[] = [];
    for (const ch of new Set(params.subscriptions)) (view.visible(ch) ? visible : missing).push(ch);
    const canReplay = view.sameHistory !== false && this.#covers(params.lastSeenServerSeq, view);
    const actions = canReplay ? replayForVersion(this.replay.since(params.lastSeenServerSeq, new Set(visible)), connectionVersion(conn)) : undefined;
    if (actions) {
      for (const ch of visible) this.attach(conn, tenant, ch, view.deliveredSeq, view.deliveredSeq, 0);
      return { result: { type: 'replay', actions, missing }, resumed: visible, kind: 'replay' };
    }
    const snapshots = visible.map((ch) => {
      const snapshot = view.snapshot(ch);
      this.attach(conn, tenant, ch, snapshot.fromSeq, view.deliveredSeq, 0);
      return snapshot;
    });
    return { result: { type: 'snapshot', snapshots, missing }, resumed: visible, kind: 'snapshot' };
  }

  /**
   * AHP 1.1 per-channel `reconnect`: exactly one recovery per requested channel, each from that
   * channel's own cursor: `replay` (its envelopes after the cursor) when the replay window still
   * holds every envelope of that channel after it (a quiet channel stays replayable however much
   * other channels wrote), else `snapshot`; `missing` when the channel is gone or no longer visible. So a
   * channel that got far ahead never makes a slower one skip what it was not sent.
   */
  reconnectChannels(conn: Connection, tenant: string, params: ChannelReconnectParams, view: ReconnectView): ServedReconnect<ChannelReconnectResult> {
    const cursors = new Map<string, number>();
    const order: string[] = [];
    for (const { channel, lastSeenServerSeq } of params.subscriptions) {
      if (cursors.has(channel)) continue;
      order.push(channel);
      cursors.set(channel, lastSeenServerSeq);
    }
    const replayable = new Map<string, number>();
    for (const [channel, seq] of cursors) {
      const ofThisHistory = view.cursorOfThisHistory?.(seq) ?? true;
      if (ofThisHistory && seq <= view.serverSeq && view.visible(channel) && this.replay.coversChannel(channel, seq, view.deliveredSeq)) replayable.set(channel, seq);
    }
    const replays = this.replay.sinceEach(replayable);
    const channels: ChannelRecovery[] = [];
    const resumed: string[] = [];
    let snapshots = 0;
    for (const channel of order) {
      const actions = replays.get(channel);
      if (actions) {
        this.attach(conn, tenant, channel, view.deliveredSeq, view.deliveredSeq, 0);
        channels.push({ kind: 'replay', channel, actions });
      } else if (view.visible(channel)) {
        const snapshot = view.snapshot(channel);
        this.attach(conn, tenant, channel, snapshot.fromSeq, view.deliveredSeq, 0);
        channels.push({ kind: 'snapshot', channel, snapshot });
        snapshots++;
      } else {
        channels.push({ kind: 'missing', channel });
        continue;
      }
      resumed.push(channel);
    }
    return { result: { channels }, resumed, kind: snapshots > 0 ? 'snapshot' : 'replay' };
  }

  /** True when the replay window holds every delivered envelope after `seq`. */
  #covers(seq: number, view: ReconnectView): boolean {
    const oldest = this.replay.oldestSeq ?? view.deliveredSeq + 1;
    return seq <= view.serverSeq && seq >= oldest - 1;
  }
}
