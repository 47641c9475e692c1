/**
 * The owners' hooks, kept in `HOOK_ORDER`, and the one place that turns a commit into hook calls
 * in its two phases (see `hub-port.ts`): the commit phase now — every owner's `afterCommit`, then,
 * when the commit ended the chat's active turn, every owner's `turnEnded` — and the delivered
 * phase handed back to the caller, who runs it once the record is durable. The hub and the tests'
 * fake port both use it, so the fake cannot drift from the order and the turn-end rule features
 * rely on.
 */
import type { KnownAction } from '../../shared/protocol/actions.js';
import type { ActionOrigin, WireAction } from '../../shared/protocol/messages.js';
import { HOOK_ORDER, turnEndReasonOf, type CommitEvent, type CommitFacts, type HookOwner, type HubHooks, type TurnEndedEvent } from './hub-port.js';

/**
 * A commit as hooks see it, with the effects its commit phase registered (`afterAppend`): they
 * are kept here, on the commit, and run first in its delivered phase, which the pipeline runs
 * after the append (never when it failed). No feature holds effects in a buffer of its own.
 */
class Commit implements CommitEvent {
  readonly channel: string;
  readonly action: WireAction;
  readonly known: KnownAction | undefined;
  readonly serverSeq: number;
  readonly origin?: ActionOrigin | undefined;
  readonly remote?: boolean;
  #effects: Array<() => void> | undefined;
  #delivered = false;

  constructor(facts: CommitFacts) {
    this.channel = facts.channel;
    this.action = facts.action;
    this.known = facts.known;
    this.serverSeq = facts.serverSeq;
    if (facts.origin !== undefined) this.origin = facts.origin;
    if (facts.remote !== undefined) this.remote = facts.remote;
  }

  afterAppend(effect: () => void): void {
    if (this.#delivered) effect();
    else (this.#effects ??= []).push(effect);
  }

  /** Delivered phase: the registered effects, in order; one that throws goes to `onError`. */
  runEffects(onError: (err: unknown) => void): void {
    this.#delivered = true;
    const effects = this.#effects;
    this.#effects = undefined;
    if (effects) for (const effect of effects) run(effect, onError);
  }
}

function run(effect: () => void, onError: (err: unknown) => void): void {
  try {
    effect();
  } catch (err) {
    onError(err);
  }
}

export class HookList {
  #entries: Array<{ readonly owner: HookOwner; readonly hooks: HubHooks }> = [];
  /** True while a commit phase runs: a commit a hook causes then waits in `#later`. */
  #announcing = false;
  readonly #later: Array<() => void> = [];

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
   * Announces a commit: runs its commit phase and returns its delivered phase (the effects the
   * commit phase registered on it, then every owner's `afterDurable` and `turnEndedDurable`).
   * `chat` is the chat it was committed to (undefined for other channels) as it is right after
   * the commit, `turnBefore` that chat's active turn before it: when the commit ended it, owners are told
   * `turnEnded` (and later `turnEndedDurable`) after all of them have seen the commit itself.
   *
   * A commit sequenced while another's commit phase runs (a hook dispatched) is announced once
   * that one's is over, so no owner sees a later serverSeq before an earlier one.
   */
  announceCommit(facts: CommitFacts, chat: { readonly uri: string; readonly session: string; readonly activeTurnId: string | undefined } | undefined, turnBefore: string | undefined): () => void {
    const event = new Commit(facts);
    const ended: TurnEndedEvent | undefined =
      turnBefore !== undefined && chat && chat.activeTurnId !== turnBefore ? { chat: chat.uri, session: chat.session, turnId: turnBefore, reason: turnEndReasonOf(event.action.type), commit: event } : undefined;
    const commitPhase = (): void => {
      this.call((h) => h.afterCommit?.(event));
      if (ended) this.call((h) => h.turnEnded?.(ended));
    };
    if (this.#announcing) {
      this.#later.push(commitPhase);
    } else {
      this.#announcing = true;
      try {
        commitPhase();
        for (let next = this.#later.shift(); next; next = this.#later.shift()) next();
      } finally {
        this.#announcing = false;
      }
    }
    return () => {
      event.runEffects(this.onError);
      this.call((h) => h.afterDurable?.(event));
      if (ended) this.call((h) => h.turnEndedDurable?.(ended));
    };
  }
}
