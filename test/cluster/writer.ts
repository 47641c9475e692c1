/**
 * A test client that keeps a few `chat/pendingMessageSet` actions (each with a unique id) in
 * flight on one chat, survives its node dying (`moveTo` another node: `reconnect` from the last
 * serverSeq it saw, re-send what was not echoed with the same clientSeq), and re-sends under a new
 * clientSeq what was refused while the log was unreachable. `echoed` is every id it saw applied.
 */
import type { ActionEnvelope, ReconnectResult } from '../../shared/protocol/messages.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';

/** A client that keeps a few actions in flight and survives its node dying. */
export class Writer {
  readonly echoed = new Set<string>();
  /** clientSeq → id of every action sent and not yet echoed. */
  readonly unacked = new Map<number, string>();
  /** How many dispatches were refused because the log was unreachable. */
  refused = 0;
  readonly #retry: string[] = [];
  #clientSeq = 0;
  #lastSeen = 0;
  #client: RpcClient;
  #stopped = false;

  constructor(
    readonly name: string,
    client: RpcClient,
    readonly chat: string,
  ) {
    this.#client = client;
  }

  get client(): RpcClient {
    return this.#client;
  }

  /** Sends `total` actions, at most `window` unechoed at a time. Survives `moveTo`. */
  async run(total: number, window = 4): Promise<void> {
    let fresh = 0;
    while (!this.#stopped && (fresh < total || this.unacked.size > 0 || this.#retry.length > 0)) {
      this.#collect();
      if ((fresh < total || this.#retry.length > 0) && this.unacked.size < window && !this.#client.closed) {
        const clientSeq = ++this.#clientSeq;
        const id = this.#retry.shift() ?? `${this.name}-${++fresh}`;
        this.unacked.set(clientSeq, id);
        this.#send(clientSeq, id);
        continue;
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  stop(): void {
    this.#stopped = true;
  }

  /** Reconnects on another node from the last serverSeq it saw, and re-sends what was not echoed. */
  async moveTo(wsUrl: string): Promise<ReconnectResult> {
    this.#collect();
    const client = await RpcClient.open(wsUrl, { clientId: this.#client.clientId });
    const result = await waitFor(
      () =>
        client
          .request<ReconnectResult>('reconnect', {
            channel: 'ahp-root://',
            clientId: client.clientId,
            lastSeenServerSeq: this.#lastSeen,
            subscriptions: [this.chat],
          })
          .then((r) => (r.missing.length === 0 ? r : undefined)),
      { what: `${this.name} to reconnect`, timeoutMs: 15_000 },
    );
    if (result.type === 'replay') for (const e of result.actions) this.#observe(e);
    this.#client = client;
    for (const [clientSeq, id] of this.unacked) this.#send(clientSeq, id);
    return result;
  }

  #send(clientSeq: number, id: string): void {
    if (this.#client.closed) return;
    this.#client.notify('dispatchAction', {
      channel: this.chat,
      clientSeq,
      action: { type: 'chat/pendingMessageSet', kind: 'queued', id, message: { text: id, origin: { kind: 'user' } } },
    });
  }

  #seen = 0;
  #collect(): void {
    const list = this.#client.envelopes;
    for (; this.#seen < list.length; this.#seen++) this.#observe(list[this.#seen]!);
    if (this.#client.closed) this.#seen = 0;
  }

  #observe(e: ActionEnvelope): void {
    if (e.rejectionReason === undefined && e.serverSeq > this.#lastSeen) this.#lastSeen = e.serverSeq;
    if (e.origin?.clientId !== this.#client.clientId) return;
    const id = this.unacked.get(e.origin.clientSeq);
    if (id === undefined) return;
    // A re-sent action that was applied before the node died is answered with its original echo
    // (or, when the new node's replay buffer no longer has it, "already applied"): either way it
    // was applied once, so it counts as echoed.
    if (e.rejectionReason !== undefined && /action log is unavailable/.test(e.rejectionReason)) {
      // Refused, not applied, while PostgreSQL was down: send it again later under a new
      // clientSeq (the old one may now be below this client's newest decided clientSeq).
      this.unacked.delete(e.origin.clientSeq);
      this.refused++;
      this.#retry.push(id);
      return;
    }
    if (e.rejectionReason === undefined || /already applied/.test(e.rejectionReason)) {
      this.echoed.add(id);
      this.unacked.delete(e.origin.clientSeq);
    } else {
      throw new Error(`${id} rejected: ${e.rejectionReason}`);
    }
  }
}
