/**
 * Issue 33.5f: keys a known action's schema does not name are kept (forward compatibility) but
 * were not bounded: a 1,000,000-character value under one was stored and echoed to every
 * subscriber. Over a real socket against a real hub: refused by name, echoed to its sender as
 * `{type}` only, never applied; a small unknown field still passes through.
 */
import { describe, expect, it } from 'vitest';
import { JsonBounds } from '../../shared/protocol/json-bounds.js';
import { parseAction } from '../../shared/protocol/actions.js';
import { hubPerTest, TOKENS } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';

type ChatView = { queuedMessages?: Array<{ id: string } & Record<string, unknown>> };
const queued = (id: string, extra: Record<string, unknown>) => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: userMessage(id), ...extra });

describe('unknown fields of an action are bounded (issue 33.5f)', () => {
  const hubs = hubPerTest();

  it('a 1,000,000-character value under an unknown key is refused and never stored or echoed; a small one passes', async () => {
    await hubs.start({ withAuth: true });
    const alice = await hubs.open(TOKENS.alice);
    const { chat } = await alice.createSession('unknown fields');
    await alice.subscribe(chat);
    const bob = await hubs.open(TOKENS.bob);
    await bob.subscribe(chat);

    const huge = await alice.dispatchAndWait(chat, queued('huge', { 'x-future': 'z'.repeat(1_000_000) }));
    expect(huge.rejectionReason).toMatch(/fields this hub does not know take \d+ JSON characters; at most 16384/);
    expect(JSON.stringify(huge).length).toBeLessThan(2_000);
    const small = await alice.dispatchAndWait(chat, queued('small', { 'x-future': 'kept' }));
    expect(small.rejectionReason).toBeUndefined();

    const state = (await bob.subscribe<ChatView>(chat)).state;
    expect(state.queuedMessages?.map((m) => m.id)).toEqual(['small']);
    expect(bob.envelopes.some((e) => JSON.stringify(e).length > 100_000)).toBe(false);
  });

  it('the bound counts every unknown top-level field together, exactly at the limit', () => {
    const base = queued('edge', {});
    const overhead = 'x-a'.length + 2; // key plus the value's quotes
    const atLimit = parseAction({ ...base, 'x-a': 'q'.repeat(JsonBounds.maxUnknownFieldChars - overhead) });
    expect(atLimit.ok).toBe(true);
    const split = parseAction({ ...base, 'x-a': 'q'.repeat(JsonBounds.maxUnknownFieldChars / 2), 'x-b': 'q'.repeat(JsonBounds.maxUnknownFieldChars / 2) });
    expect(split).toMatchObject({ ok: false, code: 'unknown_fields_too_large' });
  });
});
