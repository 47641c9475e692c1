/**
 * Push subscriptions, per tenant and user: the body a browser's `PushSubscription.toJSON()`
 * gives, checked here, and where they are kept (`push.db` in the data dir, so they survive
 * restarts; in memory without one). Bounded per user and per tenant.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { describeIssues } from '../../shared/protocol/describe-issues.js';

export const PUSH_DB_FILE = 'push.db';

export interface PushLimits {
  /** Devices one user may subscribe (default 20). */
  readonly maxPerUser: number;
  /** Subscriptions of one tenant (default 2,000). */
  readonly maxPerTenant: number;
}
export const DEFAULT_PUSH_LIMITS: PushLimits = { maxPerUser: 20, maxPerTenant: 2_000 };

/** The loopback hosts a push endpoint may use plain http on (a test's or a local push service). */
function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** base64url of a fixed-size key: P-256 point (65 bytes → 87 chars), auth secret (16 bytes → 22 chars). */
const base64url = (name: string, bytes: number) =>
  z
    .string()
    .max(Math.ceil((bytes * 4) / 3) + 4)
    .regex(/^[A-Za-z0-9_-]+={0,2}$/, `${name} must be base64url`)
    .refine((s) => Buffer.from(s, 'base64url').length === bytes, `${name} must be ${bytes} bytes`);

export const pushSubscriptionBodySchema = z.object({
  endpoint: z
    .string()
    .max(2_048)
    .refine((s) => {
      try {
        const u = new URL(s);
        return u.protocol === 'https:' || (u.protocol === 'http:' && isLoopbackHost(u.hostname));
      } catch {
        return false;
      }
    }, 'endpoint must be an https URL (plain http only on a loopback host)'),
  // PushSubscription.toJSON() gives null when the browser sets no expiry.
  expirationTime: z.number().nullable().optional(),
  keys: z.object({ p256dh: base64url('keys.p256dh', 65), auth: base64url('keys.auth', 16) }),
});

/** The checked body, or the words saying what is wrong with it. */
export function parseSubscriptionBody(body: unknown): { ok: true; value: z.infer<typeof pushSubscriptionBodySchema> } | { ok: false; message: string } {
  const parsed = pushSubscriptionBodySchema.safeParse(body);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, message: describeIssues(parsed.error.issues, 'rpc') };
}

export interface StoredSubscription {
  readonly id: string;
  readonly tenant: string;
  readonly user: string;
  /** The role of the token that subscribed it (a viewer's devices get no actions). */
  readonly role: string;
  readonly endpoint: string;
  readonly p256dh: string;
  readonly auth: string;
  readonly createdAt: number;
}

export type AddOutcome = { ok: true; subscription: StoredSubscription; created: boolean } | { ok: false; limit: 'user' | 'tenant'; max: number };

/** Where subscriptions are kept. Synchronous (SQLite): a decision and its write never interleave. */
export class PushSubscriptions {
  readonly #db: Database.Database;
  readonly #limits: PushLimits;

  constructor(dataDir: string | undefined, limits: Partial<PushLimits> = {}) {
    this.#limits = { ...DEFAULT_PUSH_LIMITS, ...limits };
    const file = dataDir === undefined ? ':memory:' : join(dataDir, PUSH_DB_FILE);
    // Endpoints and auth secrets are for the hub's user only (SQLite gives -wal and -shm the same mode).
    if (dataDir !== undefined) {
      closeSync(openSync(file, 'a', 0o600));
      chmodSync(file, 0o600);
    }
    this.#db = new Database(file);
    if (dataDir !== undefined) this.#db.pragma('journal_mode = WAL');
    this.#db.exec(
      'CREATE TABLE IF NOT EXISTS push_subscriptions (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, user TEXT NOT NULL, role TEXT NOT NULL, endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL, created_at INTEGER NOT NULL);' +
        'CREATE UNIQUE INDEX IF NOT EXISTS push_endpoint ON push_subscriptions (tenant, endpoint);' +
        'CREATE INDEX IF NOT EXISTS push_user ON push_subscriptions (tenant, user);' +
        // Which device shows a notification for which chat (what it names): withdrawals survive a restart.
        'CREATE TABLE IF NOT EXISTS push_notified (tenant TEXT NOT NULL, chat TEXT NOT NULL, sub_id TEXT NOT NULL, facts TEXT NOT NULL, PRIMARY KEY (tenant, chat, sub_id));',
    );
  }

  get limits(): PushLimits {
    return this.#limits;
  }

  /**
   * Subscribes a device. The same endpoint again (the browser re-subscribing, or another person
   * signing in on it) replaces the earlier row: an endpoint is one device.
   */
  add(who: { tenant: string; user: string; role: string }, body: { endpoint: string; keys: { p256dh: string; auth: string } }, now: number): AddOutcome {
    return this.#db.transaction((): AddOutcome => {
      const same = this.#db.prepare('SELECT * FROM push_subscriptions WHERE tenant = ? AND endpoint = ?').get(who.tenant, body.endpoint) as Row | undefined;
      if (same && same.user === who.user && same.role === who.role && same.p256dh === body.keys.p256dh && same.auth === body.keys.auth) return { ok: true, subscription: fromRow(same), created: false };
      const userCount = (this.#db.prepare('SELECT count(*) AS n FROM push_subscriptions WHERE tenant = ? AND user = ?').get(who.tenant, who.user) as { n: number }).n - (same?.user === who.user ? 1 : 0);
      if (userCount >= this.#limits.maxPerUser) return { ok: false, limit: 'user', max: this.#limits.maxPerUser };
      const tenantCount = (this.#db.prepare('SELECT count(*) AS n FROM push_subscriptions WHERE tenant = ?').get(who.tenant) as { n: number }).n - (same ? 1 : 0);
      if (tenantCount >= this.#limits.maxPerTenant) return { ok: false, limit: 'tenant', max: this.#limits.maxPerTenant };
      if (same) this.remove(same.id);
      const sub: StoredSubscription = { id: randomUUID(), tenant: who.tenant, user: who.user, role: who.role, endpoint: body.endpoint, p256dh: body.keys.p256dh, auth: body.keys.auth, createdAt: now };
      this.#db
        .prepare('INSERT INTO push_subscriptions (id, tenant, user, role, endpoint, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
        .run(sub.id, sub.tenant, sub.user, sub.role, sub.endpoint, sub.p256dh, sub.auth, sub.createdAt);
      return { ok: true, subscription: sub, created: true };
    })();
  }

  /** Removes one of the user's own subscriptions; false when the user has none with that id. */
  removeOwn(tenant: string, user: string, id: string): boolean {
    if (this.#db.prepare('DELETE FROM push_subscriptions WHERE id = ? AND tenant = ? AND user = ?').run(id, tenant, user).changes === 0) return false;
    this.#db.prepare('DELETE FROM push_notified WHERE sub_id = ?').run(id);
    return true;
  }

  /** Removes a subscription the push service says is gone (404/410). */
  remove(id: string): boolean {
    this.#db.prepare('DELETE FROM push_notified WHERE sub_id = ?').run(id);
    return this.#db.prepare('DELETE FROM push_subscriptions WHERE id = ?').run(id).changes > 0;
  }

  /** The device shows a notification for `chat` naming `facts` (JSON of the request). */
  noteNotified(tenant: string, chat: string, subId: string, facts: string): void {
    this.#db.prepare('INSERT OR REPLACE INTO push_notified (tenant, chat, sub_id, facts) VALUES (?, ?, ?, ?)').run(tenant, chat, subId, facts);
  }

  /** The chat's notifications were withdrawn. */
  forgetNotified(tenant: string, chat: string): void {
    this.#db.prepare('DELETE FROM push_notified WHERE tenant = ? AND chat = ?').run(tenant, chat);
  }

  /** Every notification of the tenant not yet withdrawn: chat → subscription id → facts JSON. */
  notifiedOf(tenant: string): Map<string, Map<string, string>> {
    const out = new Map<string, Map<string, string>>();
    for (const r of this.#db.prepare('SELECT chat, sub_id, facts FROM push_notified WHERE tenant = ?').all(tenant) as Array<{ chat: string; sub_id: string; facts: string }>) {
      let m = out.get(r.chat);
      if (!m) out.set(r.chat, (m = new Map()));
      m.set(r.sub_id, r.facts);
    }
    return out;
  }

  get(id: string): StoredSubscription | undefined {
    const row = this.#db.prepare('SELECT * FROM push_subscriptions WHERE id = ?').get(id) as Row | undefined;
    return row && fromRow(row);
  }

  ofTenant(tenant: string): StoredSubscription[] {
    return (this.#db.prepare('SELECT * FROM push_subscriptions WHERE tenant = ? ORDER BY created_at, id').all(tenant) as Row[]).map(fromRow);
  }

  ofUser(tenant: string, user: string): StoredSubscription[] {
    return (this.#db.prepare('SELECT * FROM push_subscriptions WHERE tenant = ? AND user = ? ORDER BY created_at, id').all(tenant, user) as Row[]).map(fromRow);
  }

  close(): void {
    this.#db.close();
  }
}

interface Row {
  id: string;
  tenant: string;
  user: string;
  role: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  created_at: number;
}

function fromRow(r: Row): StoredSubscription {
  return { id: r.id, tenant: r.tenant, user: r.user, role: r.role, endpoint: r.endpoint, p256dh: r.p256dh, auth: r.auth, createdAt: r.created_at };
}
