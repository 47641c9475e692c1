/**
 * Table tests for `validateClientAction` (§3.6 and the extra checks) and `validateAnswerValue`.
 * Every rejection asserts that the reason names the problem, not merely that there is one.
 */
import { describe, expect, it } from 'vitest';
import {
  SessionStatus,
  initialChatState,
  initialSessionState,
  type ChatInputAnswer,
  type ChatInputQuestion,
  type ChatInputRequest,
  type ChatState,
  type Message,
  type ResponsePart,
  type SessionState,
  type ToolCallState,
} from '../../shared/protocol/state.js';
import { parseAction } from '../../shared/protocol/actions.js';
import { validateAnswerValue, validateClientAction, type ClientActionContext } from '../../shared/state/validate-action.js';

// ─── Fixture state ───────────────────────────────────────────────────────────

const T0 = '2026-01-01T10:00:00.000Z';
const user = (text: string): Message => ({ text, origin: { kind: 'user' } });
const agent = (text: string): Message => ({ text, origin: { kind: 'agent' } });

const QUESTIONS: ChatInputQuestion[] = [
  { kind: 'text', id: 'name', message: 'Name?', required: true, min: 2, max: 5 },
  { kind: 'number', id: 'ratio', message: 'Ratio?', min: 0, max: 1 },
  { kind: 'integer', id: 'count', message: 'How many?', min: 1, max: 10 },
  { kind: 'boolean', id: 'ok', message: 'Continue?', required: true },
  {
    kind: 'single-select',
    id: 'env',
    message: 'Where?',
    options: [
      { id: 'dev', label: 'Dev' },
      { id: 'prod', label: 'Prod' },
    ],
  },
  {
    kind: 'multi-select',
    id: 'tags',
    message: 'Tags?',
    min: 1,
    max: 2,
    options: [
      { id: 'a', label: 'A' },
      { id: 'b', label: 'B' },
      { id: 'c', label: 'C' },
    ],
  },
  { kind: 'single-select', id: 'free', message: 'Pick or type', allowFreeformInput: true, options: [{ id: 'x', label: 'X' }] },
  { kind: 'future-kind', id: 'future', message: 'From a newer host' },
];

type AnswerValue = Extract<ChatInputAnswer, { state: 'draft' | 'submitted' }>['value'];
const submitted = (value: AnswerValue): ChatInputAnswer => ({ state: 'submitted', value });
const draft = (value: AnswerValue): ChatInputAnswer => ({ state: 'draft', value });

/** Everything required, submitted and valid: `accept` with these passes. */
const COMPLETE_ANSWERS: Record<string, ChatInputAnswer> = {
  name: submitted({ kind: 'text', value: 'Ada' }),
  ok: submitted({ kind: 'boolean', value: true }),
};

const openRequest: ChatInputRequest = { id: 'req-1', message: 'Tell me', questions: QUESTIONS };

const tool = (toolCall: Partial<ToolCallState> & Pick<ToolCallState, 'toolCallId' | 'status'>): ResponsePart => ({
  kind: 'toolCall',
  toolCall: { toolName: 'bash', displayName: 'Run', invocationMessage: 'Run it', ...toolCall } as ToolCallState,
});

const APPROVE_OPTIONS = [
  { id: 'once', label: 'Approve once', kind: 'approve' as const },
  { id: 'no', label: 'Deny', kind: 'deny' as const },
];

/** A chat with an active turn holding one of everything a client can act on. */
function busyChat(): ChatState {
  return {
    ...initialChatState('ahp-chat:/c1', 'Chat', T0),
    status: SessionStatus.InputNeeded,
    turns: [{ id: 'turn-1', message: user('First'), responseParts: [], state: 'complete' }],
    activeTurn: {
      id: 'turn-2',
      startedAt: T0,
      message: user('Second'),
      responseParts: [
        { kind: 'inputRequest', request: openRequest },
        { kind: 'inputRequest', request: { id: 'req-done', message: 'Old' }, response: 'accept' },
        tool({ toolCallId: 'tc-pending', status: 'pending-confirmation', options: APPROVE_OPTIONS }),
        tool({ toolCallId: 'tc-editable', status: 'pending-confirmation', toolInput: 'ls', editable: true }),
        tool({ toolCallId: 'tc-review', status: 'pending-result-confirmation', confirmed: 'user-action', success: true, pastTenseMessage: 'Ran' }),
        tool({ toolCallId: 'tc-client', status: 'running', confirmed: 'not-needed', contributor: { kind: 'client', clientId: 'client-1' } }),
        tool({ toolCallId: 'tc-client-pending', status: 'pending-confirmation', contributor: { kind: 'client', clientId: 'client-1' } }),
        tool({ toolCallId: 'tc-server', status: 'running', confirmed: 'not-needed' }),
        tool({ toolCallId: 'tc-mcp', status: 'running', confirmed: 'not-needed', contributor: { kind: 'mcp', customizationId: 'm' } }),
        tool({ toolCallId: 'tc-client-done', status: 'completed', confirmed: 'not-needed', success: true, pastTenseMessage: 'Done', contributor: { kind: 'client', clientId: 'client-1' } }),
      ],
    },
    steeringMessage: { id: 'steer-1', message: user('Focus') },
    steeringMessages: [{ id: 'steer-list-1', message: user('Also') }],
    queuedMessages: [{ id: 'queued-1', message: user('Later') }],
  };
}

/** An idle chat whose last turn ended in an error (resumable or not). */
function erroredChat(resumable: boolean): ChatState {
  return {
    ...initialChatState('ahp-chat:/c1', 'Chat', T0),
    status: SessionStatus.Error,
    turns: [
      { id: 'turn-1', message: user('First'), responseParts: [], state: 'complete' },
      {
        id: 'turn-2',
        startedAt: T0,
        message: user('Second'),
        responseParts: [{ kind: 'error', error: { errorType: 'network', message: 'lost' }, resumable }],
        state: 'error',
      },
    ],
  };
}

function idleChat(): ChatState {
  return {
    ...initialChatState('ahp-chat:/c1', 'Chat', T0),
    turns: [{ id: 'turn-1', message: user('First'), responseParts: [], state: 'complete' }],
  };
}

const session: SessionState = {
  ...initialSessionState('ahp-session:/s1', 'demo', 'Session'),
  chats: [
    { resource: 'ahp-chat:/c1', title: 'One', status: SessionStatus.Idle, modifiedAt: T0 },
    { resource: 'ahp-chat:/c2', title: 'Two', status: SessionStatus.Idle, modifiedAt: T0 },
  ],
};

const chatCtx = (chat: ChatState, extra: Partial<ClientActionContext> = {}): ClientActionContext => ({
  channelKind: 'chat',
  chat,
  clientId: 'client-1',
  allTurnIds: (turnId) => turnId === 'turn-in-other-chat',
  ...extra,
});
const sessionCtx = (extra: Partial<ClientActionContext> = {}): ClientActionContext => ({
  channelKind: 'session',
  session,
  clientId: 'client-1',
  ...extra,
});

// ─── The table ───────────────────────────────────────────────────────────────

interface Case {
  readonly name: string;
  readonly ctx: ClientActionContext;
  readonly action: { type: string } & Record<string, unknown>;
  /** Undefined = accepted; otherwise the reason must match. */
  readonly reject?: RegExp;
}

const busy = chatCtx(busyChat());
const idle = chatCtx(idleChat());
const turnStarted = (turnId: string, message: Message = user('Go')) => ({
  type: 'chat/turnStarted',
  turnId,
  startedAt: T0,
  message,
});
const answerChanged = (questionId: string, answer?: ChatInputAnswer, requestId = 'req-1') => ({
  type: 'chat/inputAnswerChanged',
  requestId,
  questionId,
  ...(answer && { answer }),
});
const completed = (response: string, answers?: Record<string, ChatInputAnswer>, requestId = 'req-1') => ({
  type: 'chat/inputCompleted',
  requestId,
  response,
  ...(answers && { answers }),
});
const toolAction = (type: string, toolCallId: string, extra: Record<string, unknown> = {}) => ({
  type,
  turnId: 'turn-2',
  toolCallId,
  ...extra,
});
const RESULT = { result: { success: true, pastTenseMessage: 'Done' } };

const CASES: Case[] = [
  // Dispatchability, channel, shape
  { name: 'server-only action', ctx: busy, action: { type: 'chat/delta', turnId: 'turn-2', partId: 'p', content: 'x' }, reject: /chat\/delta is not client-dispatchable/ },
  { name: 'unknown action type', ctx: busy, action: { type: 'chat/fromTheFuture' }, reject: /chat\/fromTheFuture is not client-dispatchable/ },
  { name: 'server-only session action', ctx: sessionCtx(), action: { type: 'session/inputNeededRemoved', id: 'x' }, reject: /not client-dispatchable/ },
  { name: 'chat action on a session channel', ctx: sessionCtx(), action: { type: 'chat/truncated' }, reject: /must be dispatched on a chat channel/ },
  { name: 'session action on a chat channel', ctx: busy, action: { type: 'session/isReadChanged', isRead: true }, reject: /must be dispatched on a session channel/ },
  { name: 'malformed payload names the field', ctx: idle, action: { type: 'chat/turnStarted', turnId: 't', startedAt: T0, message: { text: 5, origin: { kind: 'user' } } }, reject: /chat\/turnStarted: message\.text/ },
  { name: 'chat action without chat state', ctx: { channelKind: 'chat', clientId: 'client-1' }, action: { type: 'chat/truncated' }, reject: /unknown chat/ },

  // chat/turnStarted
  { name: 'turnStarted on an idle chat', ctx: idle, action: turnStarted('turn-9') },
  { name: 'turnStarted while a turn is active', ctx: busy, action: turnStarted('turn-9'), reject: /turn is already in progress \(turn-2\)/ },
  { name: 'turnStarted with a non-user message', ctx: idle, action: turnStarted('turn-9', agent('Hi')), reject: /origin "user", not "agent"/ },
  { name: 'turnStarted reusing a turn id of this chat', ctx: idle, action: turnStarted('turn-1'), reject: /turn id turn-1 is already used/ },
  { name: 'turnStarted reusing a turn id of another chat', ctx: idle, action: turnStarted('turn-in-other-chat'), reject: /turn id turn-in-other-chat is already used/ },
  { name: 'turnStarted with an invalid startedAt', ctx: idle, action: { ...turnStarted('turn-9'), startedAt: 'yesterday' }, reject: /startedAt: must be an ISO 8601 timestamp/ },

  // chat/turnCancelled
  { name: 'turnCancelled of the active turn', ctx: busy, action: { type: 'chat/turnCancelled', turnId: 'turn-2', duration: 5 } },
  { name: 'turnCancelled with no active turn', ctx: idle, action: { type: 'chat/turnCancelled', turnId: 'turn-1', duration: 5 }, reject: /no active turn to cancel/ },
  { name: 'turnCancelled of another turn', ctx: busy, action: { type: 'chat/turnCancelled', turnId: 'turn-1', duration: 5 }, reject: /turn turn-1 is not the active turn/ },

  // chat/turnResume
  { name: 'turnResume of the latest resumable error', ctx: chatCtx(erroredChat(true)), action: { type: 'chat/turnResume', turnId: 'turn-2' } },
  { name: 'turnResume while a turn is active', ctx: busy, action: { type: 'chat/turnResume', turnId: 'turn-2' }, reject: /while turn turn-2 is in progress/ },
  { name: 'turnResume of an older turn', ctx: chatCtx(erroredChat(true)), action: { type: 'chat/turnResume', turnId: 'turn-1' }, reject: /turn turn-1 is not the latest turn/ },
  { name: 'turnResume of a completed turn', ctx: idle, action: { type: 'chat/turnResume', turnId: 'turn-1' }, reject: /did not end in an error/ },
  { name: 'turnResume of a non-resumable error', ctx: chatCtx(erroredChat(false)), action: { type: 'chat/turnResume', turnId: 'turn-2' }, reject: /turn turn-2 is not resumable/ },

  // chat/truncated
  { name: 'truncated to a known turn', ctx: busy, action: { type: 'chat/truncated', turnId: 'turn-1' } },
  { name: 'truncated everything while a turn is active', ctx: busy, action: { type: 'chat/truncated' } },
  { name: 'truncated to an unknown turn', ctx: busy, action: { type: 'chat/truncated', turnId: 'turn-x' }, reject: /unknown turn turn-x/ },

  // drafts and pending messages
  { name: 'draftChanged with a user draft', ctx: idle, action: { type: 'chat/draftChanged', draft: user('typing') } },
  { name: 'draftChanged clearing the draft', ctx: idle, action: { type: 'chat/draftChanged' } },
  { name: 'draftChanged with an agent draft', ctx: idle, action: { type: 'chat/draftChanged', draft: agent('x') }, reject: /chat\/draftChanged needs a message with origin "user"/ },
  { name: 'pendingMessageSet queued', ctx: busy, action: { type: 'chat/pendingMessageSet', kind: 'queued', id: 'q-2', message: user('More') } },
  { name: 'pendingMessageSet with a tool message', ctx: busy, action: { type: 'chat/pendingMessageSet', kind: 'steering', id: 's', message: { text: 'x', origin: { kind: 'tool' } } }, reject: /origin "user", not "tool"/ },
  { name: 'pendingMessageRemoved steering', ctx: busy, action: { type: 'chat/pendingMessageRemoved', kind: 'steering', id: 'steer-1' } },
  { name: 'pendingMessageRemoved queued', ctx: busy, action: { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'queued-1' } },
  { name: 'pendingMessageRemoved with the wrong kind', ctx: busy, action: { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'steer-1' }, reject: /no queued message with id steer-1/ },
  { name: 'pendingMessageRemoved unknown steering id', ctx: busy, action: { type: 'chat/pendingMessageRemoved', kind: 'steering', id: 'nope' }, reject: /no steering message with id nope/ },
  { name: 'steeringMessageSet from a user', ctx: busy, action: { type: 'chat/steeringMessageSet', steeringMessage: { id: 'sl-2', message: user('Hey') } } },
  { name: 'steeringMessageSet with an agent message', ctx: busy, action: { type: 'chat/steeringMessageSet', steeringMessage: { id: 'sl-2', message: agent('Hey') } }, reject: /origin "user", not "agent"/ },
  { name: 'steeringMessageRemoved known id', ctx: busy, action: { type: 'chat/steeringMessageRemoved', id: 'steer-list-1' } },
  { name: 'steeringMessageRemoved unknown id', ctx: busy, action: { type: 'chat/steeringMessageRemoved', id: 'steer-1' }, reject: /no steering message with id steer-1/ },
  { name: 'queuedMessagesReordered', ctx: busy, action: { type: 'chat/queuedMessagesReordered', order: ['queued-1', 'gone'] } },

  // chat/inputAnswerChanged
  { name: 'answer draft of the right kind', ctx: busy, action: answerChanged('name', draft({ kind: 'text', value: 'A' })) },
  { name: 'clearing an answer', ctx: busy, action: answerChanged('name') },
  { name: 'skipping a question', ctx: busy, action: answerChanged('env', { state: 'skipped' }) },
  { name: 'answer to a resolved request', ctx: busy, action: answerChanged('name', undefined, 'req-done'), reject: /unknown or already resolved input request req-done/ },
  { name: 'answer to an unknown request', ctx: busy, action: answerChanged('name', undefined, 'req-x'), reject: /unknown or already resolved input request req-x/ },
  { name: 'answer without an active turn', ctx: idle, action: answerChanged('name'), reject: /unknown or already resolved input request req-1/ },
  { name: 'answer to an unknown question', ctx: busy, action: answerChanged('nope', { state: 'skipped' }), reject: /unknown question nope in input request req-1/ },
  { name: 'draft without a value', ctx: busy, action: answerChanged('name', { state: 'draft' } as ChatInputAnswer), reject: /answer\.value/ },
  { name: 'value kind lacking its payload', ctx: busy, action: answerChanged('name', { state: 'draft', value: { kind: 'text' } } as ChatInputAnswer), reject: /answer\.value\.value/ },
  { name: 'wrong value kind for the question', ctx: busy, action: answerChanged('name', draft({ kind: 'number', value: 3 })), reject: /question name \(text\) needs a text answer, not number/ },
  { name: 'drafts skip min/max', ctx: busy, action: answerChanged('name', draft({ kind: 'text', value: 'A' })) },
  { name: 'submitted text too short', ctx: busy, action: answerChanged('name', submitted({ kind: 'text', value: 'A' })), reject: /question name: answer length 1 is below the minimum 2/ },
  { name: 'submitted text too long', ctx: busy, action: answerChanged('name', submitted({ kind: 'text', value: 'Adelaide' })), reject: /answer length 8 is above the maximum 5/ },
  { name: 'submitted number in range', ctx: busy, action: answerChanged('ratio', submitted({ kind: 'number', value: 0.5 })) },
  { name: 'submitted number out of range', ctx: busy, action: answerChanged('ratio', submitted({ kind: 'number', value: 1.5 })), reject: /question ratio: answer 1\.5 is above the maximum 1/ },
  { name: 'integer question with a fraction (even as draft)', ctx: busy, action: answerChanged('count', draft({ kind: 'number', value: 2.5 })), reject: /question count needs a whole number, not 2\.5/ },
  { name: 'integer below min', ctx: busy, action: answerChanged('count', submitted({ kind: 'number', value: 0 })), reject: /below the minimum 1/ },
  { name: 'boolean with a text value', ctx: busy, action: answerChanged('ok', draft({ kind: 'text', value: 'yes' })), reject: /question ok \(boolean\) needs a boolean answer, not text/ },
  { name: 'single-select with a known option', ctx: busy, action: answerChanged('env', submitted({ kind: 'selected', value: 'prod' })) },
  { name: 'single-select with an unknown option', ctx: busy, action: answerChanged('env', submitted({ kind: 'selected', value: 'staging' })), reject: /question env: "staging" is not one of its options/ },
  { name: 'single-select with free text when not allowed', ctx: busy, action: answerChanged('env', submitted({ kind: 'selected', value: 'dev', freeformValues: ['also qa'] })), reject: /question env does not accept free-form input/ },
  { name: 'single-select draft with an unknown option (kind check only)', ctx: busy, action: answerChanged('env', draft({ kind: 'selected', value: 'staging' })) },
  { name: 'single-select with free text when allowed', ctx: busy, action: answerChanged('free', submitted({ kind: 'selected', value: 'my own', freeformValues: ['my own'] })) },
  { name: 'single-select answered with selected-many', ctx: busy, action: answerChanged('env', draft({ kind: 'selected-many', value: ['dev'] })), reject: /needs a selected answer, not selected-many/ },
  { name: 'multi-select within bounds', ctx: busy, action: answerChanged('tags', submitted({ kind: 'selected-many', value: ['a', 'c'] })) },
  { name: 'multi-select above max', ctx: busy, action: answerChanged('tags', submitted({ kind: 'selected-many', value: ['a', 'b', 'c'] })), reject: /question tags: number of selections 3 is above the maximum 2/ },
  { name: 'multi-select below min', ctx: busy, action: answerChanged('tags', submitted({ kind: 'selected-many', value: [] })), reject: /number of selections 0 is below the minimum 1/ },
  { name: 'multi-select with an unknown option', ctx: busy, action: answerChanged('tags', submitted({ kind: 'selected-many', value: ['a', 'z'] })), reject: /"z" is not one of its options/ },
  { name: 'multi-select with a repeated option', ctx: busy, action: answerChanged('tags', submitted({ kind: 'selected-many', value: ['a', 'a'] })), reject: /option a is selected more than once/ },
  { name: 'unknown question kind accepts any value', ctx: busy, action: answerChanged('future', submitted({ kind: 'colour', value: '#fff' } as never)) },
  { name: 'unknown value kind for a known question', ctx: busy, action: answerChanged('name', draft({ kind: 'colour', value: '#fff' } as never)), reject: /needs a text answer, not colour/ },

  // chat/inputCompleted
  { name: 'accept with every required question submitted', ctx: busy, action: completed('accept', COMPLETE_ANSWERS) },
  { name: 'decline without answers', ctx: busy, action: completed('decline') },
  { name: 'cancel without answers', ctx: busy, action: completed('cancel') },
  { name: 'completion of a resolved request', ctx: busy, action: completed('cancel', undefined, 'req-done'), reject: /unknown or already resolved input request req-done/ },
  { name: 'accept missing a required answer', ctx: busy, action: completed('accept', { name: COMPLETE_ANSWERS['name']! }), reject: /question ok is required and has no submitted answer/ },
  { name: 'accept where a required answer is only a draft', ctx: busy, action: completed('accept', { ...COMPLETE_ANSWERS, ok: draft({ kind: 'boolean', value: true }) }), reject: /question ok is required and has no submitted answer/ },
  { name: 'accept where a required answer is skipped', ctx: busy, action: completed('accept', { ...COMPLETE_ANSWERS, name: { state: 'skipped' } }), reject: /question name is required/ },
  { name: 'accept validates the overlaid answers', ctx: busy, action: completed('accept', { ...COMPLETE_ANSWERS, ratio: submitted({ kind: 'number', value: -1 }) }), reject: /question ratio: answer -1 is below the minimum 0/ },
  { name: 'decline still validates overlaid answers', ctx: busy, action: completed('decline', { nope: { state: 'skipped' } }), reject: /unknown question nope/ },
  {
    name: 'accept counts submitted answers synced earlier (merged map)',
    ctx: chatCtx(withSyncedAnswers(COMPLETE_ANSWERS)),
    action: completed('accept'),
  },
  {
    name: 'accept does not count synced drafts',
    ctx: chatCtx(withSyncedAnswers({ ...COMPLETE_ANSWERS, ok: draft({ kind: 'boolean', value: false }) })),
    action: completed('accept'),
    reject: /question ok is required and has no submitted answer/,
  },
  {
    name: 'a required question with a prototype-like id is not answered by Object.prototype',
    ctx: chatCtx(withQuestions([{ kind: 'text', id: 'constructor', message: 'x', required: true }])),
    action: completed('accept'),
    reject: /question constructor is required/,
  },

  // tool calls
  { name: 'toolCallConfirmed approve', ctx: busy, action: toolAction('chat/toolCallConfirmed', 'tc-pending', { approved: true, confirmed: 'user-action', selectedOptionId: 'once' }) },
  { name: 'toolCallConfirmed deny', ctx: busy, action: toolAction('chat/toolCallConfirmed', 'tc-pending', { approved: false, reason: 'denied' }) },
  {
    name: 'toolCallConfirmed on a running tool',
    ctx: busy,
    action: toolAction('chat/toolCallConfirmed', 'tc-server', { approved: true, confirmed: 'user-action' }),
    reject: /tool call tc-server is not awaiting confirmation \(it is running\)/,
  },
  { name: 'toolCallConfirmed unknown tool', ctx: busy, action: toolAction('chat/toolCallConfirmed', 'tc-x', { approved: true, confirmed: 'user-action' }), reject: /unknown tool call tc-x/ },
  { name: 'toolCallConfirmed for a finished turn', ctx: busy, action: { ...toolAction('chat/toolCallConfirmed', 'tc-pending', { approved: true, confirmed: 'user-action' }), turnId: 'turn-1' }, reject: /turn turn-1 is not the active turn/ },
  { name: 'toolCallConfirmed with no active turn', ctx: idle, action: toolAction('chat/toolCallConfirmed', 'tc-pending', { approved: true, confirmed: 'user-action' }), reject: /no active turn/ },
  {
    name: 'toolCallConfirmed with an unknown option',
    ctx: busy,
    action: toolAction('chat/toolCallConfirmed', 'tc-pending', { approved: true, confirmed: 'user-action', selectedOptionId: 'always' }),
    reject: /unknown option always for tool call tc-pending/,
  },
  { name: 'toolCallConfirmed editing an editable input', ctx: busy, action: toolAction('chat/toolCallConfirmed', 'tc-editable', { approved: true, confirmed: 'user-action', editedToolInput: 'ls -la' }) },
  {
    name: 'toolCallConfirmed editing a non-editable input',
    ctx: busy,
    action: toolAction('chat/toolCallConfirmed', 'tc-pending', { approved: true, confirmed: 'user-action', editedToolInput: 'rm -rf /' }),
    reject: /does not allow editing its input/,
  },
  { name: 'toolCallResultConfirmed', ctx: busy, action: toolAction('chat/toolCallResultConfirmed', 'tc-review', { approved: false }) },
  {
    name: 'toolCallResultConfirmed on a pending confirmation',
    ctx: busy,
    action: toolAction('chat/toolCallResultConfirmed', 'tc-pending', { approved: true }),
    reject: /tool call tc-pending is not awaiting result review \(it is pending-confirmation\)/,
  },
  { name: 'toolCallComplete by the owning client', ctx: busy, action: toolAction('chat/toolCallComplete', 'tc-client', RESULT) },
  { name: 'toolCallComplete by the owner from pending-confirmation', ctx: busy, action: toolAction('chat/toolCallComplete', 'tc-client-pending', RESULT) },
  { name: 'toolCallComplete by another client', ctx: chatCtx(busyChat(), { clientId: 'client-2' }), action: toolAction('chat/toolCallComplete', 'tc-client', RESULT), reject: /only client client-1 may complete tool call tc-client/ },
  { name: 'toolCallComplete of a server tool', ctx: busy, action: toolAction('chat/toolCallComplete', 'tc-server', RESULT), reject: /tool call tc-server is executed by the server; clients cannot complete it/ },
  { name: 'toolCallComplete of an MCP tool', ctx: busy, action: toolAction('chat/toolCallComplete', 'tc-mcp', RESULT), reject: /executed by the server/ },
  { name: 'toolCallComplete of a finished client tool', ctx: busy, action: toolAction('chat/toolCallComplete', 'tc-client-done', RESULT), reject: /tool call tc-client-done cannot be completed \(it is completed\)/ },
  { name: 'toolCallContentChanged by the owner', ctx: busy, action: toolAction('chat/toolCallContentChanged', 'tc-client', { content: [{ type: 'text', text: 'x' }] }) },
  {
    name: 'toolCallContentChanged by another client',
    ctx: chatCtx(busyChat(), { clientId: 'client-2' }),
    action: toolAction('chat/toolCallContentChanged', 'tc-client', { content: [] }),
    reject: /only client client-1 may update tool call tc-client/,
  },
  { name: 'toolCallContentChanged of a server tool', ctx: busy, action: toolAction('chat/toolCallContentChanged', 'tc-server', { content: [] }), reject: /clients cannot update it/ },
  { name: 'toolCallContentChanged when not running', ctx: busy, action: toolAction('chat/toolCallContentChanged', 'tc-client-pending', { content: [] }), reject: /tool call tc-client-pending is not running \(it is pending-confirmation\)/ },

  // session channel
  { name: 'isReadChanged', ctx: sessionCtx(), action: { type: 'session/isReadChanged', isRead: true } },
  { name: 'isArchivedChanged', ctx: sessionCtx(), action: { type: 'session/isArchivedChanged', isArchived: false } },
  { name: 'isReadChanged with a non-boolean', ctx: sessionCtx(), action: { type: 'session/isReadChanged', isRead: 'yes' }, reject: /isRead/ },
  { name: 'defaultChatChanged to a chat of the session', ctx: sessionCtx(), action: { type: 'session/defaultChatChanged', defaultChat: 'ahp-chat:/c2' } },
  { name: 'defaultChatChanged unset', ctx: sessionCtx(), action: { type: 'session/defaultChatChanged' } },
  { name: 'defaultChatChanged to a foreign chat', ctx: sessionCtx(), action: { type: 'session/defaultChatChanged', defaultChat: 'ahp-chat:/c9' }, reject: /unknown chat ahp-chat:\/c9/ },
  { name: 'defaultChatChanged checks sessionChats when given', ctx: sessionCtx({ sessionChats: ['ahp-chat:/c9'] }), action: { type: 'session/defaultChatChanged', defaultChat: 'ahp-chat:/c9' } },
];

function withSyncedAnswers(answers: Record<string, ChatInputAnswer>): ChatState {
  return withRequest({ ...openRequest, answers });
}

function withQuestions(questions: ChatInputQuestion[]): ChatState {
  return withRequest({ id: 'req-1', questions });
}

function withRequest(request: ChatInputRequest): ChatState {
  const chat = busyChat();
  return { ...chat, activeTurn: { ...chat.activeTurn!, responseParts: [{ kind: 'inputRequest', request }] } };
}

describe('validateClientAction', () => {
  it.each(CASES.filter((c) => !c.reject).map((c) => [c.name, c] as const))('accepts: %s', (_name, c) => {
    expect(validateClientAction(c.ctx, c.action)).toBeUndefined();
  });

  it.each(CASES.filter((c) => c.reject).map((c) => [c.name, c] as const))('rejects: %s', (_name, c) => {
    expect(validateClientAction(c.ctx, c.action)).toMatch(c.reject!);
  });
});

describe('validateAnswerValue (shared with HTTP reply routes)', () => {
  const text = QUESTIONS[0]!;

  it('accepts skipped answers for any question', () => {
    expect(validateAnswerValue(text, { state: 'skipped', freeformValues: ['n/a'] })).toBeUndefined();
  });

  it('rejects a draft or submitted answer without a value, naming the question', () => {
    expect(validateAnswerValue(text, { state: 'submitted' } as ChatInputAnswer)).toBe('answer to question name is submitted but has no value');
  });

  it('checks the kind of drafts but their constraints only once submitted', () => {
    expect(validateAnswerValue(text, draft({ kind: 'text', value: 'way too long' }))).toBeUndefined();
    expect(validateAnswerValue(text, submitted({ kind: 'text', value: 'way too long' }))).toMatch(/above the maximum 5/);
  });
});

describe('parseAction', () => {
  it('names the failing field of a known action', () => {
    expect(parseAction({ type: 'chat/inputRequested', request: { id: 'r', questions: [{ kind: 'text', id: 'q' }] } })).toEqual({
      ok: false,
      message: 'chat/inputRequested: request.questions[0].message: Invalid input: expected string, received undefined',
    });
  });

  it('reports the known shape, not the unknown-kind fallback, for a malformed known kind', () => {
    const result = parseAction(answerChanged('q', { state: 'draft', value: { kind: 'number', value: 'seven' } } as never));
    expect(result).toMatchObject({ ok: false, message: expect.stringMatching(/answer\.value\.value: .*expected number/) });
  });

  it('enforces size limits on client text', () => {
    const result = parseAction({ type: 'chat/draftChanged', draft: user('x'.repeat(100_001)) });
    expect(result).toMatchObject({ ok: false, message: expect.stringMatching(/^chat\/draftChanged: draft\.text: /) });
  });

  it('passes unknown action types through with their fields', () => {
    expect(parseAction({ type: 'future/newAction', foo: 42 })).toEqual({ ok: true, action: { type: 'future/newAction', foo: 42 } });
  });

  it('keeps unknown fields of known actions', () => {
    const action = { type: 'session/isReadChanged', isRead: true, addedLater: { x: 1 } };
    expect(parseAction(action)).toEqual({ ok: true, action });
  });

  it('reads a top-level null of a known action as absent (typed peers send null to clear)', () => {
    expect(parseAction({ type: 'chat/draftChanged', draft: null })).toEqual({ ok: true, action: { type: 'chat/draftChanged' } });
    expect(validateClientAction(idle, { type: 'chat/truncated', turnId: null } as never)).toBeUndefined();
  });

  it('rejects anything without a string type', () => {
    expect(parseAction(null)).toMatchObject({ ok: false, message: expect.stringMatching(/^action: \(root\)/) });
    expect(parseAction({ type: 7 })).toMatchObject({ ok: false, message: expect.stringMatching(/^action: type: /) });
  });
});
