/**
 * Remembers, per clientId, the highest clientSeq the hub has decided on and the reasons of recent
 * rejections. A client that reconnects re-sends its pending actions with their original clientSeq;
 * the ledger makes sure none is applied twice, and answers a re-sent rejected action with the
 * same reason it got the first time.
 */
const MAX_CLIENTS = 10_000;
const MAX_REJECTIONS_PER_CLIENT = 64;

interface ClientRecord {
  lastSeq: number;
  /** clientSeq → serverSeq of accepted actions, only the newest few (for messages). */
  lastServerSeq: number;
  rejections: Map<number, string>;
}

export class ClientLedger {
  readonly #clients = new Map<string, ClientRecord>();

  /** The rejection reason to echo when `clientSeq` was already decided on, else undefined. */
  duplicate(clientId: string, clientSeq: number): string | undefined {
    const rec = this.#clients.get(clientId);
    if (!rec || clientSeq > rec.lastSeq) return undefined;
    return (
      rec.rejections.get(clientSeq) ??
      `duplicate clientSeq ${clientSeq}: this client already dispatched up to clientSeq ${rec.lastSeq}; the original was applied and is not applied again`
    );
  }

  accepted(clientId: string, clientSeq: number, serverSeq: number): void {
    const rec = this.#record(clientId);
    rec.lastSeq = Math.max(rec.lastSeq, clientSeq);
    rec.lastServerSeq = serverSeq;
  }

  rejected(clientId: string, clientSeq: number, reason: string): void {
    const rec = this.#record(clientId);
    if (clientSeq <= rec.lastSeq && rec.rejections.has(clientSeq)) return;
    rec.lastSeq = Math.max(rec.lastSeq, clientSeq);
    rec.rejections.set(clientSeq, reason);
    if (rec.rejections.size > MAX_REJECTIONS_PER_CLIENT) {
      const oldest = rec.rejections.keys().next().value;
      if (oldest !== undefined) rec.rejections.delete(oldest);
    }
  }

  #record(clientId: string): ClientRecord {
    let rec = this.#clients.get(clientId);
    if (rec) {
      // Refresh recency: Map iteration order is insertion order, so re-insert.
      this.#clients.delete(clientId);
    } else {
      rec = { lastSeq: -1, lastServerSeq: 0, rejections: new Map() };
    }
    this.#clients.set(clientId, rec);
    if (this.#clients.size > MAX_CLIENTS) {
      const oldest = this.#clients.keys().next().value;
      if (oldest !== undefined) this.#clients.delete(oldest);
    }
    return rec;
  }
}
