/**
 * Selectors (shared/state/selectors.ts): the facts features read from chat state — open input
 * requests, tool calls waiting for a confirmation, turns by id, consumed steering inputs.
 */
import { describe, expect, it } from 'vitest';
import { initialChatState, type ChatState, type ResponsePart, type ToolCallState, type Turn } from '../../shared/protocol/state.js';
import {
  hasGenericToolName,
  toolDecisionsOf,
  toolIdentity,
  acceptedUserInputs,
  consumedUserInputs,
  findActiveToolCall,
  findAnsweredInputRequest,
  findDecidedToolCall,
  findEndedTurn,
  findOpenInputRequest,
  findTurn,
  hasTurn,
  isOpenInputRequest,
  isToolCallDecided,
  openInteractions,
  turnOfInteraction,
  turnResponseParts,
  userInputIdOf,
  userInputMeta,
  userMessagePartInputId,
} from '../../shared/state/selectors.js';

const T0 = '2026-01-01T10:00:00.000Z';
const MESSAGE = { text: 'Hi', origin: { kind: 'user' } };

function tool(toolCallId: string, status: ToolCallState['status']): ResponsePart {
  return { kind: 'toolCall', toolCall: { toolCallId, status, toolName: 'bash', displayName: 'Run', invocationMessage: 'Run' } as ToolCallState };
}
function input(id: string, response?: 'accept' | 'decline' | 'cancel'): ResponsePart {
  return { kind: 'inputRequest', request: { id, message: `question ${id}` }, ...(response && { response }) };
}
function userMessage(id: string, meta?: Record<string, unknown>): ResponsePart {
  return { kind: 'userMessage', id, message: { text: `steer ${id}`, origin: { kind: 'user' }, ...(meta && { _meta: meta }) } } as unknown as ResponsePart;
}
function ended(id: string, parts: ResponsePart[] = [], extra: Partial<Turn> = {}): Turn {
  return { id, message: MESSAGE, responseParts: parts, state: 'complete', ...extra };
}
function chat(active: ResponsePart[] | undefined, turns: Turn[] = []): ChatState {
  const base = { ...initialChatState('ahp-chat:/c1', 'Chat', T0), turns };
  return active ? { ...base, activeTurn: { id: 'turn-active', startedAt: T0, message: MESSAGE, responseParts: active } } : base;
}

describe('selectors: input requests and tool calls of the active turn', () => {
  it('an input request is open until it has a response', () => {
    expect(isOpenInputRequest(input('q1'))).toBe(true);
    expect(isOpenInputRequest(input('q1', 'accept'))).toBe(false);
    expect(isOpenInputRequest(tool('t1', 'pending-confirmation'))).toBe(false);
  });

  it('findOpenInputRequest finds only the unanswered part with that id, and nothing without an active turn', () => {
    const state = chat([input('q1', 'decline'), input('q1'), input('q2')]);
    expect(findOpenInputRequest(state, 'q1')).toBe(state.activeTurn!.responseParts[1]);
    expect(findOpenInputRequest(state, 'q3')).toBeUndefined();
    expect(findOpenInputRequest(chat(undefined, [ended('t0', [input('q1')])]), 'q1')).toBeUndefined();
  });

  it('findAnsweredInputRequest finds only an answered part with that id', () => {
    const state = chat([input('q1'), input('q2', 'accept')]);
    expect(findAnsweredInputRequest(state, 'q1')).toBeUndefined();
    expect(findAnsweredInputRequest(state, 'q2')?.response).toBe('accept');
  });

  it('findActiveToolCall returns the tool call state with that id from the active turn only', () => {
    const state = chat([tool('t1', 'running'), tool('t2', 'completed')], [ended('old', [tool('t9', 'completed')])]);
    expect(findActiveToolCall(state, 't2')?.status).toBe('completed');
    expect(findActiveToolCall(state, 't9')).toBeUndefined();
  });

  it('openInteractions lists open input requests and tools waiting for a confirmation, in part order', () => {
    const state = chat([tool('t1', 'pending-confirmation'), input('q1', 'accept'), input('q2'), tool('t2', 'pending-result-confirmation'), tool('t3', 'auth-required'), tool('t4', 'pending-confirmation')]);
    expect(openInteractions(state).map((o) => (o.kind === 'input' ? `input:${o.request.id}` : `tool:${o.toolCall.toolCallId}`))).toEqual(['tool:t1', 'input:q2', 'tool:t4']);
    expect(openInteractions(chat(undefined))).toEqual([]);
  });
});

describe('selectors: turns by id', () => {
  const older = ended('t1', [input('q-old', 'accept')], { state: 'error', error: { errorType: 'network', message: 'lost' } });
  const state = chat([input('q-now')], [older, ended('t2')]);

  it('findEndedTurn finds a finished turn, never the active one', () => {
    expect(findEndedTurn(state, 't1')?.error?.message).toBe('lost');
    expect(findEndedTurn(state, 'turn-active')).toBeUndefined();
  });

  it('findTurn and hasTurn see the active turn and ended turns alike', () => {
    expect(findTurn(state, 'turn-active')).toBe(state.activeTurn);
    expect(findTurn(state, 't2')?.id).toBe('t2');
    expect(hasTurn(state, 't1')).toBe(true);
    expect(hasTurn(state, 'turn-active')).toBe(true);
    expect(hasTurn(state, 'missing')).toBe(false);
  });

  it('turnOfInteraction finds the turn holding an input request, active or ended', () => {
    expect(turnOfInteraction(state, 'q-now')).toBe('turn-active');
    expect(turnOfInteraction(state, 'q-old')).toBe('t1');
    expect(turnOfInteraction(state, 'missing')).toBeUndefined();
  });

  it('turnResponseParts reads the parts of an active or ended turn, and is empty for an unknown turn', () => {
    expect(turnResponseParts(state, 'turn-active')).toEqual([input('q-now')]);
    expect(turnResponseParts(state, 't1')).toEqual([input('q-old', 'accept')]);
    expect(turnResponseParts(state, 'missing')).toEqual([]);
  });
});

describe('selectors: steering inputs named in hub/userInput', () => {
  it('reads the receipt facts of a message, and nothing from a message without them', () => {
    const message = { text: 'x', _meta: { 'hub/userInput': { inputId: 'in-1', ordinal: 2 } } };
    expect(userInputMeta(message)).toEqual({ inputId: 'in-1', ordinal: 2 });
    expect(userInputIdOf(message)).toBe('in-1');
    expect(userInputMeta({ text: 'x' })).toBeUndefined();
    expect(userInputMeta({ text: 'x', _meta: { 'hub/userInput': 'not an object' } })).toBeUndefined();
    expect(userInputIdOf({ _meta: { 'hub/userInput': { inputId: 7 } } })).toBeUndefined();
    expect(userInputMeta(undefined)).toBeUndefined();
  });

  it('a userMessage part names its input; other parts and parts without a string input id do not', () => {
    expect(userMessagePartInputId(userMessage('p1', { 'hub/userInput': { inputId: 'in-1' } }))).toBe('in-1');
    expect(userMessagePartInputId(userMessage('p2'))).toBeUndefined();
    expect(userMessagePartInputId(input('q1'))).toBeUndefined();
  });

  it('consumedUserInputs lists the active turn userMessage parts that name an input, in order, with their message', () => {
    const first = userMessage('p1', { 'hub/userInput': { inputId: 'in-1' } });
    const state = chat([first, input('q1'), userMessage('p2'), userMessage('p3', { 'hub/userInput': { inputId: 'in-3' } })]);
    const consumed = consumedUserInputs(state);
    expect(consumed.map((c) => c.inputId)).toEqual(['in-1', 'in-3']);
    expect(consumed[0]!.message).toBe((first as unknown as { message: unknown }).message);
    expect(consumedUserInputs(chat(undefined))).toEqual([]);
  });
});

describe('selectors: accepted steering inputs', () => {
  it('lists the pending steering messages that name an input, in list order, with their receipt facts', () => {
    const named = (id: string, meta?: Record<string, unknown>) => ({ id, message: { text: `text ${id}`, origin: { kind: 'user' }, ...(meta && { _meta: meta }) } });
    const state = {
      ...chat(undefined),
      steeringMessages: [
        named('hub-input:b', { 'hub/userInput': { inputId: 'b', ordinal: 2, turnId: 't' } }),
        named('typed-by-a-client'),
        named('hub-input:a', { 'hub/userInput': { inputId: 'a', ordinal: 1, turnId: 't' } }),
        named('bad', { 'hub/userInput': { inputId: 42 } }),
      ],
    } as ChatState;
    const accepted = acceptedUserInputs(state);
    expect(accepted.map((a) => [a.inputId, a.meta.ordinal, a.steering.id])).toEqual([
      ['b', 2, 'hub-input:b'],
      ['a', 1, 'hub-input:a'],
    ]);
    expect(acceptedUserInputs(chat(undefined))).toEqual([]);
  });
});

describe('selectors: tool call confirmation decided', () => {
  it('a tool call is decided once it leaves streaming and pending-confirmation', () => {
    const state = chat([tool('streaming', 'streaming'), tool('waiting', 'pending-confirmation'), tool('approved', 'running'), tool('denied', 'cancelled'), tool('done', 'completed')]);
    expect(['streaming', 'waiting', 'approved', 'denied', 'done', 'missing'].map((id) => findDecidedToolCall(state, id)?.status)).toEqual([undefined, undefined, 'running', 'cancelled', 'completed', undefined]);
    expect(isToolCallDecided(findActiveToolCall(state, 'waiting')!)).toBe(false);
    expect(isToolCallDecided(findActiveToolCall(state, 'done')!)).toBe(true);
  });
});

describe('toolIdentity: what an "always" choice is remembered for', () => {
  const tool = (toolName: string, extra: Record<string, unknown> = {}) => ({ toolName, displayName: 'Run a command', ...extra });

  it("is the agent's own tool name when it sent one", () => {
    expect(toolIdentity(tool('write_file'))).toBe('write_file');
    expect(toolIdentity(tool('run_shell_command', { _meta: { 'acp/kind': 'execute' }, toolInput: '{"command":"ls"}' }))).toBe('run_shell_command');
    expect(hasGenericToolName(tool('write_file'))).toBe(false);
  });

  it('is the kind plus the command for a tool known only by its ACP kind, so two commands never share it', () => {
    const touch = tool('execute', { _meta: { 'acp/kind': 'execute' }, toolInput: '{"command":"touch a.txt"}' });
    const rm = tool('execute', { _meta: { 'acp/kind': 'execute' }, toolInput: '{"command":"rm -rf build"}' });
    expect([toolIdentity(touch), toolIdentity(rm)]).toEqual(['execute: touch a.txt', 'execute: rm -rf build']);
    // Also once an approval replaced its `_meta`; a non-command input or the title stands in.
    expect(toolIdentity(tool('execute', { toolInput: '{"path":"x"}' }))).toBe('execute: {"path":"x"}');
    expect(toolIdentity(tool('tool', { invocationMessage: 'touch b' }))).toBe('tool: touch b');
    expect(toolIdentity(tool('edit'))).toBe('edit: Run a command');
  });

  it('is undefined when the command is too long to be remembered precisely', () => {
    expect(toolIdentity(tool('execute', { toolInput: JSON.stringify({ command: 'x'.repeat(300) }) }))).toBeUndefined();
    expect(toolIdentity(tool('execute', { displayName: ' ' }))).toBeUndefined();
  });
});

describe('toolDecisionsOf: who approved or denied which tool', () => {
  const by = (user: string) => ({ 'hub/answeredBy': { user, surface: 'app', at: '2026-12-03T10:00:00.000Z' } });
  const tool = (toolCallId: string, status: string, extra: Record<string, unknown> = {}): ResponsePart =>
    ({ kind: 'toolCall', toolCall: { toolCallId, toolName: 'deploy', displayName: `Deploy ${toolCallId}`, status, ...extra } }) as unknown as ResponsePart;

  it('lists stamped decided tools in transcript order, approved or denied, and skips unstamped or undecided ones', () => {
    const ended = { id: 't1', responseParts: [tool('a', 'completed', { _meta: by('alice'), selectedOption: { id: 'yes', label: 'Allow once', kind: 'approve' } }), tool('b', 'completed')] } as unknown as Turn;
    const chat = {
      ...initialChatState('ahp-chat:/c1', 'Chat', T0),
      turns: [ended],
      activeTurn: { id: 't2', responseParts: [tool('c', 'cancelled', { _meta: by('bob'), reason: 'denied' }), tool('d', 'pending-confirmation', { _meta: by('x') })] },
    } as unknown as ChatState;
    expect(toolDecisionsOf(chat).map((d) => [d.turnId, d.toolCallId, d.approved, d.by.user, d.option])).toEqual([
      ['t1', 'a', true, 'alice', 'Allow once'],
      ['t2', 'c', false, 'bob', undefined],
    ]);
  });
});
