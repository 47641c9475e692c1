/**
 * Duplicate detection for client dispatches. A client that reconnects re-sends its pending
 * actions with their original clientSeq; the ledger makes sure none is applied twice, and answers
 * a re-sent rejected action with the reason it got the first time.
 *
 * Everything is scoped to the principal: a record is keyed by tenant + user + clientId, so one
 * principal can never see, block or pre-empt another's clientSeqs even when it knows (or guesses)
 * their clientId. On top of that a clientId belongs to the first principal that used it (`claim`):
 * echoes carry only `{clientId, clientSeq}`, so two principals sharing one clientId would take
 * each other's echoes for their own.
 *
 * Accepted clientSeqs are remembered exactly (the newest per client), the older ones as ranges
 * (`decided`, seq-ranges.ts): a clientSeq in neither is new, so one that was refused because
 * storage failed — never applied — is decided afresh when re-sent, even after a restart (issue
 * 33.5g: a floor below the newest ones used to answer it "already decided"). Only retired clients
 * keep a floor. A huge clientSeq (2^53−1) cannot poison the seqs after it, and rejections never
 * enter the ranges.
 *
 * Eviction (issue 18.4): nothing one principal does can make the ledger forget another's entries.
 * Each principal has its own bounded set: its least recently active clients are retired (kept as
 * a floor — every clientSeq up to the highest accepted counts as decided — and as the clientId's
 * binding), so a retired client that comes back still never gets an action applied twice and its
 * clientId cannot be taken over. A retired entry is forgotten only to make room for the same
 * principal's fresh clientId, and only once it has been idle for `forgetIdleAfterMs` (minutes, not
 * a week: issue 33.4, where a browser making one clientId per tab was locked out after ~21,000
 * of them) and no connection uses it; when none is, the fresh clientId is refused
 * (`client_id_quota`) rather than anything live being forgotten. So only a principal making
 * more than 21,000 fresh clientIds within those minutes is ever refused.
 *
 * The ledger is saved with every snapshot (`toImage`), and records after the snapshot carry their
 * actor, so a restart rebuilds it exactly and never re-applies a re-sent clientSeq.
 */
import type { Principal } from '../auth/auth.js';
import type { LogRecord } from '../storage/action-log.js';
import { rangesAdd, rangesBound, rangesHave } from './seq-ranges.js';

/** Ranges of older accepted clientSeqs kept per client; past it the lowest two are joined. */
const MAX_DECIDED_RANGES = 64;

export interface LedgerLimits {
  /** Clients remembered in full per principal (their least recently active one is retired first). */
  readonly maxClientsPerPrincipal: number;
  /**
   * Retired clients remembered per principal: only the clientSeq up to which everything counts as
   * decided, and that the clientId is the principal's. Forgotten (least recently active first,
   * to make room for a fresh one) once retired for `forgetIdleAfterMs` with no connection using
   * it; a fresh clientId that would need a younger or connected one forgotten is refused
   * (`client_id_quota`).
   */
  readonly maxRetiredPerPrincipal: number;
  readonly forgetIdleAfterMs: number;
  /** Accepted clientSeqs remembered exactly per client. */
  readonly maxAcceptedPerClient: number;
  /** Rejection reasons remembered per client. */
  readonly maxRejectionsPerClient: number;
  /** Accepted clientSeqs per client written into a snapshot (older ones become the floor). */
  readonly maxAcceptedPerClientInImage: number;
}

export const LEDGER_LIMITS: LedgerLimits = {
  maxClientsPerPrincipal: 1_000,
  maxRetiredPerPrincipal: 20_000,
  forgetIdleAfterMs: 10 * 60_000,
  maxAcceptedPerClient: 256,
  maxRejectionsPerClient: 64,
  maxAcceptedPerClientInImage: 32,
};

/** How `claim` decided: the clientId is the caller's now, another principal's, or one too many. */
export type ClaimOutcome = 'claimed' | 'in_use' | 'client_id_quota';

/** Who dispatched: stored in a record's origin so recovery can rebuild the ledger. */
export interface Actor {
  readonly tenant: string;
  readonly user: string;
}

interface ClientRecord {
  readonly owner: string;
  readonly clientId: string;
  /** Every clientSeq <= floor counts as already applied (retired clients, images before issue 33.5g). */
  floor: number;
  /**
   * Accepted clientSeqs no longer in `accepted`, as ranges (seq-ranges.ts): a seq between them
   * that was refused (storage failing) stays new, so its re-send is decided, not "already decided".
   */
  readonly decided: number[];
  /** clientSeq → serverSeq of the newest accepted actions, so a re-sent one gets its original echo. */
  readonly accepted: Map<number, number>;
  readonly rejections: Map<number, string>;
  /** True while `accepted` was filled in ascending order, so its first key is its lowest. */
  ascending: boolean;
  highest: number;
}

/** A retired client: what is left once it was pushed out of its principal's full records. */
interface RetiredClient {
  readonly floor: number;
  /** When it was retired (ms, the hub's clock): it was last active then at the latest. */
  readonly retiredAt: number;
}

/** One principal's part of the ledger; Map order = recency (re-inserted on use). */
interface PrincipalEntries {
  readonly clients: Map<string, ClientRecord>;
  readonly retired: Map<string, RetiredClient>;
}

/** What the hub answers when a client re-sends a clientSeq it already dispatched. */
export type DuplicateVerdict = { readonly kind: 'accepted'; readonly serverSeq: number } | { readonly kind: 'rejected'; readonly reason: string };

/** The JSON image saved in snapshots. */
export interface LedgerImage {
  readonly clients: ReadonlyArray<{
    readonly tenant: string;
    readonly user: string;
    readonly clientId: string;
    readonly floor: number;
    readonly accepted: ReadonlyArray<readonly [number, number]>;
    /** Set for retired clients (only the floor is kept), with when they were retired. */
    readonly retired?: true;
    readonly retiredAt?: number;
    /** Accepted clientSeqs older than `accepted`, as ranges (`ClientRecord.decided`). */
    readonly decided?: readonly number[];
  }>;
}

const actors = new WeakMap<Principal, Actor>();

/** The actor of a principal (one object per principal, so its owner key is computed once). */
export function actorOf(principal: Principal): Actor {
  let actor = actors.get(principal);
  if (!actor) {
    actor = { tenant: principal.tenant, user: principal.user };
    actors.set(principal, actor);
  }
  return actor;
}

/** Owner keys per actor object: the hub passes the same actor object for every dispatch of a principal. */
const ownerKeys = new WeakMap<Actor, string>();

function ownerKey(actor: Actor): string {
  let key = ownerKeys.get(actor);
  if (key === undefined) {
    key = JSON.stringify([actor.tenant, actor.user]);
    ownerKeys.set(actor, key);
  }
  return key;
}

export class ClientLedger {
  /** Owner key → that principal's clients. */
  readonly #principals = new Map<string, PrincipalEntries>();
  /** clientId → owner key of the principal it belongs to (kept while the client is remembered or retired). */
  readonly #owners = new Map<string, string>();
  /** clientId → how many open connections use it: such a client is never forgotten. */
  readonly #live = new Map<string, number>();
  /** The clientId each open connection uses (`connected`). */
  readonly #connections = new WeakMap<object, { readonly actor: Actor; readonly clientId: string }>();

  constructor(
    readonly now: () => number = Date.now,
    readonly limits: LedgerLimits = LEDGER_LIMITS,
  ) {}

  /**
   * Binds `clientId` to `actor`. `in_use`: another principal uses it (the caller must refuse, or
   * that principal would receive echoes meant for this one and the other way round).
   * `client_id_quota`: a fresh clientId, and the principal has as many as it may hold with none
   * idle long enough to forget.
   */
  claim(actor: Actor, clientId: string): ClaimOutcome {
    const owner = ownerKey(actor);
    const current = this.#owners.get(clientId);
    if (current !== undefined && current !== owner) return 'in_use';
    if (current === undefined && !this.#roomForFresh(owner)) return 'client_id_quota';
    this.#record(owner, clientId);
    return 'claimed';
  }

  /**
   * `connection` now uses `clientId` (after `claim` said `claimed`): while any connection does,
   * the client is never forgotten, however long it stays quiet. Once per connection.
   */
  connected(connection: object, actor: Actor, clientId: string): void {
    if (this.#connections.has(connection)) return;
    this.#connections.set(connection, { actor, clientId });
    this.#live.set(clientId, (this.#live.get(clientId) ?? 0) + 1);
  }

  /** `connection` closed: when it was the last one using its clientId, the client's idle time starts now. */
  disconnected(connection: object): void {
    const used = this.#connections.get(connection);
    if (!used) return;
    this.#connections.delete(connection);
    const count = (this.#live.get(used.clientId) ?? 0) - 1;
    if (count > 0) this.#live.set(used.clientId, count);
    else this.#live.delete(used.clientId);
    const owner = ownerKey(used.actor);
    if (this.#owners.get(used.clientId) === owner) this.#record(owner, used.clientId);
  }

  /** How a re-sent `clientSeq` was decided for this principal, or undefined when it is new. */
  duplicate(actor: Actor, clientId: string, clientSeq: number): DuplicateVerdict | undefined {
    const entries = this.#principals.get(ownerKey(actor));
    const rec = entries?.clients.get(clientId);
    const floor = rec?.floor ?? entries?.retired.get(clientId)?.floor;
    if (floor === undefined) return undefined;
    const serverSeq = rec?.accepted.get(clientSeq);
    if (serverSeq !== undefined) return { kind: 'accepted', serverSeq };
    const reason = rec?.rejections.get(clientSeq);
    if (reason !== undefined) return { kind: 'rejected', reason };
    if (rec && rangesHave(rec.decided, clientSeq)) {
      return { kind: 'rejected', reason: `duplicate clientSeq ${clientSeq}: this client's action ${clientSeq} was already decided; an action is never applied twice` };
    }
    if (clientSeq <= floor) {
      return {
        kind: 'rejected',
        reason: `duplicate clientSeq ${clientSeq}: this client's actions up to clientSeq ${floor} were already decided; an action is never applied twice`,
      };
    }
    return undefined;
  }

  accepted(actor: Actor, clientId: string, clientSeq: number, serverSeq: number): void {
    const rec = this.#record(ownerKey(actor), clientId);
    if (clientSeq <= rec.highest) rec.ascending = false;
    rec.highest = Math.max(rec.highest, clientSeq);
    rec.accepted.set(clientSeq, serverSeq);
    rec.rejections.delete(clientSeq);
    while (rec.accepted.size > this.limits.maxAcceptedPerClient) forgetLowest(rec);
  }

  /**
   * A record read from the log (recovery, or another process's append in cluster mode): when a
   * client dispatched it, its clientSeq counts as accepted for the actor its origin names.
   */
  acceptedFromLog(record: Pick<LogRecord, 'serverSeq' | 'origin'>): void {
    const origin = record.origin;
    if (origin?.actor) this.accepted(origin.actor, origin.clientId, origin.clientSeq, record.serverSeq);
  }

  rejected(actor: Actor, clientId: string, clientSeq: number, reason: string): void {
    const rec = this.#record(ownerKey(actor), clientId);
    if (rec.rejections.has(clientSeq)) return;
    rec.rejections.set(clientSeq, reason);
    while (rec.rejections.size > this.limits.maxRejectionsPerClient) {
      const oldest = rec.rejections.keys().next().value;
      if (oldest === undefined) break;
      rec.rejections.delete(oldest);
    }
  }

  toImage(): LedgerImage {
    const clients: Array<LedgerImage['clients'][number]> = [];
    for (const [owner, entries] of this.#principals) {
      const [tenant, user] = JSON.parse(owner) as [string, string];
      for (const [clientId, retired] of entries.retired) {
        clients.push({ tenant, user, clientId, floor: retired.floor, accepted: [], retired: true, retiredAt: retired.retiredAt });
      }
      for (const rec of entries.clients.values()) {
        const seqs = [...rec.accepted.entries()].sort((a, b) => a[0] - b[0]);
        const kept = seqs.slice(-this.limits.maxAcceptedPerClientInImage);
        // The older accepted seqs join the ranges, not the floor: a refused seq among them stays new.
        const decided = [...rec.decided];
        for (const [seq] of seqs.slice(0, seqs.length - kept.length)) rangesAdd(decided, seq);
        rangesBound(decided, MAX_DECIDED_RANGES);
        clients.push({ tenant, user, clientId: rec.clientId, floor: rec.floor, accepted: kept, ...(decided.length > 0 ? { decided } : {}) });
      }
    }
    return { clients };
  }

  /** Rebuilds a ledger from its image; retired clients without a recorded time count as retired now. */
  static fromImage(image: LedgerImage | undefined, now: () => number = Date.now, limits: LedgerLimits = LEDGER_LIMITS): ClientLedger {
    const ledger = new ClientLedger(now, limits);
    for (const c of image?.clients ?? []) {
      const owner = ownerKey(c);
      if (c.retired) {
        ledger.#entries(owner).retired.set(c.clientId, { floor: c.floor, retiredAt: c.retiredAt ?? now() });
        ledger.#owners.set(c.clientId, owner);
        continue;
      }
      const rec = ledger.#record(owner, c.clientId);
      rec.floor = c.floor;
      rec.decided.push(...(c.decided ?? []));
      for (const [clientSeq, serverSeq] of c.accepted) ledger.accepted(c, c.clientId, clientSeq, serverSeq);
    }
    return ledger;
  }

  #entries(owner: string): PrincipalEntries {
    let entries = this.#principals.get(owner);
    if (!entries) {
      entries = { clients: new Map(), retired: new Map() };
      this.#principals.set(owner, entries);
    }
    return entries;
  }

  /** Whether the principal may take one more fresh clientId without forgetting a retired one too early. */
  #roomForFresh(owner: string): boolean {
    const entries = this.#principals.get(owner);
    if (!entries || entries.clients.size < this.limits.maxClientsPerPrincipal || entries.retired.size < this.limits.maxRetiredPerPrincipal) return true;
    const oldest = this.#forgettable(entries);
    return oldest !== undefined && this.now() - oldest[1].retiredAt >= this.limits.forgetIdleAfterMs;
  }

  /**
   * The least recently retired client no connection uses (Map order = retirement order). At most
   * one user's connections (1,000) are skipped, so this stays cheap.
   */
  #forgettable(entries: PrincipalEntries): [string, RetiredClient] | undefined {
    for (const entry of entries.retired) if (!this.#live.has(entry[0])) return entry;
    return undefined;
  }

  #record(owner: string, clientId: string): ClientRecord {
    const entries = this.#entries(owner);
    let rec = entries.clients.get(clientId);
    if (rec) {
      // Refresh recency: Map iteration order is insertion order, so re-insert.
      entries.clients.delete(clientId);
    } else {
      const retired = entries.retired.get(clientId);
      entries.retired.delete(clientId);
      const floor = retired?.floor ?? -1;
      rec = { owner, clientId, floor, decided: [], accepted: new Map(), rejections: new Map(), ascending: true, highest: floor };
      this.#owners.set(clientId, owner);
    }
    entries.clients.set(clientId, rec);
    if (entries.clients.size > this.limits.maxClientsPerPrincipal) this.#retireOldest(entries);
    return rec;
  }

  /**
   * Moves the principal's least recently active client to its retired ones (everything it had
   * accepted now counts as decided), forgetting the oldest retired one past the bound. Only
   * `claim` adds fresh clientIds on the live path, and it refuses one that would make this forget
   * a client active within `forgetIdleAfterMs`; records read from the log cannot be refused. A
   * client a connection uses is never forgotten (the bound is exceeded instead, by at most the
   * connections one user may hold).
   */
  #retireOldest(entries: PrincipalEntries): void {
    const [clientId, oldest] = entries.clients.entries().next().value!;
    entries.clients.delete(clientId);
    entries.retired.set(clientId, { floor: Math.max(oldest.floor, oldest.highest), retiredAt: this.now() });
    while (entries.retired.size > this.limits.maxRetiredPerPrincipal) {
      const forgotten = this.#forgettable(entries);
      if (forgotten === undefined) break;
      entries.retired.delete(forgotten[0]);
      this.#owners.delete(forgotten[0]);
    }
  }
}

/** Forgets the lowest accepted clientSeq exactly; it stays decided in the client's ranges. */
function forgetLowest(rec: ClientRecord): void {
  let lowest = Number.POSITIVE_INFINITY;
  if (rec.ascending) lowest = rec.accepted.keys().next().value ?? lowest;
  else for (const seq of rec.accepted.keys()) if (seq < lowest) lowest = seq;
  rec.accepted.delete(lowest);
  rangesAdd(rec.decided, lowest);
  rangesBound(rec.decided, MAX_DECIDED_RANGES);
}
