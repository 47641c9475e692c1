/** How the app lays out a tool's confirmation options: once-choices first, standing grants apart with their scope. */
import { describe, expect, it } from 'vitest';
import { arrangeOptions, scopedLabel, type ToolOption } from '../../app/permission-options.js';

const acp = (id: string, label: string, kind: string): ToolOption => ({ id, label, kind: kind.startsWith('allow') ? 'approve' : 'deny', _meta: { 'acp/optionKind': kind } });

// Qwen Code's order: the standing grants come first and read like "Allow".
const QWEN = [
  acp('proceed_always_project', 'Always Allow in project: touch', 'allow_always'),
  acp('proceed_always_user', 'Always Allow for user: touch', 'allow_always'),
  acp('proceed_once', 'Allow', 'allow_once'),
  acp('cancel', 'Reject', 'reject_once'),
];

describe('arrangeOptions', () => {
  it("puts the once-choices first (approve before deny) and sets Qwen's always options apart, labelled by scope", () => {
    const { once, always } = arrangeOptions(QWEN);
    expect(once.map((o) => o.text)).toEqual(['Allow', 'Reject']);
    expect(always.map((o) => [o.option.id, o.text])).toEqual([
      ['proceed_always_project', 'Always allow in this project: touch'],
      ['proceed_always_user', 'Always allow for this user: touch'],
    ]);
    expect(always[0]!.agentLabel).toBe('Always Allow in project: touch');
  });

  it('keeps plain AHP options (no agent kind) as once-choices, and names an always option without a scope as kept by the agent', () => {
    const { once, always } = arrangeOptions([
      { id: 'deny', label: 'Never mind', kind: 'deny' },
      { id: 'approve', label: 'Go', kind: 'approve' },
    ]);
    expect([once.map((o) => o.option.id), always]).toEqual([['approve', 'deny'], []]);
    expect(scopedLabel(acp('always', 'Always allow', 'allow_always'))).toBe('Always allow (kept by the agent)');
    expect(scopedLabel(acp('never', 'Never for this session', 'reject_always'))).toBe('Always deny in this session');
  });
});
