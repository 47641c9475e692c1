/** The action a dashboard approval sends: the chat view's, with the agent's once-option, never an "always". */
import { describe, expect, it } from 'vitest';
import { confirmationAction } from '../../app/permission-options.js';
import type { PendingConfirmationToolCall } from '../../shared/protocol/state.js';

const acp = (id: string, label: string, kind: string) => ({ id, label, kind: kind.startsWith('allow') ? 'approve' : 'deny', _meta: { 'acp/optionKind': kind } });
const tool = (options?: unknown[]): PendingConfirmationToolCall => ({ toolCallId: 't1', toolName: 'execute', displayName: 'touch a', status: 'pending-confirmation', ...(options && { options }) }) as unknown as PendingConfirmationToolCall;

describe('confirmationAction', () => {
  it("picks the agent's once-options (Qwen lists its standing grants first), marked as sent from the app", () => {
    const qwen = tool([acp('proceed_always_project', 'Always Allow in project', 'allow_always'), acp('proceed_once', 'Allow', 'allow_once'), acp('cancel', 'Reject', 'reject_once')]);
    expect(confirmationAction('turn-1', qwen, true)).toEqual({
      type: 'chat/toolCallConfirmed',
      turnId: 'turn-1',
      toolCallId: 't1',
      approved: true,
      confirmed: 'user-action',
      selectedOptionId: 'proceed_once',
      _meta: { 'hub/client': 'app' },
    });
    expect(confirmationAction('turn-1', qwen, false)).toMatchObject({ approved: false, reason: 'denied', selectedOptionId: 'cancel' });
  });

  it('sends no option for a tool without options, and never an "always" one when the agent offered only standing grants of that kind', () => {
    expect(confirmationAction('turn-1', tool(), true)).not.toHaveProperty('selectedOptionId');
    // Approving without a chosen option would answer the agent with its "always" option: refused.
    const onlyStanding = tool([acp('always', 'Always', 'allow_always'), acp('no', 'No', 'reject_once')]);
    expect(confirmationAction('turn-1', onlyStanding, true)).toBeUndefined();
    expect(confirmationAction('turn-1', onlyStanding, false)).toMatchObject({ selectedOptionId: 'no' });
  });
});
