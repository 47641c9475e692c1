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
 * `idleMs` 0 turns parking off (no store is opened): the default of an in-process hub; the
 * server's default is `DEFAULT_PARK_IDLE_MS` (`HUB_PARK_IDLE_MS`).
 */
import { ParkStore } from '../storage/park-store.js';
import type { HubState } from './catalog.js';

/** The server's default: sessions idle this long (and unwatched) are parked. */
export const DEFAULT_PARK_IDLE_MS = 60_000;

export interface ParkingHost {
  /** True while a connection on this node subscribes to the channel. */
  watched(channel: string): boolean;
  /** The session's chats left memory: whatever still points at their old states lets go. */
  parked(chats: readonly string[]): void;
}

export class SessionParking {
  /** Opened by the first park, so a process that never parks leaves no file behind. */
  #store: ParkStore | undefined;
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly state: HubState,
    idleMs: number,
    private readonly host: ParkingHost,
  ) {
    if (idleMs <= 0) return;
    this.#timer = setInterval(() => this.sweep(), idleMs);
    this.#timer.unref();
  }

  /** Sessions whose chats are in memory, and parked ones (metrics). */
  get residency(): { resident: number; parked: number } {
    const parked = this.state.chats.parkedSessionCount;
    return { resident: this.state.sessions.size - parked, parked };
  }

  /** Parks every session idle since the previous sweep; returns how many it parked. */
  sweep(): number {
    if (!this.#timer) return 0;
    const used = this.state.chats.takeUsed();
    let count = 0;
    for (const session of this.state.sessions.values()) {
      if (used.has(session.uri) || this.state.chats.isParked(session.uri) || this.#busy(session.uri, session.chats)) continue;
      const chats = [...session.chats];
      try {
        if (!this.#store) this.state.chats.attachStore((this.#store = new ParkStore()));
        this.state.chats.park(session.uri, chats);
      } catch {
        // The cache cannot take it (a full TMPDIR): the session stays resident, nothing is lost,
        // and a storage failure never ends the process. The next sweep tries again.
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

  /** After the hub's last snapshot (which reads parked images): stops sweeping and removes the store. */
  close(): void {
    clearInterval(this.#timer);
    // Whoever still reads this state (a test, a closing feature) finds every chat.
    this.state.chats.loadAll();
    this.state.chats.attachStore(undefined);
    this.#store?.close();
  }
}
