/**
 * Sessions a team can manage (issue 28, items 7 and 8), at the hub: rename (`session/titleChanged`
 * from a person), archive / unarchive (`session/isArchivedChanged`), delete (`disposeSession`,
 * owner or admin only), with real sockets and tokens of two tenants.
 */
import { describe, expect, it } from 'vitest';
import { tokenAuthenticator } from '../../server/auth/auth.js';
import { MANAGE_AUTH, MANAGE_TOKEN as TOKEN } from '../helpers/manage-tokens.js';
import { RpcError, type RpcClient } from '../helpers/rpc-client.js';
import { hubPerTest } from '../helpers/start-server.js';

const IS_ARCHIVED = 64;

interface Summary {
  resource: string;
  title: string;
  status: number;
  _meta: Record<string, unknown>;
}

async function summaryOf(client: RpcClient, session: string): Promise<Summary | undefined> {
  const { items } = await client.request<{ items: Summary[] }>('listSessions', { channel: 'ahp-root://' });
  return items.find((s) => s.resource === session);
}

async function refusal(call: Promise<unknown>): Promise<RpcError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof RpcError) return err;
    throw err;
  }
  throw new Error('the call was not refused');
}

describe('managing sessions at the hub', () => {
  const hub = hubPerTest();
  const start = async () => {
    await hub.start({ auth: tokenAuthenticator(MANAGE_AUTH) });
    const [alice, bob, victor, ops] = await Promise.all([hub.open(TOKEN.alice), hub.open(TOKEN.bob), hub.open(TOKEN.victor), hub.open(TOKEN.ops)]);
    return { alice: alice!, bob: bob!, victor: victor!, ops: ops! };
  };

  it('a user renames a session: the root catalogue and the session state carry the new title; a blank one is refused', async () => {
    const { alice, bob } = await start();
    const { session } = await alice.createSession('Duplicate title');
    await bob.subscribe('ahp-root://');
    const echo = await bob.dispatchAndWait(session, { type: 'session/titleChanged', title: 'Release 4.2 checklist' });
    expect(echo.rejectionReason).toBeUndefined();
    await bob.waitForNotification((n) => n.method === 'root/sessionSummaryChanged' && (n.params as { changes?: { title?: string } }).changes?.title === 'Release 4.2 checklist', 'the renamed summary');
    expect((await summaryOf(alice, session))?.title).toBe('Release 4.2 checklist');
    expect((await alice.subscribe<{ title: string }>(session)).state.title).toBe('Release 4.2 checklist');
    const blank = await bob.dispatchAndWait(session, { type: 'session/titleChanged', title: '   ' });
    expect(blank.rejectionReason).toBe('a session title cannot be blank');
    expect((await summaryOf(alice, session))?.title).toBe('Release 4.2 checklist');
  });

  it('archive sets IsArchived on the session and its summary, unarchive clears it; the owner is in the summary', async () => {
    const { alice, bob } = await start();
    const { session } = await alice.createSession('Old incident');
    expect((await summaryOf(bob, session))?._meta['hub/owner']).toBe('alice');
    expect((await bob.dispatchAndWait(session, { type: 'session/isArchivedChanged', isArchived: true })).rejectionReason).toBeUndefined();
    expect(((await summaryOf(bob, session))?.status ?? 0) & IS_ARCHIVED).toBe(IS_ARCHIVED);
    expect(((await alice.subscribe<{ status: number }>(session)).state.status & IS_ARCHIVED) === IS_ARCHIVED).toBe(true);
    expect((await bob.dispatchAndWait(session, { type: 'session/isArchivedChanged', isArchived: false })).rejectionReason).toBeUndefined();
    expect(((await summaryOf(bob, session))?.status ?? 0) & IS_ARCHIVED).toBe(0);
  });

  it('a viewer can neither rename, archive nor delete', async () => {
    const { alice, victor } = await start();
    const { session } = await alice.createSession('Kept as is');
    const renamed = await victor.dispatchAndWait(session, { type: 'session/titleChanged', title: 'victor was here' });
    expect(renamed.rejectionReason).toMatch(/read-only/);
    const archived = await victor.dispatchAndWait(session, { type: 'session/isArchivedChanged', isArchived: true });
    expect(archived.rejectionReason).toMatch(/read-only/);
    const deleted = await refusal(victor.request('disposeSession', { channel: session }));
    expect(deleted.code).toBe(-32009);
    const after = await summaryOf(alice, session);
    expect(after?.title).toBe('Kept as is');
    expect((after?.status ?? 0) & IS_ARCHIVED).toBe(0);
  });

  it("a user deletes only their own sessions; an admin deletes anyone's", async () => {
    const { alice, bob, ops } = await start();
    const { session: alices } = await alice.createSession("alice's");
    const { session: bobs } = await bob.createSession("bob's");
    const { session: third } = await alice.createSession('for the admin');
    const refused = await refusal(bob.request('disposeSession', { channel: alices }));
    expect(refused.code).toBe(-32009);
    expect(refused.message).toBe("only the session's owner (alice) or an admin can delete this session");
    expect(await summaryOf(alice, alices)).toBeDefined();
    await bob.request('disposeSession', { channel: bobs });
    expect(await summaryOf(alice, bobs)).toBeUndefined();
    await alice.request('disposeSession', { channel: alices });
    expect(await summaryOf(bob, alices)).toBeUndefined();
    await ops.request('disposeSession', { channel: third });
    expect(await summaryOf(alice, third)).toBeUndefined();
  });

  it("another tenant's user cannot rename, archive or delete (the session does not exist for them)", async () => {
    const { alice } = await start();
    const mallory = (await hub.open(TOKEN.mallory))!;
    const { session } = await alice.createSession('acme only');
    const seq = mallory.dispatch(session, { type: 'session/titleChanged', title: 'evil' });
    await mallory.request('ping', { channel: 'ahp-root://' });
    expect(mallory.envelopes.some((e) => e.origin?.clientSeq === seq)).toBe(false);
    expect((await refusal(mallory.request('disposeSession', { channel: session }))).code).toBe(-32001);
    expect((await summaryOf(alice, session))?.title).toBe('acme only');
  });
});
