/** The doubling back-off the server retries a tenant's log with (opening it late, reloading it). */

export interface BackoffOptions {
  readonly firstWaitMs: number;
  readonly maxWaitMs: number;
  /** Wait before the first attempt too (the caller has just failed once). */
  readonly waitFirst: boolean;
  /** True once retrying is pointless (the server is closing): checked before every attempt. */
  stopped(): boolean;
  /** Each failed attempt, before the next wait. */
  failed(err: unknown): void;
}

/** Runs `attempt` until it resolves or `stopped()`, waiting twice as long after each failure, up to `maxWaitMs`. */
export async function retryWithBackoff(attempt: () => Promise<void>, options: BackoffOptions): Promise<void> {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());
  for (let wait = options.firstWaitMs; !options.stopped(); wait = Math.min(wait * 2, options.maxWaitMs)) {
    if (options.waitFirst) {
      await sleep(wait);
      if (options.stopped()) return;
    }
    try {
      await attempt();
      return;
    } catch (err) {
      options.failed(err);
    }
    if (!options.waitFirst) await sleep(wait);
  }
}
