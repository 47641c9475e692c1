/**
 * A session's `inputNeeded` list, changed one entry at a time without reading the others
 * (issue 18.7: with 3,000 permission requests open, every set and removal searched the list with
 * a callback per entry, and re-tested every entry for "awaits a person").
 *
 * The index lives beside the state, in a WeakMap keyed by the list, so the state stays plain
 * JSON and every answer is what a scan would give. It is owned by one list at a time: a derived
 * list takes it over (the list it came from loses it and builds a new one if it is read again),
 * so the index never has to tell two lists apart. A list with a repeated id (only
 * `x-session/stateReplaced` can make one) gets no index: the callers fall back to scanning.
 *
 * Each derived list also remembers which list it came from and the one entry that changed
 * (`derivationOf`), so a view built from the list (the root catalogue's briefs) can follow the
 * change instead of rebuilding itself from every entry. That link holds the older list, so the
 * chain is cut twice over, or a session would keep every list it ever had (3,000 requests opened,
 * updated and half closed kept 150 MiB): the follower cuts it once it has caught up (`forgetDerivation`),
 * and a chain nobody follows ends after `MAX_DERIVATION_CHAIN` lists (the next list records no
 * derivation; a follower that far behind builds its view from the entries).
 *
 * What is still proportional to the list's length is the native copy of the array (`slice`) and
 * the identity search for the changed entry (`indexOf`): no entry is read.
 */
import type { SessionInputRequest } from '../protocol/state.js';
import { awaitsUser } from './status.js';

type Entries = readonly SessionInputRequest[];

interface EntryIndex {
  readonly byId: Map<string, SessionInputRequest>;
  /** How many entries await a person (`awaitsUser`). */
  awaiting: number;
}

/** `null`: the list repeats an id, so it is scanned. */
const indexes = new WeakMap<Entries, EntryIndex | null>();

/** How a list came from another: `entry` set (replacing the one with its id, or appended), or `id` removed when `entry` is undefined. */
export interface EntryChange {
  readonly from: Entries | undefined;
  readonly id: string;
  readonly entry: SessionInputRequest | undefined;
  /** `entry` took the place of an entry with its id (else it was appended at the end). */
  readonly replaced: boolean;
  /** Lists in the chain up to this one (1: `from` has no derivation). */
  readonly depth: number;
}
const derivations = new WeakMap<Entries, EntryChange>();
/** The longest chain of derivations kept (see the header). */
export const MAX_DERIVATION_CHAIN = 256;

/** Entries read while building indexes (a work counter: tests check a burst builds each once). */
let entriesIndexed = 0;
export const inputNeededEntriesIndexed = (): number => entriesIndexed;

function indexOf(entries: Entries): EntryIndex | null {
  let index = indexes.get(entries);
  if (index === undefined) {
    const byId = new Map<string, SessionInputRequest>();
    let awaiting = 0;
    index = { byId, awaiting };
    for (const entry of entries) {
      entriesIndexed++;
      if (byId.has(entry.id)) {
        index = null;
        break;
      }
      byId.set(entry.id, entry);
      if (awaitsUser(entry)) awaiting++;
    }
    if (index) index.awaiting = awaiting;
    indexes.set(entries, index);
  }
  return index;
}

/** Hands `index` (already updated) from `from` to `next` and records the change. */
function derived(from: Entries | undefined, next: SessionInputRequest[], index: EntryIndex, change: Omit<EntryChange, 'from' | 'depth'>): SessionInputRequest[] {
  if (from) indexes.delete(from);
  indexes.set(next, index);
  const depth = (from ? (derivations.get(from)?.depth ?? 0) : 0) + 1;
  if (depth <= MAX_DERIVATION_CHAIN) derivations.set(next, { from, depth, ...change });
  return next;
}

/** The entry with `id`, as `entries.find((e) => e.id === id)` would find it. */
export function inputNeededEntry(entries: Entries | undefined, id: string): SessionInputRequest | undefined {
  if (!entries) return undefined;
  const index = indexOf(entries);
  return index ? index.byId.get(id) : entries.find((e) => e.id === id);
}

/** How many entries await a person, as `entries.filter(awaitsUser).length` would count. */
export function awaitingUserCount(entries: Entries | undefined): number {
  if (!entries) return 0;
  const index = indexOf(entries);
  return index ? index.awaiting : entries.filter(awaitsUser).length;
}

/** `entries` with `entry` replacing the first one with its id, or appended; `undefined` entries are an empty list. */
export function setInputNeededEntry(entries: Entries | undefined, entry: SessionInputRequest): SessionInputRequest[] {
  const list = entries ?? [];
  const index = indexOf(list);
  if (!index) {
    const at = list.findIndex((e) => e.id === entry.id);
    return at === -1 ? [...list, entry] : list.map((e, i) => (i === at ? entry : e));
  }
  const existing = index.byId.get(entry.id);
  let next: SessionInputRequest[];
  if (existing === undefined) next = [...list, entry];
  else {
    next = list.slice();
    next[list.indexOf(existing)] = entry;
    if (awaitsUser(existing)) index.awaiting--;
  }
  index.byId.set(entry.id, entry);
  if (awaitsUser(entry)) index.awaiting++;
  return derived(entries, next, index, { id: entry.id, entry, replaced: existing !== undefined });
}

/** `entries` without the entries with `id`; `entries` itself when there is none. */
export function removeInputNeededEntry(entries: Entries, id: string): Entries {
  const index = indexOf(entries);
  if (!index) return entries.some((e) => e.id === id) ? entries.filter((e) => e.id !== id) : entries;
  const existing = index.byId.get(id);
  if (existing === undefined) return entries;
  const next = entries.slice();
  next.splice(entries.indexOf(existing), 1);
  index.byId.delete(id);
  if (awaitsUser(existing)) index.awaiting--;
  return derived(entries, next, index, { id, entry: undefined, replaced: true });
}

/** The change that made `entries` from another list, when one of the functions here made it. */
export function derivationOf(entries: Entries | undefined): EntryChange | undefined {
  return entries ? derivations.get(entries) : undefined;
}

/**
 * The one follower of `entries` (the root briefs) has caught up with it: the lists before it are
 * no longer needed, so its link to them is dropped and they can be collected.
 */
export function forgetDerivation(entries: Entries | undefined): void {
  if (entries) derivations.delete(entries);
}
