/**
 * Reconnect delays and the timer seam. Isomorphic: shared/ compiles without DOM or Node typings,
 * so the global timer functions are reached through a narrowly typed view of `globalThis`.
 */
import { RECONNECT_NOW_CLOSE_CODE, RESYNC_CLOSE_CODE } from '../protocol/close-codes.js';

export interface BackoffOptions {
  /** Delay before the first reconnect attempt (before jitter). */
  readonly initialDelayMs: number;
  /** Upper bound for any single delay, whatever the attempt number. */
  readonly maxDelayMs: number;
}

/**
 * Defaults: the first retry comes quickly (a blip such as a proxy restart should heal
 * unnoticed), and the cap keeps a client that was offline for long from waiting minutes after
 * the hub is back.
 */
export const DEFAULT_BACKOFF: BackoffOptions = { initialDelayMs: 250, maxDelayMs: 10_000 };

/**
 * Delay before reconnect attempt number `attempt` (0-based): exponential growth capped at
 * `maxDelayMs`, with "equal jitter" — half of the delay is fixed and half is random. Pure
 * random ("full jitter") could retry immediately every time; equal jitter still spreads out
 * the herd of clients that lost the hub at the same instant while the delay keeps growing.
 */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const initial = Math.max(0, options.initialDelayMs);
  const max = Math.max(initial, options.maxDelayMs);
  // 2 ** attempt overflows to Infinity for large attempts; Math.min still caps it correctly.
  const ceiling = Math.min(max, initial * 2 ** Math.max(0, attempt));
  const r = Math.min(1, Math.max(0, random()));
  return Math.round(ceiling / 2 + (ceiling / 2) * r);
}

/**
 * Delay before the reconnect that follows a socket closed with `closeCode`: none when the hub
 * asked for an immediate reconnect (`RECONNECT_NOW_CLOSE_CODE`: the node is draining and the
 * load balancer already routes elsewhere; `RESYNC_CLOSE_CODE`: a channel changed in a way the
 * negotiated version cannot be told, and the reconnect's snapshots bring it up to date), otherwise
 * the back-off of `attempt`.
 */
export function reconnectDelay(closeCode: number | undefined, attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  return closeCode === RECONNECT_NOW_CLOSE_CODE || closeCode === RESYNC_CLOSE_CODE ? 0 : backoffDelay(attempt, options, random);
}

/** The timer functions the client uses (reconnect delays, request timeouts). Injected in tests. */
export interface Scheduler {
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

interface TimerGlobals {
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Every JS runtime we target (browsers, Node ≥ 20, workers) defines these globals. */
export const defaultScheduler: Scheduler = {
  setTimeout: (callback, delayMs) => (globalThis as unknown as TimerGlobals).setTimeout(callback, delayMs),
  clearTimeout: (handle) => (globalThis as unknown as TimerGlobals).clearTimeout(handle),
};
