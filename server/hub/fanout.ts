/**
 * Delivers sequenced envelopes to a channel's subscribers.
 *
 * Every envelope is encoded once and the same string goes to every receiver. Subscribers that
 * asked for `delivery.maxLatencyMs > 0` share one coalescing buffer per latency value: within
 * that window consecutive server `chat/delta` (or `chat/reasoning`) envelopes for the same
 * turn and part merge into one envelope carrying the later serverSeq. Applying the merged
 * envelope gives exactly the state the separate ones would have, which is the rule AHP sets
 * for coalescing. Envelopes carrying an origin (echoes) are never merged.
 *
 * New subscribers join with a `fromSeq`: envelopes at or below it are already in their
 * snapshot (or replay) and are skipped, without a per-subscriber check on the hot path once
 * they have caught up.
 *
 * All coalescing lives here: per-subscriber windows (`ChannelFanout`), and the merging of
 * adjacent envelopes of one group commit (`deliverEnvelopeRun`, called by the commit pipeline's delivery, `commit-pipeline.ts`).
 */
import type { ActionEnvelope, WireAction } from '../../shared/protocol/messages.js';
import { actionForVersion, introducedIn, knowsEveryAction, RESYNC_CLOSE_CODE } from '../../shared/protocol/version-features.js';
import { connectionVersion, type Connection } from './connection.js';
import { sendOrQueue } from './lag-queue.js';
import { encodeEnvelope, mergeForReceiver, mergeStreamingActions, mergeStreamingEnvelopes, withoutOrigin } from './envelope-text.js';

export interface FanoutLimits {
  /** A receiver whose unsent bytes exceed this is closed as a slow consumer. */
  readonly maxBufferedBytes: number;
  /** A coalescing buffer flushes early when it holds this many envelopes. */
  readonly maxCoalescedEnvelopes: number;
  /**
   * Unsent bytes beyond which a receiver counts as lagging: later frames wait in the hub and its
   * streaming envelopes merge (`lag-queue.ts`). Default: a quarter of `maxBufferedBytes`, at most 256 KiB.
   */
  readonly lagBytes?: number;
}

export const DEFAULT_FANOUT_LIMITS: FanoutLimits = {
  maxBufferedBytes: 4 * 1024 * 1024,
  maxCoalescedEnvelopes: 1024,
};

type Scheduler = (fn: () => void, ms: number) => { cancel(): void };
const defaultScheduler: Scheduler = (fn, ms) => {
  const t = setTimeout(fn, ms);
  return { cancel: () => clearTimeout(t) };
};

interface BufferedItem {
  envelope: ActionEnvelope;
  /** Pre-encoded text, when not merged. */
  text?: string;
  /** Set for an item meant for one receiver only (a rejection echo). */
  target?: Connection;
  /** Set for an item every member gets except this one (it gets the unmerged echoes instead). */
  exclude?: Connection;
}

/**
 * Sends one frame, or holds it for a receiver that has fallen behind, or closes the receiver as a
 * slow consumer once more than `maxBufferedBytes` would be unsent. Everything the hub sends a
 * connection goes through this — envelopes, rejection echoes, root notifications and JSON-RPC
 * answers (snapshots included) — so frames keep their order and a client that does not read holds
 * at most that much plus one message, whatever it asked for. `mergeable`: the envelope in `text`,
 * for a receiver that is not its origin; held for a lagging receiver, it merges with the streaming
 * envelope held before it (`lag-queue.ts`), so a lagging tab gets a long answer's missed deltas as
 * one envelope instead of being closed.
 */
export function sendOrCloseSlow(conn: Connection, text: string, limits: FanoutLimits, mergeable?: ActionEnvelope): void {
  sendOrQueue(conn, text, limits, encodeEnvelope, mergeForReceiver, mergeable);
}

class CoalescingGroup {
  readonly members = new Set<Connection>();
  #buffer: BufferedItem[] = [];
  #timer: { cancel(): void } | undefined;

  constructor(
    readonly maxLatencyMs: number,
    private readonly limits: FanoutLimits,
    private readonly schedule: Scheduler,
  ) {}

  push(item: BufferedItem): void {
    const previous = item.target ? undefined : this.#mergeCandidate(item.exclude);
    // Receivers of a non-targeted item are never the connection that dispatched it (that one is
    // `exclude`, or not subscribed at all), so its origin means nothing to them and may be dropped.
    const merged = previous ? mergeStreamingEnvelopes(withoutOrigin(previous.envelope), withoutOrigin(item.envelope)) : undefined;
    if (merged && previous) {
      previous.envelope = merged;
      delete previous.text;
    } else {
      this.#buffer.push(item);
    }
    if (this.#buffer.length >= this.limits.maxCoalescedEnvelopes) this.flush();
    else this.#timer ??= this.schedule(() => this.flush(), this.maxLatencyMs);
  }

  /**
   * The buffered item a new one (sent to everyone but `exclude`) may merge into: the newest
   * shared item, looking past items meant only for `exclude` itself (its own echoes), since
   * nobody else receives those and `exclude` receives neither of the merged ones.
   */
  #mergeCandidate(exclude: Connection | undefined): BufferedItem | undefined {
    for (let i = this.#buffer.length - 1; i >= 0; i--) {
      const candidate = this.#buffer[i]!;
      if (candidate.target) {
        if (exclude !== undefined && candidate.target === exclude) continue;
        return undefined;
      }
      return candidate.exclude === exclude ? candidate : undefined;
    }
    return undefined;
  }

  flush(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    const items = this.#buffer;
    this.#buffer = [];
    for (const item of items) {
      const text = item.text ?? encodeEnvelope(item.envelope);
      if (item.target) {
        if (this.members.has(item.target)) sendOrCloseSlow(item.target, text, this.limits);
        continue;
      }
      for (const m of this.members) if (m !== item.exclude) sendOrCloseSlow(m, text, this.limits, item.envelope);
    }
  }

  remove(conn: Connection): void {
    this.members.delete(conn);
    if (this.members.size === 0) {
      this.#timer?.cancel();
      this.#timer = undefined;
      this.#buffer = [];
    }
  }
}

/** The subscribers of one channel. */
export class ChannelFanout {
  readonly #immediate = new Set<Connection>();
  readonly #groups = new Map<number, CoalescingGroup>();
  /** Subscribers whose snapshot is ahead of what has been delivered so far. */
  readonly #joining = new Map<Connection, { fromSeq: number; maxLatencyMs: number }>();
  /**
   * Subscribers whose protocol version does not know every action type the hub sends, with that
   * version. Empty when everyone speaks the newest version: then `publish` checks nothing more.
   */
  readonly #behind = new Map<Connection, string>();

  constructor(
    private readonly limits: FanoutLimits = DEFAULT_FANOUT_LIMITS,
    private readonly schedule: Scheduler = defaultScheduler,
  ) {}

  get size(): number {
    let n = this.#immediate.size + this.#joining.size;
    for (const g of this.#groups.values()) n += g.members.size;
    return n;
  }

  has(conn: Connection): boolean {
    if (this.#immediate.has(conn) || this.#joining.has(conn)) return true;
    for (const g of this.#groups.values()) if (g.members.has(conn)) return true;
    return false;
  }

  /**
   * Adds a subscriber whose state already reflects every envelope up to `fromSeq`.
   * `deliveredSeq` is the highest seq already handed to subscribers.
   */
  add(conn: Connection, fromSeq: number, deliveredSeq: number, maxLatencyMs = 0): void {
    this.remove(conn);
    const version = connectionVersion(conn);
    if (version !== undefined && !knowsEveryAction(version)) this.#behind.set(conn, version);
    if (fromSeq > deliveredSeq) this.#joining.set(conn, { fromSeq, maxLatencyMs });
    else this.#admit(conn, maxLatencyMs);
  }

  remove(conn: Connection): void {
    this.#immediate.delete(conn);
    this.#joining.delete(conn);
    this.#behind.delete(conn);
    for (const [latency, g] of this.#groups) {
      g.remove(conn);
      if (g.members.size === 0) this.#groups.delete(latency);
    }
  }

  /** True while some subscriber's snapshot is ahead of what has been delivered. */
  get hasJoiners(): boolean {
    return this.#joining.size > 0;
  }

  /**
   * Delivers one sequenced envelope to every subscriber (encoded once), except `exclude`, which
   * the caller serves itself (the origin of a merged batch gets its own unmerged echoes).
   */
  publish(envelope: ActionEnvelope, text: string, exclude?: Connection): void {
    // Admit joiners first: the first envelope beyond their snapshot goes to them like to everyone.
    if (this.#joining.size > 0) this.#promoteJoiners(envelope.serverSeq);
    if (this.#behind.size > 0 && introducedIn(envelope.action.type) !== undefined) {
      const served = this.#serveOlderVersions(envelope, exclude);
      for (const conn of this.#immediate) if (conn !== exclude && !served.has(conn)) sendOrCloseSlow(conn, text, this.limits, envelope);
    } else {
      for (const conn of this.#immediate) if (conn !== exclude) sendOrCloseSlow(conn, text, this.limits, envelope);
    }
    for (const g of this.#groups.values()) g.push(exclude ? { envelope, text, exclude } : { envelope, text });
  }

  /**
   * For an action some subscribers' versions do not know: each such version gets the older
   * action that says the same (encoded once per version) or, when there is none, its connections
   * are closed with RESYNC_CLOSE_CODE, so they reconnect and get a snapshot. Returns the
   * connections served here (the shared frame must skip them).
   */
  #serveOlderVersions(envelope: ActionEnvelope, exclude: Connection | undefined): Set<Connection> {
    const served = new Set<Connection>();
    const forms = new Map<string, string | 'resync'>();
    for (const [conn, version] of [...this.#behind]) {
      if (conn === exclude || this.#joining.has(conn)) continue;
      let form = forms.get(version);
      if (form === undefined) {
        const action = actionForVersion(envelope.action, version);
        form = action === 'resync' ? 'resync' : action === envelope.action ? '' : encodeEnvelope({ ...envelope, action });
        forms.set(version, form);
      }
      if (form === '') continue;
      served.add(conn);
      if (form !== 'resync' && this.#immediate.has(conn)) {
        sendOrCloseSlow(conn, form, this.limits);
        continue;
      }
      // No older equivalent (or a coalescing member, whose buffered frames cannot skip one): resync.
      this.remove(conn);
      conn.close(RESYNC_CLOSE_CODE, `resync: ${envelope.action.type} is newer than protocol ${version}; reconnect for a snapshot`);
    }
    return served;
  }

  /** Sends an envelope to one subscriber only, in order with what it has been sent before. */
  sendTo(conn: Connection, envelope: ActionEnvelope, text: string): void {
    for (const g of this.#groups.values()) {
      if (g.members.has(conn)) {
        g.push({ envelope, text, target: conn });
        return;
      }
    }
    sendOrCloseSlow(conn, text, this.limits);
  }

  /** Flushes coalescing buffers now (used on shutdown and by tests). */
  flush(): void {
    for (const g of this.#groups.values()) g.flush();
  }

  #promoteJoiners(serverSeq: number): void {
    for (const [conn, j] of this.#joining) {
      if (serverSeq <= j.fromSeq) continue;
      this.#joining.delete(conn);
      this.#admit(conn, j.maxLatencyMs);
    }
  }

  #admit(conn: Connection, maxLatencyMs: number): void {
    if (maxLatencyMs <= 0) {
      this.#immediate.add(conn);
      return;
    }
    let g = this.#groups.get(maxLatencyMs);
    if (!g) {
      g = new CoalescingGroup(maxLatencyMs, this.limits, this.schedule);
      this.#groups.set(maxLatencyMs, g);
    }
    // What is buffered is already in the newcomer's snapshot; send it to the others now so the
    // newcomer never receives (and applies) it twice.
    g.flush();
    g.members.add(conn);
  }
}

/** A sequenced envelope waiting for delivery, with the connection that dispatched it (if any). */
export interface QueuedEnvelope {
  readonly envelope: ActionEnvelope;
  readonly source?: Connection | undefined;
}

/**
 * Delivers `first` and the envelopes right after it that may merge with it; returns how many of
 * those following envelopes it delivered too, and the serverSeq of the last one delivered.
 *
 * Under load many deltas for one part arrive in the same batch: they go out as one envelope
 * (the reduced state is identical), the way Hocuspocus coalesces updates that arrive together.
 * Only adjacent envelopes from the same source merge, so no other envelope's seq falls between
 * them, and never while a subscriber joins mid-batch. The dispatching client still gets each of
 * its echoes, so its pending actions resolve one by one. `keep` receives every envelope as sent
 * (for the replay window).
 */
export function deliverEnvelopeRun(
  fanout: ChannelFanout | undefined,
  first: QueuedEnvelope,
  following: (k: number) => QueuedEnvelope | undefined,
  limits: FanoutLimits,
  keep: (envelope: ActionEnvelope, text: string) => void,
): { consumed: number; lastSeq: number } {
  const source = first.source;
  const batch = [first.envelope];
  let merged: WireAction = first.envelope.action;
  if (fanout && !fanout.hasJoiners) {
    for (let next = following(1); next && next.source === source && next.envelope.channel === first.envelope.channel; next = following(batch.length)) {
      const combined = mergeStreamingActions(merged, next.envelope.action);
      if (!combined) break;
      merged = combined;
      batch.push(next.envelope);
    }
  }
  const last = batch[batch.length - 1]!;
  const result = { consumed: batch.length - 1, lastSeq: last.serverSeq };
  const sourceSubscribed = source !== undefined && fanout?.has(source) === true;
  if (batch.length === 1) {
    const text = encodeEnvelope(last);
    keep(last, text);
    // The dispatcher gets the same string as everyone, but as its own item: coalescing
    // subscribers may then merge this envelope with its neighbours for everyone else.
    if (sourceSubscribed) {
      fanout!.publish(last, text, source);
      fanout!.sendTo(source!, last, text);
    } else {
      fanout?.publish(last, text);
      if (source) sendOrCloseSlow(source, text, limits);
    }
    return result;
  }
  const combined: ActionEnvelope = { channel: last.channel, action: merged, serverSeq: last.serverSeq };
  fanout!.publish(combined, encodeEnvelope(combined), sourceSubscribed ? source : undefined);
  for (const env of batch) {
    const text = encodeEnvelope(env);
    keep(env, text);
    if (!source) continue;
    if (sourceSubscribed) fanout!.sendTo(source, env, text);
    else sendOrCloseSlow(source, text, limits);
  }
  return result;
}

/** Sends a private envelope (a rejection) to one connection, in order with its fan-out queue. */
export function deliverPrivate(fanout: ChannelFanout | undefined, conn: Connection, envelope: ActionEnvelope, limits: FanoutLimits): void {
  const text = encodeEnvelope(envelope);
  if (fanout?.has(conn)) fanout.sendTo(conn, envelope, text);
  else sendOrCloseSlow(conn, text, limits);
}
