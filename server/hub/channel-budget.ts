/**
 * Bounds how large one channel's state (a chat, a session) may grow. Chats are sent whole (in
 * `subscribe` answers, snapshots and the log's snapshot image), so a chat without a bound could
 * grow until encoding it fails ("Invalid string length") and every snapshot stalls the hub.
 *
 * Measuring the encoded state on every action would cost as much as a snapshot, so the budget
 * keeps an upper estimate instead: the last measured size plus the encoded size of every action
 * since (no reducer grows a state by more than the action it applies). Only when that estimate
 * would cross the limit is the state measured again; an action is refused only if the real size
 * plus the action would exceed it. Actions that only shrink a state are never refused, so a full
 * chat can always be cleaned up (truncated, messages removed, its turn ended).
 */
import { actionJson } from '../action-json.js';

export const DEFAULT_MAX_CHANNEL_JSON_CHARS = 8 * 1024 * 1024;

/** Actions that never grow a channel's state: always allowed, even on a full channel. */
const NEVER_GROWS = new Set([
  'chat/truncated',
  'chat/pendingMessageRemoved',
  'chat/steeringMessageRemoved',
  'chat/turnCancelled',
  'chat/turnComplete',
  'chat/error',
  'session/chatRemoved',
  'session/inputNeededRemoved',
]);

export class ChannelSizeBudget {
  /** Upper estimate of each channel's encoded state, in UTF-16 code units (JSON string length). */
  readonly #estimates = new Map<string, number>();

  constructor(readonly maxJsonChars: number = DEFAULT_MAX_CHANNEL_JSON_CHARS) {}

  /**
   * Charges `action` to `channel`: undefined when it fits (the estimate grows by its size), else a
   * rejection reason. `state` is read only when the estimate has to be checked against reality.
   */
  charge(channel: string, state: () => unknown, action: { type: string }): string | undefined {
    if (NEVER_GROWS.has(action.type)) return undefined;
    const size = actionJson(action).length;
    let estimate = this.#estimates.get(channel) ?? measure(state());
    if (estimate + size > this.maxJsonChars) estimate = measure(state());
    if (estimate + size > this.maxJsonChars) {
      this.#estimates.set(channel, estimate);
      return `channel is full (channel_too_large): its state would exceed ${this.maxJsonChars} characters of JSON; truncate it or start a new chat`;
    }
    this.#estimates.set(channel, estimate + size);
    return undefined;
  }

  /**
   * Counts an action decided elsewhere (another hub process of a cluster) against the estimate,
   * so every process's bound stays an upper estimate.
   */
  applied(channel: string, action: { type: string }): void {
    const estimate = this.#estimates.get(channel);
    if (estimate === undefined || NEVER_GROWS.has(action.type)) return;
    this.#estimates.set(channel, estimate + actionJson(action).length);
  }

  forget(channel: string): void {
    this.#estimates.delete(channel);
  }
}

function measure(state: unknown): number {
  return state === undefined ? 0 : JSON.stringify(state).length;
}
