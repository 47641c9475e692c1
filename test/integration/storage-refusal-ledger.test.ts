/**
 * Issue 33.5g: a dispatch refused because storage failed was never applied, yet after a restart
 * its re-send could be answered "already decided": the snapshot keeps only each client's newest
 * 32 accepted clientSeqs and counts everything below them as decided — the refused one included.
 * A real hub on a real SQLite data dir, restarted three times: the tenant's disk quota (1 byte)
 * refuses clientSeq 41, later clientSeqs are accepted, and after a restart the re-sent 41 is
 * applied, once.
 */
import { describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, tempDir, type TestServer } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';

const CLIENT_ID = 'tab-that-outlives-restarts';
const queued = (id: string) => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: userMessage(id) });

describe('a storage refusal never enters the duplicate ledger (issue 33.5g)', () => {
  it('a clientSeq refused for storage and re-sent after a restart is applied, not answered "already decided"', async () => {
    const dir = tempDir('ledger-refused-');
    let server: TestServer | undefined;
    const run = async (maxTenantDiskBytes: number, work: (client: RpcClient, chat: string) => Promise<void>, chat?: string): Promise<string> => {
      server = await startTestServer({ dataDir: dir.dir, withAuth: true, limits: { maxTenantDiskBytes } });
      const client = await RpcClient.open(server.wsUrl, { token: TOKENS.alice, clientId: CLIENT_ID });
      try {
        const target = chat ?? (await client.createSession('ledger')).chat;
        await client.subscribe(target);
        await work(client, target);
        return target;
      } finally {
        await client.close();
        await server.stop();
        server = undefined;
      }
    };
    const send = async (client: RpcClient, chat: string, clientSeq: number, id: string) => {
      client.notify('dispatchAction', { channel: chat, clientSeq, action: queued(id) });
      return client.waitForEnvelope((e) => e.origin?.clientId === CLIENT_ID && e.origin.clientSeq === clientSeq, `the answer to clientSeq ${clientSeq}`);
    };
    try {
      const chat = await run(1 << 30, async (client, c) => {
        for (let seq = 1; seq <= 40; seq++) expect((await send(client, c, seq, 'same')).rejectionReason).toBeUndefined();
      });
      await run(
        1,
        async (client) => {
          expect((await send(client, chat, 41, 'refused-then-resent')).rejectionReason).toMatch(/^storage quota exceeded/);
        },
        chat,
      );
      await run(
        1 << 30,
        async (client) => {
          for (let seq = 42; seq <= 80; seq++) expect((await send(client, chat, seq, 'same')).rejectionReason).toBeUndefined();
        },
        chat,
      );
      await run(
        1 << 30,
        async (client) => {
          const resent = await send(client, chat, 41, 'refused-then-resent');
          expect(resent.rejectionReason).toBeUndefined();
          const state = (await client.subscribe<{ queuedMessages?: Array<{ id: string }> }>(chat)).state;
          expect(state.queuedMessages?.map((m) => m.id).sort()).toEqual(['refused-then-resent', 'same']);
        },
        chat,
      );
    } finally {
      await server?.stop();
      dir.remove();
    }
  });
});
