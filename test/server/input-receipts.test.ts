/**
 * The steering receipt book as `HubState` folds it from log records (shared/state/input-receipts.ts):
 * the same records give the same book whether folded live, replayed, or continued from a snapshot
 * image; the epoch comes from the log; the book stays bounded and outside the AHP state.
 */
import { describe, expect, it } from 'vitest';
import type { LogRecord } from '../../server/storage/action-log.js';
import { CATALOGUE_CHANNEL, HubState } from '../../server/hub/catalogue.js';
import { initialRootState } from '../../shared/protocol/state.js';
import { epochFor, MAX_RECEIPTS_PER_TURN, receiptOf, steeringIdOf } from '../../shared/state/input-receipts.js';

const SESSION = 'ahp-session:/s1';
const CHAT = 'ahp-chat:/c1';
const T0 = Date.parse('2026-12-01T09:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const client = { clientId: 'c', clientSeq: 1 };

/** A log: session and chat created, the chat made the default. */
function baseLog(): LogRecord[] {
  const records: Array<Omit<LogRecord, 'serverSeq'>> = [
    { channel: CATALOGUE_CHANNEL, action: { type: 'hub/sessionCreated', session: SESSION, tenant: 't', owner: 'u', provider: 'remote', title: 's', createdAt: at(0) } },
    { channel: CATALOGUE_CHANNEL, action: { type: 'hub/chatCreated', chat: CHAT, session: SESSION, title: 'c', createdAt: at(0) } },
    { channel: SESSION, action: { type: 'session/defaultChatChanged', defaultChat: CHAT } },
  ];
  return records.map((r, i) => ({ ...r, serverSeq: i + 1 }));
}

function append(log: LogRecord[], channel: string, action: LogRecord['action'], origin?: LogRecord['origin']): void {
  log.push({ serverSeq: log.length + 1, channel, action, ...(origin && { origin }) });
}

function accept(log: LogRecord[], inputId: string, ordinal: number, turnId: string, epoch: string, s: number): void {
  const meta = { inputId, ordinal, historyEpoch: epoch, turnId, source: 'http', acceptedAt: at(s) };
  append(log, CHAT, { type: 'chat/steeringMessageSet', steeringMessage: { id: steeringIdOf(inputId), message: { text: `text ${inputId}`, origin: { kind: 'user' }, _meta: { 'hub/userInput': meta } } } });
}

function fold(log: readonly LogRecord[]): HubState {
  const s = new HubState(initialRootState([]));
  for (const r of log) s.applyRecord(r);
  return s;
}

/** A log with receipts in every state: turn t1 ended (a consumed, b closed), turn t2 running (c accepted, d cancelled). */
function busyLog(): LogRecord[] {
  const log = baseLog();
  const epoch = epochFor(SESSION, 0);
  append(log, CHAT, { type: 'chat/turnStarted', turnId: 't1', startedAt: at(1), message: { text: 'go', origin: { kind: 'user' } } }, client);
  accept(log, 'a', 1, 't1', epoch, 2);
  accept(log, 'b', 2, 't1', epoch, 3);
  const consumedMessage = { text: 'text a', origin: { kind: 'user' }, _meta: { 'hub/userInput': { inputId: 'a', ordinal: 1, historyEpoch: epoch, turnId: 't1', consumedAt: at(4) } } };
  append(log, CHAT, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'userMessage', id: 'u-a', message: consumedMessage } });
  append(log, CHAT, { type: 'chat/turnComplete', turnId: 't1', duration: 9_000 }, client);
  append(log, CHAT, { type: 'chat/turnStarted', turnId: 't2', startedAt: at(20), message: { text: 'again', origin: { kind: 'user' } } }, client);
  accept(log, 'c', 1, 't2', epoch, 21);
  accept(log, 'd', 2, 't2', epoch, 22);
  append(log, CHAT, { type: 'chat/steeringMessageRemoved', id: steeringIdOf('d') }, client);
  return log;
}

describe('steering receipts folded from the log', () => {
  it('gives every receipt its state, reason, revision and time from the records alone', () => {
    const book = fold(busyLog()).sessions.get(SESSION)!.inputs;
    const t1 = { historyEpoch: epochFor(SESSION, 0), turnId: 't1' };
    const t2 = { ...t1, turnId: 't2' };
    expect(receiptOf(book, 'a', t1)).toMatchObject({ state: 'consumed', revision: 2, acceptedAt: at(2), updatedAt: at(4), durability: 'log' });
    // Closed when the turn completed: turn start (1 s) + its duration (9 s).
    expect(receiptOf(book, 'b', t1)).toMatchObject({ state: 'closed', reason: 'turn_completed', revision: 2, updatedAt: at(10) });
    expect(receiptOf(book, 'c', t2)).toMatchObject({ state: 'accepted', revision: 1, ordinal: 1 });
    expect(receiptOf(book, 'd', t2)).toMatchObject({ state: 'cancelled', reason: 'removed_by_client', revision: 2 });
  });

  it('a snapshot image taken anywhere and continued gives exactly the book of the whole replay, and the state has no receipt in it', () => {
    const log = busyLog();
    const whole = fold(log);
    for (let cut = 0; cut <= log.length; cut++) {
      const restored = HubState.fromImage(JSON.parse(JSON.stringify(fold(log.slice(0, cut)).toImage())));
      for (const r of log.slice(cut)) restored.applyRecord(r);
      expect(restored.sessions.get(SESSION)!.inputs, `snapshot after record ${cut}`).toEqual(whole.sessions.get(SESSION)!.inputs);
    }
    expect(JSON.stringify(whole.sessions.get(SESSION)!.state)).not.toContain('inputs');
  });

  it('ignores a look-alike steering message a client dispatched, and changes the epoch only when the default chat is truncated', () => {
    const log = baseLog();
    append(log, CHAT, { type: 'chat/turnStarted', turnId: 't1', startedAt: at(1), message: { text: 'go', origin: { kind: 'user' } } }, client);
    const meta = { inputId: 'fake', ordinal: 1, historyEpoch: epochFor(SESSION, 0), turnId: 't1', source: 'http', acceptedAt: at(2) };
    append(log, CHAT, { type: 'chat/steeringMessageSet', steeringMessage: { id: steeringIdOf('fake'), message: { text: 'x', origin: { kind: 'user' }, _meta: { 'hub/userInput': meta } } } }, client);
    expect(receiptOf(fold(log).sessions.get(SESSION)!.inputs, 'fake', { historyEpoch: meta.historyEpoch, turnId: 't1' })).toBeUndefined();
    append(log, CHAT, { type: 'chat/truncated' }, client);
    const truncatedAt = log.length;
    expect(fold(log).sessions.get(SESSION)!.inputs!.historyEpoch).toBe(epochFor(SESSION, truncatedAt));
    expect(epochFor(SESSION, truncatedAt)).not.toBe(epochFor(SESSION, 0));
  });

  it('keeps the current and the last ended turn only, and at most MAX_RECEIPTS_PER_TURN receipts in a turn', () => {
    const log = baseLog();
    const epoch = epochFor(SESSION, 0);
    for (let turn = 1; turn <= 3; turn++) {
      append(log, CHAT, { type: 'chat/turnStarted', turnId: `t${turn}`, startedAt: at(turn * 10), message: { text: 'go', origin: { kind: 'user' } } }, client);
      accept(log, `in-${turn}`, 1, `t${turn}`, epoch, turn * 10 + 1);
      if (turn < 3) append(log, CHAT, { type: 'chat/turnComplete', turnId: `t${turn}`, duration: 1 }, client);
    }
    for (let i = 2; i <= MAX_RECEIPTS_PER_TURN + 5; i++) accept(log, `many-${i}`, Math.min(i, MAX_RECEIPTS_PER_TURN + 1), 't3', epoch, 40);
    const book = fold(log).sessions.get(SESSION)!.inputs!;
    expect([book.lastEnded?.turnId, book.current?.turnId]).toEqual(['t2', 't3']);
    expect(receiptOf(book, 'in-1', { historyEpoch: epoch, turnId: 't1' })).toBeUndefined();
    expect(book.current!.entries.length).toBeLessThanOrEqual(MAX_RECEIPTS_PER_TURN);
  });
});
