/**
 * What a pending interaction is, and the pure mappings around it: the interaction built from an
 * open input request or a tool call waiting for confirmation, the AHP action a reply becomes, the
 * outcome read back from chat state, and how a turn stopped. No hub, no streams, no clock: the
 * registry (`registry.ts`) is the hub adapter that keeps the index and calls these.
 */
import type { WireAction } from '../../shared/protocol/messages.js';
import { isPartOfKind, type ChatInputQuestion, type ChatInputRequest, type ChatState, type ConfirmationOption, type PendingConfirmationToolCall, type ResponsePart, type ToolCallState } from '../../shared/protocol/state.js';
import { firstPositionOf, inputKey, lastPositionOf, toolKey } from '../../shared/state/part-index.js';
import { findEndedTurn, hasGenericToolName, isOpenInputRequest, isToolCallDecided, toolIdentity, turnResponseParts } from '../../shared/state/selectors.js';
import type { KnownAction } from '../../shared/protocol/actions.js';
import { ACP_OPTION_KIND, acpOptionKind, acpToolKind, isAcpOptionKind, permissionOutcome, qwenQuestion, rawInputOf, type PermissionOption, type PermissionOutcome } from '../acp-mapping/index.js';
import { mapIndexedAnswers } from './answers.js';
import type { TurnEnd } from './event-stream.js';

export const ASK_USER_QUESTION = 'ask_user_question';

export interface Interaction {
  readonly requestId: string;
  readonly session: string;
  readonly chat: string;
  readonly turnId: string;
  /** `input:<ahp request id>` or `tool:<toolCallId>`: its identity inside the chat. */
  readonly key: string;
  readonly kind: 'question' | 'permission';
  readonly inputRequestId?: string;
  questions: readonly ChatInputQuestion[];
  readonly toolCallId?: string;
  readonly toolName: string;
  /**
   * What an "always" choice of this tool is remembered for (`toolIdentity`: the agent's own tool
   * name, or kind plus command); undefined for questions and for tools not precise enough.
   */
  readonly identity?: string | undefined;
  readonly options: readonly PermissionOption[];
  /** ACP optionId → AHP confirmation option id, for tools that offered their own options. */
  readonly ahpOptions: ReadonlyMap<string, string>;
  /** The ACP `toolCall` announced in `permission_request`. */
  readonly toolCall: Record<string, unknown>;
  /** Set for the duration of a reply's commit so the resolution records the exact option chosen. */
  claimed?: PermissionOutcome | undefined;
  /** Its `permission_request` went out: the commit that opened it is durable. */
  announced?: boolean;
}

export type Lookup = { state: 'pending'; interaction: Interaction } | { state: 'resolved' } | { state: 'unknown' };

/** A validated reply, independent of its wire shape (DataWorks or Qwen). */
export interface Reply {
  readonly outcome: PermissionOutcome;
  /** Answers by canonical question index (already checked for key form and string values). */
  readonly answers?: Readonly<Record<string, string>> | undefined;
}

/** The kinds (shared/protocol/error-kinds.ts) a reply to a pending request can be refused with. */
export type ReplyErrorCode = 'invalid_option_id' | 'invalid_answer_key' | 'invalid_answer' | 'missing_required_answer' | 'answers_not_expected' | 'permission_denied' | 'reply_not_applied';

export type ReplyResult = { kind: 'accepted' } | { kind: 'notAccepted' } | { kind: 'error'; code: ReplyErrorCode; message: string };

/** The AHP client action a reply becomes, or a parameter error. */
export function replyAction(it: Interaction, reply: Reply, openPart: () => ChatInputRequest | undefined): { action: WireAction } | { code: ReplyErrorCode; message: string } {
  const answersGiven = reply.answers !== undefined && Object.keys(reply.answers).length > 0;
  if (reply.outcome.outcome === 'cancelled') {
    if (it.kind === 'question') return { action: { type: 'chat/inputCompleted', requestId: it.inputRequestId!, response: 'cancel' } };
    return {
      action: {
        type: 'chat/toolCallConfirmed',
        turnId: it.turnId,
        toolCallId: it.toolCallId!,
        approved: false,
        reason: 'skipped',
        reasonMessage: 'The permission request was cancelled.',
      },
    };
  }
  const optionId = reply.outcome.optionId;
  const option = offeredOption(it.options, optionId);
  if (!option) {
    return { code: 'invalid_option_id', message: `option "${optionId}" was not offered for this request; offered: ${it.options.map((o) => o.optionId).join(', ')}` };
  }
  const allow = option.kind === 'allow_once' || option.kind === 'allow_always';
  if (it.kind === 'permission') {
    if (answersGiven) return { code: 'answers_not_expected', message: 'Answers are only accepted for ask_user_question requests; omit them for a tool permission' };
    const ahpOption = it.ahpOptions.get(option.optionId);
    const action: WireAction = allow
      ? { type: 'chat/toolCallConfirmed', turnId: it.turnId, toolCallId: it.toolCallId!, approved: true, confirmed: 'user-action' }
      : { type: 'chat/toolCallConfirmed', turnId: it.turnId, toolCallId: it.toolCallId!, approved: false, reason: 'denied' };
    if (ahpOption !== undefined) action['selectedOptionId'] = ahpOption;
    return { action };
  }
  const mapped = mapIndexedAnswers(it.questions, reply.answers ?? {});
  if (!mapped.ok) return { code: mapped.code, message: mapped.message };
  if (allow) {
    const part = openPart();
    const merged = { ...(part?.answers ?? {}), ...mapped.answers };
    const missing = it.questions.findIndex((q) => q.required === true && (!Object.hasOwn(merged, q.id) || merged[q.id]?.state !== 'submitted'));
    if (missing !== -1) {
      return { code: 'missing_required_answer', message: `question ${missing} (${it.questions[missing]!.id}) is required: give Answers["${missing}"]` };
    }
  }
  const action: WireAction = { type: 'chat/inputCompleted', requestId: it.inputRequestId!, response: allow ? 'accept' : 'decline' };
  if (Object.keys(mapped.answers).length > 0) action['answers'] = mapped.answers;
  return { action };
}

export function questionInteraction(requestId: string, session: string, chat: string, turnId: string, key: string, request: ChatInputRequest): Interaction {
  const questions = request.questions ?? [];
  const qwenQuestions = questions.map(qwenQuestion);
  const rawInput: Record<string, unknown> = { questions: qwenQuestions };
  if (request.message !== undefined) rawInput['message'] = request.message;
  if (request.url !== undefined) rawInput['url'] = request.url;
  return {
    requestId,
    session,
    chat,
    turnId,
    key,
    kind: 'question',
    inputRequestId: request.id,
    questions,
    toolName: ASK_USER_QUESTION,
    options: [
      { optionId: 'proceed_once', name: 'Submit answers', kind: 'allow_once' },
      { optionId: 'decline', name: 'Decline', kind: 'reject_once' },
    ],
    ahpOptions: new Map(),
    toolCall: {
      toolCallId: request.id,
      title: request.message ?? 'Questions for you',
      kind: 'other',
      status: 'pending',
      toolName: ASK_USER_QUESTION,
      rawInput,
      _meta: { toolName: ASK_USER_QUESTION, qwenInteractionKind: 'user_question', qwenQuestions, 'hub/chat': chat, 'hub/turnId': turnId },
    },
  };
}

export function toolInteraction(requestId: string, session: string, chat: string, turnId: string, key: string, tool: PendingConfirmationToolCall): Interaction {
  const identity = toolIdentity(tool);
  const { options, ahpOptions } = toolOptions(tool.options, hubMayOfferAlways(tool, identity));
  const toolCall: Record<string, unknown> = {
    toolCallId: tool.toolCallId,
    title: tool.confirmationTitle ?? tool.displayName,
    kind: acpToolKind(tool.toolName),
    status: 'pending',
    toolName: tool.toolName,
    _meta: { toolName: tool.toolName, 'hub/chat': chat, 'hub/turnId': turnId },
  };
  if (tool.toolInput !== undefined) toolCall['rawInput'] = rawInputOf(tool.toolInput);
  if (tool.invocationMessage) toolCall['content'] = [{ type: 'content', content: { type: 'text', text: tool.invocationMessage } }];
  return {
    requestId,
    session,
    chat,
    turnId,
    key,
    kind: 'permission',
    questions: [],
    toolCallId: tool.toolCallId,
    toolName: tool.toolName,
    identity,
    options,
    ahpOptions,
    toolCall,
  };
}

/** What an open interaction is made from: its input request or its tool call waiting for confirmation. */
export interface Wanted {
  readonly input?: ChatInputRequest;
  readonly tool?: PendingConfirmationToolCall;
}

/** The open interaction `key` (`input:<id>` / `tool:<id>`) among a turn's parts, newest first. */
export function wantedOf(parts: readonly ResponsePart[], key: string): Wanted | undefined {
  const id = key.slice(key.indexOf(':') + 1);
  const tool = key.startsWith('tool:');
  const part = parts[lastPositionOf(parts, tool ? toolKey(id) : inputKey(id))];
  if (part && isPartOfKind(part, 'toolCall')) return part.toolCall.status === 'pending-confirmation' ? { tool: part.toolCall } : undefined;
  if (part && isOpenInputRequest(part)) return { input: part.request };
  return undefined;
}

/**
 * Whether the hub may add its own "always" options (`proceed_always`, `reject_always`) for a tool:
 * only when it can remember the choice for a precise identity, and never for a tool known only by
 * its kind (`execute`) whose agent offered only once-choices: an "always" there would approve
 * every later command of that kind, which the agent itself did not offer.
 */
export function hubMayOfferAlways(tool: PendingConfirmationToolCall, identity: string | undefined): boolean {
  if (identity === undefined) return false;
  const relayed = (tool.options ?? []).some((o) => isAcpOptionKind((o as { _meta?: Record<string, unknown> })._meta?.[ACP_OPTION_KIND]));
  return !(relayed && hasGenericToolName(tool));
}

/**
 * ACP options for a tool. AHP options (`approve`/`deny`) keep their ids and labels and map to
 * `allow_once` / `reject_once` (or the agent's own kind); `allow_once` / `reject_once` are added
 * when the tool brought none of that kind (and no ACP agent relayed its own options), and with
 * `offerAlways` also `allow_always` and
 * `reject_always` (hub-kept), with ids that do not collide with the tool's own.
 */
export function toolOptions(ahp: readonly ConfirmationOption[] | undefined, offerAlways = true): { options: PermissionOption[]; ahpOptions: Map<string, string> } {
  const options: PermissionOption[] = [];
  const ahpOptions = new Map<string, string>();
  for (const o of ahp ?? []) {
    // An option relayed from an ACP agent keeps the agent's own kind (allow_always…).
    options.push({ optionId: o.id, name: o.label, kind: acpOptionKind(o) });
    ahpOptions.set(o.id, o.id);
  }
  const taken = new Set(options.map((o) => o.optionId));
  const add = (id: string, name: string, kind: PermissionOption['kind']): void => {
    let optionId = id;
    for (let i = 2; taken.has(optionId); i++) optionId = `${id}_${i}`;
    taken.add(optionId);
    options.push({ optionId, name, kind });
  };
  const has = (kind: PermissionOption['kind']): boolean => options.some((o) => o.kind === kind);
  // An ACP agent's own options are all it accepts: a hub "Allow" beside an agent that offered no
  // allow_once would reach it as its allow_always (`permissionOutcome`), a standing grant nobody chose.
  const relayed = (ahp ?? []).some((o) => isAcpOptionKind((o as { _meta?: Record<string, unknown> })._meta?.[ACP_OPTION_KIND]));
  if (!has('allow_once') && !relayed) add('proceed_once', 'Allow', 'allow_once');
  if (offerAlways && !has('allow_always')) add('proceed_always', 'Always allow this tool in this session', 'allow_always');
  if (!has('reject_once') && !relayed) add('reject_once', 'Reject', 'reject_once');
  if (offerAlways && !has('reject_always')) add('reject_always', 'Always deny this tool in this session', 'reject_always');
  return { options, ahpOptions };
}

/** How an interaction ended, read from the chat state after it stopped being pending. */
export function deriveOutcome(it: Interaction, state: ChatState): PermissionOutcome {
  const parts = turnResponseParts(state, it.turnId);
  if (it.kind === 'question') {
    // A question always offers both (`questionInteraction`).
    const allowOnce = it.options.find((o) => o.kind === 'allow_once')!.optionId;
    const rejectOnce = it.options.find((o) => o.kind === 'reject_once')!.optionId;
    const part = it.inputRequestId === undefined ? undefined : parts[firstPositionOf(parts, inputKey(it.inputRequestId))];
    const response = part && isPartOfKind(part, 'inputRequest') ? part.response : undefined;
    if (response === 'accept') return { outcome: 'selected', optionId: allowOnce };
    if (response === 'decline') return { outcome: 'selected', optionId: rejectOnce };
    return { outcome: 'cancelled' };
  }
  const last = it.toolCallId === undefined ? undefined : parts[lastPositionOf(parts, toolKey(it.toolCallId))];
  const tool: ToolCallState | undefined = last && isPartOfKind(last, 'toolCall') ? last.toolCall : undefined;
  if (!tool || !isToolCallDecided(tool)) return { outcome: 'cancelled' };
  const selected = 'selectedOption' in tool ? (tool.selectedOption as ConfirmationOption | undefined) : undefined;
  // Only the tool's own options count as selected (`toolOptions` gives each its id unchanged and
  // always adds allow_once, allow_always, reject_once and reject_always, so a fallback exists).
  const selectedOption = selected && it.ahpOptions.has(selected.id) ? selected : undefined;
  return permissionOutcome(it.options, { ...(tool as Parameters<typeof permissionOutcome>[1]), selectedOption });
}

/**
 * qwen serve's own option ids, accepted for the option of the same kind offered here: its
 * "always allow" scopes (project / user) are this session's `allow_always`, its `cancel`
 * option is a rejection (the tool is not run; `cancelled` as an outcome stays a skip).
 */
const QWEN_OPTION_ALIASES: Readonly<Record<string, PermissionOption['kind']>> = {
  proceed_always_project: 'allow_always',
  proceed_always_user: 'allow_always',
  cancel: 'reject_once',
};

/** The offered option with that id, else the offered option a qwen alias stands for. */
export function offeredOption(options: readonly PermissionOption[], optionId: string): PermissionOption | undefined {
  const exact = options.find((o) => o.optionId === optionId);
  if (exact) return exact;
  const kind = Object.hasOwn(QWEN_OPTION_ALIASES, optionId) ? QWEN_OPTION_ALIASES[optionId] : undefined;
  return kind === undefined ? undefined : options.find((o) => o.kind === kind);
}

/**
 * Stop reason of a turn that just stopped being active:
 * `chat/turnComplete` → `end_turn`; `chat/turnCancelled`, `chat/truncated`, disposal → `cancelled`;
 * `chat/error` with `errorType: "refusal"` → `refusal`; any other `chat/error` → `error` (prompt
 * streams end with a JSON-RPC error for it).
 */
export function turnEndOf(action: KnownAction | undefined, turnId: string, state: ChatState): TurnEnd {
  switch (action?.type) {
    case 'chat/turnComplete':
      return { stopReason: 'end_turn' };
    case 'chat/error': {
      const info = action.error ?? findEndedTurn(state, turnId)?.error;
      const errorType = info?.errorType ?? 'error';
      if (errorType === 'refusal') return { stopReason: 'refusal' };
      return { stopReason: 'error', error: { errorType, message: info?.message ?? 'The turn failed.' } };
    }
    default:
      return { stopReason: 'cancelled' };
  }
}
