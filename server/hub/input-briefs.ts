/**
 * The root catalogue's `hub/inputNeeded` briefs of a session: one per `inputNeeded` entry that
 * awaits a person, in the list's order. Summaries are built after every commit, and a session
 * may wait on thousands of entries (issue 18.7), so the briefs of a list are derived from the
 * briefs of the list it came from (`derivationOf`), following the one entry that changed, rather
 * than rebuilt from every entry. Only a list nobody derived (recovery, `x-session/stateReplaced`)
 * is built entry by entry. A derived list is a fresh array; the lists handed out are never changed.
 */
import type { SessionInputRequest } from '../../shared/protocol/state.js';
import { derivationOf, type EntryChange } from '../../shared/state/input-needed-index.js';
import { awaitsUser } from '../../shared/state/status.js';

export interface InputNeededBrief {
  id: string;
  chat: string;
  kind: string;
  /** The question the user is asked, shortened. */
  message?: string;
}

type Entries = readonly SessionInputRequest[];

interface BriefList {
  readonly briefs: readonly InputNeededBrief[];
  /** Entry id → its brief in `briefs` (owned by one list at a time, like the entries' index). */
  readonly byId: Map<string, InputNeededBrief>;
}

const lists = new WeakMap<Entries, BriefList>();
/** A brief list → the one it was derived from by a change that made them differ. */
const differsFrom = new WeakMap<readonly InputNeededBrief[], readonly InputNeededBrief[]>();
const NO_BRIEFS: readonly InputNeededBrief[] = Object.freeze([]);
const NO_ENTRIES: Entries = Object.freeze([]);
/** How far back a derivation is followed before the list is rebuilt instead. */
const MAX_STEPS = 4_096;

/** Entries turned into briefs from scratch (a work counter: tests check a burst builds none per commit). */
let rebuilt = 0;
export const briefEntriesRebuilt = (): number => rebuilt;

/** The briefs of the entries that await a person, as `entries.filter(awaitsUser).map(brief)` would list them. */
export function waitingBriefs(entries: Entries | undefined): readonly InputNeededBrief[] {
  if (!entries || entries.length === 0) return NO_BRIEFS;
  let list = lists.get(entries);
  if (!list) {
    list = derive(entries) ?? build(entries);
    lists.set(entries, list);
  }
  return list.briefs;
}

/** True when `b` is known to differ from `a` (derived from it by a change); false says nothing. */
export function briefsKnownToDiffer(a: readonly InputNeededBrief[], b: readonly InputNeededBrief[]): boolean {
  return differsFrom.get(b) === a;
}

function build(entries: Entries): BriefList {
  const byId = new Map<string, InputNeededBrief>();
  const briefs: InputNeededBrief[] = [];
  for (const entry of entries) {
    rebuilt++;
    if (!awaitsUser(entry)) continue;
    const b = brief(entry);
    briefs.push(b);
    byId.set(entry.id, b);
  }
  return { briefs, byId };
}

/** The briefs of `entries` from those of a list it was derived from, or undefined when there is none at hand. */
function derive(entries: Entries): BriefList | undefined {
  const steps: EntryChange[] = [];
  let base: BriefList | undefined;
  for (let cur: Entries = entries; steps.length < MAX_STEPS; ) {
    const change = derivationOf(cur);
    if (!change) return undefined;
    steps.push(change);
    if (!change.from) {
      base = { briefs: NO_BRIEFS, byId: new Map() };
      break;
    }
    base = lists.get(change.from);
    if (base) break;
    cur = change.from;
  }
  if (!base) return undefined;
  // Changes are applied to one copy, made at the first one that changes a brief.
  let copy: InputNeededBrief[] | undefined;
  const byId = new Map<string, InputNeededBrief>();
  const current = (id: string): InputNeededBrief | undefined => (byId.has(id) ? byId.get(id) : base.byId.get(id));
  for (let i = steps.length - 1; i >= 0; i--) {
    const change = steps[i]!;
    const old = current(change.id);
    const entry = change.entry;
    if (!entry || !awaitsUser(entry)) {
      if (!old) continue;
      copy ??= base.briefs.slice();
      copy.splice(copy.indexOf(old), 1);
      byId.set(change.id, undefined as unknown as InputNeededBrief);
      continue;
    }
    const b = brief(entry);
    if (old) {
      if (sameBrief(old, b)) continue;
      copy ??= base.briefs.slice();
      copy[copy.indexOf(old)] = b;
    } else {
      // Waiting now and not before: appended entries go last; one in the middle cannot be placed here.
      if (change.replaced) return undefined;
      copy ??= base.briefs.slice();
      copy.push(b);
    }
    byId.set(change.id, b);
  }
  // Taken over: the older list rebuilds its briefs should it ever be summarized again.
  lists.delete(steps.at(-1)!.from ?? NO_ENTRIES);
  const owned = base.byId;
  for (const [id, b] of byId) {
    if (b === undefined) owned.delete(id);
    else owned.set(id, b);
  }
  if (!copy) return { briefs: base.briefs, byId: owned };
  if (steps.length === 1) differsFrom.set(copy, base.briefs);
  return { briefs: copy, byId: owned };
}

function sameBrief(a: InputNeededBrief, b: InputNeededBrief): boolean {
  return a.id === b.id && a.chat === b.chat && a.kind === b.kind && a.message === b.message;
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
