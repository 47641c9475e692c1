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
import { startScriptTurn } from '../helpers/turns.js';

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
    // The session's snapshot carries it beside the state (the app offers Delete to the owner).
    expect(((await bob.subscribe(session)) as { _meta?: Record<string, unknown> })._meta).toEqual({ 'hub/owner': 'alice' });
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

describe('search and export over HTTP', () => {
  const hub = hubPerTest();
  let url = '';
  const get = async (token: string, path: string): Promise<{ status: number; body: any; text: string; type: string | null }> => {
    const res = await fetch(url + path, { headers: { authorization: `Bearer ${token}` } });
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: res.status, body, text, type: res.headers.get('content-type') };
  };
  const finished = async (client: RpcClient, chat: string, script: unknown[]): Promise<string> => {
    await client.subscribe(chat);
    const turnId = await startScriptTurn(client, chat, script);
    await client.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/turnComplete' && e.action['turnId'] === turnId, 'turn end');
    return turnId;
  };

  it('finds a word from a transcript with its session, chat, turn and a snippet; other tenants never see it', async () => {
    const server = await hub.start({ auth: tokenAuthenticator(MANAGE_AUTH) });
    url = server.url;
    const alice = (await hub.open(TOKEN.alice))!;
    const mallory = (await hub.open(TOKEN.mallory))!;
    const { session, chat } = await alice.createSession('Payments on-call');
    const turnId = await finished(alice, chat, [{ say: 'The ledger reconciliation found a mismatch in invoice 7781.' }]);
    const evil = await mallory.createSession('Reconciliation too');
    await finished(mallory, evil.chat, [{ say: 'evil reconciliation notes' }]);

    const found = await get(TOKEN.bob, '/v2/search?q=RECONCILIATION');
    expect(found.status).toBe(200);
    expect(found.body.results).toHaveLength(1);
    const hit = found.body.results[0];
    // The demo agent's script is the user message, so the turn's first match is in it.
    expect(hit).toMatchObject({ session, sessionTitle: 'Payments on-call', chat, turnId, field: 'message' });
    expect(hit.snippet).toBe(JSON.stringify({ script: [{ say: 'The ledger reconciliation found a mismatch in invoice 7781.' }] }));
    expect(hit.snippet.slice(hit.match.start, hit.match.start + hit.match.length)).toBe('reconciliation');
    expect(found.body.truncated).toBe(false);

    // Titles match too; mallory's tenant sees only its own session, never acme's.
    const byTitle = await get(TOKEN.alice, '/v2/search?q=payments');
    expect(byTitle.body.results.map((r: { field: string; session: string }) => [r.field, r.session])).toEqual([['title', session]]);
    const theirs = await get(TOKEN.mallory, '/v2/search?q=reconciliation');
    expect(theirs.body.results.map((r: { session: string }) => r.session)).toEqual(expect.arrayContaining([evil.session]));
    expect(theirs.text).not.toContain(session);
    expect(theirs.text).not.toContain('invoice 7781');
    // A viewer may search (read access).
    expect((await get(TOKEN.victor, '/v2/search?q=invoice')).body.results).toHaveLength(1);
  });

  it('refuses an empty or too long query and a limit out of range with named errors, and caps the results', async () => {
    const server = await hub.start({ auth: tokenAuthenticator(MANAGE_AUTH) });
    url = server.url;
    const alice = (await hub.open(TOKEN.alice))!;
    const { chat } = await alice.createSession('Many turns');
    for (let i = 0; i < 4; i++) await finished(alice, chat, [{ say: `needle number ${i}` }]);
    expect(await get(TOKEN.alice, '/v2/search?q=%20%20')).toMatchObject({ status: 400, body: { code: 'search_query_empty' } });
    expect(await get(TOKEN.alice, `/v2/search?q=${'x'.repeat(201)}`)).toMatchObject({ status: 400, body: { code: 'search_query_too_long', message: 'q is 201 characters; at most 200' } });
    expect(await get(TOKEN.alice, '/v2/search?q=needle&limit=101')).toMatchObject({ status: 400, body: { code: 'search_limit_invalid' } });
    expect(await get(TOKEN.alice, '/v2/search?q=needle&limit=0')).toMatchObject({ status: 400, body: { code: 'search_limit_invalid' } });
    const capped = await get(TOKEN.alice, '/v2/search?q=needle&limit=3');
    expect(capped.body.results).toHaveLength(3);
    expect(capped.body.truncated).toBe(true);
    const all = await get(TOKEN.alice, '/v2/search?q=needle');
    expect(all.body.results).toHaveLength(4);
    expect(all.body.truncated).toBe(false);
    expect((await fetch(`${url}/v2/search?q=needle`)).status).toBe(401);
  });

  it('exports a transcript as Markdown and as JSON with the same entries; other tenants get 404', async () => {
    const server = await hub.start({ auth: tokenAuthenticator(MANAGE_AUTH) });
    url = server.url;
    const alice = (await hub.open(TOKEN.alice))!;
    const { session, chat } = await alice.createSession('Export me');
    const script = [{ say: 'Checking the release.' }, { tool: { id: 'lint-1', name: 'run_lint' } }, { say: 'All clean.' }];
    await finished(alice, chat, script);
    const id = encodeURIComponent(session.slice('ahp-session:/'.length));
    const md = await get(TOKEN.victor, `/v2/sessions/${id}/export?format=markdown`);
    expect(md.status).toBe(200);
    expect(md.type).toBe('text/markdown; charset=utf-8');
    expect(md.text).toBe(['# Export me', '## Turn 1', `**User:**\n\n${JSON.stringify({ script })}`, 'Checking the release.', '**Tool run_lint:** Done\n\nRun run_lint', 'All clean.'].join('\n\n') + '\n');
    const json = await get(TOKEN.alice, `/v2/sessions/${id}/export?format=json&chat=${encodeURIComponent(chat)}`);
    expect(json.body).toMatchObject({ format: 'ahp-hub-transcript', version: 1, session, title: 'Export me', chat });
    expect(json.body.turns[0].entries.map((e: { kind: string }) => e.kind)).toEqual(['user', 'agent', 'tool', 'agent']);
    expect(await get(TOKEN.alice, `/v2/sessions/${id}/export?format=pdf`)).toMatchObject({ status: 400, body: { code: 'export_format_invalid' } });
    expect(await get(TOKEN.alice, `/v2/sessions/${id}/export?chat=ahp-chat:/elsewhere`)).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await get(TOKEN.mallory, `/v2/sessions/${id}/export`)).toMatchObject({ status: 404, body: { code: 'session_not_found' } });
  });
});
