/**
 * AHP state equality: a passive observer keeps replicas of the root, session and chat channels by
 * applying every envelope it receives with reducers that ignore implementation-defined (`x-`)
 * actions — what a stock AHP client does — and a replica of the root catalogue from
 * `root/session*` notifications. Through a realistic scenario (turns, input requests answered
 * from two AHP clients and qwen's HTTP reply, tool confirmations, "always allow", an error, a
 * cancel, a second chat) every replica must equal the hub's own snapshot, field by field.
 *
 * The reducers are the project's shared ones, which pass all upstream conformance fixtures
 * (test/shared/conformance.test.ts); replica and hub use the same clock-free rules, so no
 * `modifiedAt` allowance is needed. The only thing the replica may lack is hub-specific data:
 * `_meta["hub/…"]` keys that `x-session/*` actions write (asserted to be exactly those).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import type { ChatState, RootState, SessionState } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { rootReducer } from '../../shared/state/root-reducer.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { aggregateSessionStatus } from '../../shared/state/status.js';
import type { RpcClient } from '../helpers/rpc-client.js';
import { replyQwen, SseClient } from '../helpers/sse.js';
import { hubPerTest, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

type Reducer<S> = (state: S, action: { type: string }) => S;
/** A stock AHP client: standard actions through the reducers, `x-` actions ignored. */
const ignoringExtensions =
  <S>(reducer: Reducer<S>): Reducer<S> =>
  (state, action) =>
    action.type.startsWith('x-') ? state : reducer(state, action);
const reducers: Record<string, Reducer<any>> = {
  root: ignoringExtensions(rootReducer as Reducer<RootState>),
  session: ignoringExtensions(sessionReducer as Reducer<SessionState>),
  chat: ignoringExtensions(chatReducer as Reducer<ChatState>),
};
const kindOf = (channel: string) => (channel === 'ahp-root://' ? 'root' : channel.startsWith('ahp-session:') ? 'session' : 'chat');

/** Replays the observer's envelopes for one channel from its baseline snapshot up to `toSeq`. */
function replica(observer: RpcClient, baseline: { state: unknown; fromSeq: number }, channel: string, toSeq: number): unknown {
  let state = baseline.state;
  for (const e of observer.envelopes as ActionEnvelope[]) {
    if (e.channel !== channel || e.rejectionReason !== undefined || e.serverSeq <= baseline.fromSeq || e.serverSeq > toSeq) continue;
    state = reducers[kindOf(channel)]!(state, e.action);
  }
  return state;
}

/** The hub snapshot without `_meta["hub/…"]` keys, and the keys removed. */
function withoutHubMeta(state: Record<string, unknown>): { state: Record<string, unknown>; removed: string[] } {
  const meta = state['_meta'] as Record<string, unknown> | undefined;
  if (!meta) return { state, removed: [] };
  const kept = Object.fromEntries(Object.entries(meta).filter(([k]) => !k.startsWith('hub/')));
  const removed = Object.keys(meta).filter((k) => k.startsWith('hub/'));
  const { _meta: _dropped, ...rest } = state;
  return { state: Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest, removed };
}

describe('AHP replicas equal the hub', () => {
  const hubs = hubPerTest();
  let server: TestServer;
  let closeSse: (() => unknown) | undefined;
  // Registered after hubPerTest's, so it runs first (after-hooks run in reverse): the event
  // stream closes before the hub stops.
  afterEach(async () => {
    await closeSse?.();
    closeSse = undefined;
  });
  const open = (subscribe: string[] = []): Promise<RpcClient> => hubs.open(undefined, { subscribe });

  it('root, session and chat replicas built from the envelopes (x- actions ignored) equal the hub snapshots through a realistic scenario', async () => {
    server = await hubs.start();
    const alice = await open();
    const bob = await open();
    const { session, chat } = await alice.createSession('replica');
    const sessionId = session.slice('ahp-session:/'.length);
    const observer = await open();
    const baselines = new Map<string, { state: unknown; fromSeq: number }>();
    for (const channel of ['ahp-root://', session, chat]) baselines.set(channel, await observer.subscribe(channel));
    const catalogue = new Map<string, Record<string, unknown>>();
    const listed = await observer.request<{ items: Array<Record<string, unknown>> }>('listSessions', { channel: 'ahp-root://' });
    for (const item of listed.items) catalogue.set(item['resource'] as string, item);
    const notificationsBefore = observer.notifications.length;
    for (const c of [alice, bob]) {
      await c.subscribe(chat);
      await c.subscribe(session);
    }

    /** Compares every replica with a fresh snapshot taken on the observer's own connection. */
    const compareAll = async (label: string): Promise<void> => {
      for (const [channel, baseline] of baselines) {
        const snap = await observer.subscribe<Record<string, unknown>>(channel);
        const hub = withoutHubMeta(snap.state);
        expect(replica(observer, baseline, channel, snap.fromSeq), `${label}: ${channel}`).toEqual(hub.state);
        expect(
          hub.removed.every((k) => ['hub/approvedTools', 'hub/deniedTools', 'hub/toolChoiceBy', 'hub/agentGrants'].includes(k)),
          `${label}: ${hub.removed.join(',')}`,
        ).toBe(true);
      }
      // The root catalogue: listSessions + every root/session* notification since.
      const now = await observer.request<{ items: Array<Record<string, unknown>> }>('listSessions', { channel: 'ahp-root://' });
      const rebuilt = new Map([...catalogue].map(([k, v]) => [k, { ...v }]));
      for (const n of observer.notifications.slice(notificationsBefore)) {
        if (n.method === 'root/sessionAdded') {
          const summary = n.params['summary'] as Record<string, unknown>;
          rebuilt.set(summary['resource'] as string, summary);
        } else if (n.method === 'root/sessionRemoved') rebuilt.delete(n.params['session'] as string);
        else if (n.method === 'root/sessionSummaryChanged') {
          const key = n.params['session'] as string;
          rebuilt.set(key, { ...rebuilt.get(key), ...(n.params['changes'] as Record<string, unknown>) });
        }
      }
      expect(
        [...rebuilt.values()].sort((a, b) => String(a['resource']).localeCompare(String(b['resource']))),
        `${label}: catalogue`,
      ).toEqual([...now.items].sort((a, b) => String(a['resource']).localeCompare(String(b['resource']))));
      // The published aggregate is the §2.6 producer rule over the replica's standard chat summaries.
      const sessionReplica = replica(observer, baselines.get(session)!, session, Number.MAX_SAFE_INTEGER) as SessionState;
      const summary = now.items.find((i) => i['resource'] === session)!;
      const aggregate = aggregateSessionStatus(sessionReplica.chats, sessionReplica.defaultChat, sessionReplica.status);
      expect({ status: summary['status'], activity: summary['activity'] }, `${label}: aggregate`).toEqual({ status: aggregate.status, activity: aggregate.activity ?? '' });
    };
    const turnEnded = (turnId: string, type: string) => alice.waitForEnvelope((e) => e.channel === chat && e.action.type === type && e.action['turnId'] === turnId, `${type} of ${turnId}`);
    const toolWaiting = (toolCallId: string) =>
      waitFor(
        async () => {
          const state = (await alice.subscribe<ChatState>(chat)).state;
          return state.activeTurn?.responseParts.some((p: any) => p.kind === 'toolCall' && p.toolCall.toolCallId === toolCallId && p.toolCall.status === 'pending-confirmation') || undefined;
        },
        { what: `${toolCallId} awaiting confirmation` },
      );

    // Turn 1: a question drafted by alice and submitted by bob, then a tool alice approves.
    const turn1 = await startScriptTurn(alice, chat, [{ say: 'Starting.' }, { ask: TWO_QUESTION_REQUEST }, { tool: { id: 'tool-1', name: 'write_file', input: { path: 'a.md' }, confirm: true } }, { say: 'Done.' }]);
    await bob.waitForEnvelope((e) => e.action.type === 'chat/inputRequested');
    await alice.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: 'req-1', questionId: 'notes', answer: { state: 'draft', value: { kind: 'text', value: 'from alice' } } });
    await compareAll('input pending');
    const submitted = await bob.dispatchAndWait(chat, {
      type: 'chat/inputCompleted',
      requestId: 'req-1',
      response: 'accept',
      answers: { runtime: { state: 'submitted', value: { kind: 'selected', value: 'node' } }, notes: { state: 'submitted', value: { kind: 'text', value: 'from bob' } } },
    });
    expect(submitted.rejectionReason).toBeUndefined();
    await toolWaiting('tool-1');
    await compareAll('tool pending');
    expect((await alice.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId: turn1, toolCallId: 'tool-1', approved: true, confirmed: 'user-action' })).rejectionReason).toBeUndefined();
    await turnEnded(turn1, 'chat/turnComplete');
    await compareAll('turn 1 complete');

    // Turn 2: a question and a tool answered over qwen's HTTP reply; the tool with "always allow".
    const events = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`);
    closeSse = () => events.close();
    const turn2 = await startScriptTurn(bob, chat, [{ ask: { id: 'req-2', questions: [{ id: 'why', kind: 'text', message: 'Why?' }] } }, { tool: { id: 'tool-2', name: 'deploy', confirm: true } }]);
    await alice.waitForEnvelope((e) => e.action.type === 'chat/inputRequested' && JSON.stringify(e.action).includes('req-2'));
    expect((await replyQwen(server.url, sessionId, 'req-2', { outcome: { outcome: 'selected', optionId: 'proceed_once' }, answers: { '0': 'because' } })).status).toBe(200);
    await toolWaiting('tool-2');
    const requestId = (await events.waitForPermissionRequest(1, (d) => d.toolCall?.toolCallId === 'tool-2' || JSON.stringify(d).includes('deploy'))).requestId as string;
    expect((await replyQwen(server.url, sessionId, requestId, { outcome: { outcome: 'selected', optionId: 'proceed_always' } })).status).toBe(200);
    await turnEnded(turn2, 'chat/turnComplete');
    await observer.waitForEnvelope((e) => e.action.type === 'x-session/toolApprovalRemembered', 'the remembered approval');
    await compareAll('turn 2 complete (always allow remembered)');

    // Turn 3 fails; turn 4 is cancelled by bob.
    const turn3 = await startScriptTurn(alice, chat, [{ say: 'Trying.' }, { fail: 'disk full' }]);
    await turnEnded(turn3, 'chat/error');
    await compareAll('turn 3 errored');
    const turn4 = await startScriptTurn(alice, chat, [{ sleep: 60_000 }]);
    expect((await bob.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId: turn4, duration: 5 })).rejectionReason).toBeUndefined();
    await compareAll('turn 4 cancelled');

    // A second chat blocks on a question while the default chat is idle, then bob declines it.
    const { chat: second } = await alice.request<{ chat: string }>('createChat', { channel: session, title: 'side' });
    baselines.set(second, await observer.subscribe(second));
    await alice.subscribe(second);
    await startScriptTurn(alice, second, [{ ask: { id: 'req-3', questions: [{ id: 'ok', kind: 'boolean', message: 'OK?' }] } }]);
    await alice.waitForEnvelope((e) => e.channel === second && e.action.type === 'chat/inputRequested');
    await waitFor(async () => ((await observer.subscribe<SessionState>(session)).state.inputNeeded?.length ? true : undefined), { what: 'session input needed' });
    await compareAll('second chat waits');
    expect((await bob.dispatchAndWait(second, { type: 'chat/inputCompleted', requestId: 'req-3', response: 'decline' })).rejectionReason).toBeUndefined();
    await alice.waitForEnvelope((e) => e.channel === second && e.action.type === 'chat/turnComplete');
    await compareAll('second chat declined');

    // A person renames and archives the session (standard actions, so every replica follows).
    expect((await bob.dispatchAndWait(session, { type: 'session/titleChanged', title: 'Renamed by bob' })).rejectionReason).toBeUndefined();
    expect((await alice.dispatchAndWait(session, { type: 'session/isArchivedChanged', isArchived: true })).rejectionReason).toBeUndefined();
    await compareAll('end');

    // The scenario really went through every status the session has.
    const statuses = new Set(observer.notifications.filter((n) => n.method === 'root/sessionSummaryChanged').map((n) => ((n.params['changes'] as { status?: number }).status ?? 0) & 31));
    expect([...statuses].filter(Boolean).sort((a, b) => a - b)).toEqual([1, 2, 8, 24]);
  });
});
