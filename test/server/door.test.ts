/**
 * The hub's one door (`server/hub/door.ts`): every kind of entry gets the one `Outcome` type, an
 * AHP client's outcome is made synchronously (its rejection echo already queued), a viewer is
 * refused at the door for every operation with the texts the surfaces show, grants are computed
 * once per principal, and nothing in server/ but the door calls `authorize`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL, Role, type Principal } from '../../server/auth/auth.js';
import { grantsOf } from '../../server/auth/authorize.js';
import type { Entry, Outcome } from '../../server/hub/entry.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { waitFor } from '../helpers/wait-for.js';

async function openHub(): Promise<Hub> {
  let n = 0;
  return Hub.open({ log: new MemoryActionLog(), logger: silentLogger, now: () => 5, newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'R' }], defaultProvider: 'remote' });
}

const draft = (text: string) => ({ type: 'chat/draftChanged', draft: { text, origin: { kind: 'user' } } });

describe('the door', () => {
  it('answers every kind of entry with one Outcome type', async () => {
    const hub = await openHub();
    const p = DEV_PRINCIPAL;
    const created = await hub.enter({ op: 'createSession', principal: p, uri: 'ahp-session:/door' });
    expect(created).toMatchObject({ outcome: 'accepted', defaultChat: expect.stringMatching(/^ahp-chat:/) });
    const chat = (created as { defaultChat: string }).defaultChat;
    const second = await hub.enter({ op: 'createChat', principal: p, session: 'ahp-session:/door', chat: 'ahp-chat:/second' });
    expect(second).toMatchObject({ outcome: 'accepted', chat: 'ahp-chat:/second' });

    const submitted = await hub.enter({ op: 'dispatch', by: { from: 'principal', principal: p }, channel: chat, action: draft('as a principal') });
    expect(submitted).toEqual({ outcome: 'accepted', serverSeq: hub.serverSeq });
    expect(await hub.enter({ op: 'dispatch', by: { from: 'principal', principal: p }, channel: 'ahp-chat:/nowhere', action: draft('x') })).toMatchObject({ outcome: 'rejected', kind: 'not_found', at: 'decision' });
    const agentAction = await hub.enter({ op: 'dispatch', by: { from: 'server' }, channel: chat, action: { type: 'chat/delta', turnId: 'no-such-turn', partId: 'p', text: 'x' } });
    expect(agentAction).toMatchObject({ outcome: 'rejected', kind: 'invalid_params', at: 'decision' });
    expect(await hub.enter({ op: 'createSession', principal: p, uri: 'ahp-session:/door' })).toMatchObject({ outcome: 'rejected', kind: 'session_exists', message: 'session ahp-session:/door already exists' });

    // An AHP client: decided in the call (a value, not a promise), echoes through the pipeline.
    const conn = new FakeConnection('tab');
    const client = { conn, principal: p, clientId: 'tab' };
    const fromClient = (clientSeq: number, channel: string, action: Record<string, unknown> & { type: string }): Outcome | Promise<Outcome> => hub.enter({ op: 'dispatch', by: { from: 'client', client, clientSeq }, channel, action });
    expect(fromClient(1, 'ahp-chat:/nowhere', draft('x'))).toEqual({ outcome: 'ignored' });
    const accepted = fromClient(2, chat, draft('from a tab'));
    expect(accepted).toEqual({ outcome: 'accepted', serverSeq: hub.serverSeq });
    const refused = fromClient(3, chat, { type: 'chat/turnComplete', turnId: 'none' });
    expect(refused).toMatchObject({ outcome: 'rejected', kind: 'invalid_params', at: 'decision' });
    await hub.drain();
    const again = fromClient(2, chat, draft('from a tab'));
    expect(again).toMatchObject({ outcome: 'duplicate', echo: { serverSeq: (accepted as { serverSeq: number }).serverSeq } });
    await waitFor(() => conn.envelopes().length === 3);
    const [echo, rejection, duplicate] = conn.envelopes();
    expect(echo).toMatchObject({ origin: { clientId: 'tab', clientSeq: 2 } });
    expect(rejection).toMatchObject({ origin: { clientSeq: 3 }, rejectionKind: 'invalid_params' });
    expect(duplicate).toEqual(echo);

    expect(await hub.enter({ op: 'disposeChat', principal: p, chat: 'ahp-chat:/second' })).toMatchObject({ outcome: 'accepted' });
    expect(await hub.enter({ op: 'disposeChat', principal: p, chat: 'ahp-chat:/second' })).toMatchObject({ outcome: 'rejected', kind: 'not_found' });
    expect(await hub.enter({ op: 'disposeSession', principal: p, uri: 'ahp-session:/door' })).toMatchObject({ outcome: 'accepted' });
    await hub.close();
  });

  it('refuses a viewer at the door for every operation, with the texts the surfaces show', async () => {
    const hub = await openHub();
    const owner: Principal = { user: 'owner', tenant: DEV_PRINCIPAL.tenant, role: Role.User };
    const viewer: Principal = { user: 'eve', tenant: DEV_PRINCIPAL.tenant, role: Role.Viewer };
    const other: Principal = { user: 'bob', tenant: DEV_PRINCIPAL.tenant, role: Role.User };
    const session = 'ahp-session:/owned';
    const { defaultChat: chat } = await hub.createSession(owner, { uri: session });
    await hub.createChat(owner, session, { chat: 'ahp-chat:/extra' });
    const cases: Array<[Entry, string]> = [
      [{ op: 'dispatch', by: { from: 'principal', principal: viewer }, channel: chat, action: draft('x') }, 'read-only access: viewers cannot dispatch actions'],
      [{ op: 'dispatch', by: { from: 'principal', principal: viewer }, channel: chat, action: draft('x'), as: 'prompt' }, 'read-only access: viewers cannot prompt'],
      [{ op: 'createSession', principal: viewer, uri: 'ahp-session:/v' }, 'viewers cannot create sessions'],
      [{ op: 'createSession', principal: viewer, uri: 'ahp-session:/v', as: 'createQwenSession' }, 'read-only access: viewers cannot create sessions'],
      [{ op: 'disposeSession', principal: viewer, uri: session }, 'viewers cannot dispose sessions'],
      [{ op: 'disposeSession', principal: viewer, uri: session, as: 'closeQwenSession' }, 'read-only access: viewers cannot close sessions'],
      [{ op: 'disposeSession', principal: other, uri: session }, "only the session's owner (owner) or an admin can delete this session"],
      [{ op: 'createChat', principal: viewer, session }, 'viewers cannot create chats'],
      [{ op: 'disposeChat', principal: viewer, chat: 'ahp-chat:/extra' }, 'viewers cannot dispose chats'],
      [{ op: 'steer', principal: viewer, session }, 'read-only access: viewers cannot add input to a turn'],
      [{ op: 'prompt', principal: viewer }, 'read-only access: viewers cannot prompt'],
      [{ op: 'answerPermission', principal: viewer }, 'read-only access: viewers cannot answer permission requests'],
      [{ op: 'cancel', principal: viewer }, 'read-only access: viewers cannot cancel'],
      [{ op: 'createQwenSession', principal: viewer }, 'read-only access: viewers cannot create sessions'],
      [{ op: 'editDraft', principal: viewer }, 'read-only access: viewers cannot edit shared drafts'],
    ];
    for (const [entry, message] of cases) {
      expect(await hub.enter(entry), `${entry.op} ${'as' in entry ? (entry.as ?? '') : ''}`).toMatchObject({ outcome: 'rejected', kind: 'permission_denied', message });
    }
    // Visibility comes before grants: another tenant's session does not exist for the caller.
    expect(hub.enter({ op: 'steer', principal: { ...viewer, tenant: 'elsewhere' }, session })).toMatchObject({ outcome: 'rejected', kind: 'session_not_found' });
    expect(hub.enter({ op: 'steer', principal: owner, session })).toEqual({ outcome: 'accepted' });
    await hub.close();
  });

  it('computes grants once per principal', () => {
    const p: Principal = { user: 'u', tenant: 't', role: Role.User };
    expect(grantsOf(p)).toBe(grantsOf(p));
    expect(grantsOf(p)).toEqual({ write: true, deleteAnySession: false, user: 'u' });
    expect(grantsOf({ ...p, role: Role.Viewer }).write).toBe(false);
  });

  it('is the only caller of authorize in server/', () => {
    const root = join(import.meta.dirname, '../..');
    const callers: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith('.ts') && /\bauthorize\(/.test(readFileSync(path, 'utf8'))) callers.push(relative(root, path));
      }
    };
    walk(join(root, 'server'));
    expect(callers.sort()).toEqual(['server/auth/authorize.ts', 'server/hub/door.ts']);
  });
});
