/**
 * The interactions registry against a fake hub port: a tool waiting for confirmation becomes a
 * pending permission interaction, a reply becomes exactly one AHP client action submitted as the
 * replying principal, and refusals, unknown options and turn ends are answered as the HTTP and
 * SSE routes expect. The routes themselves are covered by test/integration/interactions-*.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { Role, type Principal } from '../../server/auth/auth.js';
import { SessionStreams } from '../../server/interactions/event-stream.js';
import { InteractionRegistry } from '../../server/interactions/registry.js';
import { silentLogger } from '../../server/log.js';
import { FakeHubPort } from '../helpers/fake-hub-port.js';

const SESSION = 'ahp-session:/perm';
const ALICE: Principal = { user: 'alice', tenant: 'default', role: Role.User };
const MALLORY: Principal = { user: 'mallory', tenant: 'other', role: Role.User };
const VIEWER: Principal = { user: 'vera', tenant: 'default', role: Role.Viewer };

describe('interactions registry (unit, fake hub port)', () => {
  let hub: FakeHubPort;
  let registry: InteractionRegistry;
  let chat: string;
  let ids = 0;

  beforeEach(() => {
    hub = new FakeHubPort();
    chat = hub.addSession(SESSION);
    registry = new InteractionRegistry(hub, new SessionStreams(), silentLogger, () => `id-${++ids}`);
    registry.start();
  });
  afterEach(() => registry.stop());

  /** A running turn whose agent asks to run `write_file`. Returns the pending interaction's request id. */
  function askForTool(): string {
    hub.commit(chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: '2026-01-01T00:00:00.000Z', message: { text: 'go', origin: { kind: 'user' } } });
    hub.commit(chat, { type: 'chat/toolCallStart', turnId: 't1', toolCallId: 'tc-1', toolName: 'write_file', displayName: 'Write file' });
    hub.commit(chat, { type: 'chat/toolCallReady', turnId: 't1', toolCallId: 'tc-1', invocationMessage: 'Write README.md' });
    const [pending] = registry.pending(SESSION);
    if (!pending) throw new Error('no pending interaction');
    return pending.requestId;
  }

  function allowOnceOf(requestId: string): string {
    const it = registry.pending(SESSION).find((p) => p.requestId === requestId)!;
    return it.options.find((o) => o.kind === 'allow_once')!.optionId;
  }

  it('a tool waiting for confirmation is one pending permission interaction of its session', () => {
    const requestId = askForTool();
    expect(registry.pending(SESSION)).toHaveLength(1);
    expect(registry.lookup(SESSION, requestId).state).toBe('pending');
    expect(registry.sessionsWithPending(requestId)).toEqual([SESSION]);
  });

  it('an allow reply is submitted once, as the replying principal, as an approving chat/toolCallConfirmed', async () => {
    const requestId = askForTool();
    const result = await registry.reply(ALICE, SESSION, requestId, { outcome: { outcome: 'selected', optionId: allowOnceOf(requestId) } }, 'HTTP reply');
    expect(result).toEqual({ kind: 'accepted' });
    const submitted = hub.committed.filter((c) => c.via === 'submitAs');
    expect(submitted).toHaveLength(1);
    expect(submitted[0]).toMatchObject({ channel: chat, surface: 'HTTP reply', action: { type: 'chat/toolCallConfirmed', toolCallId: 'tc-1', approved: true } });
    expect(registry.lookup(SESSION, requestId).state).toBe('resolved');
  });

  it('an option that was not offered is INVALID_OPTION_ID, and nothing is submitted', async () => {
    const requestId = askForTool();
    const result = await registry.reply(ALICE, SESSION, requestId, { outcome: { outcome: 'selected', optionId: 'not-offered' } });
    expect(result).toMatchObject({ kind: 'error', code: 'invalid_option_id' });
    expect(hub.committed.filter((c) => c.via === 'submitAs')).toEqual([]);
  });

  it("another tenant's reply is not accepted, exactly like an unknown request", async () => {
    const requestId = askForTool();
    expect(await registry.reply(MALLORY, SESSION, requestId, { outcome: { outcome: 'selected', optionId: allowOnceOf(requestId) } })).toEqual({ kind: 'notAccepted' });
    expect(await registry.reply(ALICE, SESSION, 'no-such-request', { outcome: { outcome: 'cancelled' } })).toEqual({ kind: 'notAccepted' });
    expect(registry.lookup(SESSION, requestId).state).toBe('pending');
  });

  it('a viewer may not answer: PERMISSION_DENIED', async () => {
    const requestId = askForTool();
    expect(await registry.reply(VIEWER, SESSION, requestId, { outcome: { outcome: 'cancelled' } })).toMatchObject({ kind: 'error', code: 'permission_denied' });
  });

  it('a reply the hub refuses (someone else answered first) is not accepted', async () => {
    const requestId = askForTool();
    hub.refuseNext(ErrorCode.InvalidParams, 'tool call tc-1 is not pending confirmation');
    expect(await registry.reply(ALICE, SESSION, requestId, { outcome: { outcome: 'selected', optionId: allowOnceOf(requestId) } })).toEqual({ kind: 'notAccepted' });
  });

  it('when the turn ends, its pending interactions are resolved (no longer pending)', () => {
    const requestId = askForTool();
    hub.commit(chat, { type: 'chat/turnCancelled', turnId: 't1', duration: 1 });
    expect(registry.pending(SESSION)).toEqual([]);
    expect(registry.lookup(SESSION, requestId).state).toBe('resolved');
  });

  it('when the session is disposed, its pending interactions are cancelled', async () => {
    const requestId = askForTool();
    await hub.disposeSession(ALICE, SESSION);
    expect(registry.pending(SESSION)).toEqual([]);
    expect(registry.lookup(SESSION, requestId).state).toBe('resolved');
  });
});
