/**
 * Standing grants ("always" choices) chosen through the hub, as session actions. Two kinds:
 *
 * - **hub-kept**: the hub's own `proceed_always` / `reject_always` options. The hub remembers them
 *   (`x-session/toolApprovalRemembered` / `…DenialRemembered`) for the tool's precise identity
 *   and answers later confirmations of that identity itself; *Forget* clears them.
 * - **agent-kept**: one of the agent's own `allow_always` options (Qwen's "Always Allow in
 *   project: …"). The agent keeps that rule; the hub records it (`x-session/agentGrantRecorded`)
 *   only so people see who granted what, and cannot forget it.
 *
 * Both carry who chose it (`_meta["hub/answeredBy"]`, the stamp of the approval). Pure: the
 * registry dispatches what these build once the approval is durable.
 */
import type { KnownAction } from '../../shared/protocol/actions.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import { isPartOfKind, type ChatState, type ToolCallState } from '../../shared/protocol/state.js';
import { ANSWERED_BY_META, answeredByIn, type AnsweredBy } from '../../shared/state/answered-by.js';
import { findActiveToolCall, findEndedTurn, MAX_TOOL_IDENTITY, toolIdentity } from '../../shared/state/selectors.js';
import { ACP_OPTION_KIND } from '../acp-mapping/index.js';

/** The session action that records a hub-kept "always" choice for `identity`, stamped with who chose it. */
export function rememberedChoiceAction(choice: 'approval' | 'denial', identity: string, by: AnsweredBy | undefined): WireAction {
  const action: WireAction = { type: choice === 'approval' ? 'x-session/toolApprovalRemembered' : 'x-session/toolDenialRemembered', toolName: identity };
  if (by) action['_meta'] = { [ANSWERED_BY_META]: by };
  return action;
}

/** The tool call `toolCallId` of turn `turnId` as the chat holds it now (active or ended turn). */
export function toolCallOf(state: ChatState, turnId: string, toolCallId: string): ToolCallState | undefined {
  const active = state.activeTurn?.id === turnId ? findActiveToolCall(state, toolCallId) : undefined;
  if (active) return active;
  for (const part of findEndedTurn(state, turnId)?.responseParts ?? []) {
    if (isPartOfKind(part, 'toolCall') && part.toolCall.toolCallId === toolCallId) return part.toolCall;
  }
  return undefined;
}

/** Who approved or denied a tool call, from the hub's stamp on it. */
export function decisionStamp(tool: ToolCallState | undefined): AnsweredBy | undefined {
  return answeredByIn(tool?._meta);
}

/**
 * The `x-session/agentGrantRecorded` a committed approval causes: when `chat/toolCallConfirmed`
 * approved a tool with one of the agent's own `allow_always` options (any surface). Undefined
 * for every other action.
 */
export function agentGrantOf(known: KnownAction | undefined, state: ChatState): WireAction | undefined {
  if (known?.type !== 'chat/toolCallConfirmed' || known.approved !== true || known.selectedOptionId === undefined) return undefined;
  const tool = toolCallOf(state, known.turnId, known.toolCallId);
  const selected = tool && 'selectedOption' in tool ? (tool.selectedOption as { id: string; label: string; _meta?: Record<string, unknown> } | undefined) : undefined;
  if (!tool || !selected || selected._meta?.[ACP_OPTION_KIND] !== 'allow_always') return undefined;
  const identity = toolIdentity(tool) ?? `${tool.toolName}: ${tool.displayName}`.slice(0, MAX_TOOL_IDENTITY);
  const action: WireAction = { type: 'x-session/agentGrantRecorded', toolName: identity, optionId: selected.id, label: selected.label };
  const by = decisionStamp(tool);
  if (by) action['_meta'] = { [ANSWERED_BY_META]: by };
  return action;
}
