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
import { aggregateSessionStatus, interactionIdOf, sessionInputId, sessionInputNeededEntries, sessionInputNeededEntryOf } from '../../shared/state/status.js';
import { inputNeededEntry } from '../../shared/state/input-needed-index.js';
import type { HubState, ChatEntry, SessionEntry } from './catalogue.js';
import { type InputNeededBrief, waitingBriefs } from './input-briefs.js';

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
    const existing = inputNeededEntry(session.state.inputNeeded, id);
    if (entry && !(existing && sameEntry(existing, entry))) actions.push({ type: 'session/inputNeededSet', request: entry });
    else if (!entry && existing) actions.push({ type: 'session/inputNeededRemoved', id });
    return actions;
  }
  if (inLine(chat, session)) return actions;
  const wanted = sessionInputNeededEntries(chat.uri, chat.state);
  const have = new Map<string, SessionInputRequest>();
  for (const e of session.state.inputNeeded ?? []) if (e.chat === chat.uri && !have.has(e.id)) have.set(e.id, e);
  const wantedIds = new Set<string>();
  for (const entry of wanted) {
    wantedIds.add(entry.id);
    const existing = have.get(entry.id);
    if (!existing || !sameEntry(existing, entry)) actions.push({ type: 'session/inputNeededSet', request: entry });
  }
  for (const entry of session.state.inputNeeded ?? []) {
    if (entry.chat === chat.uri && !wantedIds.has(entry.id)) actions.push({ type: 'session/inputNeededRemoved', id: entry.id });
  }
  return actions;
}

/**
 * Whether the session's entries for this chat were last compared with exactly these response
 * parts, this turn and this session list: an action that changed none of them (a text part, a
 * title, usage) needs no diff of every open request again.
 */
const compared = new WeakMap<ChatEntry, { parts: unknown; turnId: string | undefined; entries: unknown }>();

function inLine(chat: ChatEntry, session: SessionEntry): boolean {
  const turn = chat.state.activeTurn;
  const last = compared.get(chat);
  const now = { parts: turn?.responseParts, turnId: turn?.id, entries: session.state.inputNeeded };
  compared.set(chat, now);
  return last !== undefined && last.parts === now.parts && last.turnId === now.turnId && last.entries === now.entries;
}

/**
 * Equal as JSON. Entries built from an untouched part hold the same tool call or request object,
 * so the same keys in the same order with identical values settle it without serializing.
 */
function sameEntry(a: SessionInputRequest, b: SessionInputRequest): boolean {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length === kb.length && ka.every((k, i) => k === kb[i] && (a as Record<string, unknown>)[k] === (b as Record<string, unknown>)[k])) return true;
  return sameJson(a, b);
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
  _meta: { 'hub/inputNeeded': InputNeededBrief[]; 'hub/chatCount': number; 'hub/owner': string };
};

export type { InputNeededBrief } from './input-briefs.js';

export function sessionSummary(session: SessionEntry, catalogue: HubState): SessionSummaryView {
  let modifiedAt = Date.parse(session.createdAt);
  for (const uri of session.chats) {
    const m = Date.parse(catalogue.chats.modifiedAtOf(uri) ?? '');
    if (Number.isFinite(m) && m > modifiedAt) modifiedAt = m;
  }
  const waiting = waitingBriefs(session);
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
    // Who created the session (never changes): the dashboard's "mine" filter and who may delete it.
    _meta: { 'hub/inputNeeded': waiting as InputNeededBrief[], 'hub/chatCount': session.chats.size, 'hub/owner': session.owner },
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

/**
 * Field by field: a session may wait on thousands of entries. An unchanged brief list is the
 * same array (`waitingBriefs`), and briefs the keeper kept are the same objects, so a changed
 * list is told apart by its length or by identity up to the changed brief.
 */
function sameMeta(a: SessionSummaryView['_meta'], b: SessionSummaryView['_meta']): boolean {
  if (a['hub/chatCount'] !== b['hub/chatCount']) return false;
  const x = a['hub/inputNeeded'];
  const y = b['hub/inputNeeded'];
  if (x === y) return true;
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const p = x[i]!;
    const q = y[i]!;
    if (p !== q && (p.id !== q.id || p.chat !== q.chat || p.kind !== q.kind || p.message !== q.message)) return false;
  }
  return true;
}
