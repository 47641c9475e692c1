/**
 * How one process follows the heads of every partition (tenant) of a PostgresStore, at a cost
 * that does not grow with the number of tenants:
 *
 * - Wake-ups: one LISTEN connection on `ahp_log` for every partition; each append's NOTIFY names
 *   its partition and new head, and only that partition's listeners run (`onAppended`).
 * - The head poll: notifications sent while that connection is down are lost, so every
 *   `HEAD_POLL_MS`, and at once after the LISTEN connection (re)connects, ONE statement reads the
 *   head of every watched partition and hands each watcher its partition's head (`watchHead`).
 *   A watcher that is behind reads its log; one that is caught up does nothing. An idle node with
 *   a thousand tenants thus costs PostgreSQL one query per `HEAD_POLL_MS`, not a thousand.
 *
 * The poll's failure is the node's view of the log being unreachable (`HeadWatch.problem`): the
 * write gates of idle tenants report it (`/healthz` answers 503) without polling themselves.
 */
import type pg from 'pg';
import type { HeadWatch } from './action-log.js';
import { errorMessage } from '../log.js';
import { ListeningConnection } from './postgres-listener.js';

/** How often the heads of every watched partition are read, in one statement. */
export const HEAD_POLL_MS = 1_000;

/** Listeners of one partition's heads: `(head) => void`. */
type HeadListener = (head: number) => void;

export interface LogFollowerOptions {
  readonly pool: pg.Pool;
  readonly url: string;
  /** The store's address without the password, for the poll's error message. */
  readonly where: string;
  /** The NOTIFY channel appends wake up on. */
  readonly channel: string;
  /** The partition and head of a NOTIFY payload, or undefined for anything else. */
  readonly decode: (payload: string) => { partition: string; head: number } | undefined;
  readonly pollMs?: number | undefined;
  readonly onConnectionError?: ((error: Error) => void) | undefined;
}

export class PostgresLogFollower {
  readonly #options: LogFollowerOptions;
  /** NOTIFY listeners by partition. */
  readonly #appended = new Map<string, Set<HeadListener>>();
  /** Head-poll watchers by partition. */
  readonly #watchers = new Map<string, Set<HeadListener>>();
  #listening: ListeningConnection | undefined;
  #poll: NodeJS.Timeout | undefined;
  #polling = false;
  /** A poll asked for while one ran (the LISTEN connection came back meanwhile): run once more. */
  #pollAgain = false;
  #problem: string | undefined;
  #closed = false;

  constructor(options: LogFollowerOptions) {
    this.#options = options;
  }

  /** Calls `listener` with the partition's new head after each append's NOTIFY (a hint: may be lost). */
  onAppended(partition: string, listener: HeadListener): () => void {
    if (this.#closed) return () => undefined;
    const remove = add(this.#appended, partition, listener);
    this.#listening ??= this.#listen();
    return remove;
  }

  /** Calls `listener` with the partition's head after every head poll (see the file comment). */
  watchHead(partition: string, listener: HeadListener): HeadWatch {
    if (this.#closed) return { problem: undefined, stop: () => undefined };
    const remove = add(this.#watchers, partition, listener);
    // The poll also runs when the LISTEN connection comes back, so a watcher needs it open.
    this.#listening ??= this.#listen();
    if (this.#poll === undefined) {
      this.#poll = setInterval(() => this.#pollHeads(), this.#options.pollMs ?? HEAD_POLL_MS);
      this.#poll.unref();
    }
    const problem = (): string | undefined => this.#problem;
    return {
      get problem() {
        return problem();
      },
      stop: () => {
        remove();
        if (this.#watchers.size === 0) {
          clearInterval(this.#poll);
          this.#poll = undefined;
        }
      },
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#poll);
    this.#appended.clear();
    this.#watchers.clear();
    await this.#listening?.close();
  }

  #pollHeads(): void {
    if (this.#closed || this.#watchers.size === 0) return;
    if (this.#polling) {
      this.#pollAgain = true;
      return;
    }
    this.#polling = true;
    void this.#readHeads().finally(() => {
      this.#polling = false;
      if (this.#pollAgain) {
        this.#pollAgain = false;
        this.#pollHeads();
      }
    });
  }

  async #readHeads(): Promise<void> {
    let rows: Array<{ partition: string; head: string }>;
    try {
      const result = await this.#options.pool.query<{ partition: string; head: string }>('SELECT partition, head FROM ahp_log_head WHERE partition = ANY($1::text[])', [[...this.#watchers.keys()]]);
      rows = result.rows;
      this.#problem = undefined;
    } catch (error) {
      this.#problem = `action log: cannot read the log heads at ${this.#options.where}: ${errorMessage(error)}`;
      return;
    }
    for (const row of rows) {
      const head = Number(row.head);
      if (!Number.isSafeInteger(head)) continue;
      this.#deliver(this.#watchers, row.partition, head);
    }
  }

  #deliver(listeners: Map<string, Set<HeadListener>>, partition: string, head: number): void {
    for (const l of [...(listeners.get(partition) ?? [])]) {
      // One partition's listener failing must not cost the others their head, nor the LISTEN
      // connection (an exception here would surface inside the pg client).
      try {
        l(head);
      } catch (error) {
        this.#options.onConnectionError?.(new Error(`a wake-up listener of partition ${JSON.stringify(partition)} threw: ${errorMessage(error)}`, { cause: error }));
      }
    }
  }

  #listen(): ListeningConnection {
    return new ListeningConnection({
      url: this.#options.url,
      channel: this.#options.channel,
      what: 'LISTEN',
      onConnectionError: this.#options.onConnectionError,
      // Whatever was appended while the connection was down sent no wake-up that reached us.
      onConnected: () => this.#pollHeads(),
      onNotification: (payload) => {
        const wakeUp = this.#options.decode(payload);
        if (wakeUp !== undefined) this.#deliver(this.#appended, wakeUp.partition, wakeUp.head);
      },
    });
  }
}

function add(map: Map<string, Set<HeadListener>>, partition: string, listener: HeadListener): () => void {
  let set = map.get(partition);
  if (set === undefined) map.set(partition, (set = new Set()));
  set.add(listener);
  return () => {
    const current = map.get(partition);
    current?.delete(listener);
    if (current?.size === 0) map.delete(partition);
  };
}
