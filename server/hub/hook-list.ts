/**
 * The owners' hooks, kept in `HOOK_ORDER`, and the one place that turns a commit into hook calls:
 * every owner's `afterCommit`, then, when the commit ended the chat's active turn, every owner's
 * `turnEnded`. The hub and the tests' fake port both use it, so the fake cannot drift from the
 * order and the turn-end rule features rely on.
 */
import { HOOK_ORDER, turnEndReasonOf, type CommitEvent, type HookOwner, type HubHooks } from './hub-port.js';

export class HookList {
  #entries: Array<{ readonly owner: HookOwner; readonly hooks: HubHooks }> = [];

  /** `onError`: what to do with a hook that threw (the hub logs it and calls the rest). */
  constructor(private readonly onError: (err: unknown) => void) {}

  /** Registers an owner's hooks at its place in `HOOK_ORDER`; returns the unregister function. */
  add(owner: HookOwner, hooks: HubHooks): () => void {
    const entry = { owner, hooks };
    const rank = HOOK_ORDER.indexOf(owner);
    const at = this.#entries.findIndex((h) => HOOK_ORDER.indexOf(h.owner) > rank);
    this.#entries.splice(at === -1 ? this.#entries.length : at, 0, entry);
    return () => {
      this.#entries = this.#entries.filter((h) => h !== entry);
    };
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Calls one hook of every owner, in order; a hook that throws goes to `onError`. */
  call(fn: (hooks: HubHooks) => void): void {
    for (const { hooks } of this.#entries) {
      try {
        fn(hooks);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  /**
   * Announces a commit. `chat` is the chat it was committed to (undefined for other channels),
   * `turnBefore` that chat's active turn before the commit: when the commit ended it, owners are
   * told `turnEnded` after all of them have seen `afterCommit`.
   */
  announceCommit(event: CommitEvent, chat: { readonly uri: string; readonly session: string; readonly activeTurnId: string | undefined } | undefined, turnBefore: string | undefined): void {
    this.call((h) => h.afterCommit?.(event));
    if (turnBefore === undefined || !chat || chat.activeTurnId === turnBefore) return;
    const ended = { chat: chat.uri, session: chat.session, turnId: turnBefore, reason: turnEndReasonOf(event.action.type), commit: event };
    this.call((h) => h.turnEnded?.(ended));
  }
}
