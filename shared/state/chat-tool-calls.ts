/** Chat reducer transitions for tool calls (§3.4): each returns the next tool-call state, or undefined for a no-op. Pure, like `chatReducer`. */
import type {
  ToolCallAuthRequiredAction,
  ToolCallAuthResolvedAction,
  ToolCallCompleteAction,
  ToolCallConfirmedAction,
  ToolCallContentChangedAction,
  ToolCallDeltaAction,
  ToolCallReadyAction,
  ToolCallResultConfirmedAction,
  ToolCallStartAction,
} from '../protocol/actions.js';
import { type ActiveTurn, type ChatState, isPartOfKind, type ResponsePart, type ToolCallContributor, type ToolCallState } from '../protocol/state.js';
import { withField } from './collections.js';
import { replacePartAt, updateActiveTurn, withDerivedStatus, withResponseParts } from './chat-helpers.js';
import { appendPart, firstPositionOf, toolKey } from './part-index.js';

// ─── Tool calls (§3.4) ───────────────────────────────────────────────────────

function findToolCallIndex(turn: ActiveTurn, toolCallId: string): number {
  return firstPositionOf(turn.responseParts, toolKey(toolCallId));
}

export function toolCallStart(state: ChatState, action: ToolCallStartAction): ChatState {
  return updateActiveTurn(state, action.turnId, (turn) => {
    // Tool calls are addressed by id; a second start for the same id would make that ambiguous.
    if (findToolCallIndex(turn, action.toolCallId) !== -1) return turn;
    const toolCall: ToolCallState = {
      status: 'streaming',
      toolCallId: action.toolCallId,
      toolName: action.toolName,
      displayName: action.displayName,
      intention: action.intention,
      contributor: action.contributor,
      _meta: action._meta,
    };
    return { ...turn, responseParts: appendPart(turn.responseParts, { kind: 'toolCall', toolCall }) };
  });
}

interface ToolAction {
  readonly turnId: string;
  readonly toolCallId: string;
  readonly _meta?: Record<string, unknown> | undefined;
}

/**
 * Applies a tool-call transition in the active turn. `transition` returns undefined when the
 * call is not in a status the action applies to; wrong turn, unknown id or wrong status are
 * all no-ops. Status is recomputed because most transitions start or end a wait for the user.
 */
export function transitionToolCall<A extends ToolAction>(state: ChatState, action: A, transition: (toolCall: ToolCallState, action: A) => ToolCallState | undefined): ChatState {
  const next = updateActiveTurn(state, action.turnId, (turn) => {
    const index = findToolCallIndex(turn, action.toolCallId);
    return withResponseParts(
      turn,
      replacePartAt(turn.responseParts, index, (part) => {
        if (!isPartOfKind(part, 'toolCall')) return part;
        const toolCall = transition(part.toolCall, action);
        return toolCall ? { ...part, toolCall } : part;
      }),
    );
  });
  return next === state ? state : withDerivedStatus(next);
}

/** Identity and presentation fields every status carries; an action's `_meta` replaces the stored one. */
function toolBase(toolCall: ToolCallState, meta: Record<string, unknown> | undefined) {
  return {
    toolCallId: toolCall.toolCallId,
    toolName: toolCall.toolName,
    displayName: toolCall.displayName,
    intention: toolCall.intention,
    contributor: toolCall.contributor,
    _meta: meta ?? toolCall._meta,
  };
}

export function streamToolInput(toolCall: ToolCallState, action: ToolCallDeltaAction): ToolCallState | undefined {
  if (toolCall.status !== 'streaming') return undefined;
  return {
    ...toolCall,
    ...(action.content !== undefined && { partialInput: (toolCall.partialInput ?? '') + action.content }),
    invocationMessage: action.invocationMessage ?? toolCall.invocationMessage,
    _meta: action._meta ?? toolCall._meta,
  };
}

/**
 * Producers may refine the contributor late (e.g. name the MCP server), but client execution
 * ownership is fixed at `toolCallStart`: it is never granted, moved or revoked afterwards,
 * because only the owning client may complete the call.
 */
function refineContributor(current: ToolCallContributor | undefined, proposed: ToolCallContributor | undefined): ToolCallContributor | undefined {
  if (!proposed || current?.kind === 'client' || proposed.kind === 'client') return current;
  return proposed;
}

/**
 * `chat/toolCallReady`: from streaming, running (mid-run re-confirmation) or pending-confirmation
 * (an update that merges earlier prompt fields). `confirmed` → running, else → pending-confirmation.
 */
export function prepareToolCall(toolCall: ToolCallState, action: ToolCallReadyAction): ToolCallState | undefined {
  if (toolCall.status !== 'streaming' && toolCall.status !== 'running' && toolCall.status !== 'pending-confirmation') {
    return undefined;
  }
  const base = {
    ...toolBase(toolCall, action._meta),
    intention: action.intention ?? toolCall.intention,
    contributor: refineContributor(toolCall.contributor, action.contributor),
  };
  const toolInput = action.toolInput ?? (toolCall.status === 'streaming' ? undefined : toolCall.toolInput);
  if (action.confirmed !== undefined) {
    return { ...base, status: 'running', invocationMessage: action.invocationMessage, toolInput, confirmed: action.confirmed };
  }
  const earlierPrompt = toolCall.status === 'pending-confirmation' ? toolCall : undefined;
  return {
    ...base,
    status: 'pending-confirmation',
    invocationMessage: action.invocationMessage,
    toolInput,
    confirmationTitle: action.confirmationTitle ?? earlierPrompt?.confirmationTitle,
    riskAssessment: action.riskAssessment ?? earlierPrompt?.riskAssessment,
    edits: action.edits ?? earlierPrompt?.edits,
    editable: action.editable ?? earlierPrompt?.editable,
    options: action.options ?? earlierPrompt?.options,
  };
}

/** pending-confirmation → running (approved) or cancelled (denied). */
export function confirmToolCall(toolCall: ToolCallState, action: ToolCallConfirmedAction): ToolCallState | undefined {
  if (toolCall.status !== 'pending-confirmation') return undefined;
  const base = toolBase(toolCall, action._meta);
  const selectedOption = action.selectedOptionId === undefined ? undefined : toolCall.options?.find((option) => option.id === action.selectedOptionId);
  const chosen = selectedOption ? { selectedOption } : {};
  if (action.approved) {
    // Inline (string) input is replaced by the user's edit; referenced input is rewritten by the host.
    const toolInput = typeof toolCall.toolInput === 'object' ? toolCall.toolInput : (action.editedToolInput ?? toolCall.toolInput);
    return {
      ...base,
      status: 'running',
      invocationMessage: toolCall.invocationMessage,
      toolInput,
      confirmed: action.confirmed,
      ...chosen,
    };
  }
  return {
    ...base,
    status: 'cancelled',
    invocationMessage: toolCall.invocationMessage,
    toolInput: toolCall.toolInput,
    reason: action.reason,
    reasonMessage: action.reasonMessage,
    userSuggestion: action.userSuggestion,
    ...chosen,
  };
}

/**
 * running / pending-confirmation (`confirmed` defaults to `not-needed`) / auth-required → completed,
 * or pending-result-confirmation when requested. From auth-required only a *failed* result is
 * accepted (the user gave up signing in) and it never waits for result review: a success can only
 * follow `chat/toolCallAuthResolved`.
 */
export function completeToolCall(toolCall: ToolCallState, action: ToolCallCompleteAction): ToolCallState | undefined {
  const execution = executionFields(toolCall);
  if (!execution) return undefined;
  if (toolCall.status === 'auth-required' && action.result.success) return undefined;
  const { success, pastTenseMessage, content, structuredContent, error } = action.result;
  const fields = {
    ...toolBase(toolCall, action._meta),
    ...execution,
    success,
    pastTenseMessage,
    // Partial output streamed while running stays unless the result brings its own.
    content: content ?? execution.content,
    structuredContent,
    error,
  };
  const awaitsReview = action.requiresResultConfirmation === true && toolCall.status !== 'auth-required';
  return awaitsReview ? { ...fields, status: 'pending-result-confirmation' } : { ...fields, status: 'completed' };
}

/** What an executing (or about to execute) tool call carries into its result states. */
function executionFields(toolCall: ToolCallState) {
  switch (toolCall.status) {
    case 'pending-confirmation':
      return { invocationMessage: toolCall.invocationMessage, toolInput: toolCall.toolInput, confirmed: 'not-needed' as const };
    case 'running':
    case 'auth-required':
      return {
        invocationMessage: toolCall.invocationMessage,
        toolInput: toolCall.toolInput,
        confirmed: toolCall.confirmed,
        selectedOption: toolCall.selectedOption,
        content: toolCall.content,
      };
    case 'streaming':
    case 'pending-result-confirmation':
    case 'completed':
    case 'cancelled':
      return undefined;
  }
}

/** pending-result-confirmation → completed (approved) or cancelled `result-denied`. */
export function confirmToolResult(toolCall: ToolCallState, action: ToolCallResultConfirmedAction): ToolCallState | undefined {
  if (toolCall.status !== 'pending-result-confirmation') return undefined;
  if (action.approved) return { ...toolCall, status: 'completed', _meta: action._meta ?? toolCall._meta };
  return {
    ...toolBase(toolCall, action._meta),
    status: 'cancelled',
    invocationMessage: toolCall.invocationMessage,
    toolInput: toolCall.toolInput,
    reason: 'result-denied',
    ...(toolCall.selectedOption && { selectedOption: toolCall.selectedOption }),
  };
}

export function changeToolContent(toolCall: ToolCallState, action: ToolCallContentChangedAction): ToolCallState | undefined {
  if (toolCall.status !== 'running') return undefined;
  return { ...toolCall, content: action.content, _meta: action._meta ?? toolCall._meta };
}

/** running → auth-required, for MCP-contributed calls only (sign-in is an MCP step-up). */
export function requireToolAuth(toolCall: ToolCallState, action: ToolCallAuthRequiredAction): ToolCallState | undefined {
  if (toolCall.status !== 'running' || toolCall.contributor?.kind !== 'mcp') return undefined;
  return { ...toolCall, status: 'auth-required', auth: action.auth, _meta: action._meta ?? toolCall._meta };
}

/** auth-required → running, everything else preserved. */
export function resolveToolAuth(toolCall: ToolCallState, action: ToolCallAuthResolvedAction): ToolCallState | undefined {
  if (toolCall.status !== 'auth-required') return undefined;
  const running = withField(toolCall, 'auth', undefined);
  return { ...running, status: 'running', _meta: action._meta ?? toolCall._meta };
}

/** Turn end: every call not yet completed/cancelled becomes cancelled with reason `skipped`. */
export function cancelUnfinishedToolCall(part: ResponsePart): ResponsePart {
  if (!isPartOfKind(part, 'toolCall')) return part;
  const toolCall = part.toolCall;
  const base = { ...toolBase(toolCall, undefined), status: 'cancelled' as const, reason: 'skipped' as const };
  switch (toolCall.status) {
    case 'completed':
    case 'cancelled':
      return part;
    case 'streaming':
      return { ...part, toolCall: { ...base, invocationMessage: toolCall.invocationMessage ?? '' } };
    case 'pending-confirmation':
      return { ...part, toolCall: { ...base, invocationMessage: toolCall.invocationMessage, toolInput: toolCall.toolInput } };
    case 'running':
    case 'auth-required':
    case 'pending-result-confirmation':
      return {
        ...part,
        toolCall: {
          ...base,
          invocationMessage: toolCall.invocationMessage,
          toolInput: toolCall.toolInput,
          ...(toolCall.selectedOption && { selectedOption: toolCall.selectedOption }),
        },
      };
  }
}
