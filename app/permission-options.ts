/**
 * How a tool's confirmation options are laid out: once-choices first and primary, standing
 * grants ("always" options, which outlive this one request) set apart in their own secondary
 * group and labelled with their scope, so one click on what looks like "Allow" never grants a
 * standing rule. Pure: the view builds buttons from what this returns.
 */
import type { PendingConfirmationToolCall } from '../shared/protocol/state.js';
import { FROM_APP_META } from './format.js';

/** An AHP confirmation option as it arrives on a tool call (an ACP agent's kind in `_meta`). */
export interface ToolOption {
  readonly id: string;
  readonly label: string;
  readonly kind: 'approve' | 'deny';
  readonly _meta?: Record<string, unknown>;
}

export interface ArrangedOption {
  readonly option: ToolOption;
  /** What the button says: the agent's label for once-choices, the scope for standing grants. */
  readonly text: string;
  /** The agent's own label, when `text` is a rewording of it (shown as the button's title). */
  readonly agentLabel?: string;
}

export interface ArrangedOptions {
  /** Decide this request only: approvals first, then denials, in the agent's order. */
  readonly once: ArrangedOption[];
  /** Standing grants the agent keeps once chosen (its `allow_always` / `reject_always`). */
  readonly always: ArrangedOption[];
}

const ACP_OPTION_KIND = 'acp/optionKind';

/** True for an option that grants or refuses a standing rule rather than this one request. */
export function isStandingOption(option: ToolOption): boolean {
  const kind = option._meta?.[ACP_OPTION_KIND];
  return kind === 'allow_always' || kind === 'reject_always';
}

/**
 * The scope an "always" option names, in words: "Always allow in this project", "Always allow
 * for this user", "Always deny …"; what the agent added after a colon (the command or tool) is
 * kept. An option naming no scope reads "Always allow (kept by the agent)".
 */
export function scopedLabel(option: ToolOption): string {
  const verb = option._meta?.[ACP_OPTION_KIND] === 'reject_always' ? 'Always deny' : 'Always allow';
  const words = `${option.id} ${option.label}`.toLowerCase();
  const scope = /project/.test(words) ? ' in this project' : /\buser\b|_user/.test(words) ? ' for this user' : /server/.test(words) ? ' for this server' : /session/.test(words) ? ' in this session' : '';
  const colon = option.label.indexOf(':');
  const detail = colon === -1 ? '' : option.label.slice(colon + 1).trim();
  return `${verb}${scope}${detail ? `: ${detail}` : ''}${scope ? '' : ' (kept by the agent)'}`;
}

/** Splits and orders a tool's options (see the file header). */
export function arrangeOptions(options: readonly ToolOption[]): ArrangedOptions {
  const once = options.filter((o) => !isStandingOption(o));
  const always = options.filter(isStandingOption);
  const approvalsFirst = (a: ToolOption, b: ToolOption): number => (a.kind === b.kind ? 0 : a.kind === 'approve' ? -1 : 1);
  return {
    once: [...once].sort(approvalsFirst).map((option) => ({ option, text: option.label })),
    always: [...always].sort(approvalsFirst).map((option) => ({ option, text: scopedLabel(option), agentLabel: option.label })),
  };
}

/**
 * The chat-view action for approving or denying `tool`: its own once-option when it has options.
 * Undefined when it has options but none of that once-kind (an agent offering only standing grants
 * to approve): without a chosen option the agent would be answered with its "always" option, which
 * a one-click "Approve once" must never grant.
 */
export function confirmationAction(turnId: string, tool: PendingConfirmationToolCall, approve: boolean): Record<string, unknown> | undefined {
  const scoped = { type: 'chat/toolCallConfirmed', turnId, toolCallId: tool.toolCallId };
  const options = ((tool as { options?: ToolOption[] }).options ?? []) as ToolOption[];
  const once = arrangeOptions(options).once.find((o) => o.option.kind === (approve ? 'approve' : 'deny'));
  if (!once && options.length > 0) return undefined;
  const chosen = once ? { selectedOptionId: once.option.id } : {};
  return approve ? { ...scoped, approved: true, confirmed: 'user-action', ...chosen, _meta: FROM_APP_META } : { ...scoped, approved: false, reason: 'denied', ...chosen, _meta: FROM_APP_META };
}
