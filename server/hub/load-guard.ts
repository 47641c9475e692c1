/**
 * Start always ends in a clear state (issue 18.1): a log that holds more state than this process
 * can load (or snapshot again) is refused with a message saying what to do, instead of running
 * the hub out of memory after a long replay and dying the same way on every restart.
 *
 * What is loaded is estimated like the state budget (channel-budget.ts) does it: the snapshot's
 * channels are measured one by one (each is bounded, so no single huge string is built), every
 * replayed record adds its encoded size, and only when that upper estimate crosses the bound is
 * the real state measured again. State quotas keep new data below the bound; the guard is for
 * data written before them, or under larger quotas than this start is given.
 */
import { getHeapStatistics } from 'node:v8';
import type { HubState } from './catalogue.js';
import { actionJson } from '../action-json.js';

/**
 * The most characters of state a snapshot image can hold: V8's longest string is 2^29−24
 * characters, and the image is one JSON text, with the ledger and catalogue besides the channels.
 */
export const MAX_SNAPSHOT_STATE_CHARS = 400 * 1024 * 1024;

/** The default load bound: what a snapshot can hold, or an eighth of the heap (objects cost several times their JSON), whichever is less. */
export function defaultMaxLoadStateChars(): number {
  return Math.min(MAX_SNAPSHOT_STATE_CHARS, Math.floor(getHeapStatistics().heap_size_limit / 8));
}

/** Thrown by recovery when the log holds more than `maxLoadStateChars`; the hub was not opened. */
export class StateTooLargeToLoadError extends Error {
  constructor(
    readonly heldChars: number,
    readonly maxChars: number,
    readonly tenant?: string,
  ) {
    super(
      `${tenant === undefined ? '' : `tenant ${JSON.stringify(tenant)} cannot start: `}the log holds at least ${heldChars} characters of session and chat state, more than this hub can load ` +
        `(at most ${maxChars}: what one snapshot can hold, or an eighth of the heap limit). Nothing was changed. ` +
        "Give the hub more memory (NODE_OPTIONS=--max-old-space-size=…) if the heap is the bound, or move the tenant's " +
        `log aside (${tenant === undefined ? 'tenants/<tenant>/' : `tenants/${tenant}/`} in the data directory; in cluster mode its PostgreSQL partition) ` +
        'to start without its data, and clean it up with a hub that has more memory.',
    );
    this.name = 'StateTooLargeToLoadError';
  }
}

/** A channel's measured size and the state object it was measured on (reducers never mutate). */
export interface MeasuredChannel {
  readonly state: unknown;
  readonly size: number;
}

export class LoadGuard {
  #estimate: number;
  #measuredAt: number;
  /** Every channel's last measurement, handed to the state budget so a start measures each once. */
  readonly measured = new Map<string, MeasuredChannel>();

  constructor(
    readonly state: HubState,
    readonly maxChars: number,
  ) {
    this.#estimate = this.#measure();
    this.#measuredAt = this.#estimate;
    this.#check();
  }

  /** Counts one replayed action; throws `StateTooLargeToLoadError` once the real state is past the bound. */
  replayed(action: object): void {
    this.#estimate += actionJson(action).length;
    // Measured again only after the estimate grew by a quarter of the bound: amortised linear.
    if (this.#estimate > this.maxChars && this.#estimate - this.#measuredAt > this.maxChars / 4) {
      this.#estimate = this.#measure();
      this.#measuredAt = this.#estimate;
      this.#check();
    }
  }

  /** At the end of the replay: the real size decides. */
  finish(): void {
    if (this.#estimate > this.maxChars) {
      this.#estimate = this.#measure();
      this.#check();
    }
  }

  /** Every session's and chat's encoded size, one channel at a time (unchanged ones not again). */
  #measure(): number {
    let chars = 0;
    const one = (uri: string, state: unknown): void => {
      const last = this.measured.get(uri);
      const size = last !== undefined && last.state === state ? last.size : JSON.stringify(state).length;
      if (last?.state !== state) this.measured.set(uri, { state, size });
      chars += size;
    };
    for (const s of this.state.sessions.values()) one(s.uri, s.state);
    for (const c of this.state.chats.values()) one(c.uri, c.state);
    return chars;
  }

  #check(): void {
    if (this.#estimate > this.maxChars) throw new StateTooLargeToLoadError(this.#estimate, this.maxChars);
  }
}
