import { beforeEach, describe, expect, it } from 'vitest';
import { listSessionsResultSchema, sessionAddedParamsSchema, sessionSummaryChangedParamsSchema } from '../../shared/protocol/messages.js';
import { hubPerTest } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const IDLE = 1;
const IN_PROGRESS = 8;
const INPUT_NEEDED = 24;
const activity = (status: number) => status & 31;

describe('status roll-up: chat → session → root', () => {
  const hubs = hubPerTest();
  beforeEach(async () => {
    await hubs.start();
  });

  it('chat, session and the root summary go InputNeeded while a request is open and back after', async () => {
    const dashboard = await hubs.open(undefined, { subscribe: ['ahp-root://'] });
    const worker = await hubs.open();
    const { session, chat } = await worker.createSession('rollup');
    await worker.subscribe(chat);
    await worker.subscribe(session);
    await dashboard.waitForNotification((n) => n.method === 'root/sessionAdded' && (n.params['summary'] as { resource: string }).resource === session);

    await startScriptTurn(worker, chat, [{ ask: TWO_QUESTION_REQUEST }, { sleep: 60_000 }]);

    // Chat: InputNeeded.
    await worker.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/inputRequested');
    const chatSnap = await worker.subscribe<{ status: number }>(chat);
    expect(activity(chatSnap.state.status)).toBe(INPUT_NEEDED);
    // Session: the inputNeeded entry and aggregate status.
    const sessionSnap = await waitFor(async () => {
      const s = await worker.subscribe<{ status: number; inputNeeded?: Array<{ kind: string; chat: string }> }>(session);
      return s.state.inputNeeded?.length ? s : undefined;
    });
    expect(sessionSnap.state.inputNeeded).toEqual([expect.objectContaining({ kind: 'chatInput', chat })]);
    expect(activity(sessionSnap.state.status)).toBe(INPUT_NEEDED);
    // Root: a summary change the dashboard sees without any chat subscription.
    await dashboard.waitForNotification((n) => n.method === 'root/sessionSummaryChanged' && n.params['session'] === session && activity((n.params['changes'] as { status?: number }).status ?? 0) === INPUT_NEEDED, 'root InputNeeded');
    const listed = await dashboard.request<{ items: Array<{ resource: string; status: number; inputNeededCount: number }> }>('listSessions', { channel: 'ahp-root://' });
    expect(listed.items.find((s) => s.resource === session)).toMatchObject({ inputNeededCount: 1 });
    // Every catalogue message matches the shared wire schemas (the single source of the protocol).
    expect(() => listSessionsResultSchema.parse(listed)).not.toThrow();
    for (const n of dashboard.notifications) {
      const schema = { 'root/sessionAdded': sessionAddedParamsSchema, 'root/sessionSummaryChanged': sessionSummaryChangedParamsSchema }[n.method];
      expect(schema, n.method).toBeDefined();
      expect(schema!.safeParse(n.params).success, JSON.stringify(n.params)).toBe(true);
    }

    // Answer and accept: everything returns to InProgress (the turn is still sleeping).
    await worker.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'cancel' });
    await dashboard.waitForNotification((n) => n.method === 'root/sessionSummaryChanged' && n.params['session'] === session && activity((n.params['changes'] as { status?: number }).status ?? 0) === IN_PROGRESS, 'root back to InProgress');
    const after = await worker.subscribe<{ status: number; inputNeeded?: unknown[] }>(session);
    expect(after.state.inputNeeded ?? []).toEqual([]);
    expect(activity(after.state.status)).toBe(IN_PROGRESS);
    expect(activity((await worker.subscribe<{ status: number }>(chat)).state.status)).toBe(IN_PROGRESS);

    // Cancel the turn: Idle everywhere.
    const turnId = (await worker.subscribe<{ activeTurn: { id: string } }>(chat)).state.activeTurn.id;
    await worker.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId, duration: 1 });
    await dashboard.waitForNotification((n) => n.method === 'root/sessionSummaryChanged' && n.params['session'] === session && activity((n.params['changes'] as { status?: number }).status ?? 0) === IDLE, 'root Idle');
  });

  it('an error in a turn shows as Error on chat, session and root', async () => {
    const dashboard = await hubs.open(undefined, { subscribe: ['ahp-root://'] });
    const worker = await hubs.open();
    const { session, chat } = await worker.createSession();
    await worker.subscribe(chat);
    await startScriptTurn(worker, chat, [{ say: 'working' }, { fail: 'disk full' }]);
    const err = await worker.waitForEnvelope((e) => e.action.type === 'chat/error');
    expect(JSON.stringify(err.action)).toContain('disk full');
    await dashboard.waitForNotification((n) => n.method === 'root/sessionSummaryChanged' && n.params['session'] === session && activity((n.params['changes'] as { status?: number }).status ?? 0) === 2, 'root Error');
  });

  it('truncating the active turn removes its input-needed entries; chat, chat summary and root summary return to Idle', async () => {
    const worker = await hubs.open();
    const { session, chat } = await worker.createSession();
    await worker.subscribe(chat);
    await startScriptTurn(worker, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    await worker.waitForEnvelope((e) => e.action.type === 'chat/inputRequested');
    await waitFor(async () => ((await worker.subscribe<{ inputNeeded?: unknown[] }>(session)).state.inputNeeded?.length ? true : undefined));
    const echo = await worker.dispatchAndWait(chat, { type: 'chat/truncated' });
    expect(echo.rejectionReason).toBeUndefined();
    const s = await worker.subscribe<{ status: number; inputNeeded?: unknown[]; chats: Array<{ resource: string; status: number }> }>(session);
    expect(s.state.inputNeeded ?? []).toEqual([]);
    // The session's own status follows the upstream reducer only: removing the last entry clears
    // bit 16 (24 → 8). The aggregate lives in the chat summary and the root catalogue.
    expect(activity(s.state.status)).toBe(IN_PROGRESS);
    expect(activity(s.state.chats.find((x) => x.resource === chat)!.status)).toBe(IDLE);
    const listed = await worker.request<{ items: Array<{ resource: string; status: number }> }>('listSessions', { channel: 'ahp-root://' });
    expect(activity(listed.items.find((x) => x.resource === session)!.status)).toBe(IDLE);
    const c = await worker.subscribe<{ status: number; activeTurn?: unknown; turns: unknown[] }>(chat);
    expect(c.state.activeTurn).toBeUndefined();
    expect(c.state.turns).toEqual([]);
    expect(activity(c.state.status)).toBe(IDLE);
  });
});
