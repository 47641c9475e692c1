/**
 * The session reducer's remembered "always" choices for tools: `x-session/toolApprovalRemembered`
 * (`_meta['hub/approvedTools']`) and `x-session/toolDenialRemembered` (`_meta['hub/deniedTools']`).
 * The two lists exclude each other: the latest choice for a tool wins.
 */
import { describe, expect, it } from 'vitest';
import { isSessionActionType, parseAction } from '../../shared/protocol/actions.js';
import { initialSessionState, type SessionState } from '../../shared/protocol/state.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { agentGrants, APPROVED_TOOLS_META, DENIED_TOOLS_META, rememberedChoiceBy, rememberedTools, TOOL_CHOICE_BY_META } from '../../shared/state/selectors.js';

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}

const session = (meta?: Record<string, unknown>): SessionState => deepFreeze({ ...initialSessionState('ahp-session:/s1', 'demo', 'Session'), ...(meta ? { _meta: meta } : {}) });
const deny = (toolName: string) => ({ type: 'x-session/toolDenialRemembered', toolName });
const approve = (toolName: string) => ({ type: 'x-session/toolApprovalRemembered', toolName });

describe('sessionReducer: remembered tool denials', () => {
  it('x-session/toolDenialRemembered is a known session action with a validated tool name', () => {
    expect(isSessionActionType('x-session/toolDenialRemembered')).toBe(true);
    expect(parseAction(deny('write_file'))).toMatchObject({ ok: true, action: deny('write_file') });
    expect(parseAction(deny('')).ok).toBe(false);
    expect(parseAction({ type: 'x-session/toolDenialRemembered' }).ok).toBe(false);
  });

  it('adds the tool to _meta["hub/deniedTools"] and keeps other _meta keys', () => {
    const state = session({ other: 1 });
    const next = sessionReducer(state, deny('write_file'));
    expect(next._meta).toEqual({ other: 1, 'hub/deniedTools': ['write_file'] });
    expect(state._meta).toEqual({ other: 1 });
    expect(sessionReducer(next, deny('delete_file'))._meta?.['hub/deniedTools']).toEqual(['write_file', 'delete_file']);
  });

  it('is deduplicated: denying a denied tool again returns the same state', () => {
    const once = sessionReducer(session(), deny('write_file'));
    expect(sessionReducer(once, deny('write_file'))).toBe(once);
  });

  it('is bounded: beyond 256 tools the oldest denials are forgotten', () => {
    let state = session();
    for (let i = 0; i < 300; i++) state = sessionReducer(state, deny(`tool-${i}`));
    const denied = state._meta?.['hub/deniedTools'] as string[];
    expect(denied).toHaveLength(256);
    expect(denied[0]).toBe('tool-44');
    expect(denied.at(-1)).toBe('tool-299');
  });

  it('an approval clears the denial, and a denial clears the approval (the latest choice wins)', () => {
    const denied = sessionReducer(session(), deny('write_file'));
    const approved = sessionReducer(denied, approve('write_file'));
    expect(approved._meta).toEqual({ 'hub/approvedTools': ['write_file'] });
    const deniedAgain = sessionReducer(approved, deny('write_file'));
    expect(deniedAgain._meta).toEqual({ 'hub/deniedTools': ['write_file'] });

    // Only that tool moves; the other list keeps its other entries.
    const mixed = session({ 'hub/approvedTools': ['read_file', 'write_file'], 'hub/deniedTools': ['rm'] });
    expect(sessionReducer(mixed, deny('write_file'))._meta).toEqual({ 'hub/approvedTools': ['read_file'], 'hub/deniedTools': ['rm', 'write_file'] });
    expect(sessionReducer(mixed, approve('rm'))._meta).toEqual({ 'hub/approvedTools': ['read_file', 'write_file', 'rm'] });
  });

  it('an approval of an approved, undenied tool is still a no-op', () => {
    const approved = sessionReducer(session(), approve('write_file'));
    expect(sessionReducer(approved, approve('write_file'))).toBe(approved);
  });
});

describe('sessionReducer: forgetting a remembered choice', () => {
  const forget = (toolName: string) => ({ type: 'x-session/toolChoiceForgotten', toolName });

  it('x-session/toolChoiceForgotten is a client-dispatchable session action with a validated tool name', () => {
    expect(isSessionActionType('x-session/toolChoiceForgotten')).toBe(true);
    expect(parseAction(forget('')).ok).toBe(false);
  });

  it('drops the tool from whichever list names it and removes an emptied list', () => {
    const state = session({ other: 1, 'hub/approvedTools': ['write_file', 'read_file'], 'hub/deniedTools': ['rm'] });
    expect(sessionReducer(state, forget('write_file'))._meta).toEqual({ other: 1, 'hub/approvedTools': ['read_file'], 'hub/deniedTools': ['rm'] });
    expect(sessionReducer(state, forget('rm'))._meta).toEqual({ other: 1, 'hub/approvedTools': ['write_file', 'read_file'] });
  });

  it('returns the same state for a tool it does not remember', () => {
    const state = session({ 'hub/approvedTools': ['write_file'] });
    expect(sessionReducer(state, forget('other'))).toBe(state);
  });
});

describe('sessionReducer: who made a remembered choice, and agent-kept grants', () => {
  const alice = { user: 'alice', surface: 'Qwen route', at: '2026-12-03T10:42:00.000Z' };
  const bob = { user: 'bob', surface: 'app', at: '2026-12-03T11:00:00.000Z' };
  const stamped = (action: { type: string; toolName: string }, by: typeof alice) => ({ ...action, _meta: { 'hub/answeredBy': by } });

  it('keeps the stamp of the latest choice per tool, and drops it when the choice is forgotten', () => {
    let s = sessionReducer(session(), stamped(approve('write_file'), alice));
    expect(rememberedChoiceBy(s, 'write_file')).toEqual(alice);
    s = sessionReducer(s, stamped(deny('write_file'), bob));
    expect([rememberedTools(s, DENIED_TOOLS_META), rememberedChoiceBy(s, 'write_file')]).toEqual([['write_file'], bob]);
    // A choice recorded without a stamp (an older log) shows no stale one.
    s = sessionReducer(s, approve('write_file'));
    expect(rememberedChoiceBy(s, 'write_file')).toBeUndefined();
    s = sessionReducer(sessionReducer(s, stamped(approve('write_file'), alice)), { type: 'x-session/toolChoiceForgotten', toolName: 'write_file' });
    expect(s._meta?.[TOOL_CHOICE_BY_META]).toBeUndefined();
  });

  it('records agent-kept grants with who chose them; the same tool and option again replaces the older entry', () => {
    const grant = (toolName: string, optionId: string, by: typeof alice) => ({ type: 'x-session/agentGrantRecorded', toolName, optionId, label: `Always Allow in project: ${toolName}`, _meta: { 'hub/answeredBy': by } });
    expect(isSessionActionType('x-session/agentGrantRecorded')).toBe(true);
    expect(parseAction({ type: 'x-session/agentGrantRecorded', toolName: 'x', optionId: '' }).ok).toBe(false);
    let s = sessionReducer(session(), grant('execute: touch a', 'proceed_always_project', alice));
    s = sessionReducer(s, grant('run_shell_command', 'proceed_always_user', alice));
    s = sessionReducer(s, grant('execute: touch a', 'proceed_always_project', bob));
    expect(agentGrants(s).map((g) => [g.toolName, g.optionId, g.by?.user])).toEqual([
      ['run_shell_command', 'proceed_always_user', 'alice'],
      ['execute: touch a', 'proceed_always_project', 'bob'],
    ]);
    // Agent-kept grants are not hub rules: nothing to approve, nothing the hub could forget.
    expect(rememberedTools(s, APPROVED_TOOLS_META)).toEqual([]);
  });
});
