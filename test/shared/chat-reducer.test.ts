/**
 * Reducer properties the JSON fixtures cannot express: identity on no-ops, inputs never mutated,
 * no clock, and the post-2026-08 behaviour that has no upstream fixtures ([I] idempotent
 * turnStarted, [L] steering list, [S] error parts and turnResume).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseAction, type ChatAction } from '../../shared/protocol/actions.js';
import { SessionStatus, initialChatState, initialRootState, initialSessionState, type ChatState, type ErrorPart, type Message, type SessionState, type ToolCallState } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { rootReducer } from '../../shared/state/root-reducer.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';

// ─── Helpers ─────────────────────────────────────────────────────────────────

const T0 = '2026-01-01T10:00:00.000Z';
const T1 = '2026-01-01T10:00:05.000Z';

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}

const userMessage = (text: string): Message => ({ text, origin: { kind: 'user' } });

function apply(state: ChatState, ...actions: ChatAction[]): ChatState {
  return actions.reduce(chatReducer, state);
}

const idle = (): ChatState => deepFreeze(initialChatState('ahp-chat:/c1', 'Chat', T0));

const started = (turnId = 'turn-1'): ChatAction => ({
  type: 'chat/turnStarted',
  turnId,
  startedAt: T1,
  message: userMessage('Hello'),
});

/** A chat with `turn-1` active. */
const active = (): ChatState => deepFreeze(apply(idle(), started()));

const toolStart = (toolCallId: string, extra: Partial<ToolCallState> = {}): ChatAction => ({
  type: 'chat/toolCallStart',
  turnId: 'turn-1',
  toolCallId,
  toolName: 'bash',
  displayName: 'Run',
  ...extra,
});

const errorPart = (resumable: boolean): ErrorPart => ({
  kind: 'error',
  error: { errorType: 'rateLimit', message: 'Too many requests' },
  resumable,
});

afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

// ─── Identity and purity ─────────────────────────────────────────────────────

describe('chatReducer no-ops return the same object', () => {
  const noOps: Array<[string, () => ChatState, { type: string } & Record<string, unknown>]> = [
    ['unknown action type', active, { type: 'chat/somethingFromTheFuture', x: 1 }],
    ['action of another channel', active, { type: 'session/titleChanged', title: 'x' }],
    ['delta for another turn', active, { type: 'chat/delta', turnId: 'other', partId: 'p', content: 'x' }],
    ['delta for an unknown part', active, { type: 'chat/delta', turnId: 'turn-1', partId: 'nope', content: 'x' }],
    ['usage without an active turn', idle, { type: 'chat/usage', turnId: 'turn-1', usage: { inputTokens: 1 } }],
    ['turnComplete for another turn', active, { type: 'chat/turnComplete', turnId: 'other', duration: 1 }],
    ['truncated to an unknown turn', active, { type: 'chat/truncated', turnId: 'nope' }],
    ['turnStarted replay of the active turn', active, started()],
    ['turnResume without an errored turn', idle, { type: 'chat/turnResume', turnId: 'turn-1' }],
    ['inputAnswerChanged for an unknown request', active, { type: 'chat/inputAnswerChanged', requestId: 'r', questionId: 'q' }],
    ['inputCompleted for an unknown request', active, { type: 'chat/inputCompleted', requestId: 'r', response: 'cancel' }],
    ['inputRequested without an active turn', idle, { type: 'chat/inputRequested', request: { id: 'r' } }],
    ['pendingMessageRemoved for an unknown id', idle, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'x' }],
    ['steeringMessageRemoved for an unknown id', idle, { type: 'chat/steeringMessageRemoved', id: 'x' }],
    ['queuedMessagesReordered with nothing queued', idle, { type: 'chat/queuedMessagesReordered', order: ['a'] }],
    ['activityChanged clearing an absent activity', idle, { type: 'chat/activityChanged' }],
    ['draftChanged clearing an absent draft', idle, { type: 'chat/draftChanged' }],
    ['toolCallDelta for an unknown tool call', active, { type: 'chat/toolCallDelta', turnId: 'turn-1', toolCallId: 'x', content: 'a' }],
    ['toolCallConfirmed for an unknown tool call', active, { type: 'chat/toolCallConfirmed', turnId: 'turn-1', toolCallId: 'x', approved: true, confirmed: 'user-action' }],
    ['responsePart carrying an error part', active, { type: 'chat/responsePart', turnId: 'turn-1', part: errorPart(true) }],
    ['known type with a malformed payload', active, { type: 'chat/inputRequested' }],
    ['known type with a malformed payload (tool)', active, { type: 'chat/toolCallComplete', turnId: 'turn-1' }],
  ];

  it.each(noOps)('%s', (_name, makeState, action) => {
    const state = makeState();
    expect(chatReducer(state, action)).toBe(state);
  });

  it('treats a second toolCallStart with the same id as a no-op (ids address tool calls)', () => {
    const state = deepFreeze(apply(active(), toolStart('tc-1')));
    expect(chatReducer(state, toolStart('tc-1', { displayName: 'Other' }))).toBe(state);
  });
});

describe('chatReducer purity', () => {
  it('never mutates its input through a full turn (inputs are deep-frozen)', () => {
    const initial = idle();
    const snapshot = JSON.stringify(initial);
    const actions: ChatAction[] = [
      { type: 'chat/pendingMessageSet', kind: 'queued', id: 'q-1', message: userMessage('Next') },
      { type: 'chat/steeringMessageSet', steeringMessage: { id: 's-1', message: userMessage('Steer') } },
      { ...started(), queuedMessageId: 'q-1' } as ChatAction,
      { type: 'chat/responsePart', turnId: 'turn-1', part: { kind: 'markdown', id: 'md', content: '' } },
      { type: 'chat/delta', turnId: 'turn-1', partId: 'md', content: 'Hi' },
      toolStart('tc-1'),
      { type: 'chat/toolCallDelta', turnId: 'turn-1', toolCallId: 'tc-1', content: '{' },
      { type: 'chat/toolCallReady', turnId: 'turn-1', toolCallId: 'tc-1', invocationMessage: 'Run', toolInput: 'ls' },
      { type: 'chat/toolCallConfirmed', turnId: 'turn-1', toolCallId: 'tc-1', approved: true, confirmed: 'user-action', editedToolInput: 'ls -a' },
      { type: 'chat/toolCallContentChanged', turnId: 'turn-1', toolCallId: 'tc-1', content: [{ type: 'text', text: 'out' }] },
      { type: 'chat/toolCallComplete', turnId: 'turn-1', toolCallId: 'tc-1', result: { success: true, pastTenseMessage: 'Ran' }, requiresResultConfirmation: true },
      { type: 'chat/toolCallResultConfirmed', turnId: 'turn-1', toolCallId: 'tc-1', approved: true },
      { type: 'chat/inputRequested', request: { id: 'r1', questions: [{ kind: 'boolean', id: 'q', message: 'Ok?' }] } },
      { type: 'chat/inputAnswerChanged', requestId: 'r1', questionId: 'q', answer: { state: 'draft', value: { kind: 'boolean', value: true } } },
      { type: 'chat/inputCompleted', requestId: 'r1', response: 'accept' },
      { type: 'chat/usage', turnId: 'turn-1', usage: { inputTokens: 3 } },
      { type: 'chat/turnComplete', turnId: 'turn-1', duration: 10 },
      { type: 'chat/truncated' },
    ];
    let state = initial;
    for (const action of actions) {
      const next = chatReducer(state, deepFreeze(action));
      // Every step is effective: a mutation attempt would throw inside the reducer, which turns
      // it into a no-op, so "same object" here would mean a write to frozen input.
      expect(next, action.type).not.toBe(state);
      state = deepFreeze(next);
    }
    expect(JSON.stringify(initial)).toBe(snapshot);
    expect(state.turns).toEqual([]);
  });

  it('never reads the clock or randomness', () => {
    const RealDate = Date;
    vi.stubGlobal(
      'Date',
      class extends RealDate {
        constructor(...args: number[]) {
          if (args.length === 0) throw new Error('reducer read the clock (new Date())');
          super(args[0]!);
        }
        static override now(): number {
          throw new Error('reducer read the clock (Date.now)');
        }
      },
    );
    vi.spyOn(Math, 'random').mockImplementation(() => {
      throw new Error('reducer used Math.random');
    });
    const state = apply(
      idle(),
      started(),
      { type: 'chat/inputRequested', request: { id: 'r1' } },
      { type: 'chat/inputCompleted', requestId: 'r1', response: 'decline' },
      { type: 'chat/turnComplete', turnId: 'turn-1', duration: 1500 },
      { type: 'chat/truncated' },
    );
    // Had any of those thrown, the reducer would have swallowed it and kept the old state.
    expect(state.modifiedAt).toBe('2026-01-01T10:00:06.500Z');
    expect(state.turns).toEqual([]);
  });
});

// ─── modifiedAt ──────────────────────────────────────────────────────────────

describe('modifiedAt (clock-free rule)', () => {
  it('turnStarted sets it to startedAt', () => {
    expect(active().modifiedAt).toBe(T1);
  });

  it('turn end sets startedAt + duration, with negative durations clamped to 0', () => {
    expect(apply(active(), { type: 'chat/turnComplete', turnId: 'turn-1', duration: 250 }).modifiedAt).toBe('2026-01-01T10:00:05.250Z');
    const cancelled = apply(active(), { type: 'chat/turnCancelled', turnId: 'turn-1', duration: -40 });
    expect(cancelled.modifiedAt).toBe(T1);
    expect(cancelled.turns[0]?.duration).toBe(0);
  });

  it('is left alone by actions without a timestamp', () => {
    const state = apply(
      active(),
      { type: 'chat/inputRequested', request: { id: 'r1' } },
      { type: 'chat/pendingMessageSet', kind: 'queued', id: 'q', message: userMessage('x') },
      { type: 'chat/activityChanged', activity: 'Thinking' },
      { type: 'chat/truncated' },
    );
    expect(state.modifiedAt).toBe(T1);
  });
});

// ─── [I] idempotent turnStarted ──────────────────────────────────────────────

describe('[I] turnStarted is idempotent by turn id', () => {
  it('a replayed start does not reset a streaming turn', () => {
    const streaming = deepFreeze(apply(active(), { type: 'chat/responsePart', turnId: 'turn-1', part: { kind: 'markdown', id: 'md', content: 'partial' } }));
    expect(chatReducer(streaming, started())).toBe(streaming);
  });

  it('a replayed start of a finished turn does not resurrect it', () => {
    const done = deepFreeze(apply(active(), { type: 'chat/turnComplete', turnId: 'turn-1', duration: 5 }));
    expect(chatReducer(done, started())).toBe(done);
  });

  it('a different turn id while a turn is active replaces it (the server must guard this)', () => {
    const next = chatReducer(active(), started('turn-2'));
    expect(next.activeTurn?.id).toBe('turn-2');
  });
});

// ─── Status flags ────────────────────────────────────────────────────────────

describe('status derivation keeps flags', () => {
  const BIT_31 = 2 ** 31;

  it('keeps IsArchived and unknown bits across a whole turn, clears IsRead on start', () => {
    const chat = deepFreeze({ ...idle(), status: SessionStatus.Idle + SessionStatus.IsRead + SessionStatus.IsArchived + BIT_31 });
    const running = chatReducer(chat, started());
    expect(running.status).toBe(SessionStatus.InProgress + SessionStatus.IsArchived + BIT_31);
    const done = chatReducer(running, { type: 'chat/turnComplete', turnId: 'turn-1', duration: 1 });
    expect(done.status).toBe(SessionStatus.Idle + SessionStatus.IsArchived + BIT_31);
  });

  it('inputRequested raises InputNeeded and clears IsRead; completion returns to InProgress', () => {
    const read = deepFreeze({ ...active(), status: SessionStatus.InProgress + SessionStatus.IsRead });
    const asked = chatReducer(read, { type: 'chat/inputRequested', request: { id: 'r1' } });
    expect(asked.status).toBe(SessionStatus.InputNeeded);
    const answered = chatReducer(asked, { type: 'chat/inputCompleted', requestId: 'r1', response: 'accept' });
    expect(answered.status).toBe(SessionStatus.InProgress);
  });

  it('a running client-executed tool does not need input', () => {
    const state = apply(active(), toolStart('tc-1', { contributor: { kind: 'client', clientId: 'c1' } }), { type: 'chat/toolCallReady', turnId: 'turn-1', toolCallId: 'tc-1', invocationMessage: 'Run', confirmed: 'not-needed' });
    expect(state.status).toBe(SessionStatus.InProgress);
  });
});

// ─── [S] error parts and turnResume ──────────────────────────────────────────

describe('[A]/[S] chat/error', () => {
  it('[S] appends the error part last, ends the turn as error and sets Error (flags kept)', () => {
    const chat = deepFreeze({ ...active(), status: SessionStatus.InProgress + SessionStatus.IsArchived });
    const state = apply(chat, toolStart('tc-1'), { type: 'chat/error', turnId: 'turn-1', duration: 100, part: errorPart(true) });
    expect(state.activeTurn).toBeUndefined();
    expect(state.status).toBe(SessionStatus.Error + SessionStatus.IsArchived);
    const [turn] = state.turns;
    expect(turn?.state).toBe('error');
    expect(turn?.error).toBeUndefined();
    expect(turn?.responseParts.at(-1)).toEqual(errorPart(true));
    // Unfinished tools are cancelled before the error part is appended.
    expect(turn?.responseParts[0]).toMatchObject({ kind: 'toolCall', toolCall: { status: 'cancelled', reason: 'skipped' } });
  });

  it('[A] records the error on the turn', () => {
    const error = { errorType: 'runtime', message: 'boom' };
    const state = chatReducer(active(), { type: 'chat/error', turnId: 'turn-1', duration: 1, error });
    expect(state.turns[0]).toMatchObject({ state: 'error', error, responseParts: [] });
    expect(state.status).toBe(SessionStatus.Error);
  });

  it('a new turn after an error goes back to InProgress', () => {
    const errored = chatReducer(active(), { type: 'chat/error', turnId: 'turn-1', duration: 1, part: errorPart(false) });
    expect(chatReducer(errored, started('turn-2')).status).toBe(SessionStatus.InProgress);
  });
});

describe('[S] chat/turnResume', () => {
  const errored = (resumable: boolean): ChatState =>
    deepFreeze({
      ...apply(
        active(),
        { type: 'chat/responsePart', turnId: 'turn-1', part: { kind: 'markdown', id: 'md', content: 'so far' } },
        { type: 'chat/usage', turnId: 'turn-1', usage: { inputTokens: 7 } },
        { type: 'chat/error', turnId: 'turn-1', duration: 1, part: errorPart(resumable) },
      ),
      status: SessionStatus.Error + SessionStatus.IsRead,
    });

  it('moves the latest resumable errored turn back to activeTurn unchanged', () => {
    const before = errored(true);
    const state = chatReducer(before, { type: 'chat/turnResume', turnId: 'turn-1' });
    const turn = before.turns[0]!;
    expect(state.turns).toEqual([]);
    expect(state.activeTurn).toEqual({
      id: 'turn-1',
      startedAt: T1,
      message: turn.message,
      responseParts: turn.responseParts,
      usage: { inputTokens: 7 },
    });
    expect(state.status).toBe(SessionStatus.InProgress);
    expect(state.modifiedAt).toBe(before.modifiedAt);
  });

  it('is a no-op for a non-resumable error, a stale turn id or while a turn is active', () => {
    const notResumable = errored(false);
    expect(chatReducer(notResumable, { type: 'chat/turnResume', turnId: 'turn-1' })).toBe(notResumable);
    const resumable = errored(true);
    expect(chatReducer(resumable, { type: 'chat/turnResume', turnId: 'turn-0' })).toBe(resumable);
    const busy = deepFreeze(chatReducer(resumable, started('turn-2')));
    expect(chatReducer(busy, { type: 'chat/turnResume', turnId: 'turn-1' })).toBe(busy);
  });

  it('is a no-op for a completed turn', () => {
    const done = deepFreeze(apply(active(), { type: 'chat/turnComplete', turnId: 'turn-1', duration: 1 }));
    expect(chatReducer(done, { type: 'chat/turnResume', turnId: 'turn-1' })).toBe(done);
  });
});

// ─── [L] steering-message list ───────────────────────────────────────────────

describe('[L] steering-message list', () => {
  const steer = (id: string, text: string): ChatAction => ({
    type: 'chat/steeringMessageSet',
    steeringMessage: { id, message: userMessage(text) },
  });

  it('upserts by id, removes by id, and drops the field when empty', () => {
    let state = apply(idle(), steer('a', 'one'), steer('b', 'two'), steer('a', 'one, edited'));
    expect(state.steeringMessages).toEqual([
      { id: 'a', message: userMessage('one, edited') },
      { id: 'b', message: userMessage('two') },
    ]);
    state = apply(state, { type: 'chat/steeringMessageRemoved', id: 'a' }, { type: 'chat/steeringMessageRemoved', id: 'b' });
    expect('steeringMessages' in state).toBe(false);
  });

  it('is independent of the legacy single slot', () => {
    const state = apply(idle(), { type: 'chat/pendingMessageSet', kind: 'steering', id: 'slot', message: userMessage('legacy') }, steer('list', 'new'), { type: 'chat/pendingMessageRemoved', kind: 'steering', id: 'slot' });
    expect(state.steeringMessage).toBeUndefined();
    expect(state.steeringMessages).toEqual([{ id: 'list', message: userMessage('new') }]);
  });

  it('turnStarted with queuedMessageId consumes a list entry', () => {
    const state = apply(idle(), steer('a', 'one'), steer('b', 'two'), { ...started(), queuedMessageId: 'a' } as ChatAction);
    expect(state.steeringMessages).toEqual([{ id: 'b', message: userMessage('two') }]);
  });
});

// ─── Input requests ──────────────────────────────────────────────────────────

describe('input requests', () => {
  const ask = (id: string, message = 'Question?'): ChatAction => ({ type: 'chat/inputRequested', request: { id, message } });

  it('re-requesting an open id updates it in place (position kept)', () => {
    const state = apply(active(), ask('r1'), { type: 'chat/responsePart', turnId: 'turn-1', part: { kind: 'markdown', id: 'md', content: '' } }, ask('r1', 'Updated?'));
    expect(state.activeTurn?.responseParts.map((part) => part.kind)).toEqual(['inputRequest', 'markdown']);
    expect(state.activeTurn?.responseParts[0]).toEqual({ kind: 'inputRequest', request: { id: 'r1', message: 'Updated?' } });
  });

  it('a resolved part is history: the same id is appended as a new part', () => {
    const state = apply(active(), ask('r1'), { type: 'chat/inputCompleted', requestId: 'r1', response: 'decline' }, ask('r1'));
    expect(state.activeTurn?.responseParts).toEqual([
      { kind: 'inputRequest', request: { id: 'r1', message: 'Question?' }, response: 'decline' },
      { kind: 'inputRequest', request: { id: 'r1', message: 'Question?' } },
    ]);
  });

  it('drafts from several clients merge per question; completion overlays the final answers', () => {
    const draft = (value: string) => ({ state: 'draft' as const, value: { kind: 'text' as const, value } });
    const state = apply(
      active(),
      ask('r1'),
      { type: 'chat/inputAnswerChanged', requestId: 'r1', questionId: 'a', answer: draft('from client 1') },
      { type: 'chat/inputAnswerChanged', requestId: 'r1', questionId: 'b', answer: draft('from client 2') },
      {
        type: 'chat/inputCompleted',
        requestId: 'r1',
        response: 'accept',
        answers: { b: { state: 'submitted', value: { kind: 'text', value: 'final' } } },
      },
    );
    const part = state.activeTurn?.responseParts[0];
    expect(part).toEqual({
      kind: 'inputRequest',
      request: {
        id: 'r1',
        message: 'Question?',
        answers: { a: draft('from client 1'), b: { state: 'submitted', value: { kind: 'text', value: 'final' } } },
      },
      response: 'accept',
    });
  });

  it('an unanswered request stays in the finished turn without a response', () => {
    const state = apply(active(), ask('r1'), { type: 'chat/turnCancelled', turnId: 'turn-1', duration: 1 });
    expect(state.turns[0]?.responseParts).toEqual([{ kind: 'inputRequest', request: { id: 'r1', message: 'Question?' } }]);
    expect(state.status).toBe(SessionStatus.Idle);
  });

  it('stores a client-chosen "__proto__" question id as an ordinary key', () => {
    const state = apply(active(), ask('r1'), {
      type: 'chat/inputAnswerChanged',
      requestId: 'r1',
      questionId: '__proto__',
      answer: { state: 'skipped' },
    });
    const part = state.activeTurn?.responseParts[0];
    const answers = part && part.kind === 'inputRequest' ? (part['request'] as { answers?: object }).answers : undefined;
    expect(answers && Object.getPrototypeOf(answers)).toBe(Object.prototype);
    expect(answers && Object.keys(answers)).toEqual(['__proto__']);
  });
});

// ─── Tool calls ──────────────────────────────────────────────────────────────

describe('tool calls', () => {
  it('a result cannot smuggle state fields (status, ids) into the tool call', () => {
    const state = apply(active(), toolStart('tc-1'), { type: 'chat/toolCallReady', turnId: 'turn-1', toolCallId: 'tc-1', invocationMessage: 'Run', confirmed: 'not-needed' }, {
      type: 'chat/toolCallComplete',
      turnId: 'turn-1',
      toolCallId: 'tc-1',
      result: { success: true, pastTenseMessage: 'Ran', status: 'running', toolCallId: 'evil' },
    } as ChatAction);
    expect(state.activeTurn?.responseParts[0]).toMatchObject({
      toolCall: { status: 'completed', toolCallId: 'tc-1', success: true },
    });
  });

  it('turn end cancels every unfinished status as skipped and keeps finished ones', () => {
    const state = apply(
      active(),
      toolStart('streaming'),
      toolStart('pending'),
      { type: 'chat/toolCallReady', turnId: 'turn-1', toolCallId: 'pending', invocationMessage: 'Ask' },
      toolStart('done'),
      { type: 'chat/toolCallReady', turnId: 'turn-1', toolCallId: 'done', invocationMessage: 'Go', confirmed: 'setting' },
      { type: 'chat/toolCallComplete', turnId: 'turn-1', toolCallId: 'done', result: { success: true, pastTenseMessage: 'Went' } },
      { type: 'chat/turnComplete', turnId: 'turn-1', duration: 1 },
    );
    const statuses = state.turns[0]?.responseParts.map((part) => (part.kind === 'toolCall' ? [(part['toolCall'] as ToolCallState).status, (part['toolCall'] as { reason?: string }).reason] : []));
    expect(statuses).toEqual([
      ['cancelled', 'skipped'],
      ['cancelled', 'skipped'],
      ['completed', undefined],
    ]);
  });
});

// ─── Other chat actions ──────────────────────────────────────────────────────

describe('history and queue details', () => {
  it('turnsLoaded skips turns that are already present, including the active one', () => {
    const loaded = chatReducer(active(), {
      type: 'chat/turnsLoaded',
      turns: [
        { id: 'turn-0', message: userMessage('older'), responseParts: [], state: 'complete' },
        { id: 'turn-1', message: userMessage('dup of active'), responseParts: [], state: 'complete' },
      ],
    });
    expect(loaded.turns.map((turn) => turn.id)).toEqual(['turn-0']);
  });

  it('queuedMessagesReordered ignores repeated ids', () => {
    const queued = apply(idle(), ...['a', 'b', 'c'].map((id): ChatAction => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: userMessage(id) })), { type: 'chat/queuedMessagesReordered', order: ['c', 'c', 'a'] });
    expect(queued.queuedMessages?.map((message) => message.id)).toEqual(['c', 'a', 'b']);
  });
});

// ─── Session and root reducers ───────────────────────────────────────────────

describe('sessionReducer', () => {
  const session = (): SessionState =>
    deepFreeze({
      ...initialSessionState('ahp-session:/s1', 'demo', 'Session'),
      chats: [{ resource: 'ahp-chat:/c1', title: 'Chat', status: SessionStatus.Idle, modifiedAt: T0 }],
    });

  it('returns the same object for no-ops', () => {
    const state = session();
    for (const action of [
      { type: 'session/fromTheFuture' },
      { type: 'chat/turnStarted' },
      { type: 'session/chatRemoved', chat: 'ahp-chat:/unknown' },
      { type: 'session/inputNeededRemoved', id: 'nope' },
      { type: 'session/isReadChanged', isRead: false },
      { type: 'session/ready' },
      { type: 'session/inputNeededSet' },
    ]) {
      expect(sessionReducer(state, action), action.type).toBe(state);
    }
  });

  it('chatUpdated merges changes but never renames the chat', () => {
    const state = sessionReducer(session(), {
      type: 'session/chatUpdated',
      chat: 'ahp-chat:/c1',
      changes: { title: 'Renamed', resource: 'ahp-chat:/other' },
    });
    expect(state.chats).toEqual([{ resource: 'ahp-chat:/c1', title: 'Renamed', status: SessionStatus.Idle, modifiedAt: T0 }]);
  });

  it('flag toggles keep unknown bits', () => {
    const withHighBit = deepFreeze({ ...session(), status: SessionStatus.InProgress + 2 ** 31 });
    const read = sessionReducer(withHighBit, { type: 'session/isReadChanged', isRead: true });
    expect(read.status).toBe(SessionStatus.InProgress + SessionStatus.IsRead + 2 ** 31);
  });

  it('titleChanged and stateReplaced', () => {
    expect(sessionReducer(session(), { type: 'session/titleChanged', title: 'New' }).title).toBe('New');
    const replacement = initialSessionState('ahp-session:/s1', 'demo', 'Replaced');
    expect(sessionReducer(session(), { type: 'x-session/stateReplaced', state: replacement })).toBe(replacement);
  });

  it('reads the pre-rename session/stateReplaced as x-session/stateReplaced (logs and agents written before)', () => {
    const replacement = initialSessionState('ahp-session:/s1', 'demo', 'Replaced');
    const legacy: { type: string; state: unknown } = { type: 'session/stateReplaced', state: replacement };
    expect(sessionReducer(session(), legacy)).toBe(replacement);
    const parsed = parseAction(legacy);
    expect(parsed).toEqual({ ok: true, action: { type: 'x-session/stateReplaced', state: replacement } });
    // The input object is left as it was: the rename is made on a copy.
    expect(legacy.type).toBe('session/stateReplaced');
  });
});

describe('rootReducer', () => {
  it('replaces the agent list and ignores unknown actions', () => {
    const root = deepFreeze(initialRootState([{ provider: 'a', displayName: 'A' }]));
    expect(rootReducer(root, { type: 'root/somethingNew' })).toBe(root);
    const next = rootReducer(root, { type: 'root/agentsChanged', agents: [{ provider: 'b', displayName: 'B' }] });
    expect(next.agents).toEqual([{ provider: 'b', displayName: 'B' }]);
  });
});
