/**
 * Behaviours that were only covered by unit tests, now over real sockets against a real hub:
 * the first tool confirmation wins when several clients race, and status rolls up from a second
 * (non-default) chat to the session and the root catalogue.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { RpcClient } from '../helpers/rpc-client.js';
import { hubPerTest } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const INPUT_NEEDED = 24;
const activity = (status: number) => status % 32;

type ToolChat = { activeTurn?: { responseParts: Array<{ toolCall?: { toolCallId: string; status: string; confirmed?: string } }> }; turns: Array<{ responseParts: Array<{ toolCall?: { toolCallId: string; status: string } }> }> };

describe('over real sockets', () => {
  const hubs = hubPerTest();
  beforeEach(async () => {
    await hubs.start();
  });
  const open = (subscribe: string[] = []): Promise<RpcClient> => hubs.open(undefined, { subscribe });

  it('tool confirmation: of three clients racing (approve, deny, approve), exactly one wins and everyone sees that one', async () => {
    const owner = await open();
    const { chat } = await owner.createSession('tool race');
    const racers = [await open([chat]), await open([chat]), await open([chat])];
    await owner.subscribe(chat);
    const turnId = await startScriptTurn(owner, chat, [{ tool: { id: 'tool-r', name: 'deploy', confirm: true } }, { sleep: 600_000 }]);
    await Promise.all(racers.map((r) => r.waitForEnvelope((e) => e.action.type === 'chat/toolCallReady', 'tool ready')));

    // All three leave in the same tick from three sockets.
    const decisions = [true, false, true];
    const seqs = racers.map((r, i) =>
      r.dispatch(
        chat,
        decisions[i] ? { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'tool-r', approved: true, confirmed: 'user-action' } : { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'tool-r', approved: false, reason: 'denied' },
      ),
    );
    const echoes = await Promise.all(racers.map((r, i) => r.waitForEnvelope((e) => e.origin?.clientId === r.clientId && e.origin.clientSeq === seqs[i], `racer ${i} echo`)));
    const winners = echoes.filter((e) => e.rejectionReason === undefined);
    expect(winners).toHaveLength(1);
    for (const loser of echoes.filter((e) => e.rejectionReason !== undefined)) expect(loser.rejectionReason).toMatch(/not awaiting confirmation/);
    const won = winners[0]!;

    // Every client (racers and owner) received exactly one accepted confirmation: the winner's.
    for (const c of [owner, ...racers]) {
      await c.waitForEnvelope((e) => e.serverSeq === won.serverSeq, 'the winning confirmation');
      expect(c.envelopes.filter((e) => e.action.type === 'chat/toolCallConfirmed' && e.rejectionReason === undefined).map((e) => e.serverSeq)).toEqual([won.serverSeq]);
    }
    // The tool went the winner's way.
    const approved = won.action['approved'] === true;
    const state = await waitFor(async () => {
      const s = (await owner.subscribe<ToolChat>(chat)).state;
      const tool = s.activeTurn?.responseParts.find((p) => p.toolCall?.toolCallId === 'tool-r')?.toolCall;
      return tool && tool.status !== 'pending-confirmation' ? tool : undefined;
    });
    expect(approved ? ['running', 'completed'] : ['cancelled']).toContain(state.status);
  });

  it('roll-up from a second chat: its input request makes the session and the root InputNeeded, and resolving it clears them', async () => {
    const dashboard = await open(['ahp-root://']);
    const worker = await open();
    const { session, chat: defaultChat } = await worker.createSession('two chats');
    const { chat: second } = await worker.request<{ chat: string }>('createChat', { channel: session, title: 'side' });
    await worker.subscribe(session);
    await worker.subscribe(second);

    await startScriptTurn(worker, second, [{ ask: TWO_QUESTION_REQUEST }, { sleep: 600_000 }]);
    await worker.waitForEnvelope((e) => e.channel === second && e.action.type === 'chat/inputRequested');
    const open1 = await waitFor(async () => {
      const s = await worker.subscribe<{ status: number; inputNeeded?: Array<{ kind: string; chat: string }> }>(session);
      return s.state.inputNeeded?.length ? s.state : undefined;
    });
    // The entry names the second chat, and the session is InputNeeded although its default chat is idle.
    expect(open1.inputNeeded).toEqual([expect.objectContaining({ kind: 'chatInput', chat: second })]);
    expect(activity(open1.status)).toBe(INPUT_NEEDED);
    expect(activity((await worker.subscribe<{ status: number }>(defaultChat)).state.status)).not.toBe(INPUT_NEEDED);
    await dashboard.waitForNotification(
      (n) => n.method === 'root/sessionSummaryChanged' && n.params['session'] === session && activity((n.params['changes'] as { status?: number }).status ?? 0) === INPUT_NEEDED,
      'root InputNeeded from the second chat',
    );
    const listed = await dashboard.request<{ items: Array<{ resource: string; inputNeededCount?: number }> }>('listSessions', { channel: 'ahp-root://' });
    expect(listed.items.find((s) => s.resource === session)?.inputNeededCount).toBe(1);

    await worker.dispatchAndWait(second, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'cancel' });
    const cleared = await waitFor(async () => {
      const s = await worker.subscribe<{ status: number; inputNeeded?: unknown[] }>(session);
      return (s.state.inputNeeded ?? []).length === 0 ? s.state : undefined;
    });
    expect(activity(cleared.status)).not.toBe(INPUT_NEEDED);
    await dashboard.waitForNotification(
      (n) => n.method === 'root/sessionSummaryChanged' && n.params['session'] === session && (n.params['changes'] as { inputNeededCount?: number }).inputNeededCount === 0,
      'root inputNeededCount back to 0',
    );
  });
});
