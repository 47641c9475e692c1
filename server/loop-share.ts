/**
 * A share of each event-loop turn for one kind of work that arrives in bursts. Node runs every
 * callback and promise continuation a socket read causes before it looks at the next socket, so
 * 3,000 answers read from one WebSocket (or 1,500 permission requests read from one agent's
 * stdout) were handled in a single turn of several seconds, and `/healthz` and every other
 * client waited that long (issue 18.7). Work items pass `turn()` in arrival order, at most
 * `perTurn` per turn; the rest continue in later turns (`setImmediate`), with the poll phase
 * (new connections, other sockets) in between.
 */
export class LoopShare {
  #used = 0;
  #scheduled = false;
  readonly #waiting: Array<() => void> = [];
  #head = 0;
  /** Items that had to wait for a later turn (a work counter for tests). */
  deferred = 0;

  constructor(readonly perTurn: number) {}

  /** Undefined while this turn's share lasts (go on at once), else a promise that resolves in a later turn, in arrival order. */
  turn(): Promise<void> | undefined {
    this.#schedule();
    if (this.#head === this.#waiting.length && this.#used < this.perTurn) {
      this.#used++;
      return undefined;
    }
    this.deferred++;
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#nextTurn());
  }

  #nextTurn(): void {
    this.#scheduled = false;
    this.#used = 0;
    while (this.#used < this.perTurn && this.#head < this.#waiting.length) {
      this.#used++;
      this.#waiting[this.#head++]!();
    }
    if (this.#head === this.#waiting.length) {
      this.#waiting.length = 0;
      this.#head = 0;
    }
    // Scheduled from the check phase, so the next share starts after the next poll phase.
    if (this.#used > 0) this.#schedule();
  }
}
