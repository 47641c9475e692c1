/**
 * Each tenant has its own namespace of ids and its own sequence of serverSeqs (issue 8, point 7):
 * another tenant's id is neither taken nor detectable, and no number a client sees moves because
 * another tenant is busy. Also: a data directory written by 0.1.0 (one log for every tenant) is
 * split into per-tenant logs on start, losing nothing.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import type { Principal } from '../../server/auth/auth.js';
import { SqliteActionLog } from '../../server/storage/sqlite-action-log.js';
import { tenantDir, tenantLogFile } from '../../server/storage/tenant-logs.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { hubPerTest, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

interface ChatView {
  draft?: { text?: string } | undefined;
  turns: Array<{ id: string }>;
}
interface SessionView {
  title: string;
  defaultChat?: string;
}

const hubs = hubPerTest();
let server: TestServer;
const open = (token: string): Promise<RpcClient> => hubs.open(token);

const draft = (text: string): Record<string, unknown> => ({ type: 'chat/draftChanged', draft: userMessage(text) });

describe('tenant partitions', () => {
  it('two tenants may each create a session with the same id; neither sees, changes or learns of the other', async () => {
    server = await hubs.start({ withAuth: true });
    const alice = await open(TOKENS.alice);
    const mallory = await open(TOKENS.mallory);
    const id = 'ahp-session:/plans';
    const ours = await alice.request<{ defaultChat: string }>('createSession', { channel: id, title: 'acme plans' });
    // The same id in another tenant is not "already exists" (no oracle, no squatting): it is a new session.
    const theirs = await mallory.request<{ defaultChat: string }>('createSession', { channel: id, title: 'evil plans' });
    // A client-chosen chat id is per tenant too.
    const sharedChatId = 'ahp-chat:/notes';
    await alice.request('createChat', { channel: id, chat: sharedChatId });
    await mallory.request('createChat', { channel: id, chat: sharedChatId });

    expect((await alice.subscribe<SessionView>(id)).state.title).toBe('acme plans');
    expect((await mallory.subscribe<SessionView>(id)).state.title).toBe('evil plans');
    await alice.subscribe(sharedChatId);
    await mallory.subscribe(sharedChatId);
    await alice.dispatchAndWait(sharedChatId, draft('acme draft'));
    await mallory.dispatchAndWait(sharedChatId, draft('evil draft'));
    expect((await alice.subscribe<ChatView>(sharedChatId)).state.draft?.text).toBe('acme draft');
    expect((await mallory.subscribe<ChatView>(sharedChatId)).state.draft?.text).toBe('evil draft');
    // Each only ever received its own tenant's envelopes.
    expect(alice.envelopes.some((e) => JSON.stringify(e.action).includes('evil'))).toBe(false);
    expect(mallory.envelopes.some((e) => JSON.stringify(e.action).includes('acme'))).toBe(false);

    // Disposing one leaves the other as it was.
    await mallory.request('disposeSession', { channel: id });
    const sessions = await alice.request<{ items: Array<{ resource: string; title: string }> }>('listSessions', { channel: 'ahp-root://' });
    expect(sessions.items).toEqual([expect.objectContaining({ resource: id, title: 'acme plans' })]);
    expect((await alice.subscribe<SessionView>(id)).state.defaultChat).toBe(ours.defaultChat);
    expect(theirs.defaultChat).not.toBe(ours.defaultChat);
  });

  it("a tenant's serverSeq does not move when another tenant is busy", async () => {
    server = await hubs.start({ withAuth: true });
    const alice = await open(TOKENS.alice);
    const { chat } = await alice.createSession('quiet');
    await alice.subscribe(chat);
    const before = (await alice.dispatchAndWait(chat, draft('one'))).serverSeq;

    const mallory = await open(TOKENS.mallory);
    const busy = await mallory.createSession('busy');
    for (let i = 0; i < 50; i++) await mallory.dispatchAndWait(busy.chat, draft(`noise ${i}`));
    const theirs = mallory.envelopes.map((e) => e.serverSeq);
    expect(Math.max(...theirs)).toBeGreaterThan(50);

    // alice's next action is the very next number of her tenant's sequence, and a new connection of
    // hers starts where her tenant is, not where the hub as a whole is.
    expect((await alice.dispatchAndWait(chat, draft('two'))).serverSeq).toBe(before + 1);
    const again = await RpcClient.connect(server.wsUrl, { token: TOKENS.bob });
    hubs.track(again);
    expect((await again.initialize()).serverSeq).toBe(before + 1);
  });

  it("routes HTTP requests to the caller's tenant: the same session id answers with each tenant's own session", async () => {
    server = await hubs.start({ withAuth: true });
    const alice = await open(TOKENS.alice);
    const mallory = await open(TOKENS.mallory);
    const id = 'ahp-session:/steered';
    const { defaultChat } = await alice.request<{ defaultChat: string }>('createSession', { channel: id });
    await mallory.request('createSession', { channel: id });
    await alice.subscribe(defaultChat);
    const turnId = await startScriptTurn(alice, defaultChat, [{ sleep: 600_000 }]);
    const capabilities = async (token: string): Promise<{ target: { turnId: string } | null }> => {
      const res = await fetch(`${server.url}/v2/sessions/steered/input-capabilities`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      return (await res.json()) as { target: { turnId: string } | null };
    };
    // Only acme's session has a running turn to steer.
    expect((await waitFor(async () => ((await capabilities(TOKENS.alice)).target ? capabilities(TOKENS.alice) : undefined))).target?.turnId).toBe(turnId);
    expect((await capabilities(TOKENS.mallory)).target).toBeNull();
  });

  it('keeps both tenants apart across a restart (one log file per tenant)', async () => {
    const data = hubs.tempDir();
    server = await hubs.start({ withAuth: true, dataDir: data.dir });
    const alice = await open(TOKENS.alice);
    const mallory = await open(TOKENS.mallory);
    const id = 'ahp-session:/same';
    const a = await alice.request<{ defaultChat: string }>('createSession', { channel: id });
    const m = await mallory.request<{ defaultChat: string }>('createSession', { channel: id });
    await alice.subscribe(a.defaultChat);
    await mallory.subscribe(m.defaultChat);
    await alice.dispatchAndWait(a.defaultChat, draft('kept by acme'));
    await mallory.dispatchAndWait(m.defaultChat, draft('kept by evil'));
    await hubs.closeClients();
    await server.close();

    expect(existsSync(tenantLogFile(data.dir, 'acme'))).toBe(true);
    expect(existsSync(tenantLogFile(data.dir, 'evil'))).toBe(true);
    server = await hubs.start({ withAuth: true, dataDir: data.dir });
    expect((await (await open(TOKENS.alice)).subscribe<ChatView>(a.defaultChat)).state.draft?.text).toBe('kept by acme');
    expect((await (await open(TOKENS.mallory)).subscribe<ChatView>(m.defaultChat)).state.draft?.text).toBe('kept by evil');
  });

  it('names tenant directories safely: readable names as they are, anything else hashed', () => {
    expect(tenantDir('/d', 'acme')).toBe(join('/d', 'tenants', 'acme'));
    for (const unsafe of ['Acme', '../etc', 'a/b', '.', '..', 'ümlaut', 'x'.repeat(65)]) {
      expect(tenantDir('/d', unsafe)).toMatch(/[/\\]tenants[/\\]~[0-9a-f]{32}$/);
    }
    // Names that differ only in case get different directories (case-insensitive file systems).
    expect(tenantDir('/d', 'Acme')).not.toBe(tenantDir('/d', 'ACME'));
  });
});

describe('a data directory written by 0.1.0 (one log for every tenant)', () => {
  const acme: Principal = { tenant: 'acme', user: 'alice', role: 'user' };
  const evil: Principal = { tenant: 'evil', user: 'mallory', role: 'user' };

  /** Writes what 0.1.0 wrote: one hub over `<data>/hub.db` holding both tenants' sessions. */
  async function writeSingleLogDataDir(dir: string): Promise<{ acmeChat: string; evilChat: string; aliceClientId: string }> {
    const log = SqliteActionLog.open({ file: join(dir, 'hub.db') });
    let n = 0;
    const hub = await Hub.open({ log, logger: silentLogger, now: () => Date.parse('2026-11-01T00:00:00Z'), newId: () => `old-${++n}`, agents: [{ provider: 'remote', displayName: 'R' }], defaultProvider: 'remote' });
    const { defaultChat: acmeChat } = await hub.createSession(acme, { uri: 'ahp-session:/acme-1', title: 'acme session' });
    const { defaultChat: evilChat } = await hub.createSession(evil, { uri: 'ahp-session:/evil-1', title: 'evil session' });
    const conn = new FakeConnection('alice');
    const aliceClientId = 'alice-laptop';
    hub.dispatchFromClient({ conn, principal: acme, clientId: aliceClientId }, acmeChat, 1, draft('acme before the upgrade') as never);
    const evilConn = new FakeConnection('mallory');
    hub.dispatchFromClient({ conn: evilConn, principal: evil, clientId: 'mallory-1' }, evilChat, 1, draft('evil before the upgrade') as never);
    await hub.drain();
    expect(conn.envelopes().some((e) => e.origin?.clientSeq === 1 && !e.rejectionReason)).toBe(true);
    await hub.close();
    await log.close();
    writeFileSync(join(dir, 'acp-sessions.qwen.json'), JSON.stringify({ 'ahp-session:/acme-1': 'acp-a', 'ahp-session:/evil-1': 'acp-e' }));
    return { acmeChat, evilChat, aliceClientId };
  }

  it("moves each tenant's sessions, chats, ACP session ids and accepted clientSeqs into its own log, keeping the old files", async () => {
    const data = hubs.tempDir();
    const old = await writeSingleLogDataDir(data.dir);

    server = await hubs.start({ withAuth: true, dataDir: data.dir });
    const alice = await RpcClient.open(server.wsUrl, { token: TOKENS.alice, clientId: old.aliceClientId });
    hubs.track(alice);
    const mallory = await open(TOKENS.mallory);
    const acmeSessions = await alice.request<{ items: Array<{ resource: string }> }>('listSessions', { channel: 'ahp-root://' });
    expect(acmeSessions.items.map((s) => s.resource)).toEqual(['ahp-session:/acme-1']);
    expect((await alice.subscribe<ChatView>(old.acmeChat)).state.draft?.text).toBe('acme before the upgrade');
    expect((await mallory.subscribe<ChatView>(old.evilChat)).state.draft?.text).toBe('evil before the upgrade');
    await expect(mallory.subscribe(old.acmeChat)).rejects.toMatchObject({ code: -32008 });

    // A clientSeq the old hub accepted is still decided: re-sent, it is refused, not applied again.
    alice.notify('dispatchAction', { channel: old.acmeChat, clientSeq: 1, action: draft('replayed after the upgrade') });
    const echo = await waitFor(() => alice.envelopes.find((e) => e.origin?.clientSeq === 1));
    expect(echo.rejectionReason).toMatch(/already decided|never applied twice/);
    expect((await alice.subscribe<ChatView>(old.acmeChat)).state.draft?.text).toBe('acme before the upgrade');

    // Each tenant's ACP agents resume only that tenant's sessions.
    expect(JSON.parse(readFileSync(join(tenantDir(data.dir, 'acme'), 'acp-sessions.qwen.json'), 'utf8'))).toEqual({ 'ahp-session:/acme-1': 'acp-a' });
    expect(JSON.parse(readFileSync(join(tenantDir(data.dir, 'evil'), 'acp-sessions.qwen.json'), 'utf8'))).toEqual({ 'ahp-session:/evil-1': 'acp-e' });
    // The old files are kept under another name, and the split does not run again.
    expect(existsSync(join(data.dir, 'hub.db'))).toBe(false);
    expect(existsSync(join(data.dir, 'hub.db.split-0.1'))).toBe(true);
    expect(existsSync(join(data.dir, 'acp-sessions.qwen.json.split-0.1'))).toBe(true);
    await hubs.closeClients();
    await server.close();
    server = await hubs.start({ withAuth: true, dataDir: data.dir });
    expect((await (await open(TOKENS.alice)).subscribe<ChatView>(old.acmeChat)).state.draft?.text).toBe('acme before the upgrade');
  });
});
