/**
 * Status roll-up, chat → session → root, computed after every action that can change it.
 * Pure functions of current state that return the session actions to sequence; the hub
 * sequences them right after the chat action that caused them, so the log replays to the
 * same state without recomputing anything.
 *
 * Only standard AHP actions touch a session's state here (`session/chatUpdated`,
 * `session/inputNeededSet` / `Removed`), so a replica built with the reference reducers equals
 * the hub's snapshot. The session's aggregate status (§2.6: default chat first, InputNeeded and
 * Error promoted) is a producer rule no reducer applies: it is computed from the chat summaries
 * and published only in the root catalogue (`listSessions`, `root/sessionSummaryChanged`).
 */
import type { WireAction } from '../../shared/protocol/messages.js';
import type { SessionInputRequest, SessionSummary } from '../../shared/protocol/state.js';
import type { KnownAction } from '../../shared/protocol/actions.js';
import { aggregateSessionStatus, awaitsUser, interactionIdOf, sessionInputId, sessionInputNeededEntries, sessionInputNeededEntryOf } from '../../shared/state/status.js';
import type { HubState, ChatEntry, SessionEntry } from './catalog.js';

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Session actions that bring the session in line with one chat: its catalogue summary
 * (`session/chatUpdated`) and its `inputNeeded` entries (`session/inputNeededSet`/`Removed`).
 * `after` is the chat action just applied: when it changes one tool call or input request only
 * (`interactionIdOf`), only that entry is compared, so a burst of requests costs linear time.
 */
export function chatRollUpActions(chat: ChatEntry, session: SessionEntry, after?: KnownAction): WireAction[] {
  const actions: WireAction[] = [];
  const summary = session.state.chats.find((c) => c.resource === chat.uri);
  if (summary) {
    const changes: Record<string, unknown> = {};
    const s = chat.state;
    if (summary.title !== s.title) changes['title'] = s.title;
    if (summary.status !== s.status) changes['status'] = s.status;
    if (summary.modifiedAt !== s.modifiedAt) changes['modifiedAt'] = s.modifiedAt;
    if (summary.activity !== s.activity) changes['activity'] = s.activity;
    if (Object.keys(changes).length > 0) actions.push({ type: 'session/chatUpdated', chat: chat.uri, changes });
  }
  const only = interactionIdOf(after);
  if (only !== undefined) {
    const id = sessionInputId(chat.uri, only);
    const entry = sessionInputNeededEntryOf(chat.uri, chat.state, only);
    const existing = (session.state.inputNeeded ?? []).find((e: SessionInputRequest) => e.id === id);
    if (entry && !(existing && sameJson(existing, entry))) actions.push({ type: 'session/inputNeededSet', request: entry });
    else if (!entry && existing) actions.push({ type: 'session/inputNeededRemoved', id });
    return actions;
  }
  const wanted = sessionInputNeededEntries(chat.uri, chat.state);
  const have = (session.state.inputNeeded ?? []).filter((e: SessionInputRequest) => e.chat === chat.uri);
  for (const entry of wanted) {
    const existing = have.find((e: SessionInputRequest) => e.id === entry.id);
    if (!existing || !sameJson(existing, entry)) actions.push({ type: 'session/inputNeededSet', request: entry });
  }
  for (const entry of have) {
    if (!wanted.some((w) => w.id === entry.id)) actions.push({ type: 'session/inputNeededRemoved', id: entry.id });
  }
  return actions;
}

/**
 * What the root catalogue publishes for a session (`listSessions`, `root/session*`): the shared
 * `SessionSummary` wire shape with the fields this hub always fills.
 */
export type SessionSummaryView = SessionSummary & {
  createdAt: string;
  /** Activity text of the chat that contributed the aggregate status; '' when there is none. */
  activity: string;
  /** Entries that await a person (client execution excluded). */
  inputNeededCount: number;
  /** Hub extension: what the session is waiting for, so a dashboard needs no chat subscription. */
  _meta: { 'hub/inputNeeded': InputNeededBrief[]; 'hub/chatCount': number };
};

export interface InputNeededBrief {
  id: string;
  chat: string;
  kind: string;
  /** The question the user is asked, shortened. */
  message?: string;
}

/** Briefs by entry: an entry the session still holds unchanged is the same object, so its brief is too. */
const briefs = new WeakMap<SessionInputRequest, InputNeededBrief>();

function brief(entry: SessionInputRequest): InputNeededBrief {
  let known = briefs.get(entry);
  if (!known) briefs.set(entry, (known = briefOf(entry)));
  return known;
}

function briefOf(entry: SessionInputRequest): InputNeededBrief {
  const out: InputNeededBrief = { id: entry.id, chat: entry.chat, kind: entry.kind };
  let message: string | undefined;
  if (entry.kind === 'chatInput') {
    const req = entry.request;
    const first = req.questions?.[0] as { message?: unknown } | undefined;
    const candidate = req.message ?? first?.message ?? req.url;
    message = typeof candidate === 'string' ? candidate : undefined;
  } else if ('toolCall' in entry && entry.toolCall) {
    const tc = entry.toolCall as { displayName?: string; toolName?: string; invocationMessage?: unknown };
    message = typeof tc.invocationMessage === 'string' ? tc.invocationMessage : (tc.displayName ?? tc.toolName);
  }
  if (message !== undefined) out.message = message.length > 200 ? message.slice(0, 199) + '…' : message;
  return out;
}

export function sessionSummary(session: SessionEntry, catalog: HubState): SessionSummaryView {
  let modifiedAt = Date.parse(session.createdAt);
  for (const uri of session.chats) {
    const m = Date.parse(catalog.chats.modifiedAtOf(uri) ?? '');
    if (Number.isFinite(m) && m > modifiedAt) modifiedAt = m;
  }
  const waiting = (session.state.inputNeeded ?? []).filter(awaitsUser);
  const aggregate = aggregateSessionStatus(session.state.chats, session.state.defaultChat, session.state.status);
  const view: SessionSummaryView = {
    resource: session.uri,
    provider: session.provider,
    title: session.state.title,
    status: aggregate.status,
    // Always present ('' = none), so a catalogue replica that merges `root/sessionSummaryChanged`
    // changes (where a cleared activity is '') equals what `listSessions` answers.
    activity: aggregate.activity ?? '',
    createdAt: session.createdAt,
    modifiedAt: new Date(modifiedAt).toISOString(),
    inputNeededCount: waiting.length,
    _meta: { 'hub/inputNeeded': waiting.map(brief), 'hub/chatCount': session.chats.size },
  };
  return view;
}

/** The mutable fields that differ, or undefined when nothing changed. */
export function summaryChanges(prev: SessionSummaryView, next: SessionSummaryView): Partial<SessionSummaryView> | undefined {
  const changes: Partial<SessionSummaryView> = {};
  if (prev.title !== next.title) changes.title = next.title;
  if (prev.status !== next.status) changes.status = next.status;
  if (prev.activity !== next.activity) changes.activity = next.activity;
  if (prev.modifiedAt !== next.modifiedAt) changes.modifiedAt = next.modifiedAt;
  if (prev.inputNeededCount !== next.inputNeededCount) changes.inputNeededCount = next.inputNeededCount;
  if (!sameMeta(prev._meta, next._meta)) changes._meta = next._meta;
  return Object.keys(changes).length > 0 ? changes : undefined;
}

/** Field by field: summaries are compared after every commit, and a session may wait on thousands of entries. */
function sameMeta(a: SessionSummaryView['_meta'], b: SessionSummaryView['_meta']): boolean {
  if (a['hub/chatCount'] !== b['hub/chatCount']) return false;
  const x = a['hub/inputNeeded'];
  const y = b['hub/inputNeeded'];
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const p = x[i]!;
    const q = y[i]!;
    if (p !== q && (p.id !== q.id || p.chat !== q.chat || p.kind !== q.kind || p.message !== q.message)) return false;
  }
  return true;
}
