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
 *
 * The store is only a cache, and no failure of it ever throws out of a lookup: a session whose
 * images cannot be read back (the file damaged, a disk error, images that do not match the
 * briefs) stays parked and its chats read as absent, and the table reports it (`unreadable`) so
 * the hub stops trusting its memory and is rebuilt from the log (docs/continuity.md, "Parked
 * sessions"). A failed write while parking (`park`) throws before anything leaves memory.
 */
import type { ChatEntry } from './entries.js';
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
  #unreadable: ((err: unknown) => void) | undefined;

  /**
   * Parking is possible once a store is attached (`SessionParking`); `unreadable` is told when
   * parked images cannot be read back.
   */
  attachStore(store: ParkStore | undefined, unreadable?: (err: unknown) => void): void {
    this.#store = store;
    this.#unreadable = unreadable;
  }

  override get(uri: string): ChatEntry | undefined {
    const resident = super.get(uri);
    if (resident) {
      this.#used.add(resident.session);
      return resident;
    }
    const brief = this.#parked.get(uri);
    if (!brief) return undefined;
    // An unreadable session stays parked and its chat reads as absent; the hub was told (`unreadable`).
    if (!this.load(brief.session)) return undefined;
    this.#used.add(brief.session);
    return super.get(uri);
  }

  /** A resident entry only: never loads, never marks the session used (parking's own checks). */
  resident(uri: string): ChatEntry | undefined {
    return super.get(uri);
  }

  /**
   * A session's chats as they are now, for reads that must not bring a parked session back
   * (search, export): resident entries as they are, parked ones parsed from their images and left
   * parked. Never marks the session used. Throws when parked images cannot be read.
   */
  peekSession(session: string, chats: Iterable<string>): ChatEntry[] {
    const parked = this.#parkedSessions.get(session);
    const images = parked ? this.#images(session, parked) : [];
    const out: ChatEntry[] = [];
    for (const uri of chats) {
      const entry = super.get(uri) ?? images.find((e) => e.uri === uri);
      if (entry) out.push(entry);
    }
    return out;
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
    this.#forget(() => this.#store?.dropChat(uri));
    return true;
  }

  override clear(): void {
    for (const session of [...this.#parkedSessions.keys()]) this.#forget(() => this.#store?.drop(session));
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
    for (const [session, chats] of this.#parkedSessions) {
      let entries: ChatEntry[];
      try {
        entries = this.#images(session, chats);
      } catch (err) {
        // Never a snapshot without them: the snapshot fails (and is retried later).
        this.#unreadable?.(err);
        throw err;
      }
      yield* entries;
    }
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

  /**
   * Brings a parked session's chats back into memory, exactly as they were parked. False when
   * its images cannot be read (reported to `unreadable`): the session stays parked.
   */
  load(session: string): boolean {
    const chats = this.#parkedSessions.get(session);
    if (!chats) return true;
    let entries: ChatEntry[];
    try {
      entries = this.#images(session, chats);
    } catch (err) {
      this.#unreadable?.(err);
      return false;
    }
    for (const entry of entries) super.set(entry.uri, entry);
    for (const uri of chats) this.#parked.delete(uri);
    this.#parkedSessions.delete(session);
    this.#forget(() => this.#store?.drop(session));
    return true;
  }

  /** Loads every parked session it can; false when one could not be read. */
  loadAll(): boolean {
    let all = true;
    for (const session of [...this.#parkedSessions.keys()]) all = this.load(session) && all;
    return all;
  }

  /** The parked images of a session, checked against its briefs: one per chat, each its own. Throws otherwise. */
  #images(session: string, chats: readonly string[]): ChatEntry[] {
    if (!this.#store) throw new Error(`parked session ${session} has no store to load it from`);
    const byUri = new Map<string, ChatEntry>();
    for (const json of this.#store.read(session)) {
      const entry = JSON.parse(json) as ChatEntry | null;
      if (typeof entry?.uri !== 'string') throw new Error(`a parked image of ${session} is not a chat entry`);
      byUri.set(entry.uri, entry);
    }
    const entries = chats.map((uri) => byUri.get(uri));
    if (byUri.size !== chats.length || entries.some((e, i) => e?.session !== session || e.uri !== chats[i] || typeof e.state !== 'object' || e.state === null)) {
      throw new Error(`the parked images of ${session} do not match its ${chats.length} chat(s)`);
    }
    return entries as ChatEntry[];
  }

  /** Removing stale images is tidying only: a failure leaves rows no brief points at, never read. */
  #forget(drop: () => void): void {
    try {
      drop();
    } catch {
      // Left for close() to remove with the file.
    }
  }
}
