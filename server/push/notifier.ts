/**
 * One tenant's push notifications: which devices hear of which open request, and when.
 *
 * Fed by the interactions registry in the hooks' delivered phase (the request is in the log
 * before any device hears of it). Per chat, the open requests collapse into one notification
 * (tag `chat:<uri>`): a burst within `collapseMs` becomes one push naming the newest request and
 * how many wait; a later request replaces the notification (same tag). When the chat's last open
 * request is resolved (anywhere), every device that got a notification for it gets the
 * withdrawal (`kind: "resolved"`, same tag). A user who has the chat open and visible in a tab
 * (the app's presence, `visible: true`) gets no push for it; a user gets at most `ratePerMinute`
 * request pushes a minute (withdrawals are never held back). A 404/410 from the push service
 * removes the subscription; other failures are retried with backoff, a bounded number of times.
 */
import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { ACTION_TOKEN_TTL_MS, signActionToken } from './action-token.js';
import type { PushPayload } from '../../shared/protocol/push-payload.js';
import { payloadText, type RequestFacts, requestPayload, resolvedPayload } from './payload.js';
import { type PushSender, topicOf } from './sender.js';
import type { PushSubscriptions, StoredSubscription } from './subscriptions.js';

export interface NotifierLimits {
  /** Requests opened within this long in one chat go out as one push (ms). */
  readonly collapseMs: number;
  /** Request pushes per user per minute (a token bucket). */
  readonly ratePerMinute: number;
  /** Attempts per message when the push service fails (other than 404/410). */
  readonly maxAttempts: number;
  /** First retry wait; doubles per attempt (ms). */
  readonly retryBaseMs: number;
  /** Messages waiting for a retry, in all (more are given up and logged). */
  readonly maxRetriesQueued: number;
}
export const DEFAULT_NOTIFIER_LIMITS: NotifierLimits = { collapseMs: 100, ratePerMinute: 12, maxAttempts: 4, retryBaseMs: 1_000, maxRetriesQueued: 1_000 };

/** An open request as the notifier keeps it (what the payload is built from, less the count). */
export type OpenRequest = Omit<RequestFacts, 'open'>;

export interface NotifierDeps {
  readonly tenant: string;
  readonly store: PushSubscriptions;
  readonly send: PushSender;
  readonly tokenKey: Buffer;
  readonly now: () => number;
  readonly logger: Logger;
  /** True when the user has the chat open in a visible tab (presence). */
  readonly viewingVisibly: (chat: string, user: string) => boolean;
  readonly limits?: Partial<NotifierLimits>;
}

export interface PushCounters {
  sent: number;
  failed: number;
  gone: number;
  rateLimited: number;
  suppressedVisible: number;
}

export class PushNotifier {
  readonly #d: NotifierDeps;
  readonly #limits: NotifierLimits;
  /** chat → requestId → open request, in the order they opened. */
  readonly #open = new Map<string, Map<string, OpenRequest>>();
  /** chat → subscription id → the request its notification names (what a withdrawal goes to). */
  readonly #notified = new Map<string, Map<string, OpenRequest>>();
  /** Chats with a collapse timer running. */
  readonly #due = new Map<string, NodeJS.Timeout>();
  /** user → token bucket. */
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  /** `${subscription}\n${tag}` → the newest message's number (a retry of an older one is dropped). */
  readonly #latest = new Map<string, number>();
  readonly #retries = new Set<NodeJS.Timeout>();
  #seq = 0;
  #closed = false;
  readonly counters: PushCounters = { sent: 0, failed: 0, gone: 0, rateLimited: 0, suppressedVisible: 0 };

  constructor(deps: NotifierDeps) {
    this.#d = deps;
    this.#limits = { ...DEFAULT_NOTIFIER_LIMITS, ...deps.limits };
    // Notifications shown before a restart: still withdrawn once their chat has nothing open (`chatSettled`).
    for (const [chat, devices] of deps.store.notifiedOf(deps.tenant)) {
      const restored = new Map<string, OpenRequest>();
      for (const [subId, facts] of devices) {
        try {
          restored.set(subId, JSON.parse(facts) as OpenRequest);
        } catch {
          // a row this version cannot read names nothing to withdraw
        }
      }
      if (restored.size > 0) this.#notified.set(chat, restored);
    }
  }

  /** True when devices show a notification for `chat` that no open request the registry told of stands behind (one from before a restart). */
  watches(chat: string): boolean {
    return this.#notified.has(chat) && !this.#open.has(chat);
  }

  /** The chat has no open request any more (read from its state): withdraw what devices still show for it. */
  chatSettled(chat: string): void {
    if (this.#closed || this.#open.has(chat)) return;
    this.#withdraw(chat);
  }

  /** A request became open and durable. */
  opened(req: OpenRequest): void {
    if (this.#closed) return;
    let open = this.#open.get(req.chat);
    if (!open) this.#open.set(req.chat, (open = new Map()));
    open.set(req.requestId, req);
    if (this.#due.has(req.chat)) return;
    const timer = setTimeout(() => {
      this.#due.delete(req.chat);
      this.#flush(req.chat);
    }, this.#limits.collapseMs);
    timer.unref?.();
    this.#due.set(req.chat, timer);
  }

  /** A request was answered, cancelled or went with its turn, chat or session. */
  resolved(chat: string, requestId: string): void {
    if (this.#closed) return;
    const open = this.#open.get(chat);
    if (!open?.delete(requestId)) return;
    if (open.size > 0) {
      // Devices whose notification named this request get the one still waiting instead.
      const devices = this.#notified.get(chat);
      if ([...(devices?.values() ?? [])].some((r) => r.requestId === requestId)) this.#flush(chat, true);
      return;
    }
    this.#open.delete(chat);
    const timer = this.#due.get(chat);
    if (timer) {
      clearTimeout(timer);
      this.#due.delete(chat);
    }
    this.#withdraw(chat);
  }

  #withdraw(chat: string): void {
    const devices = this.#notified.get(chat);
    this.#notified.delete(chat);
    if (!devices) return;
    this.#d.store.forgetNotified(this.#d.tenant, chat);
    for (const [subId, named] of devices) {
      const sub = this.#d.store.get(subId);
      if (sub) this.#deliver(sub, resolvedPayload(named));
    }
  }

  /** Sends the chat's newest open request to every device that should hear of it (`onlyNotified`: a replacement). */
  #flush(chat: string, onlyNotified = false): void {
    const open = this.#open.get(chat);
    if (!open || open.size === 0) return;
    const newest = [...open.values()].at(-1)!;
    const facts: RequestFacts = { ...newest, open: open.size };
    let devices = this.#notified.get(chat);
    const targets = onlyNotified ? [...(devices?.keys() ?? [])].map((id) => this.#d.store.get(id)).filter((s): s is StoredSubscription => s !== undefined) : this.#d.store.ofTenant(this.#d.tenant);
    const byUser = new Map<string, StoredSubscription[]>();
    for (const sub of targets) {
      const list = byUser.get(sub.user);
      if (list) list.push(sub);
      else byUser.set(sub.user, [sub]);
    }
    for (const [user, subs] of byUser) {
      if (this.#d.viewingVisibly(chat, user)) {
        this.counters.suppressedVisible++;
        continue;
      }
      if (!this.#take(user)) {
        this.counters.rateLimited++;
        this.#d.logger.debug('push rate limit reached; notification not sent', { user, chat });
        continue;
      }
      for (const sub of subs) {
        const writer = sub.role !== 'viewer';
        const token =
          writer && facts.requestKind === 'permission'
            ? signActionToken(this.#d.tokenKey, { tenant: this.#d.tenant, user: sub.user, sub: sub.id, chat, session: facts.session, req: facts.requestId, exp: this.#d.now() + ACTION_TOKEN_TTL_MS })
            : undefined;
        if (!devices) this.#notified.set(chat, (devices = new Map()));
        devices.set(sub.id, newest);
        this.#d.store.noteNotified(this.#d.tenant, chat, sub.id, JSON.stringify(newest));
        this.#deliver(sub, requestPayload(facts, writer, token));
      }
    }
  }

  /** Token bucket per user: `ratePerMinute` capacity, refilled continuously. */
  #take(user: string): boolean {
    const now = this.#d.now();
    const cap = this.#limits.ratePerMinute;
    const b = this.#buckets.get(user) ?? { tokens: cap, at: now };
    b.tokens = Math.min(cap, b.tokens + ((now - b.at) * cap) / 60_000);
    b.at = now;
    this.#buckets.set(user, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  #deliver(sub: StoredSubscription, payload: PushPayload): void {
    const text = payloadText(payload);
    if (text === undefined) {
      // Only ids far longer than any client sends get here; the push service would refuse it (413).
      this.counters.failed++;
      this.#d.logger.warn('push payload too large for a push message; not sent', { subscription: sub.id, chat: payload.chat });
      return;
    }
    const key = `${sub.id}\n${payload.tag}`;
    const seq = ++this.#seq;
    this.#latest.set(key, seq);
    void this.#attempt(sub, text, key, seq, 1);
  }

  async #attempt(sub: StoredSubscription, text: string, key: string, seq: number, attempt: number): Promise<void> {
    if (this.#closed || this.#latest.get(key) !== seq) return;
    let result: Awaited<ReturnType<PushSender>>;
    try {
      result = await this.#d.send(sub, text, topicOf(this.#d.tenant, key.slice(key.indexOf('\n') + 1)));
    } catch (err) {
      result = { kind: 'failed', message: errorMessage(err) };
    }
    if (result.kind === 'sent') {
      this.counters.sent++;
      if (this.#latest.get(key) === seq) this.#latest.delete(key);
      return;
    }
    if (result.kind === 'gone') {
      this.counters.gone++;
      this.#d.store.remove(sub.id);
      for (const devices of this.#notified.values()) devices.delete(sub.id);
      this.#d.logger.info('push subscription gone; removed', { subscription: sub.id, user: sub.user, status: result.status });
      return;
    }
    this.counters.failed++;
    if (attempt >= this.#limits.maxAttempts || this.#retries.size >= this.#limits.maxRetriesQueued || this.#closed) {
      this.#d.logger.warn('push not delivered; giving up', { subscription: sub.id, attempts: attempt, status: result.status, reason: result.message });
      if (this.#latest.get(key) === seq) this.#latest.delete(key);
      return;
    }
    this.#d.logger.debug('push not delivered; retrying', { subscription: sub.id, attempt, status: result.status, reason: result.message });
    const timer = setTimeout(
      () => {
        this.#retries.delete(timer);
        void this.#attempt(sub, text, key, seq, attempt + 1);
      },
      this.#limits.retryBaseMs * 2 ** (attempt - 1),
    );
    timer.unref?.();
    this.#retries.add(timer);
  }

  close(): void {
    this.#closed = true;
    for (const t of this.#due.values()) clearTimeout(t);
    for (const t of this.#retries) clearTimeout(t);
    this.#due.clear();
    this.#retries.clear();
  }
}
