/**
 * A cluster node that starts while other nodes keep appending must end up with the whole log.
 * The race the outside review hit (restarted nodes serving state without records the shared log
 * holds): recovery replayed the records, then read the head; a record appended in between was
 * counted as folded (the hub continued after the new head) but never applied, so that node's
 * state — and every snapshot it wrote — missed it for good. Here the other node's append lands
 * exactly in that window (the log handle appends it when the replay's last page has been read).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import type { LogRecord } from '../../server/storage/action-log.js';
import { PostgresStore } from '../../server/storage/postgres-store.js';
import type { PostgresActionLog } from '../../server/storage/postgres-action-log.js';
import { freshDatabase } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait-for.js';

const AGENTS = [{ provider: 'remote', displayName: 'R' }];
let n = 0;
const hubOn = (log: PostgresActionLog): Promise<Hub> => Hub.open({ log, logger: silentLogger, now: () => Date.parse('2026-12-01T00:00:00Z'), newId: () => `id-${++n}`, agents: AGENTS, defaultProvider: 'remote' });
const queued = (id: string) => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: { text: id, origin: { kind: 'user' } } }) as const;

describe('a node starting while others append', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  it('folds a record appended between its replay and its first write turn; its state holds every record', async () => {
    const db = await freshDatabase('catchup');
    const store = await PostgresStore.open({ url: db.url });
    cleanup.push(db.drop, () => store.close());
    const running = await hubOn(await store.actionLog('t'));
    cleanup.push(() => running.close());
    const chat = (await running.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/s' })).defaultChat;
    for (const id of ['a', 'b']) expect((await running.submitAs(DEV_PRINCIPAL, chat, queued(id))).ok).toBe(true);

    // The starting node's log handle: once the replay has read past the end, the running node
    // appends one more record before the starting node does anything else with the log.
    const starting = await store.actionLog('t');
    let raced = false;
    const originalRead = starting.read.bind(starting);
    starting.read = async (afterSeq: number, limit: number): Promise<LogRecord[]> => {
      const page = await originalRead(afterSeq, limit);
      if (!raced && page.length < limit) {
        raced = true;
        expect((await running.submitAs(DEV_PRINCIPAL, chat, queued('appended-during-replay'))).ok).toBe(true);
      }
      return page;
    };
    const restarted = await hubOn(starting);
    cleanup.push(() => restarted.close());
    expect(raced).toBe(true);

    const ids = (hub: Hub): string[] => ((hub.snapshot(DEV_PRINCIPAL, chat).state as { queuedMessages?: Array<{ id: string }> }).queuedMessages ?? []).map((m) => m.id);
    // It follows the log to the same state as the node that wrote it…
    await waitFor(() => (ids(restarted).includes('appended-during-replay') ? true : undefined), { what: 'the raced record on the starting node', timeoutMs: 5_000 });
    expect(ids(restarted)).toEqual(ids(running));
    // …and a write there is decided on (and sequenced after) the whole log.
    expect((await restarted.submitAs(DEV_PRINCIPAL, chat, queued('c'))).ok).toBe(true);
    expect(restarted.serverSeq).toBe(await starting.head());
    await waitFor(() => (ids(running).includes('c') ? true : undefined), { what: 'the running node to fold c' });
    expect(ids(restarted)).toEqual(ids(running));
  });
});
