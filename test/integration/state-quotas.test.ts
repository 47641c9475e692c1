/**
 * Issue 18.1: each chat was bounded but their sum was not, so one user token filling many
 * sessions with queued messages grew the hub until snapshots failed and it could not start
 * again. These tests run that attack (scaled down with small quotas) over real sockets against a
 * real hub on a real SQLite file, then restart it on the same data dir.
 */
import { describe, expect, it } from 'vitest';
import { tokenAuthenticator } from '../../server/auth/auth.js';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { RpcError, type RpcClient } from '../helpers/rpc-client.js';
import { AUTH_FILE, hubPerTest, TOKENS } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';

const ADMIN_TOKEN = 'admin-token-0123456789';
const auth = tokenAuthenticator({ tokens: [...AUTH_FILE.tokens, { token: ADMIN_TOKEN, user: 'root', tenant: 'ops', role: 'admin' }] });
const limits = { maxChannelJsonChars: 100_000, maxUserStateChars: 400_000, maxTenantStateChars: 700_000 };
const MESSAGE_CHARS = 20_000;
const queuedMessage = (id: string) => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: userMessage('q'.repeat(MESSAGE_CHARS)) });

/** What the attack's loop ended with: the refusal that stopped it, and how many messages got in. */
interface Flood {
  readonly refusal: string | undefined;
  readonly accepted: number;
  readonly sessions: Array<{ session: string; chat: string }>;
}

/**
 * The attack: new sessions, each filled with queued messages to just under its chat's bound
 * (4 × 20,000 characters < 100,000), until something refuses or `maxSessions` are made.
 */
async function flood(client: RpcClient, maxSessions: number): Promise<Flood> {
  const sessions: Flood['sessions'] = [];
  let accepted = 0;
  for (let s = 0; s < maxSessions; s++) {
    let created: { session: string; chat: string };
    try {
      created = await client.createSession(`flood ${s}`);
    } catch (err) {
      if (err instanceof RpcError && err.code === ErrorCode.QuotaExceeded) return { refusal: err.message, accepted, sessions };
      throw err;
    }
    sessions.push(created);
    for (let m = 0; m < 4; m++) {
      const echo = await client.dispatchAndWait(created.chat, queuedMessage(`m${m}`));
      if (echo.rejectionReason !== undefined) return { refusal: echo.rejectionReason, accepted, sessions };
      accepted++;
    }
  }
  return { refusal: undefined, accepted, sessions };
}

/** The real encoded size of everything `client` can see in these sessions (their chats and the sessions). */
async function heldChars(client: RpcClient, sessions: Flood['sessions']): Promise<number> {
  let chars = 0;
  for (const { session, chat } of sessions) {
    chars += JSON.stringify((await client.subscribe(session)).state).length;
    chars += JSON.stringify((await client.subscribe(chat)).state).length;
  }
  return chars;
}

async function quotaRefusals(url: string, quota: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith(`ahp_hub_quota_refusals_total{quota="${quota}"} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

describe('state quotas per user and per tenant (issue 18.1)', () => {
  const hubs = hubPerTest();

  it('one user filling many sessions with queued messages is refused at their quota (user_state_quota), counted, and can clean up', async () => {
    const server = await hubs.start({ withAuth: true, persistent: true, auth, limits });
    const alice = await hubs.open(TOKENS.alice);
    const attack = await flood(alice, 40);
    // Without a quota on the sum, all 40 sessions × 4 messages (3.2 M characters) get in.
    expect(attack.refusal).toMatch(/state quota exceeded \(user_state_quota\)/);
    expect(attack.accepted).toBeLessThan(40 * 4);
    const held = await heldChars(alice, attack.sessions);
    expect(held).toBeLessThanOrEqual(limits.maxUserStateChars);
    // Most of the quota was usable: the estimate is measured again before refusing.
    expect(held).toBeGreaterThan(limits.maxUserStateChars * 0.75);
    expect(await quotaRefusals(server.url, 'user_state_quota')).toBeGreaterThanOrEqual(1);

    // Over quota, shrinking is still allowed and frees room for growth again.
    const last = attack.sessions.at(-1)!;
    const full = attack.sessions.find((s) => s !== last)!;
    expect((await alice.dispatchAndWait(full.chat, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'm0' })).rejectionReason).toBeUndefined();
    expect((await alice.dispatchAndWait(full.chat, queuedMessage('again'))).rejectionReason).toBeUndefined();

    // Another user of the tenant has a quota of their own.
    const bob = await hubs.open(TOKENS.bob);
    const { chat } = await bob.createSession('bob');
    expect((await bob.dispatchAndWait(chat, queuedMessage('b'))).rejectionReason).toBeUndefined();
  });

  it('users together are refused at the tenant quota (tenant_state_quota), another tenant is untouched, and a restart keeps the bound', async () => {
    const first = await hubs.start({ withAuth: true, persistent: true, auth, limits });
    const dataDir = first.dataDir!;
    const alice = await hubs.open(TOKENS.alice);
    const bob = await hubs.open(TOKENS.bob);
    expect((await flood(alice, 40)).refusal).toMatch(/user_state_quota/);
    const bobs = await flood(bob, 40);
    expect(bobs.refusal).toMatch(/state quota exceeded \(tenant_state_quota\)/);
    expect(await quotaRefusals(first.url, 'tenant_state_quota')).toBeGreaterThanOrEqual(1);
    const mallory = await hubs.open(TOKENS.mallory);
    const { chat: evil } = await mallory.createSession('other tenant');
    expect((await mallory.dispatchAndWait(evil, queuedMessage('x'))).rejectionReason).toBeUndefined();

    // Empty sessions are charged too: creating them is refused once the little room left is used.
    let refusedSession: unknown;
    for (let i = 0; i < 100 && refusedSession === undefined; i++)
      refusedSession = await alice.createSession(`empty ${i}`).then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(refusedSession).toBeInstanceOf(RpcError);
    expect(refusedSession).toMatchObject({ code: ErrorCode.QuotaExceeded, message: expect.stringMatching(/state_quota/) });

    // The restart measures what the log holds, so the bound holds across it.
    await hubs.closeClients();
    await first.close();
    await hubs.start({ withAuth: true, dataDir, auth, limits });
    const again = await hubs.open(TOKENS.bob);
    const stillOver = await flood(again, 1);
    expect(stillOver.refusal ?? '').toMatch(/tenant_state_quota/);
  });

  it('a tenant holding more state than the hub may load is refused at start, the other tenant served; with room it starts unchanged', async () => {
    const first = await hubs.start({ withAuth: true, persistent: true, auth, limits });
    const dataDir = first.dataDir!;
    const alice = await hubs.open(TOKENS.alice);
    const made = await flood(alice, 3);
    expect(made.refusal).toBeUndefined();
    const held = await heldChars(alice, made.sessions);
    await hubs.closeClients();
    await first.close();

    // The message naming the tenant and what to do goes to the process log (test/integration/tenant-refused-at-start.test.ts).
    const refusing = await hubs.start({ withAuth: true, dataDir, auth, limits: { ...limits, maxLoadStateChars: Math.floor(held / 2) } });
    expect(refusing.hubOf('acme')).toBeUndefined();
    expect(String(await hubs.open(TOKENS.alice).catch((e: unknown) => e))).toMatch(/503/);
    const mallory = await hubs.open(TOKENS.mallory);
    const { chat } = await mallory.createSession('served');
    expect((await mallory.dispatchAndWait(chat, queuedMessage('x'))).rejectionReason).toBeUndefined();
    await hubs.closeClients();
    await refusing.close();

    await hubs.start({ withAuth: true, dataDir, auth, limits: { ...limits, maxLoadStateChars: held * 2 } });
    const back = await hubs.open(TOKENS.alice);
    expect(await heldChars(back, made.sessions)).toBe(held);
  });
});
