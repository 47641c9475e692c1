/**
 * Bounds how much state the hub holds: one channel (a chat, a session), everything one user's
 * sessions hold, and everything a tenant holds. Chats are sent whole (in `subscribe` answers,
 * snapshots and the log's snapshot image), so a chat without a bound could grow until encoding
 * it fails ("Invalid string length"); and since every chat is bounded but their number is too
 * (sessions × chats), only a bound on the sum keeps one user from filling the process's heap
 * and the snapshot past what can be written or loaded again.
 *
 * Measuring the encoded state on every action would cost as much as a snapshot, so the budget
 * keeps an upper estimate per channel instead: the last measured size plus the encoded size of
 * every action since (no reducer grows a state by more than the action it applies). The user's
 * and the tenant's totals are sums of those estimates. Only when an estimate would cross a limit
 * are the channels charged since their last measurement measured again (each at most once until
 * it is charged again); an action is refused only if the real sizes plus the action would exceed
 * it. Actions that only shrink a state are never refused, so a full chat, user or tenant can
 * always be cleaned up (truncated, messages removed, its turn ended, chats and sessions disposed).
 *
 * State is charged to the owner of the session that holds it (the user who created it): an
 * agent's output and other users' messages in alice's session count against alice. The tenant's
 * quota bounds everyone together.
 */
import { actionJson } from '../action-json.js';
import { rejection, type Rejection } from './decide.js';

export const DEFAULT_MAX_CHANNEL_JSON_CHARS = 8 * 1024 * 1024;
/**
 * Defaults well below V8's longest string (~512 MiB), so a tenant's snapshot image, which holds
 * every chat and session, can always be encoded and loaded again.
 */
export const DEFAULT_MAX_USER_STATE_CHARS = 64 * 1024 * 1024;
export const DEFAULT_MAX_TENANT_STATE_CHARS = 192 * 1024 * 1024;

/** Which bound refused an action; the stable name is also in the refusal's text. */
export type StateRefusalKind = 'channel_too_large' | 'user_state_quota' | 'tenant_state_quota';

export interface StateRefusal {
  readonly kind: StateRefusalKind;
  readonly reason: string;
}

export interface StateQuotas {
  /** Largest encoded state (JSON characters) one chat or session may grow to. */
  readonly maxChannelJsonChars: number;
  /** Every session a user owns, with its chats, together. */
  readonly maxUserStateChars: number;
  /** Every session and chat of the tenant together. */
  readonly maxTenantStateChars: number;
}

/** How the budget reads the hub's state (catalogue.ts): never copied, only measured. */
export interface BudgetedState {
  /** The channel's current state, or undefined when the channel does not exist. */
  stateOf(channel: string): unknown;
  /** The user owning the session the channel belongs to. */
  ownerOf(channel: string): string | undefined;
  /** Every session and chat channel. */
  channels(): Iterable<string>;
}

/** Sizes measured while loading (load-guard.ts): valid while the channel still holds that very state object. */
export type InitialSizes = ReadonlyMap<string, { readonly state: unknown; readonly size: number }>;

/** Actions that never grow a channel's state: always allowed, even when full or over quota. */
const NEVER_GROWS = new Set(['chat/truncated', 'chat/pendingMessageRemoved', 'chat/steeringMessageRemoved', 'chat/turnCancelled', 'chat/turnComplete', 'chat/error', 'session/chatRemoved', 'session/inputNeededRemoved']);

interface ChannelAccount {
  readonly owner: string;
  /** Upper estimate of the channel's encoded state, in UTF-16 code units (JSON string length). */
  estimate: number;
  /**
   * The state object last measured: reducers never mutate, so while the channel still holds this
   * very object the estimate is exact and measuring again would find the same size.
   */
  measured: unknown;
}

const GROW_REMEDY = 'remove queued messages, truncate or dispose chats, or dispose sessions';
const NEW_REMEDY = 'dispose chats or sessions first';
/** Refusal texts (clients read them): an action that would cross a quota, and a new channel when one is used up. */
const QUOTA_REFUSALS = {
  grow: {
    user: (owner: string, max: number) => `state quota exceeded (user_state_quota): the sessions of ${JSON.stringify(owner)} would hold more than ${max} characters of state; ${GROW_REMEDY}`,
    tenant: (max: number) => `state quota exceeded (tenant_state_quota): this tenant's sessions would hold more than ${max} characters of state; ${GROW_REMEDY}`,
  },
  new: {
    user: (owner: string, max: number) => `state quota exceeded (user_state_quota): the sessions of ${JSON.stringify(owner)} hold ${max} characters of state already; ${NEW_REMEDY}`,
    tenant: (max: number) => `state quota exceeded (tenant_state_quota): this tenant's sessions hold ${max} characters of state already; ${NEW_REMEDY}`,
  },
};

export class ChannelSizeBudget {
  readonly #accounts = new Map<string, ChannelAccount>();
  /** Owner → the channels charged to them, and the sum of their estimates. */
  readonly #owners = new Map<string, { total: number; readonly channels: Set<string> }>();
  #total = 0;

  /** Only while constructing: held afterwards it would keep old state objects alive. */
  #initial: InitialSizes | undefined;

  constructor(
    readonly quotas: StateQuotas,
    readonly state: BudgetedState,
    initial?: InitialSizes,
  ) {
    // Exact from the start (after recovery), so the totals never begin as guesses.
    this.#initial = initial;
    for (const channel of state.channels()) this.#account(channel);
    this.#initial = undefined;
  }

  /** The upper estimate of every channel's state together (a gauge). */
  get totalChars(): number {
    return this.#total;
  }

  /** The upper estimate of what `owner`'s sessions hold. */
  ownerChars(owner: string): number {
    return this.#owners.get(owner)?.total ?? 0;
  }

  /**
   * Charges `action` to `channel`: undefined when it fits (the estimates grow by its size), else
   * the refusal. Real sizes are measured only when an estimate says a limit would be crossed.
   */
  charge(channel: string, action: { type: string }): StateRefusal | undefined {
    const account = this.#account(channel);
    if (!account) return undefined;
    if (NEVER_GROWS.has(action.type)) return undefined;
    const size = actionJson(action).length;
    const { maxChannelJsonChars } = this.quotas;
    if (account.estimate + size > maxChannelJsonChars) this.#measure(channel, account);
    if (account.estimate + size > maxChannelJsonChars) {
      return { kind: 'channel_too_large', reason: `channel is full (channel_too_large): its state would exceed ${maxChannelJsonChars} characters of JSON; truncate it or start a new chat` };
    }
    const refusal = this.#checkQuotas(account.owner, size, 'grow');
    if (refusal) return refusal;
    const owner = this.#owners.get(account.owner)!;
    this.#grow(account, owner, size);
    return undefined;
  }

  /**
   * Whether `owner` may create a session or chat (which adds one channel of `size` characters):
   * the refusal when their or the tenant's quota is used up.
   */
  chargeNew(owner: string, size: number): StateRefusal | undefined {
    return this.#checkQuotas(owner, size, 'new');
  }

  /** A channel the hub created or changed by itself (no action charged): measured now. */
  opened(channel: string): void {
    const account = this.#account(channel);
    if (account) this.#measure(channel, account);
  }

  /**
   * Counts an action decided elsewhere (another hub process of a cluster, or a hub-made action
   * such as a roll-up) so every estimate stays an upper one.
   */
  applied(channel: string, action: { type: string }): void {
    const account = this.#accounts.get(channel);
    if (!account) {
      this.#account(channel);
      return;
    }
    if (NEVER_GROWS.has(action.type)) return;
    this.#grow(account, this.#owners.get(account.owner)!, actionJson(action).length);
  }

  /** The channel's state left memory (its session was parked): keep the estimate, let go of the object. */
  released(channels: Iterable<string>): void {
    for (const channel of channels) {
      const account = this.#accounts.get(channel);
      if (account) account.measured = undefined;
    }
  }

  /** A channel was disposed: what it held no longer counts. */
  forget(channel: string): void {
    const account = this.#accounts.get(channel);
    if (!account) return;
    this.#accounts.delete(channel);
    const owner = this.#owners.get(account.owner)!;
    owner.total -= account.estimate;
    owner.channels.delete(channel);
    if (owner.channels.size === 0) this.#owners.delete(account.owner);
    this.#total -= account.estimate;
  }

  /**
   * The user's, then the tenant's quota for `size` more characters, measured again before a
   * refusal when the estimate says one would be crossed; `grow` (an action) and `new` (a channel)
   * word the refusal differently.
   */
  #checkQuotas(owner: string, size: number, growth: keyof typeof QUOTA_REFUSALS): StateRefusal | undefined {
    const { maxUserStateChars, maxTenantStateChars } = this.quotas;
    const held = this.#owners.get(owner);
    if (held && held.total + size > maxUserStateChars) this.#measureAll(held.channels);
    if (held && held.total + size > maxUserStateChars) return { kind: 'user_state_quota', reason: QUOTA_REFUSALS[growth].user(owner, maxUserStateChars) };
    if (this.#total + size > maxTenantStateChars) this.#measureAll(this.#accounts.keys());
    if (this.#total + size > maxTenantStateChars) return { kind: 'tenant_state_quota', reason: QUOTA_REFUSALS[growth].tenant(maxTenantStateChars) };
    return undefined;
  }

  /** The channel's account, opened (measured) on first use; undefined for a channel that does not exist. */
  #account(channel: string): ChannelAccount | undefined {
    const existing = this.#accounts.get(channel);
    if (existing) return existing;
    const state = channel === '' ? undefined : this.state.stateOf(channel);
    const ownerName = state === undefined ? undefined : this.state.ownerOf(channel);
    if (ownerName === undefined) return undefined;
    const account: ChannelAccount = { owner: ownerName, estimate: 0, measured: undefined };
    this.#accounts.set(channel, account);
    let owner = this.#owners.get(ownerName);
    if (!owner) {
      owner = { total: 0, channels: new Set() };
      this.#owners.set(ownerName, owner);
    }
    owner.channels.add(channel);
    this.#measure(channel, account);
    return account;
  }

  #grow(account: ChannelAccount, owner: { total: number }, size: number): void {
    account.estimate += size;
    owner.total += size;
    this.#total += size;
  }

  /** Replaces the estimate by the real size (a no-op for a channel nothing changed since). */
  #measure(channel: string, account: ChannelAccount): void {
    const state = this.state.stateOf(channel);
    if (state !== undefined && state === account.measured) return;
    const known = this.#initial?.get(channel);
    const size = state === undefined ? 0 : known?.state === state ? known.size : JSON.stringify(state).length;
    const owner = this.#owners.get(account.owner)!;
    owner.total += size - account.estimate;
    this.#total += size - account.estimate;
    account.estimate = size;
    account.measured = state;
  }

  #measureAll(channels: Iterable<string>): void {
    for (const channel of [...channels]) {
      const account = this.#accounts.get(channel);
      if (account) this.#measure(channel, account);
    }
  }
}

/** A budget refusal as a decision: the channel's size is a limit, the user's and tenant's totals quotas. */
export function budgetRejection(refusal: StateRefusal, observer: { quotaRefused?(quota: string): void } | undefined): Rejection {
  if (refusal.kind === 'channel_too_large') return rejection('limit_exceeded', refusal.reason);
  observer?.quotaRefused?.(refusal.kind);
  return rejection('quota_exceeded', refusal.reason);
}
