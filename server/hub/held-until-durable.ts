/**
 * Holds what a feature's commit-phase reaction causes (an SSE frame, a follow-up dispatch, an
 * answer to an agent) until that commit is durable, as the two-phase hook rule requires (stated
 * in `commit-pipeline.ts`). A feature runs each commit-phase reaction inside `fold(serverSeq, …)`
 * and sends through `whenDurable(run)`: outside a fold `run` runs at once; inside, it is kept
 * until the feature's delivered-phase hook calls `release(serverSeq)` for that commit. Delivered
 * phases come in serverSeq order, so a release also frees everything held for earlier commits.
 */
export class HeldUntilDurable {
  /** The serverSeq whose commit phase is running, else undefined. */
  #folding: number | undefined;
  /** Held reactions, oldest commit first. */
  #held: Array<{ readonly serverSeq: number; readonly run: () => void }> = [];

  /** Runs a commit-phase reaction for commit `serverSeq`; what it sends waits for that commit. */
  fold(serverSeq: number, reaction: () => void): void {
    this.#folding = serverSeq;
    try {
      reaction();
    } finally {
      this.#folding = undefined;
    }
  }

  /** Now outside a fold; inside one, once the commit being folded is durable. */
  whenDurable(run: () => void): void {
    if (this.#folding === undefined) run();
    else this.#held.push({ serverSeq: this.#folding, run });
  }

  /** Delivered phase: commit `serverSeq` (and so every one before it) is durable. */
  release(serverSeq: number): void {
    if (this.#held.length === 0 || this.#held[0]!.serverSeq > serverSeq) return;
    const at = this.#held.findIndex((h) => h.serverSeq > serverSeq);
    const due = at === -1 ? this.#held : this.#held.slice(0, at);
    this.#held = at === -1 ? [] : this.#held.slice(at);
    for (const h of due) h.run();
  }
}
