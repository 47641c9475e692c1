/**
 * Issue 18.4: the duplicate ledger was one least-recently-used list for the whole tenant, so a
 * viewer initializing 10,100 fresh clientIds pushed a user's entry out; the user's re-sent action
 * was then applied twice, and the viewer could take over the user's clientId. Over real sockets
 * against a real hub, with small per-principal caps so that both the viewer's churn and the
 * user's own (which retires the user's idle client) happen in a few connections; the attack at
 * its full scale (10,100 fresh clientIds, which the old code failed) is run against the ledger
 * itself in test/server/hub-bounds.test.ts, where it takes milliseconds instead of minutes.
 */
import { describe, expect, it } from 'vitest';
import { LEDGER_LIMITS } from '../../server/hub/client-ledger.js';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { hubPerTest, TOKENS, type TestServer } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

type ChatView = { queuedMessages?: Array<{ id: string }> };
/** Two clients in full and three retired per principal. */
const SMALL_LEDGER = { ...LEDGER_LIMITS, maxClientsPerPrincipal: 2, maxRetiredPerPrincipal: 3 };

/** Connects, initializes with `clientId` and closes: one fresh client as the attack made them. */
async function initializeOnce(server: TestServer, token: string, clientId: string): Promise<unknown> {
  const client = await RpcClient.connect(server.wsUrl, { token, clientId });
  try {
    return await client.initialize().then(
      () => 'ok',
      (err: unknown) => err,
    );
  } finally {
    await client.close();
  }
}

describe('the duplicate ledger per principal (issue 18.4)', () => {
  const hubs = hubPerTest();

  it("a viewer's fresh clientIds and the user's own churn neither make the user's re-sent action apply twice nor let the viewer take over the user's clientId", async () => {
    const server = await hubs.start({ withAuth: true, limits: { ledger: SMALL_LEDGER } });
    const alice = await hubs.open(TOKENS.alice, { clientId: 'alice-tab' });
    const { chat } = await alice.createSession('ledger');
    await alice.subscribe(chat);
    const queued = { type: 'chat/pendingMessageSet', kind: 'queued', id: 'm1', message: userMessage('once') };
    expect((await alice.dispatchAndWait(chat, queued)).rejectionReason).toBeUndefined();
    expect((await alice.dispatchAndWait(chat, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'm1' })).rejectionReason).toBeUndefined();
    await alice.close();

    // The viewer uses up its own fresh clientIds; the user opens two more tabs, which retires
    // the first (only the user's own clients can push it out).
    for (let i = 0; i < 5; i++) expect(await initializeOnce(server, TOKENS.viewer, `viewer-${i}`)).toBe('ok');
    expect(await initializeOnce(server, TOKENS.viewer, 'viewer-5')).toMatchObject({ code: ErrorCode.QuotaExceeded });
    for (const tab of ['alice-tab-2', 'alice-tab-3']) expect(await initializeOnce(server, TOKENS.alice, tab)).toBe('ok');

    // The user's clientId is still the user's.
    const takeover = await initializeOnce(server, TOKENS.viewer, 'alice-tab');
    expect(takeover).toMatchObject({ code: ErrorCode.AlreadyExists, data: { code: 'client_id_in_use' } });

    // The user reconnects and re-sends clientSeq 1 (the queued message removed since): not applied again.
    const back = await hubs.open(TOKENS.alice, { clientId: 'alice-tab' });
    await back.subscribe(chat);
    back.notify('dispatchAction', { channel: chat, clientSeq: 1, action: queued });
    await back.waitForEnvelope((e) => e.origin?.clientId === 'alice-tab' && e.origin.clientSeq === 1, 'the answer to the re-sent clientSeq 1');
    // Its next action (clientSeq 3) is new and applied, after the answer to the re-sent one.
    back.notify('dispatchAction', { channel: chat, clientSeq: 3, action: { ...queued, id: 'after', message: userMessage('after') } });
    const later = await back.waitForEnvelope((e) => e.origin?.clientId === 'alice-tab' && e.origin.clientSeq === 3, 'the echo of clientSeq 3');
    expect(later.rejectionReason).toBeUndefined();
    await waitFor(async () => (await back.subscribe<ChatView>(chat)).state.queuedMessages?.some((m) => m.id === 'after'), { what: 'the later message' });
    expect((await back.subscribe<ChatView>(chat)).state.queuedMessages?.map((m) => m.id)).toEqual(['after']);
  });

  it('a principal past its own cap on fresh clientIds is refused (client_id_quota); clientIds it used before still work', async () => {
    const server = await hubs.start({ withAuth: true, limits: { ledger: SMALL_LEDGER } });
    const alice = await hubs.open(TOKENS.alice, { clientId: 'alice-tab' });
    for (let i = 0; i < 5; i++) expect(await initializeOnce(server, TOKENS.viewer, `viewer-${i}`)).toBe('ok');
    const refused = await initializeOnce(server, TOKENS.viewer, 'viewer-5');
    expect(refused).toBeInstanceOf(RpcError);
    expect(refused).toMatchObject({ code: ErrorCode.QuotaExceeded, data: { code: 'client_id_quota' }, message: expect.stringMatching(/client_id_quota/) });
    expect(await initializeOnce(server, TOKENS.viewer, 'viewer-0')).toBe('ok');
    // Nobody else is affected: the user's clients are their own.
    expect(await initializeOnce(server, TOKENS.alice, 'alice-tab-2')).toBe('ok');
    expect(alice.closed).toBe(false);
  });
});
