/**
 * `ChatTable`: `HubState.chats`, a map of chat entries whose sessions may be parked
 * (docs/architecture.md, "Parked sessions"). A parked session's chat entries are out of memory,
 * in a `ParkStore`; the table keeps only a brief of each (its session and `modifiedAt`, what the
 * root catalogue's roll-up reads) and answers `has`, `keys`, `size` and `modifiedAtOf` from it.
 *
 * Looking a parked chat up (`get`) loads its whole session back first, synchronously, so every
 * reader — deciding a write, folding a record (a remote one in cluster mode too), a snapshot for a
 * subscriber, an agent, a feature — sees exactly the entry it would have seen had the session
 * never been parked, and nothing that folds or decides needs to know about parking. Iterating
 * every entry (`values`, `entries`, `forEach`) loads every parked session: only recovery and
 * tests do that; a tenant snapshot reads parked images without loading them (`imageEntries`).
 *
 * Each `get` marks the session as used (`takeUsed`), which is what `SessionParking` reads to
 * tell idle sessions from busy ones.
 */
import type { ChatEntry } from './catalog.js';
import type { ParkStore } from '../storage/park-store.js';

interface ParkedBrief {
  readonly session: string;
  readonly modifiedAt: string;
}

export class ChatTable extends Map<string, ChatEntry> {
  /** Chat → brief, for every chat of a parked session. */
  readonly #parked = new Map<string, ParkedBrief>();
  /** Parked sessions → their chats. */
  readonly #parkedSessions = new Map<string, string[]>();
  #used = new Set<string>();
  #store: ParkStore | undefined;

  /** Parking is possible once a store is attached (`SessionParking`). */
  attachStore(store: ParkStore | undefined): void {
    this.#store = store;
  }

  override get(uri: string): ChatEntry | undefined {
    const resident = super.get(uri);
    if (resident) {
      this.#used.add(resident.session);
      return resident;
    }
    const brief = this.#parked.get(uri);
    if (!brief) return undefined;
    this.load(brief.session);
    this.#used.add(brief.session);
    return super.get(uri);
  }

  /** A resident entry only: never loads, never marks the session used (parking's own checks). */
  resident(uri: string): ChatEntry | undefined {
    return super.get(uri);
  }

  override has(uri: string): boolean {
    return super.has(uri) || this.#parked.has(uri);
  }

  override get size(): number {
    return super.size + this.#parked.size;
  }

  override set(uri: string, entry: ChatEntry): this {
    // A chat created in a parked session: the session is loaded first, so its chats stay together.
    if (this.#parkedSessions.has(entry.session)) this.load(entry.session);
    return super.set(uri, entry);
  }

  override delete(uri: string): boolean {
    const brief = this.#parked.get(uri);
    if (!brief) return super.delete(uri);
    this.#parked.delete(uri);
    const chats = this.#parkedSessions.get(brief.session)?.filter((c) => c !== uri) ?? [];
    if (chats.length > 0) this.#parkedSessions.set(brief.session, chats);
    else this.#parkedSessions.delete(brief.session);
    this.#store?.dropChat(uri);
    return true;
  }

  override clear(): void {
    for (const session of [...this.#parkedSessions.keys()]) this.#store?.drop(session);
    this.#parked.clear();
    this.#parkedSessions.clear();
    super.clear();
  }

  override *keys(): MapIterator<string> {
    yield* super.keys();
    yield* this.#parked.keys();
  }

  override values(): MapIterator<ChatEntry> {
    this.loadAll();
    return super.values();
  }

  override entries(): MapIterator<[string, ChatEntry]> {
    this.loadAll();
    return super.entries();
  }

  override [Symbol.iterator](): MapIterator<[string, ChatEntry]> {
    return this.entries();
  }

  override forEach(fn: (value: ChatEntry, key: string, map: Map<string, ChatEntry>) => void, thisArg?: unknown): void {
    this.loadAll();
    super.forEach(fn, thisArg);
  }

  /** What the roll-up reads of a chat, without loading a parked one. */
  modifiedAtOf(uri: string): string | undefined {
    return super.get(uri)?.state.modifiedAt ?? this.#parked.get(uri)?.modifiedAt;
  }

  /** Every entry as a tenant snapshot stores it: resident ones, and parked ones read from the store (left parked). */
  *imageEntries(): Generator<ChatEntry> {
    yield* super.values();
    for (const session of this.#parkedSessions.keys()) for (const json of this.#store!.read(session)) yield JSON.parse(json) as ChatEntry;
  }

  isParked(session: string): boolean {
    return this.#parkedSessions.has(session);
  }

  get parkedSessionCount(): number {
    return this.#parkedSessions.size;
  }

  /** Sessions whose chats were looked up since the last call. */
  takeUsed(): Set<string> {
    const used = this.#used;
    this.#used = new Set();
    return used;
  }

  /** Moves the session's resident chats to the store, keeping a brief of each. */
  park(session: string, chats: Iterable<string>): void {
    const store = this.#store;
    if (!store || this.#parkedSessions.has(session)) return;
    const entries: ChatEntry[] = [];
    for (const uri of chats) {
      const entry = super.get(uri);
      if (entry) entries.push(entry);
    }
    store.put(
      session,
      entries.map((e) => ({ uri: e.uri, json: JSON.stringify(e) })),
    );
    for (const e of entries) {
      this.#parked.set(e.uri, { session, modifiedAt: e.state.modifiedAt });
      super.delete(e.uri);
    }
    this.#parkedSessions.set(
      session,
      entries.map((e) => e.uri),
    );
  }

  /** Brings a parked session's chats back into memory, exactly as they were parked. */
  load(session: string): void {
    const chats = this.#parkedSessions.get(session);
    if (!chats || !this.#store) return;
    for (const json of this.#store.read(session)) {
      const entry = JSON.parse(json) as ChatEntry;
      super.set(entry.uri, entry);
    }
    for (const uri of chats) this.#parked.delete(uri);
    this.#parkedSessions.delete(session);
    this.#store.drop(session);
  }

  loadAll(): void {
    for (const session of [...this.#parkedSessions.keys()]) this.load(session);
  }
}
