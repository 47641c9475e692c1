/**
 * `parseAction` returns fresh objects (unknown keys kept), safe to store and echo, on its fast path
 * for known types (which skips the `{type}` schema's copy, issue 32) as on the schema path.
 */
import { describe, expect, it } from 'vitest';
import { parseAction } from '../../shared/protocol/actions.js';

describe('parseAction', () => {
  it('returns a fresh copy of a known and an unknown action, unknown keys kept, and reads a legacy name', () => {
    const known = { type: 'chat/delta', turnId: 't1', partId: 'p1', content: 'hi', 'x-extra': { a: 1 } };
    const unknown = { type: 'x-vendor/thing', value: 1 };
    for (const raw of [known, unknown]) {
      const before = structuredClone(raw);
      const parsed = parseAction(raw);
      expect(parsed.ok).toBe(true);
      if (!parsed.ok) continue;
      expect(parsed.action).not.toBe(raw);
      expect(raw).toEqual(before);
    }
    const k = parseAction(known);
    expect(k.ok && k.action).toMatchObject({ type: 'chat/delta', content: 'hi', 'x-extra': { a: 1 } });
    // A legacy name is checked against its new name's schema.
    expect(parseAction({ type: 'session/stateReplaced', state: { title: 'x' } })).toMatchObject({ ok: false, message: expect.stringMatching(/^x-session\/stateReplaced: state\./) });
  });

  it('reads a top-level null as absent and still names what is wrong in a malformed action', () => {
    const withNull = parseAction({ type: 'chat/delta', turnId: 't1', partId: 'p1', content: 'hi', _meta: null });
    expect(withNull.ok && '_meta' in withNull.action).toBe(false);
    expect(parseAction({ type: 'chat/delta', turnId: 't1', partId: 'p1' })).toMatchObject({ ok: false, message: expect.stringMatching(/^chat\/delta: .*content/) });
    expect(parseAction({ type: '' })).toMatchObject({ ok: false, message: expect.stringMatching(/^action: /) });
    expect(parseAction([{ type: 'chat/delta' }])).toMatchObject({ ok: false, message: expect.stringMatching(/^action: /) });
  });
});
