/** Polls `check` until it returns a non-undefined value (or stops throwing), or fails at the deadline. Never sleeps a fixed time. */
export async function waitFor<T>(check: () => T | undefined | Promise<T | undefined>, options: { timeoutMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out waiting for ${options.what ?? 'condition'}${detail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
