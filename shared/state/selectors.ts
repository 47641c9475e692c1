/**
 * Selectors: the facts the reducers, validation, the hub's features, the agents and the CLI read
 * from a chat's state ("the open input request with this id", "the tool calls waiting for a
 * confirmation", "the turn with this id"), each written once here. Pure functions: they return
 * parts of the state (never copies of them) and never change it.
 */
import { USER_INPUT_META, USER_MESSAGE_PART } from '../protocol/steering.js';
import {
  isPartOfKind,
  type ActiveTurn,
  type ChatInputRequest,
  type ChatState,
  type InputRequestPart,
  type PendingMessage,
  type PendingConfirmationToolCall,
  type ResponsePart,
  type SessionState,
  type ToolCallState,
  type Turn,
} from '../protocol/state.js';
import { firstPositionOf, inputKey, toolKey } from './part-index.js';

type WithActiveTurn = Pick<ChatState, 'activeTurn'>;
type WithTurns = Pick<ChatState, 'activeTurn' | 'turns'>;

// ─── Input requests and tool calls of the active turn ───────────────────────

/** An input-request part nobody has completed yet (`response` absent). */
export function isOpenInputRequest(part: ResponsePart): part is InputRequestPart {
  return isPartOfKind(part, 'inputRequest') && part.response === undefined;
}

/** The open input-request part with `requestId` in the active turn, if any. */
export function findOpenInputRequest(chat: WithActiveTurn, requestId: string): InputRequestPart | undefined {
  const parts = chat.activeTurn?.responseParts;
  const part = parts?.[parts ? firstPositionOf(parts, inputKey(requestId), isOpenInputRequest) : -1];
  return part && isOpenInputRequest(part) ? part : undefined;
}

/** An answered (accepted, declined or cancelled) input-request part with `requestId` in the active turn. */
export function findAnsweredInputRequest(chat: WithActiveTurn, requestId: string): InputRequestPart | undefined {
  const parts = chat.activeTurn?.responseParts;
  const answered = (part: ResponsePart): boolean => isPartOfKind(part, 'inputRequest') && part.response !== undefined;
  const part = parts?.[parts ? firstPositionOf(parts, inputKey(requestId), answered) : -1];
  return part && isPartOfKind(part, 'inputRequest') ? part : undefined;
}

/** The tool call with `toolCallId` in the active turn, if any. */
export function findActiveToolCall(chat: WithActiveTurn, toolCallId: string): ToolCallState | undefined {
  const parts = chat.activeTurn?.responseParts;
  const part = parts?.[parts ? firstPositionOf(parts, toolKey(toolCallId)) : -1];
  return part && isPartOfKind(part, 'toolCall') ? part.toolCall : undefined;
}

/**
 * True once a tool call's confirmation is decided: approved (running or later), denied or
 * cancelled. False while it streams its input or waits in `pending-confirmation`.
 */
export function isToolCallDecided(toolCall: ToolCallState): boolean {
  return toolCall.status !== 'pending-confirmation' && toolCall.status !== 'streaming';
}

/** The active turn's tool call with `toolCallId` once its confirmation is decided (see `isToolCallDecided`). */
export function findDecidedToolCall(chat: WithActiveTurn, toolCallId: string): ToolCallState | undefined {
  const toolCall = findActiveToolCall(chat, toolCallId);
  return toolCall && isToolCallDecided(toolCall) ? toolCall : undefined;
}

/** Something in the active turn a person is asked to answer: an input request or a tool confirmation. */
export type OpenInteraction = { readonly kind: 'input'; readonly request: ChatInputRequest } | { readonly kind: 'toolConfirmation'; readonly toolCall: PendingConfirmationToolCall };

/**
 * The active turn's open input requests and tool calls waiting for a confirmation, in the order
 * their parts appear (empty when no turn is active). A tool waiting for its *result* to be
 * confirmed, or for a sign-in, is not listed: nobody answers those with a permission reply.
 */
export function openInteractions(chat: WithActiveTurn): OpenInteraction[] {
  const open: OpenInteraction[] = [];
  for (const part of chat.activeTurn?.responseParts ?? []) {
    if (isOpenInputRequest(part)) open.push({ kind: 'input', request: part.request });
    else if (isPartOfKind(part, 'toolCall') && part.toolCall.status === 'pending-confirmation') {
      open.push({ kind: 'toolConfirmation', toolCall: part.toolCall });
    }
  }
  return open;
}

// ─── Turns ───────────────────────────────────────────────────────────────────

/** The ended turn with `turnId` (newest first, where a re-used id would be), if any. */
export function findEndedTurn(chat: Pick<ChatState, 'turns'>, turnId: string): Turn | undefined {
  for (let i = chat.turns.length - 1; i >= 0; i--) {
    const turn = chat.turns[i];
    if (turn?.id === turnId) return turn;
  }
  return undefined;
}

/** The turn with `turnId`, active or ended, if the chat (still) holds it. */
export function findTurn(chat: WithTurns, turnId: string): ActiveTurn | Turn | undefined {
  return chat.activeTurn?.id === turnId ? chat.activeTurn : findEndedTurn(chat, turnId);
}

/** True when the chat holds a turn with `turnId`, active or ended. */
export function hasTurn(chat: WithTurns, turnId: string): boolean {
  return findTurn(chat, turnId) !== undefined;
}

/**
 * The id of the turn (active or ended) holding the input request or tool call `id`: where a link
 * to one approval (`#input=<id>` in the app) opens.
 */
export function turnOfInteraction(chat: WithTurns, id: string): string | undefined {
  const holds = (parts: readonly ResponsePart[]): boolean =>
    parts.some((p) => (p.kind === 'inputRequest' && (p as InputRequestPart).request.id === id) || (p.kind === 'toolCall' && (p as { toolCall: ToolCallState }).toolCall.toolCallId === id));
  if (chat.activeTurn && holds(chat.activeTurn.responseParts)) return chat.activeTurn.id;
  return chat.turns.find((t) => holds(t.responseParts))?.id;
}

/** The response parts of the turn with `turnId`, active or ended; empty when the chat has no such turn. */
export function turnResponseParts(chat: WithTurns, turnId: string): readonly ResponsePart[] {
  return findTurn(chat, turnId)?.responseParts ?? [];
}

/**
 * How long a turn started at `startedAt` has run by `now` (epoch milliseconds): never negative,
 * and 0 when `startedAt` does not parse (the duration a turn-ending action must carry).
 */
export function turnDuration(startedAt: string, now: number): number {
  const duration = Math.max(0, now - Date.parse(startedAt));
  return Number.isFinite(duration) ? duration : 0;
}

// ─── Steering inputs ─────────────────────────────────────────────────────────

/**
 * The steering receipt facts (`inputId`, `ordinal`, `turnId`, …) a message carries in
 * `_meta["hub/userInput"]`: on a pending steering message (accepted) or a `userMessage` part
 * (consumed). Unchecked values: callers test each field they use.
 */
export function userInputMeta(message: unknown): Readonly<Record<string, unknown>> | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const meta = (message as { _meta?: unknown })._meta;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const ref = (meta as Record<string, unknown>)[USER_INPUT_META];
  return typeof ref === 'object' && ref !== null ? (ref as Record<string, unknown>) : undefined;
}

/** The input id a message names in `_meta["hub/userInput"].inputId`, when it is a string. */
export function userInputIdOf(message: unknown): string | undefined {
  const inputId = userInputMeta(message)?.inputId;
  return typeof inputId === 'string' ? inputId : undefined;
}

/** A steering input accepted and not yet consumed: a pending steering message naming the input. */
export interface AcceptedUserInput {
  readonly inputId: string;
  /** The receipt facts in `_meta["hub/userInput"]` (`ordinal`, `turnId`, …), unchecked. */
  readonly meta: Readonly<Record<string, unknown>>;
  readonly steering: PendingMessage;
}

/** The chat's pending steering messages that name a steering input, in list order. */
export function acceptedUserInputs(chat: Pick<ChatState, 'steeringMessages'>): AcceptedUserInput[] {
  const accepted: AcceptedUserInput[] = [];
  for (const steering of chat.steeringMessages ?? []) {
    const meta = userInputMeta(steering.message);
    if (meta && typeof meta.inputId === 'string') accepted.push({ inputId: meta.inputId, meta, steering });
  }
  return accepted;
}

/** A steering input the active turn consumed: its `userMessage` part names the input. */
export interface ConsumedUserInput {
  readonly inputId: string;
  /** The part's message (text and `_meta`), as the agent received it. */
  readonly message: unknown;
}

/** The `userMessage` parts of the active turn that name a steering input, in order. */
export function consumedUserInputs(chat: WithActiveTurn): ConsumedUserInput[] {
  const consumed: ConsumedUserInput[] = [];
  for (const part of chat.activeTurn?.responseParts ?? []) {
    const inputId = userMessagePartInputId(part);
    if (inputId !== undefined) consumed.push({ inputId, message: (part as { message?: unknown }).message });
  }
  return consumed;
}

/** The input id a `userMessage` response part names, if it is one and names one. */
export function userMessagePartInputId(part: { readonly kind?: unknown }): string | undefined {
  return part.kind === USER_MESSAGE_PART ? userInputIdOf((part as { message?: unknown }).message) : undefined;
}

// ─── Remembered tool choices (session) ───────────────────────────────────────

/** Session `_meta` key holding tool names approved with "always allow" (`x-session/toolApprovalRemembered`). */
export const APPROVED_TOOLS_META = 'hub/approvedTools';
/** Session `_meta` key holding tool names denied with "always deny" (`x-session/toolDenialRemembered`). */
export const DENIED_TOOLS_META = 'hub/deniedTools';

/** One of the two remembered-choice lists. */
export type RememberedToolList = typeof APPROVED_TOOLS_META | typeof DENIED_TOOLS_META;

/** The tool names the session remembers in `list`; entries that are not strings are ignored. */
export function rememberedTools(session: Pick<SessionState, '_meta'> | undefined, list: RememberedToolList): string[] {
  const names = session?._meta?.[list];
  return Array.isArray(names) ? names.filter((name): name is string => typeof name === 'string') : [];
}

/** Session `_meta` key: who chose each remembered "always" choice, by tool identity (`AnsweredBy`). */
export const TOOL_CHOICE_BY_META = 'hub/toolChoiceBy';
/** Session `_meta` key: standing grants the *agent* keeps, chosen through the hub (`x-session/agentGrantRecorded`). */
export const AGENT_GRANTS_META = 'hub/agentGrants';

/** Who made a choice, when and from where (the hub's `_meta["hub/answeredBy"]` stamp). */
export interface ChoiceStamp {
  readonly user: string;
  readonly surface: string;
  readonly at: string;
}

/** A standing grant an agent keeps (its own `allow_always` option), as the hub recorded it. */
export interface AgentGrant {
  readonly toolName: string;
  readonly optionId: string;
  readonly label: string;
  readonly by?: ChoiceStamp | undefined;
}

function stampOf(raw: unknown): ChoiceStamp | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { user, surface, at } = raw as Record<string, unknown>;
  return typeof user === 'string' && typeof surface === 'string' && typeof at === 'string' ? { user, surface, at } : undefined;
}

/** Who chose the remembered "always" choice for `toolName`, when the hub recorded it. */
export function rememberedChoiceBy(session: Pick<SessionState, '_meta'> | undefined, toolName: string): ChoiceStamp | undefined {
  const byTool = session?._meta?.[TOOL_CHOICE_BY_META];
  if (typeof byTool !== 'object' || byTool === null || !Object.hasOwn(byTool, toolName)) return undefined;
  return stampOf((byTool as Record<string, unknown>)[toolName]);
}

/** The agent-kept standing grants the session recorded, oldest first; malformed entries are skipped. */
export function agentGrants(session: Pick<SessionState, '_meta'> | undefined): AgentGrant[] {
  const raw = session?._meta?.[AGENT_GRANTS_META];
  if (!Array.isArray(raw)) return [];
  const out: AgentGrant[] = [];
  for (const entry of raw) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { toolName, optionId, label, by } = entry as Record<string, unknown>;
    if (typeof toolName === 'string' && typeof optionId === 'string' && typeof label === 'string') out.push({ toolName, optionId, label, by: stampOf(by) });
  }
  return out;
}

// ─── Tool identity (what an "always" choice is remembered for) ─────────────────

/** What `toolIdentity` needs of a tool call. */
export type IdentifiedTool = Pick<ToolCallState, 'toolName' | 'displayName' | '_meta'> & { readonly toolInput?: unknown; readonly invocationMessage?: unknown };

/**
 * True when the tool's name is not the agent's own but only its ACP kind (`execute`, `edit`, …):
 * agents that send no tool name (Gemini CLI, Codex, OpenCode) are relayed with the kind as the
 * name (`_meta["acp/kind"]`), or `tool` when they send neither.
 */
export function hasGenericToolName(tool: IdentifiedTool): boolean {
  return tool.toolName === 'tool' || ACP_TOOL_KINDS.has(tool.toolName) || tool.toolName === tool._meta?.['acp/kind'];
}

/**
 * ACP's tool kinds. A tool named exactly like one is taken as known by its kind only, also once
 * an approval replaced its `_meta` (the standard reducers carry the approval's `_meta` over).
 */
const ACP_TOOL_KINDS: ReadonlySet<string> = new Set(['read', 'edit', 'delete', 'move', 'search', 'execute', 'think', 'fetch', 'switch_mode', 'other']);

/**
 * The precise identity an "always" choice is remembered for: the agent's own tool name, or, for a
 * tool known only by its kind, the kind plus the command (the tool input, else its title):
 * `execute: touch a.txt`. Undefined when that does not fit a tool name (256 characters): such a
 * tool is not precise enough to be remembered, so the hub offers no "always" for it.
 */
export function toolIdentity(tool: IdentifiedTool): string | undefined {
  if (!hasGenericToolName(tool)) return tool.toolName;
  const command = [commandOf(tool.toolInput), tool.toolInput, tool.invocationMessage, tool.displayName].find((v): v is string => typeof v === 'string' && v.trim().length > 0);
  if (command === undefined) return undefined;
  const identity = `${tool.toolName}: ${command.trim()}`;
  return identity.length <= MAX_TOOL_IDENTITY ? identity : undefined;
}

/** Longest tool identity (the schema limit of a remembered tool name). */
export const MAX_TOOL_IDENTITY = 256;

/** The `command` of a tool input that is JSON with one (`{"command":"touch a.txt"}`), else undefined. */
function commandOf(toolInput: unknown): string | undefined {
  if (typeof toolInput !== 'string' || !toolInput.startsWith('{')) return undefined;
  try {
    const parsed: unknown = JSON.parse(toolInput);
    const command = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>)['command'] : undefined;
    return typeof command === 'string' ? command : undefined;
  } catch {
    return undefined;
  }
}

// ─── Tool decisions (who approved what) ──────────────────────────────────────

/** A tool call somebody (or a remembered choice) approved or denied, with the hub's stamp. */
export interface ToolDecision {
  readonly turnId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly displayName: string;
  readonly approved: boolean;
  /** The label of the option chosen, when the tool offered its own. */
  readonly option?: string | undefined;
  readonly by: ChoiceStamp;
}

/**
 * Every decided tool call of the chat that carries the hub's `_meta["hub/answeredBy"]` stamp, in
 * transcript order (ended turns, then the active one). Tools that needed no confirmation carry no
 * stamp and are not listed.
 */
export function toolDecisionsOf(chat: WithTurns): ToolDecision[] {
  const out: ToolDecision[] = [];
  const turns: Array<ActiveTurn | Turn> = chat.activeTurn ? [...chat.turns, chat.activeTurn] : [...chat.turns];
  for (const turn of turns) {
    for (const part of turn.responseParts) {
      if (!isPartOfKind(part, 'toolCall') || !isToolCallDecided(part.toolCall)) continue;
      const tool = part.toolCall;
      const by = stampOf(tool._meta?.['hub/answeredBy']);
      if (!by) continue;
      const selected = 'selectedOption' in tool ? (tool.selectedOption as { label?: unknown } | undefined) : undefined;
      const option = typeof selected?.label === 'string' ? selected.label : undefined;
      out.push({ turnId: turn.id, toolCallId: tool.toolCallId, toolName: tool.toolName, displayName: tool.displayName, approved: tool.status !== 'cancelled', option, by });
    }
  }
  return out;
}
