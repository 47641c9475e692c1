/**
 * Issue 18.7: tool-output and usage updates were not counted in the per-turn budget (one turn
 * added 430 MB to the log), and a tool re-sending its whole output logged every copy. The real
 * translator against a recording turn context whose dispatches become durable when the test says.
 */
import type * as acp from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import { TURN_LIMITS, TurnTranslator } from '../../server/agents/acp/turn-translator.js';
import type { TurnContext } from '../../server/agents/agent.js';
import { silentLogger } from '../../server/log.js';
import type { WireAction } from '../../shared/protocol/messages.js';

/** A turn context that records dispatches; `durable()` settles every one dispatched so far. */
function recordingTurn(): { ctx: TurnContext; actions: WireAction[]; durable(): void; settle(): Promise<void> } {
  const actions: WireAction[] = [];
  let waiting: Array<() => void> = [];
  const unused = (): never => {
    throw new Error('not used by these tests');
  };
  const ctx: TurnContext = {
    session: 'ahp-session:/s',
    chat: 'ahp-chat:/c',
    turnId: 't1',
    message: { text: 'go' } as TurnContext['message'],
    signal: new AbortController().signal,
    say: unused,
    requestInput: unused,
    runTool: unused,
    sleep: unused,
    barrier: unused,
    waitFor: unused,
    dispatch(action) {
      actions.push(action);
      return new Promise<number>((resolve) => waiting.push(() => resolve(actions.length)));
    },
  };
  return {
    ctx,
    actions,
    async settle() {
      // Durable, then let the translator send what waited, until nothing is left in flight.
      while (waiting.length > 0) {
        this.durable();
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
    durable() {
      const now = waiting;
      waiting = [];
      for (const settle of now) settle();
    },
  };
}

const chars = (actions: readonly WireAction[]): number => actions.reduce((sum, a) => sum + JSON.stringify(a).length, 0);
let ids = 0;
const newId = (): string => `id-${++ids}`;

describe('the per-turn budget of an ACP agent (issue 18.7)', () => {
  it('counts usage updates: an agent sending 300,000 of them is cut off at the budget with a notice', () => {
    const turn = recordingTurn();
    const translator = new TurnTranslator(turn.ctx, newId, silentLogger);
    for (let i = 0; i < 300_000; i++) translator.onUpdate({ sessionUpdate: 'usage_update', used: i, size: 1_000_000 } as acp.SessionUpdate);
    const usage = turn.actions.filter((a) => a.type === 'chat/usage');
    expect(usage.length).toBeLessThan(300_000);
    expect(chars(usage)).toBeLessThanOrEqual(TURN_LIMITS.chars * 2);
    expect(turn.actions.at(-1)).toMatchObject({ type: 'chat/responsePart', part: { kind: 'systemNotification' } });
  });

  it('a tool re-sending its whole output 5,000 times logs only the newest waiting copy, and its output counts in the budget', async () => {
    const turn = recordingTurn();
    const translator = new TurnTranslator(turn.ctx, newId, silentLogger);
    translator.onUpdate({ sessionUpdate: 'tool_call', toolCallId: 'tool', title: 'run', kind: 'execute', status: 'in_progress' } as acp.SessionUpdate);
    let output = '';
    const resend = (): void => translator.onUpdate({ sessionUpdate: 'tool_call_update', toolCallId: 'tool', content: [{ type: 'content', content: { type: 'text', text: output } }] } as acp.SessionUpdate);
    for (let i = 0; i < 5_000; i++) {
      output += `line ${i}\n`;
      resend();
      if (i % 1_000 === 999) await turn.settle();
    }
    await turn.settle();
    const sent = turn.actions.length;
    resend(); // the same content again: not sent again
    await turn.settle();
    expect(turn.actions.length).toBe(sent);
    await translator.flush();
    const changes = turn.actions.filter((a) => a.type === 'chat/toolCallContentChanged');
    // One in flight at a time, the newest replacing what waited: a handful of copies, the last one complete.
    expect(changes.length).toBeLessThanOrEqual(10);
    expect(JSON.stringify(changes.at(-1))).toContain('line 4999\\n');

    // Whole copies still count: a tool whose output is re-sent past the budget is cut off.
    const big = recordingTurn();
    const heavy = new TurnTranslator(big.ctx, newId, silentLogger);
    heavy.onUpdate({ sessionUpdate: 'tool_call', toolCallId: 'tool', title: 'run', kind: 'execute', status: 'in_progress' } as acp.SessionUpdate);
    const chunk = 'x'.repeat(60_000);
    for (let i = 0; i < 200; i++) {
      heavy.onUpdate({ sessionUpdate: 'tool_call_update', toolCallId: 'tool', content: [{ type: 'content', content: { type: 'text', text: `${i}${chunk}` } }] } as acp.SessionUpdate);
      await big.settle();
    }
    expect(chars(big.actions)).toBeLessThanOrEqual(TURN_LIMITS.chars + 200_000);
    expect(big.actions.at(-1)).toMatchObject({ type: 'chat/responsePart', part: { kind: 'systemNotification' } });
  });
});
