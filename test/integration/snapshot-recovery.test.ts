import { afterEach, describe, expect, it } from 'vitest';
import { SqliteActionLog } from '../../server/storage/sqlite-action-log.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, tempDir } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { tenantLogFile } from '../../server/storage/tenant-logs.js';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';

/** The dev tenant's log file in a data directory (dev mode has one tenant). */
const devLogFile = (dataDir: string): string => tenantLogFile(dataDir, DEV_PRINCIPAL.tenant);

describe('snapshots and compaction', () => {
  const dirs: Array<{ remove(): void }> = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) d.remove();
  });

  it('recovers the same state from a snapshot plus the log tail after the log was compacted', async () => {
    const data = tempDir();
    dirs.push(data);
    const limits = { snapshotEvery: 20, replayBufferSize: 10 };
    const first = await startTestServer({ dataDir: data.dir, limits });
    const client = await RpcClient.open(first.wsUrl);
    const sessions = [];
    for (let i = 0; i < 4; i++) sessions.push(await client.createSession(`s${i}`));
    for (const s of sessions) {
      await client.subscribe(s.chat);
      await startScriptTurn(client, s.chat, [{ say: `hello from ${s.session} with enough words to stream` }]);
    }
    for (const s of sessions) await client.waitForEnvelope((e) => e.channel === s.chat && e.action.type === 'chat/turnComplete');
    const before = await Promise.all(sessions.map((s) => client.subscribe(s.chat)));
    const listBefore = await client.request<{ items: unknown[] }>('listSessions', { channel: 'ahp-root://' });
    const seqBefore = first.hub.serverSeq;
    await client.close();
    await first.close();

    const log = SqliteActionLog.open({ file: devLogFile(data.dir) });
    const snapshot = await log.latestSnapshot();
    const oldest = await log.oldestSeq();
    await log.close();
    expect(snapshot?.serverSeq).toBe(seqBefore);
    expect(oldest).toBeGreaterThan(1);

    const second = await startTestServer({ dataDir: data.dir, limits });
    const again = await RpcClient.open(second.wsUrl);
    const after = await Promise.all(sessions.map((s) => again.subscribe(s.chat)));
    expect(after.map((a) => a.state)).toEqual(before.map((b) => b.state));
    expect((await again.request<{ items: unknown[] }>('listSessions', { channel: 'ahp-root://' })).items).toEqual(listBefore.items);
    expect(second.hub.serverSeq).toBe(seqBefore);
    await again.close();
    await second.close();
  });
});
