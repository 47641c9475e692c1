/** Runs `fn` at the wall-clock time `at` (ms), also when that is further off than one timer can wait (~24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;

export function atTime(at: number, fn: () => void, now: () => number = Date.now): { cancel(): void } {
  let timer: NodeJS.Timeout;
  const arm = (): void => {
    const wait = at - now();
    timer = setTimeout(wait > MAX_TIMER_MS ? arm : fn, Math.max(0, Math.min(wait, MAX_TIMER_MS)));
    timer.unref();
  };
  arm();
  return { cancel: () => clearTimeout(timer) };
}
