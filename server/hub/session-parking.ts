/**
 * Parking: a node holds in memory only the sessions its clients and agents use
 * (docs/architecture.md, "Parked sessions").
 *
 * Every `idleMs` a sweep parks each session that, over the whole period since the previous
 * sweep, nobody looked up (no write decided, record folded, snapshot taken, agent or feature
 * read: `ChatTable.takeUsed`), that no connection on this node subscribes to (the session or any
 * of its chats), and none of whose chats has a turn running (an agent may be working on it). Its
 * chat entries move to the `ParkStore`; what stays is the `SessionEntry` (what the root catalogue
 * and the roll-up need) and a brief per chat. The next lookup loads it back (`ChatTable.get`).
 *
 * The store is a cache; the log holds the truth (docs/continuity.md, "Parked sessions"):
 * - A write that fails (a full disk: `park_cache_write_failed`, warned once per hub) parks
 *   nothing: the session stays in memory and the next sweep tries again.
 * - Images that cannot be read back (`park_cache_unreadable`, warned once per directory) stop
 *   parking in that directory for the rest of the process, and the host is told
 *   (`unreadable`): the hub refuses with `StorageUnavailable` and is rebuilt from the log.
 *
 * `idleMs` 0 turns parking off (no store is opened): the default of an in-process hub; the
 * server's default is `DEFAULT_PARK_IDLE_MS` (`HUB_PARK_IDLE_MS`).
 */
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { errorFields, errorMessage, type Logger } from '../log.js';
import { ParkStore } from '../storage/park-store.js';
import type { HubState } from './catalogue.js';

/** The server's default: sessions idle this long (and unwatched) are parked. */
export const DEFAULT_PARK_IDLE_MS = 60_000;

/** Log `code`s of the park cache's failures (docs/errors.md). */
export const PARK_CACHE_WRITE_FAILED = 'park_cache_write_failed';
export const PARK_CACHE_UNREADABLE = 'park_cache_unreadable';

/** What the hub fails with when parked images cannot be read back (`Hub.#fail`: refused, then rebuilt from the log). */
export function parkCacheFailure(err: unknown): Error {
  return new Error(`the parked-session cache could not be read back (${errorMessage(err)})`);
}

/** Directories whose cache could not be read back: nothing is parked in them again by this process. */
const unreadableDirs = new Set<string>();

export interface ParkingHost {
  /** True while a connection on this node subscribes to the channel. */
  watched(channel: string): boolean;
  /** The session's chats left memory: whatever still points at their old states lets go. */
  parked(chats: readonly string[]): void;
  /** Parked images could not be read back: memory lacks them, the log has them. */
  unreadable(err: unknown): void;
}

export interface ParkingOptions {
  readonly idleMs: number;
  /** Where the cache directory is made (default: the system's temporary directory). */
  readonly dir?: string | undefined;
  readonly logger: Logger;
}

export class SessionParking {
  /** Opened by the first park, so a process that never parks leaves no file behind. */
  #store: ParkStore | undefined;
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #dir: string;
  readonly #logger: Logger;
  #warnedWrite = false;
  #stopped = false;

  constructor(
    private readonly state: HubState,
    options: ParkingOptions,
    private readonly host: ParkingHost,
  ) {
    this.#dir = resolve(options.dir ?? tmpdir());
    this.#logger = options.logger;
    if (options.idleMs <= 0 || unreadableDirs.has(this.#dir)) return;
    this.#timer = setInterval(() => this.sweep(), options.idleMs);
    this.#timer.unref();
  }

  /** Sessions whose chats are in memory, and parked ones (metrics). */
  get residency(): { resident: number; parked: number } {
    const parked = this.state.chats.parkedSessionCount;
    return { resident: this.state.sessions.size - parked, parked };
  }

  /** The store's file, once one is open (tests damage it). */
  get storeFile(): string | undefined {
    return this.#store?.file;
  }

  /** Parks every session idle since the previous sweep; returns how many it parked. */
  sweep(): number {
    if (!this.#timer || this.#stopped) return 0;
    const used = this.state.chats.takeUsed();
    let count = 0;
    for (const session of this.state.sessions.values()) {
      if (used.has(session.uri) || this.state.chats.isParked(session.uri) || this.#busy(session.uri, session.chats)) continue;
      const chats = [...session.chats];
      try {
        if (!this.#store) this.state.chats.attachStore((this.#store = new ParkStore(this.#dir)), (err) => this.#unreadable(err));
        this.state.chats.park(session.uri, chats);
      } catch (err) {
        // The cache cannot take it (a full disk): the write rolled back, the session stays
        // resident, nothing is lost, and a storage failure never ends the process. The next
        // sweep tries again.
        if (!this.#warnedWrite) this.#logger.warn('the parked-session cache cannot be written; sessions stay in memory', { code: PARK_CACHE_WRITE_FAILED, dir: this.#dir, ...errorFields(err) });
        this.#warnedWrite = true;
        break;
      }
      this.host.parked(chats);
      count++;
    }
    return count;
  }

  #busy(session: string, chats: ReadonlySet<string>): boolean {
    if (this.host.watched(session)) return true;
    for (const uri of chats) {
      if (this.host.watched(uri)) return true;
      if (this.state.chats.resident(uri)?.state.activeTurn) return true;
    }
    return false;
  }

  #unreadable(err: unknown): void {
    if (!unreadableDirs.has(this.#dir)) {
      unreadableDirs.add(this.#dir);
      this.#logger.warn('the parked-session cache cannot be read back; parking stops and the tenant is rebuilt from its log', { code: PARK_CACHE_UNREADABLE, dir: this.#dir, ...errorFields(err) });
    }
    this.#stopped = true;
    clearInterval(this.#timer);
    this.host.unreadable(err);
  }

  /** After the hub's last snapshot (which reads parked images): stops sweeping and removes the store. */
  close(): void {
    clearInterval(this.#timer);
    this.#stopped = true;
    // Whoever still reads this state (a test, a closing feature) finds every chat it can; a
    // hub that is closing has nothing left to rebuild, so a failure here is not reported.
    this.state.chats.attachStore(this.#store);
    this.state.chats.loadAll();
    this.state.chats.attachStore(undefined);
    try {
      this.#store?.close();
    } catch (err) {
      this.#logger.warn('the parked-session cache could not be closed', { code: PARK_CACHE_UNREADABLE, dir: this.#dir, ...errorFields(err) });
    }
  }
}
