/**
 * Issue 18.7, the shared half: with 3,000 tool calls waiting in one turn, every answer used to
 * make the chat reducer find its tool call by scanning the earlier parts, the status derivation
 * scan for a part still waiting, and every waiter's selector scan again: quadratic in the burst.
 * The reducers and selectors now find a part through an index kept beside the state
 * (shared/state/part-index.ts) and count the waiting parts as they change.
 *
 * Measured as work, not time: each pending part counts how often its `kind` is read. Answering
 * in reverse order (the worst case for a scan from the front) must read each part a bounded
 * number of times, not once per answer.
 */
import { describe, expect, it } from 'vitest';
import { initialChatState, isPartOfKind, type ChatState, type ResponsePart, type ToolCallState } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { positionsOf, toolKey, appendPart, replacePart } from '../../shared/state/part-index.js';
import { findActiveToolCall, findDecidedToolCall } from '../../shared/state/selectors.js';
import { chatNeedsInput, sessionInputNeededEntryOf } from '../../shared/state/status.js';

const BURST = Number(process.env.BURST_N ?? 3_000);
const T0 = '2026-01-01T10:00:00.000Z';

let kindReads = 0;
/** A tool-call part waiting for confirmation whose `kind` reads are counted. */
function countedPendingTool(i: number): ResponsePart {
  const part = { toolCall: { toolCallId: `tool-${i}`, status: 'pending-confirmation', toolName: 'touch', displayName: 'touch', invocationMessage: 'touch' } as ToolCallState };
  Object.defineProperty(part, 'kind', {
    enumerable: true,
    get: () => {
      kindReads++;
      return 'toolCall';
    },
  });
  return part as unknown as ResponsePart;
}

describe('a burst of permission requests in one turn', () => {
  it(`answering ${BURST} pending tool calls reads each part a bounded number of times (reducer, status, waiters' selectors)`, { timeout: 180_000 }, () => {
    let chat: ChatState = {
      ...initialChatState('ahp-chat:/c', 'Burst', T0),
      activeTurn: { id: 't1', startedAt: T0, message: { text: 'go', origin: { kind: 'user' } }, responseParts: Array.from({ length: BURST }, (_, i) => countedPendingTool(i)) },
    };
    expect(chatNeedsInput(chat)).toBe(true);
    kindReads = 0;
    for (let i = BURST - 1; i >= 0; i--) {
      const toolCallId = `tool-${i}`;
      const next = chatReducer(chat, { type: 'chat/toolCallConfirmed', turnId: 't1', toolCallId, approved: true, confirmed: 'user-action' });
      expect(next).not.toBe(chat);
      chat = next;
      // What the agent's waiter, the session roll-up and the status read after each commit.
      expect(findDecidedToolCall(chat, toolCallId)?.status).toBe('running');
      expect(sessionInputNeededEntryOf('ahp-chat:/c', chat, toolCallId)).toBeUndefined();
      expect(chatNeedsInput(chat)).toBe(i > 0);
    }
    // A scan per answer reads ~BURST²/2 = 4.5 million times; the index reads each part about
    // a dozen times in all (index, count, and each lookup's check of the part it found).
    expect(kindReads).toBeLessThanOrEqual(20 * BURST);
    expect(findActiveToolCall(chat, 'tool-0')?.status).toBe('running');
  });

  it('starting and readying tool calls one after another keeps one index (no part is re-read per new call)', () => {
    let chat: ChatState = { ...initialChatState('ahp-chat:/c', 'Burst', T0), activeTurn: { id: 't1', startedAt: T0, message: { text: 'go', origin: { kind: 'user' } }, responseParts: [countedPendingTool(-1)] } };
    kindReads = 0;
    for (let i = 0; i < BURST; i++) {
      chat = chatReducer(chat, { type: 'chat/toolCallStart', turnId: 't1', toolCallId: `new-${i}`, toolName: 'touch', displayName: 'touch' });
      chat = chatReducer(chat, { type: 'chat/toolCallReady', turnId: 't1', toolCallId: `new-${i}`, invocationMessage: 'touch', confirmationTitle: 'Allow?' });
    }
    expect(chat.activeTurn!.responseParts).toHaveLength(BURST + 1);
    expect(findActiveToolCall(chat, `new-${BURST - 1}`)?.status).toBe('pending-confirmation');
    // The first part is read when the turn's index is built and counted, not once per new call.
    expect(kindReads).toBeLessThanOrEqual(4);
  });

  it('arrays that share an index still answer as a scan would (diverging appends, a repeated id)', () => {
    const tool = (id: string): ResponsePart => ({ kind: 'toolCall', toolCall: { toolCallId: id, status: 'streaming', toolName: 't', displayName: 't' } as ToolCallState });
    const scan = (parts: readonly ResponsePart[], id: string): number[] => parts.flatMap((p, i) => (isPartOfKind(p, 'toolCall') && p.toolCall.toolCallId === id ? [i] : []));
    const base: ResponsePart[] = [tool('a'), tool('b')];
    expect(positionsOf(base, toolKey('a'))).toEqual([0]);
    const left = appendPart(base, tool('x'));
    const right = appendPart(appendPart(base, tool('y')), tool('x'));
    const replaced = replacePart(left, 0, tool('a'));
    const repeated = appendPart(right, tool('a'));
    for (const parts of [base, left, right, replaced, repeated]) {
      for (const id of ['a', 'b', 'x', 'y', 'z']) expect(positionsOf(parts, toolKey(id)), id).toEqual(scan(parts, id));
    }
  });
});
