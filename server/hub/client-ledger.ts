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
 * Accepted clientSeqs are remembered exactly (the newest per client); a clientSeq below all of
 * them that is not remembered counts as already applied (clients number their actions upwards).
 * That floor only ever rises to seqs that were really accepted and then forgotten, so one huge
 * clientSeq (2^53−1) cannot poison the seqs after it, and rejections never move it at all.
 *
 * The ledger is saved with every snapshot (`toImage`), and records after the snapshot carry their
 * actor, so a restart rebuilds it exactly and never re-applies a re-sent clientSeq.
 */
import type { Principal } from '../auth/auth.js';
import type { LogRecord } from '../storage/action-log.js';

export const LEDGER_LIMITS = {
  /** Clients remembered (least recently active forgotten first). */
  maxClients: 10_000,
  /** Accepted clientSeqs remembered exactly per client. */
  maxAcceptedPerClient: 256,
  /** Rejection reasons remembered per client. */
  maxRejectionsPerClient: 64,
  /** Accepted clientSeqs per client written into a snapshot (older ones become the floor). */
  maxAcceptedPerClientInImage: 32,
} as const;

/** Who dispatched: stored in a record's origin so recovery can rebuild the ledger. */
export interface Actor {
  readonly tenant: string;
  readonly user: string;
}

interface ClientRecord {
  readonly owner: string;
  readonly clientId: string;
  /** Every accepted clientSeq <= floor that is no longer in `accepted` counts as already applied. */
  floor: number;
  /** clientSeq → serverSeq of the newest accepted actions, so a re-sent one gets its original echo. */
  readonly accepted: Map<number, number>;
  readonly rejections: Map<number, string>;
  /** True while `accepted` was filled in ascending order, so its first key is its lowest. */
  ascending: boolean;
  highest: number;
}

/** What the hub answers when a client re-sends a clientSeq it already dispatched. */
export type DuplicateVerdict =
  | { readonly kind: 'accepted'; readonly serverSeq: number }
  | { readonly kind: 'rejected'; readonly reason: string };

/** The JSON image saved in snapshots. */
export interface LedgerImage {
  readonly clients: ReadonlyArray<{
    readonly tenant: string;
    readonly user: string;
    readonly clientId: string;
    readonly floor: number;
    readonly accepted: ReadonlyArray<readonly [number, number]>;
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
  /** Keyed by owner + clientId; Map order = recency (re-inserted on use). */
  readonly #clients = new Map<string, ClientRecord>();
  /** clientId → owner key of the principal it belongs to. */
  readonly #owners = new Map<string, string>();

  /**
   * Binds `clientId` to `actor` unless another principal already uses it. False means "in use by
   * someone else": the caller must refuse, or that principal would receive echoes meant for
   * this one (and the other way round).
   */
  claim(actor: Actor, clientId: string): boolean {
    const owner = ownerKey(actor);
    const current = this.#owners.get(clientId);
    if (current !== undefined && current !== owner) return false;
    this.#record(owner, clientId);
    return true;
  }

  /** How a re-sent `clientSeq` was decided for this principal, or undefined when it is new. */
  duplicate(actor: Actor, clientId: string, clientSeq: number): DuplicateVerdict | undefined {
    const rec = this.#clients.get(recordKey(ownerKey(actor), clientId));
    if (!rec) return undefined;
    const serverSeq = rec.accepted.get(clientSeq);
    if (serverSeq !== undefined) return { kind: 'accepted', serverSeq };
    const reason = rec.rejections.get(clientSeq);
    if (reason !== undefined) return { kind: 'rejected', reason };
    if (clientSeq <= rec.floor) {
      return {
        kind: 'rejected',
        reason: `duplicate clientSeq ${clientSeq}: this client's actions up to clientSeq ${rec.floor} were already decided; an action is never applied twice`,
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
    while (rec.accepted.size > LEDGER_LIMITS.maxAcceptedPerClient) forgetLowest(rec);
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
    while (rec.rejections.size > LEDGER_LIMITS.maxRejectionsPerClient) {
      const oldest = rec.rejections.keys().next().value;
      if (oldest === undefined) break;
      rec.rejections.delete(oldest);
    }
  }

  toImage(): LedgerImage {
    const clients: Array<LedgerImage['clients'][number]> = [];
    for (const rec of this.#clients.values()) {
      const [tenant, user] = JSON.parse(rec.owner) as [string, string];
      const seqs = [...rec.accepted.entries()].sort((a, b) => a[0] - b[0]);
      const kept = seqs.slice(-LEDGER_LIMITS.maxAcceptedPerClientInImage);
      const dropped = seqs.length - kept.length;
      const floor = dropped > 0 ? Math.max(rec.floor, seqs[dropped - 1]![0]) : rec.floor;
      clients.push({ tenant, user, clientId: rec.clientId, floor, accepted: kept });
    }
    return { clients };
  }

  static fromImage(image: LedgerImage | undefined): ClientLedger {
    const ledger = new ClientLedger();
    for (const c of image?.clients ?? []) {
      const rec = ledger.#record(ownerKey(c), c.clientId);
      rec.floor = c.floor;
      for (const [clientSeq, serverSeq] of c.accepted) ledger.accepted(c, c.clientId, clientSeq, serverSeq);
    }
    return ledger;
  }

  #record(owner: string, clientId: string): ClientRecord {
    const key = recordKey(owner, clientId);
    let rec = this.#clients.get(key);
    if (rec) {
      // Refresh recency: Map iteration order is insertion order, so re-insert.
      this.#clients.delete(key);
    } else {
      rec = { owner, clientId, floor: -1, accepted: new Map(), rejections: new Map(), ascending: true, highest: -1 };
      this.#owners.set(clientId, owner);
    }
    this.#clients.set(key, rec);
    if (this.#clients.size > LEDGER_LIMITS.maxClients) {
      const [oldestKey, oldest] = this.#clients.entries().next().value!;
      this.#clients.delete(oldestKey);
      if (this.#owners.get(oldest.clientId) === oldest.owner) this.#owners.delete(oldest.clientId);
    }
    return rec;
  }
}

function recordKey(owner: string, clientId: string): string {
  return `${owner}\n${clientId}`;
}

/** Forgets the lowest accepted clientSeq; it and everything below it now count as applied. */
function forgetLowest(rec: ClientRecord): void {
  let lowest = Number.POSITIVE_INFINITY;
  if (rec.ascending) lowest = rec.accepted.keys().next().value ?? lowest;
  else for (const seq of rec.accepted.keys()) if (seq < lowest) lowest = seq;
  rec.accepted.delete(lowest);
  rec.floor = Math.max(rec.floor, lowest);
}
