/**
 * A session's `status` moves only as the upstream session reducer moves it: through the
 * `inputNeeded` roll-up and the IsRead / IsArchived flags. The former hub action
 * `x-session/statusChanged` (still present in older logs) is now an unknown action: a no-op.
 */
import { describe, expect, it } from 'vitest';
import { isSessionActionType } from '../../shared/protocol/actions.js';
import { initialSessionState } from '../../shared/protocol/state.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';

const entry = { kind: 'chatInput' as const, id: 'ahp-chat:/c#q1', chat: 'ahp-chat:/c', request: { id: 'q1', message: 'Why?' } };

describe('session status follows the standard actions only', () => {
  it('InputNeeded with the first entry that awaits a person; only bit 16 cleared when the last goes; flags kept', () => {
    let s = initialSessionState('ahp-session:/s', 'demo', 'title', 'ready');
    expect(s.status).toBe(1);
    s = sessionReducer(s, { type: 'session/isReadChanged', isRead: true });
    s = sessionReducer(s, { type: 'session/inputNeededSet', request: entry });
    expect(s.status).toBe(32 + 24);
    s = sessionReducer(s, { type: 'session/inputNeededRemoved', id: entry.id });
    expect(s.status).toBe(32 + 8);
    expect(s.inputNeeded).toBeUndefined();
  });

  it('x-session/statusChanged from an older log is not a session action any more and changes nothing', () => {
    expect(isSessionActionType('x-session/statusChanged')).toBe(false);
    const s = initialSessionState('ahp-session:/s', 'demo', 'title', 'ready');
    expect(sessionReducer(s, { type: 'x-session/statusChanged', status: 2, activity: 'failing' } as { type: string })).toBe(s);
  });
});
