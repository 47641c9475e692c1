/**
 * One encoding per commit: the JSON text of a dispatched action is built once and reused by the
 * channel size budget, the log record (record codec) and the envelope every subscriber gets.
 * A spy on JSON.stringify counts every call that serialises the action, alone or inside an
 * envelope or record.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { FakeConnection } from '../helpers/fake-connection.js';

const MARK = 'encode-once-marker';

/** True when `value` is the marked action, or an object holding it as a direct field. */
function carriesMarkedAction(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const isMarked = (v: unknown): boolean => typeof v === 'object' && v !== null && (v as { content?: unknown }).content === MARK;
  return isMarked(value) || Object.values(value).some(isMarked);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('one encoding per commit', () => {
  it('serialises a dispatched delta exactly once for budget, log record and envelopes to every receiver', async () => {
    let n = 0;
    const log = new MemoryActionLog();
    const hub = await Hub.open({ log, logger: silentLogger, now: () => 1_000, newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'R' }], defaultProvider: 'remote' });
    const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/s' });
    const agent = new FakeConnection('agent');
    const observers = [new FakeConnection('o1'), new FakeConnection('o2')];
    hub.subscribe(agent, DEV_PRINCIPAL, chat);
    for (const o of observers) hub.subscribe(o, DEV_PRINCIPAL, chat);
    const client = { conn: agent, principal: DEV_PRINCIPAL, clientId: 'agent' };
    hub.dispatchFromClient(client, chat, 1, { type: 'chat/turnStarted', turnId: 't1', startedAt: '1970-01-01T00:00:00.000Z', message: { text: 'go', origin: { kind: 'user' } } } as { type: string });
    hub.dispatchFromClient(client, chat, 2, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: '' } } as { type: string });
    await hub.drain();

    const stringify = vi.spyOn(JSON, 'stringify');
    hub.dispatchFromClient(client, chat, 3, { type: 'chat/delta', turnId: 't1', partId: 'p1', content: MARK } as { type: string });
    await hub.drain();
    const calls = stringify.mock.calls.filter(([value]) => carriesMarkedAction(value));
    stringify.mockRestore();

    expect(calls).toHaveLength(1);
    // …and it really went everywhere: the log holds it, every subscriber got it.
    const stored = await log.read(0, Number.POSITIVE_INFINITY);
    expect(stored.some((r) => (r.action as { content?: string }).content === MARK)).toBe(true);
    for (const c of [agent, ...observers]) expect(c.envelopes().some((e) => (e.action as { content?: string }).content === MARK)).toBe(true);
    await hub.close();
  });
});
