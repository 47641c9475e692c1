/**
 * The start guard (issue 18.1): a log that replays into more state than the hub may load is
 * refused with StateTooLargeToLoadError, measured channel by channel, never as one string.
 */
import { describe, expect, it } from 'vitest';
import { recoverFromLog } from '../../server/hub/recovery.js';
import { CATALOGUE_CHANNEL, CatalogueAction } from '../../server/hub/catalogue.js';
import { StateTooLargeToLoadError } from '../../server/hub/load-guard.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import type { LogRecord } from '../../server/storage/action-log.js';

/** A log with no snapshot: one session and chat, then `messages` queued messages of 10,000 characters. */
async function logWith(messages: number): Promise<MemoryActionLog> {
  const log = new MemoryActionLog();
  const at = '2026-01-01T00:00:00.000Z';
  const records: Array<Omit<LogRecord, 'serverSeq'>> = [
    { channel: CATALOGUE_CHANNEL, action: { type: CatalogueAction.SessionCreated, session: 'ahp-session:/s', tenant: 't', owner: 'alice', provider: 'demo', title: 's', createdAt: at } },
    { channel: CATALOGUE_CHANNEL, action: { type: CatalogueAction.ChatCreated, chat: 'ahp-chat:/c', session: 'ahp-session:/s', title: 'c', createdAt: at } },
  ];
  for (let i = 0; i < messages; i++) {
    records.push({ channel: 'ahp-chat:/c', action: { type: 'chat/pendingMessageSet', kind: 'queued', id: `m${i}`, message: { text: 'x'.repeat(10_000) } } });
  }
  const result = await log.append(
    0,
    records.map((r, i) => ({ ...r, serverSeq: i + 1 })),
  );
  expect(result.ok).toBe(true);
  return log;
}

describe('load guard', () => {
  it('refuses a replay whose state passes the bound, and loads the same log with room', async () => {
    const log = await logWith(50);
    const refused = await recoverFromLog(log, [], undefined, undefined, 200_000).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StateTooLargeToLoadError);
    expect((refused as StateTooLargeToLoadError).heldChars).toBeGreaterThan(200_000);
    const loaded = await recoverFromLog(log, [], undefined, undefined, 1_000_000);
    expect(loaded.state.chats.get('ahp-chat:/c')?.state.queuedMessages).toHaveLength(50);
  });

  it('an estimate past the bound from actions that replace rather than grow is measured, not refused', async () => {
    const log = new MemoryActionLog();
    const seed = await logWith(1);
    const records = await seed.read(0, 10);
    // The same queued message re-set 100 times: 1 M characters of records, 10,000 of state.
    for (let i = 0; i < 100; i++) records.push({ ...records[2]!, serverSeq: records.length + 1 });
    expect((await log.append(0, records)).ok).toBe(true);
    const loaded = await recoverFromLog(log, [], undefined, undefined, 200_000);
    expect(loaded.state.chats.get('ahp-chat:/c')?.state.queuedMessages).toHaveLength(1);
  });
});
