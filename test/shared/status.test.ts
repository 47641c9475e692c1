/**
 * Status helpers: the bitset arithmetic, chat status derivation, the session aggregate (§2.6)
 * and the session `inputNeeded` entries a chat contributes (§2.5).
 */
import { describe, expect, it } from 'vitest';
import { SessionStatus, activityOf, flagsOf, initialChatState, withActivity, withBit, type ChatState, type ChatSummary, type ResponsePart, type ToolCallState } from '../../shared/protocol/state.js';
import { aggregateSessionStatus, chatNeedsInput, deriveChatStatus, isBusy, sessionInputNeededEntries } from '../../shared/state/status.js';

const { Idle, Error: Errored, InProgress, InputNeeded, IsRead, IsArchived } = SessionStatus;
const BIT_31 = 2 ** 31;
const BIT_40 = 2 ** 40;

describe('SessionStatus bit helpers', () => {
  it('split activity and flags without losing high bits', () => {
    const status = InProgress + IsArchived + BIT_31 + BIT_40;
    expect(activityOf(status)).toBe(InProgress);
    expect(flagsOf(status)).toBe(IsArchived + BIT_31 + BIT_40);
    expect(withActivity(status, Idle)).toBe(Idle + IsArchived + BIT_31 + BIT_40);
  });

  it('set and clear single flags idempotently', () => {
    expect(withBit(InProgress + BIT_31, IsRead, true)).toBe(InProgress + IsRead + BIT_31);
    expect(withBit(InProgress + IsRead, IsRead, true)).toBe(InProgress + IsRead);
    expect(withBit(InProgress, IsRead, false)).toBe(InProgress);
  });

  it('isBusy tests bit 8 (InProgress and InputNeeded), never whole values', () => {
    expect([Idle, Errored, InProgress, InputNeeded, InProgress + IsRead, Idle + IsArchived].map(isBusy)).toEqual([false, false, true, true, true, false]);
  });
});

// ─── Chat status ─────────────────────────────────────────────────────────────

const T0 = '2026-01-01T10:00:00.000Z';

function tool(toolCall: Partial<ToolCallState> & Pick<ToolCallState, 'toolCallId' | 'status'>): ResponsePart {
  return {
    kind: 'toolCall',
    toolCall: { toolName: 'bash', displayName: 'Run', invocationMessage: 'Run', ...toolCall } as ToolCallState,
  };
}

function chatWith(parts: ResponsePart[], status: number = InProgress): ChatState {
  return {
    ...initialChatState('ahp-chat:/c1', 'Chat', T0),
    status,
    activeTurn: { id: 'turn-1', startedAt: T0, message: { text: 'Hi', origin: { kind: 'user' } }, responseParts: parts },
  };
}

describe('deriveChatStatus / chatNeedsInput', () => {
  const blocking: Array<[string, ResponsePart]> = [
    ['an open input request', { kind: 'inputRequest', request: { id: 'r1' } }],
    ['a pending confirmation', tool({ toolCallId: 't', status: 'pending-confirmation' })],
    ['a pending result confirmation', tool({ toolCallId: 't', status: 'pending-result-confirmation', confirmed: 'not-needed', success: true, pastTenseMessage: 'x' })],
    ['an MCP sign-in', tool({ toolCallId: 't', status: 'auth-required', confirmed: 'not-needed', auth: { reason: 'required', resource: { resource: 'https://x' } } })],
  ];
  it.each(blocking)('%s needs input', (_name, part) => {
    const chat = chatWith([part], InProgress + IsRead);
    expect(chatNeedsInput(chat)).toBe(true);
    expect(deriveChatStatus(chat)).toBe(InputNeeded + IsRead);
  });

  const notBlocking: Array<[string, ResponsePart]> = [
    ['an answered input request', { kind: 'inputRequest', request: { id: 'r1' }, response: 'accept' }],
    ['a client-executed running tool', tool({ toolCallId: 't', status: 'running', confirmed: 'not-needed', contributor: { kind: 'client', clientId: 'c' } })],
    ['a streaming tool', tool({ toolCallId: 't', status: 'streaming' })],
    ['an unknown part kind', { kind: 'hologram' }],
  ];
  it.each(notBlocking)('%s does not', (_name, part) => {
    const chat = chatWith([part]);
    expect(chatNeedsInput(chat)).toBe(false);
    expect(deriveChatStatus(chat)).toBe(InProgress);
  });

  it('is Idle without a turn and Error right after chat/error, flags kept', () => {
    const idle = { ...initialChatState('ahp-chat:/c1', 'Chat', T0), status: InProgress + IsArchived };
    expect(deriveChatStatus(idle)).toBe(Idle + IsArchived);
    expect(deriveChatStatus(idle, true)).toBe(Errored + IsArchived);
  });
});

// ─── Session aggregate ───────────────────────────────────────────────────────

function summary(resource: string, status: number, modifiedAt: string, activity?: string): ChatSummary {
  return { resource, title: resource, status, modifiedAt, ...(activity !== undefined && { activity }) };
}

const OLD = '2026-01-01T09:00:00.000Z';
const MID = '2026-01-01T10:00:00.000Z';
const NEW = '2026-01-01T11:00:00.000Z';

describe('aggregateSessionStatus', () => {
  it('is Idle with the session flags when there are no chats', () => {
    expect(aggregateSessionStatus([], undefined, InProgress + IsRead)).toEqual({ status: Idle + IsRead });
  });

  it('passes a single chat straight through, with session-scoped flags', () => {
    const chats = [summary('c1', InProgress + IsRead, MID, 'Thinking')];
    expect(aggregateSessionStatus(chats, undefined, IsArchived + BIT_31)).toEqual({
      status: InProgress + IsArchived + BIT_31,
      activity: 'Thinking',
      modifiedAt: MID,
    });
  });

  it('takes the default chat over a more recently modified one', () => {
    const chats = [summary('default', Idle, OLD, 'Waiting'), summary('other', InProgress, NEW, 'Busy')];
    expect(aggregateSessionStatus(chats, 'default', 0)).toEqual({ status: Idle, activity: 'Waiting', modifiedAt: NEW });
  });

  it('without a default chat, takes the most recently modified chat', () => {
    const chats = [summary('a', Idle, OLD), summary('b', InProgress, NEW, 'Busy'), summary('c', Idle, MID)];
    expect(aggregateSessionStatus(chats, undefined, 0)).toEqual({ status: InProgress, activity: 'Busy', modifiedAt: NEW });
  });

  it('falls back to recency when the default chat is not in the list', () => {
    const chats = [summary('a', InProgress, NEW)];
    expect(aggregateSessionStatus(chats, 'gone', 0).status).toBe(InProgress);
  });

  it("promotes InputNeeded from any chat, mirroring that chat's activity", () => {
    const chats = [summary('default', InProgress, NEW, 'Busy'), summary('asker', InputNeeded, OLD, 'Needs approval')];
    expect(aggregateSessionStatus(chats, 'default', IsRead)).toEqual({
      status: InputNeeded + IsRead,
      activity: 'Needs approval',
      modifiedAt: NEW,
    });
  });

  it('promotes Error over InputNeeded', () => {
    const chats = [summary('default', InputNeeded, NEW, 'Needs approval'), summary('broken', Errored, OLD, 'Rate limited')];
    expect(aggregateSessionStatus(chats, 'default', 0)).toEqual({ status: Errored, activity: 'Rate limited', modifiedAt: NEW });
  });

  it('keeps the default chat as contributor when it is the one needing input', () => {
    const chats = [summary('default', InputNeeded, OLD, 'Mine'), summary('other', InputNeeded, NEW, 'Theirs')];
    expect(aggregateSessionStatus(chats, 'default', 0).activity).toBe('Mine');
  });

  it("ignores the chats' own flags and omits activity when the contributor has none", () => {
    const chats = [summary('a', Idle + IsRead + IsArchived, MID)];
    expect(aggregateSessionStatus(chats, 'a', 0)).toEqual({ status: Idle, modifiedAt: MID });
  });
});

// ─── Session inputNeeded entries ─────────────────────────────────────────────

describe('sessionInputNeededEntries', () => {
  const CHAT = 'ahp-chat:/c1';
  const pending = tool({ toolCallId: 'tc-confirm', status: 'pending-confirmation' });
  const review = tool({ toolCallId: 'tc-review', status: 'pending-result-confirmation', confirmed: 'not-needed', success: true, pastTenseMessage: 'x' });
  const auth = tool({ toolCallId: 'tc-auth', status: 'auth-required', confirmed: 'not-needed', contributor: { kind: 'mcp', customizationId: 'm' }, auth: { reason: 'required', resource: { resource: 'https://x' } } });
  const client = tool({ toolCallId: 'tc-client', status: 'running', confirmed: 'not-needed', contributor: { kind: 'client', clientId: 'vscode-1' } });
  const server = tool({ toolCallId: 'tc-server', status: 'running', confirmed: 'not-needed' });
  const openRequest: ResponsePart = { kind: 'inputRequest', request: { id: 'req-1', message: 'Which?' } };
  const answered: ResponsePart = { kind: 'inputRequest', request: { id: 'req-0' }, response: 'cancel' };

  it('lists one entry per thing the chat is blocked on, with chat-scoped ids', () => {
    const chat = chatWith([answered, openRequest, pending, review, auth, client, server]);
    const toolCallOf = (part: ResponsePart) => (part as { toolCall: ToolCallState }).toolCall;
    expect(sessionInputNeededEntries(CHAT, chat)).toEqual([
      { kind: 'chatInput', id: `${CHAT}#req-1`, chat: CHAT, request: { id: 'req-1', message: 'Which?' } },
      { kind: 'toolConfirmation', id: `${CHAT}#tc-confirm`, chat: CHAT, turnId: 'turn-1', toolCall: toolCallOf(pending) },
      { kind: 'toolConfirmation', id: `${CHAT}#tc-review`, chat: CHAT, turnId: 'turn-1', toolCall: toolCallOf(review) },
      { kind: 'toolAuthentication', id: `${CHAT}#tc-auth`, chat: CHAT, turnId: 'turn-1', toolCall: toolCallOf(auth) },
      {
        kind: 'toolClientExecution',
        id: `${CHAT}#tc-client`,
        chat: CHAT,
        turnId: 'turn-1',
        clientId: 'vscode-1',
        toolCall: toolCallOf(client),
      },
    ]);
  });

  it('contributes nothing without an active turn (turn end and truncation clear entries)', () => {
    expect(sessionInputNeededEntries(CHAT, initialChatState(CHAT, 'Chat', T0))).toEqual([]);
  });

  it('contributes nothing for a turn that is only working', () => {
    expect(sessionInputNeededEntries(CHAT, chatWith([server, answered]))).toEqual([]);
  });
});
