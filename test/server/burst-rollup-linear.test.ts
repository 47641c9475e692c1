/**
 * Issue 18.7, the roll-up half: while one chat asks and then gets answers to 3,000 tool
 * permissions, every commit used to copy-and-search the session's `inputNeeded` list with a
 * callback per entry, re-test every entry for "awaits a person", and rebuild the root
 * catalogue's briefs of every open request: each commit cost O(open requests), the burst
 * quadratic. Now the list is indexed beside the state (shared/state/input-needed-index.ts) and
 * the briefs follow the one changed entry (server/hub/input-briefs.ts).
 *
 * Measured as work, not time. The session already waits on 3,000 requests of another chat, and
 * those entries count every read of their fields: the burst's roll-up (what the sequencer runs
 * per commit: `chatRollUpActions`, the session reducer, and the summary the root catalogue
 * publishes, here built after every commit as if each came in a turn of its own) must read each
 * of them a bounded number of times in all, not once per commit. The summaries must equal what a
 * rebuild from scratch gives, and the root catalogue publishes one change per event-loop turn.
 */
import { expect, it } from 'vitest';
import type { WireAction } from '../../shared/protocol/messages.js';
import { initialChatState, initialSessionState, type SessionInputRequest, type ToolCallState } from '../../shared/protocol/state.js';
import type { KnownAction } from '../../shared/protocol/actions.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { sessionInputId, sessionInputNeededEntries } from '../../shared/state/status.js';
import type { ChatEntry, HubState, SessionEntry } from '../../server/hub/catalogue.js';
import { ChatTable } from '../../server/hub/chat-table.js';
import { RootCatalogue } from '../../server/hub/root-catalogue.js';
import { chatRollUpActions, sessionSummary, type SessionSummaryView } from '../../server/hub/rollup.js';

const BURST = Number(process.env.BURST_N ?? 3_000);
const T0 = '2026-01-01T10:00:00.000Z';
const SESSION = 'ahp-session:/burst';
const BUSY = 'ahp-chat:/busy';
const OTHER = 'ahp-chat:/other';

let reads = 0;
let counting = true;
/** An open request of the other chat whose `id`, `kind` and `chat` reads are counted. */
function countedEntry(i: number): SessionInputRequest {
  const toolCall = { toolCallId: `other-${i}`, status: 'pending-confirmation', toolName: 'rm', displayName: 'rm', invocationMessage: `rm ${i}` } as ToolCallState;
  const fields: Record<string, string> = { kind: 'toolConfirmation', id: sessionInputId(OTHER, `other-${i}`), chat: OTHER };
  const entry: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    Object.defineProperty(entry, key, {
      enumerable: true,
      get: () => {
        if (counting) reads++;
        return value;
      },
    });
  }
  Object.assign(entry, { turnId: 'other-turn', toolCall });
  return entry as unknown as SessionInputRequest;
}

/** What a summary's briefs must be: built from scratch, from a plain copy of the list. */
function rebuiltSummary(session: SessionEntry, catalogue: HubState): SessionSummaryView {
  counting = false;
  const plain = { ...session, state: { ...session.state, inputNeeded: session.state.inputNeeded && structuredClone(session.state.inputNeeded.map((e) => ({ ...e }))) } };
  const summary = sessionSummary(plain, catalogue);
  counting = true;
  return summary;
}

it(`asking and answering ${BURST} permissions reads the session's other open requests a bounded number of times (roll-up, session reducer, root catalogue)`, { timeout: 300_000 }, async () => {
  const chat: ChatEntry = {
    uri: BUSY,
    session: SESSION,
    state: { ...initialChatState(BUSY, 'Busy', T0), activeTurn: { id: 't1', startedAt: T0, message: { text: 'go', origin: { kind: 'user' } }, responseParts: [] } },
  };
  const base = initialSessionState(SESSION, 'burst', 'Burst');
  const session: SessionEntry = {
    uri: SESSION,
    tenant: 'dev',
    owner: 'dev',
    provider: 'burst',
    createdAt: T0,
    chats: new Set([BUSY, OTHER]),
    state: { ...base, inputNeeded: Array.from({ length: BURST }, (_, i) => countedEntry(i)) },
  };
  const chats = new ChatTable();
  chats.set(BUSY, chat);
  const catalogue = { chats, sessions: new Map([[SESSION, session]]) } as unknown as HubState;
  const sent: Array<{ method: string; params: unknown }> = [];
  const root = new RootCatalogue(catalogue, { sendRoot: (_tenant, method, params) => sent.push({ method, params }) });
  root.sessionAdded(session);

  // What the sequencer does per decided chat action (`Sequencer.accept` → `#rollUpChat`).
  const commit = (action: KnownAction): void => {
    chat.state = chatReducer(chat.state, action);
    const rollUp: WireAction[] = chatRollUpActions(chat, session, action);
    for (const a of rollUp) session.state = sessionReducer(session.state, a);
    root.sessionChanged(session);
    sessionSummary(session, catalogue);
  };
  const published = (): Partial<SessionSummaryView> => (sent.at(-1)!.params as { changes: Partial<SessionSummaryView> }).changes;
  reads = 0;
  for (let i = 0; i < BURST; i++) {
    commit({ type: 'chat/toolCallStart', turnId: 't1', toolCallId: `tool-${i}`, toolName: 'touch', displayName: 'touch' });
    commit({ type: 'chat/toolCallReady', turnId: 't1', toolCallId: `tool-${i}`, invocationMessage: `touch ${i}`, confirmationTitle: 'Allow touch?' });
  }
  expect(session.state.inputNeeded).toHaveLength(2 * BURST);
  expect(session.state.inputNeeded!.slice(BURST)).toEqual(sessionInputNeededEntries(BUSY, chat.state));
  const asked = sessionSummary(session, catalogue);
  expect(asked.inputNeededCount).toBe(2 * BURST);
  expect(asked._meta).toEqual(rebuiltSummary(session, catalogue)._meta);
  // The whole burst came in one turn: one change published, at its end.
  expect(sent.map((n) => n.method)).toEqual(['root/sessionAdded']);
  await new Promise((resolve) => setImmediate(resolve));
  expect(sent.map((n) => n.method)).toEqual(['root/sessionAdded', 'root/sessionSummaryChanged']);
  expect(published()._meta).toEqual(asked._meta);

  for (let i = BURST - 1; i >= 0; i--) {
    commit({ type: 'chat/toolCallConfirmed', turnId: 't1', toolCallId: `tool-${i}`, approved: true, confirmed: 'user-action' });
    if (i === BURST / 2) expect(sessionSummary(session, catalogue)._meta).toEqual(rebuiltSummary(session, catalogue)._meta);
  }
  expect(session.state.inputNeeded).toHaveLength(BURST);
  const answered = sessionSummary(session, catalogue);
  expect(answered.inputNeededCount).toBe(BURST);
  expect(answered._meta).toEqual(rebuiltSummary(session, catalogue)._meta);
  await new Promise((resolve) => setImmediate(resolve));
  expect(sent).toHaveLength(3);
  expect(published()).toMatchObject({ inputNeededCount: BURST, _meta: answered._meta });

  // A scan per commit reads ~3 fields × 3,000 entries × 9,000 commits ≈ 80 million times; the
  // index and the briefs read each entry a few times in all (once when built).
  expect(reads).toBeLessThanOrEqual(10 * BURST);
});
