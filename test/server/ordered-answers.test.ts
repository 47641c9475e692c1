import { describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { registerAhpMethods } from '../../server/ahp/ahp-methods.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { Hub } from '../../server/hub/hub.js';
import { RpcRouter, type RpcContext } from '../../server/ahp/rpc.js';
import { silentLogger } from '../../server/log.js';
import type { AppendResult, LogRecord } from '../../server/storage/action-log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { waitFor } from '../helpers/wait-for.js';

/** A log whose appends wait until the test releases them: the window between sequencing and durability. */
class GatedLog extends MemoryActionLog {
  gated = false;
  #waiting: Array<() => void> = [];
  override async append(expectedHead: number, records: readonly LogRecord[]): Promise<AppendResult> {
    if (this.gated) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    return super.append(expectedHead, records);
  }
  release(): void {
    this.gated = false;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}

/**
 * A hub on a gated log with a JSON-RPC router and two initialized connections: `writer` and
 * `other` (named `otherId`), plus the default chat of a new session `sessionUri`.
 */
async function gatedHub(otherId: string, sessionUri: string) {
  const log = new GatedLog();
  let n = 0;
  const hub = await Hub.open({ log, logger: silentLogger, now: () => 5, newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'R' }], defaultProvider: 'remote' });
  const router = new RpcRouter(
    silentLogger,
    () => 0,
    undefined,
    undefined,
    (conn, text) => hub.sendInOrder(conn, text),
  );
  registerAhpMethods(router, hub);
  const ctx = (id: string): RpcContext => ({ conn: new FakeConnection(id), principal: DEV_PRINCIPAL, state: router.newConnectionState() });
  const writer = ctx('writer');
  const other = ctx(otherId);
  for (const c of [writer, other]) await router.handleFrame(c, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: c.conn.id } }));
  const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: sessionUri });
  return { log, hub, router, writer, other, chat };
}

describe('answers are ordered with durability', () => {
  it('holds a subscribe answer until the state it shows is durable, and never sends an action twice', async () => {
    const { log, hub, router, writer, other: reader, chat } = await gatedHub('reader', 'ahp-session:/gated');

    log.gated = true;
    await router.handleFrame(
      writer,
      JSON.stringify({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel: chat, clientSeq: 1, action: { type: 'chat/draftChanged', draft: { text: 'not yet durable', origin: { kind: 'user' } } } } }),
    );
    await router.handleFrame(reader, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params: { channel: chat } }));
    const readerConn = reader.conn as FakeConnection;
    // The action is applied in memory, but the answer that would show it waits for the log.
    await new Promise((resolve) => setImmediate(resolve));
    expect(readerConn.messages().filter((f) => f['id'] === 1)).toEqual([]);
    // Nor does the sender get its own echo: an echo means "durable", so it waits for the append too.
    const writerConn = writer.conn as FakeConnection;
    expect(writerConn.envelopes()).toEqual([]);

    log.release();
    const echo = await waitFor(() => writerConn.envelopes().find((e) => e.origin?.clientSeq === 1));
    expect(echo.rejectionReason).toBeUndefined();
    expect(echo.serverSeq).toBeLessThanOrEqual(await log.head());
    const answer = await waitFor(() => readerConn.messages().find((f) => f['id'] === 1));
    const snapshot = (answer['result'] as { snapshot: { state: { draft?: { text: string } }; fromSeq: number } }).snapshot;
    expect(snapshot.state.draft?.text).toBe('not yet durable');
    expect(snapshot.fromSeq).toBeLessThanOrEqual(await log.head());
    // The reader does not get the action again as an envelope: its snapshot already has it.
    await hub.drain();
    expect(readerConn.envelopes()).toEqual([]);
  });

  it('answers held back for durability count against the unsent limit: a client asking for big snapshots faster than the log commits is closed (4008)', async () => {
    const { log, hub, router, writer, other: greedy, chat } = await gatedHub('greedy', 'ahp-session:/big');
    for (let i = 0; i < 10; i++) {
      await router.handleFrame(
        writer,
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'dispatchAction',
          params: { channel: chat, clientSeq: i + 1, action: { type: 'chat/pendingMessageSet', kind: 'queued', id: `q${i}`, message: { text: 'x'.repeat(99_000), origin: { kind: 'user' } } } },
        }),
      );
    }
    await hub.drain();

    // While the log holds an append, every answer waits in the hub: ~1 MB each.
    log.gated = true;
    await router.handleFrame(writer, JSON.stringify({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel: chat, clientSeq: 99, action: { type: 'chat/draftChanged' } } }));
    await new Promise((resolve) => setImmediate(resolve));
    for (let i = 1; i <= 20; i++) await router.handleFrame(greedy, JSON.stringify({ jsonrpc: '2.0', id: i, method: 'subscribe', params: { channel: chat } }));
    const greedyConn = greedy.conn as FakeConnection;
    expect(greedyConn.closed).toEqual({ code: 4008, reason: expect.stringMatching(/slow consumer/) });
    log.release();
    await hub.drain();
    // It was cut off after about 4 MiB of answers, not 20 MB.
    expect(greedyConn.messages().filter((m) => typeof m['id'] === 'number' && m['id'] > 0).length).toBeLessThanOrEqual(6);
  });
});
