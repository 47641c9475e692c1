/**
 * The root catalogue's `hub/inputNeeded` briefs of a session: one per `inputNeeded` entry that
 * awaits a person, in the list's order. Summaries are built after every commit, and a session
 * may wait on thousands of entries (issue 18.7), so each session has a keeper: the entry list
 * its briefs were made from, the briefs in order, and a map entry id → brief. When the session's
 * list has moved on, the keeper replays the changes that made the new list from its own (the
 * shared index records each one: `derivationOf`), one entry each, instead of reading every entry.
 * It builds from scratch only when it cannot follow: the first summary, after recovery or
 * `x-session/stateReplaced` (lists nobody derived), a chain cut by the index, or an entry
 * that starts waiting in the middle of the list (its place among the briefs is not known).
 *
 * Keepers are keyed by the `SessionEntry` object, so one goes when its session is disposed.
 * A brief list handed out is never changed: a change that alters a brief makes a new array.
 */
import type { SessionInputRequest } from '../../shared/protocol/state.js';
import { derivationOf, type EntryChange, forgetDerivation, MAX_DERIVATION_CHAIN } from '../../shared/state/input-needed-index.js';
import { awaitsUser } from '../../shared/state/status.js';

export interface InputNeededBrief {
  id: string;
  chat: string;
  kind: string;
  /** The question the user is asked, shortened. */
  message?: string;
}

type Entries = readonly SessionInputRequest[];

/** What the keeper reads of a session (a `SessionEntry`; its identity keys the keeper). */
export interface BriefSource {
  readonly state: { readonly inputNeeded?: Entries | undefined };
}

interface Keeper {
  /** The list the briefs were made from. */
  entries: Entries | undefined;
  /** In the list's order; never changed once handed out. */
  briefs: readonly InputNeededBrief[];
  /** Entry id → its brief in `briefs`. */
  readonly byId: Map<string, InputNeededBrief>;
}

const keepers = new WeakMap<BriefSource, Keeper>();
const NO_BRIEFS: readonly InputNeededBrief[] = Object.freeze([]);
/** How many changes back a keeper follows before it builds from scratch instead (the index keeps no longer chains). */
const MAX_STEPS = MAX_DERIVATION_CHAIN;

/** Entries turned into briefs from scratch (a work counter: a burst must build none per commit). */
let rebuilt = 0;
export const briefEntriesRebuilt = (): number => rebuilt;

/** The briefs of the session's entries that await a person, as `entries.filter(awaitsUser).map(brief)` would list them. */
export function waitingBriefs(session: BriefSource): readonly InputNeededBrief[] {
  const entries = session.state.inputNeeded;
  let keeper = keepers.get(session);
  if (keeper && keeper.entries === entries) return keeper.briefs;
  if (!keeper || !follow(keeper, entries)) {
    keeper = build(entries);
    keepers.set(session, keeper);
  }
  // Caught up: the lists before this one are not needed any more (the shared index would keep them).
  forgetDerivation(entries);
  return keeper.briefs;
}

function build(entries: Entries | undefined): Keeper {
  const byId = new Map<string, InputNeededBrief>();
  if (!entries || entries.length === 0) return { entries, briefs: NO_BRIEFS, byId };
  const briefs: InputNeededBrief[] = [];
  for (const entry of entries) {
    rebuilt++;
    if (!awaitsUser(entry)) continue;
    const b = briefOf(entry);
    briefs.push(b);
    byId.set(entry.id, b);
  }
  return { entries, briefs, byId };
}

/**
 * Brings the keeper to `entries` by the changes that made it from the keeper's list, in order.
 * False when it cannot (the keeper is then half-updated and must be replaced by a build).
 */
function follow(keeper: Keeper, entries: Entries | undefined): boolean {
  const walk = changesSince(keeper.entries, entries);
  if (!walk) return false;
  if (walk.from !== keeper.entries) {
    // Made from no list (the session's emptied list is stored as none): follow from no briefs.
    keeper.byId.clear();
    keeper.briefs = NO_BRIEFS;
  }
  let copy: InputNeededBrief[] | undefined;
  const edit = (): InputNeededBrief[] => (copy ??= keeper.briefs.slice());
  for (const { id, entry, replaced } of walk.changes) {
    const old = keeper.byId.get(id);
    if (!entry || !awaitsUser(entry)) {
      if (!old) continue;
      const list = edit();
      list.splice(list.indexOf(old), 1);
      keeper.byId.delete(id);
      continue;
    }
    const b = briefOf(entry);
    if (old) {
      if (sameBrief(old, b)) continue;
      const list = edit();
      list[list.indexOf(old)] = b;
    } else if (replaced) {
      // Waiting now, in the place of an entry that was not: where it goes among the briefs is not known here.
      return false;
    } else {
      edit().push(b); // appended entries go last
    }
    keeper.byId.set(id, b);
  }
  keeper.entries = entries;
  if (copy) keeper.briefs = copy;
  return true;
}

/**
 * The changes that made `entries`, oldest first, from `known` or else from no list at all;
 * undefined when the shared index links `entries` to neither.
 */
function changesSince(known: Entries | undefined, entries: Entries | undefined): { from: Entries | undefined; changes: EntryChange[] } | undefined {
  const changes: EntryChange[] = [];
  let cur = entries;
  while (cur !== known && cur !== undefined) {
    const change = derivationOf(cur);
    if (!change || changes.length === MAX_STEPS) return undefined;
    changes.push(change);
    cur = change.from;
  }
  return { from: cur, changes: changes.reverse() };
}

function sameBrief(a: InputNeededBrief, b: InputNeededBrief): boolean {
  return a.id === b.id && a.chat === b.chat && a.kind === b.kind && a.message === b.message;
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
