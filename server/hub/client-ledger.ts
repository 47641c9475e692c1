/**
 * Remembers, per clientId, the highest clientSeq the hub has decided on and the reasons of recent
 * rejections. A client that reconnects re-sends its pending actions with their original clientSeq;
 * the ledger makes sure none is applied twice, and answers a re-sent rejected action with the
 * same reason it got the first time.
 */
const MAX_CLIENTS = 10_000;
const MAX_DECISIONS_PER_CLIENT = 256;

interface ClientRecord {
  lastSeq: number;
  /** clientSeq → serverSeq of the newest accepted actions, so a re-sent one gets its original echo. */
  accepted: Map<number, number>;
  rejections: Map<number, string>;
}

/** What the hub answers when a client re-sends a clientSeq it already dispatched. */
export type DuplicateVerdict =
  | { readonly kind: 'accepted'; readonly serverSeq: number }
  | { readonly kind: 'rejected'; readonly reason: string };

export class ClientLedger {
  readonly #clients = new Map<string, ClientRecord>();

  /** How a re-sent `clientSeq` was decided, or undefined when it is new. */
  duplicate(clientId: string, clientSeq: number): DuplicateVerdict | undefined {
    const rec = this.#clients.get(clientId);
    if (!rec || clientSeq > rec.lastSeq) return undefined;
    const serverSeq = rec.accepted.get(clientSeq);
    if (serverSeq !== undefined) return { kind: 'accepted', serverSeq };
    return {
      kind: 'rejected',
      reason:
        rec.rejections.get(clientSeq) ??
        `duplicate clientSeq ${clientSeq}: this client already dispatched up to clientSeq ${rec.lastSeq}; an action is never applied twice`,
    };
  }

  accepted(clientId: string, clientSeq: number, serverSeq: number): void {
    const rec = this.#record(clientId);
    rec.lastSeq = Math.max(rec.lastSeq, clientSeq);
    rec.accepted.set(clientSeq, serverSeq);
    trim(rec.accepted);
  }

  rejected(clientId: string, clientSeq: number, reason: string): void {
    const rec = this.#record(clientId);
    if (clientSeq <= rec.lastSeq && rec.rejections.has(clientSeq)) return;
    rec.lastSeq = Math.max(rec.lastSeq, clientSeq);
    rec.rejections.set(clientSeq, reason);
    trim(rec.rejections);
  }

  #record(clientId: string): ClientRecord {
    let rec = this.#clients.get(clientId);
    if (rec) {
      // Refresh recency: Map iteration order is insertion order, so re-insert.
      this.#clients.delete(clientId);
    } else {
      rec = { lastSeq: -1, accepted: new Map(), rejections: new Map() };
    }
    this.#clients.set(clientId, rec);
    if (this.#clients.size > MAX_CLIENTS) {
      const oldest = this.#clients.keys().next().value;
      if (oldest !== undefined) this.#clients.delete(oldest);
    }
    return rec;
  }
}

/** Keeps the newest entries of a per-client map (Map iteration order is insertion order). */
function trim<V>(map: Map<number, V>): void {
  while (map.size > MAX_DECISIONS_PER_CLIENT) {
    const oldest = map.keys().next().value;
    if (oldest === undefined) return;
    map.delete(oldest);
  }
}
