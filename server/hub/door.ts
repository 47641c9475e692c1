/**
 * The one door: every action and command enters the hub through `Door.enter` — an AHP client's
 * dispatch, a feature's submission as a principal (HTTP replies, prompts, SSE, collaboration), an
 * action of the hub itself or an in-process agent, the catalogue commands, and the operations a
 * feature performs itself (steer, prompt, answer a permission…), which the door only checks.
 * Each entry gets one `Outcome`: accepted (its serverSeq, and what a command yields), rejected
 * (a kind of the one table, its JSON-RPC code, the message, and at which stage), duplicate (the
 * original echo) or ignored (an AHP client's unknown or invisible channel). Surfaces only render it.
 *
 * At the door, in this order: write admission (open, writable, cluster write turn; the disk quota
 * for writes a principal asks for), tenant visibility (once per entry), authorization (the
 * principal's grants, computed once per principal: `grantsOf`), then the decision (`decide.ts`)
 * or the command (`catalogue-commands.ts`). Deciding is synchronous within the call: on one node
 * (or holding the cluster write turn) the outcome is made before `enter` returns, and an AHP
 * client's is returned as a value, its private echo already in the outbox in order with the
 * connection's other echoes. Only the wait for the cluster write turn and for durability is a
 * promise: every entry but an AHP client's resolves once its records are durable.
 */
import type { ErrorKind } from '../../shared/protocol/error-kinds.js';
import { rpcCodeOf } from '../../shared/protocol/error-kinds.js';
import { ProtocolError } from '../../shared/protocol/errors.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import type { Principal } from '../auth/auth.js';
import { authorize, type Operation } from '../auth/authorize.js';
import { errorMessage } from '../log.js';
import type { HubState, SessionEntry } from './catalogue.js';
import type { CatalogueCommands } from './catalogue-commands.js';
import { budgetRejection, type ChannelSizeBudget } from './channel-budget.js';
import { actorOf, type ClientLedger } from './client-ledger.js';
import type { CommitPipeline } from './commit-pipeline.js';
import { CLIENT_SURFACE, decide, decideServer, echoableRejected, rejection, rejectionOf, sessionOfVisibleChannel, type Decision, type Rejection } from './decide.js';
import { rejectedOf, type Accepted, type CheckEntry, type ClientHandle, type Entry, type Outcome, type Rejected, type Stage } from './entry.js';
import type { HubObserver } from './hub-options.js';
import { visibleChatIn, visibleSessionIn } from './queries.js';
import type { ReplayWindow } from './replay-window.js';
import type { Sequencer } from './sequencer.js';
import type { WriteAdmission } from './write-admission.js';
import type { WriteGate } from './write-gate.js';

export type { Accepted, CheckEntry, Entry, Outcome, Rejected } from './entry.js';

const IGNORED: Outcome = { outcome: 'ignored' };

function fromRejection(r: Rejection, at: Stage): Rejected {
  return { outcome: 'rejected', kind: r.kind, code: r.code, message: r.reason, at };
}

function refused(kind: ErrorKind, message: string, at: Stage = 'decision'): Rejected {
  return { outcome: 'rejected', kind, code: rpcCodeOf(kind), message, at };
}

/** The hub's parts the door uses (all owned by the hub). */
export interface DoorDeps {
  readonly state: HubState;
  readonly admission: WriteAdmission;
  readonly ledger: ClientLedger;
  readonly replay: ReplayWindow;
  readonly pipeline: CommitPipeline;
  readonly sequencer: Sequencer;
  readonly catalogue: CatalogueCommands;
  readonly channelBudget: ChannelSizeBudget;
  readonly observer: HubObserver | undefined;
  readonly now: () => number;
  /** Read at every entry (the gate is set after the hub is built). */
  readonly host: () => { readonly gate: WriteGate | undefined; readonly failed: Error | undefined; readonly closed: boolean };
}

export class Door {
  readonly #d: DoorDeps;

  constructor(deps: DoorDeps) {
    this.#d = deps;
  }

  enter(entry: CheckEntry): Outcome;
  enter(entry: Entry): Outcome | Promise<Outcome>;
  enter(entry: Entry): Outcome | Promise<Outcome> {
    switch (entry.op) {
      case 'dispatch': {
        const by = entry.by;
        if (by.from === 'client') return this.#fromClient(entry, by.client, by.clientSeq);
        if (by.from === 'server') return this.#write(false, () => this.#fromServer(entry.channel, entry.action));
        return this.#write(true, () => this.#fromPrincipal(by.principal, entry.channel, entry.action, by.surface ?? 'hub', entry.as ?? 'dispatch'));
      }
      case 'createSession':
        return this.#write(true, () => this.#check(entry.principal, entry.as ?? 'createSession') ?? this.#command(() => ({ defaultChat: this.#d.catalogue.createSession(entry.principal, entry) })));
      case 'disposeSession':
        return this.#write(false, () => {
          const session = visibleSessionIn(this.#d.state, entry.principal, entry.uri);
          if (!session) return refused('session_not_found', `session ${entry.uri} not found`);
          return this.#check(entry.principal, entry.as ?? 'disposeSession', session.owner) ?? this.#command(() => this.#d.catalogue.disposeSession(session));
        });
      case 'createChat':
        return this.#write(true, () => {
          const session = visibleSessionIn(this.#d.state, entry.principal, entry.session);
          if (!session) return refused('session_not_found', `session ${entry.session} not found`);
          return this.#check(entry.principal, 'createChat') ?? this.#command(() => ({ chat: this.#d.catalogue.createChat(session, entry) }));
        });
      case 'disposeChat':
        return this.#write(false, () => {
          const chat = this.#d.admission.lookup(() => visibleChatIn(this.#d.state, entry.principal, entry.chat));
          if (!chat) return refused('not_found', `chat ${entry.chat} not found`);
          return this.#check(entry.principal, 'disposeChat') ?? this.#command(() => this.#d.catalogue.disposeChat(chat));
        });
      default: {
        if (entry.session !== undefined && !visibleSessionIn(this.#d.state, entry.principal, entry.session)) return refused('session_not_found', `session ${entry.session} not found`);
        return this.#check(entry.principal, entry.op) ?? { outcome: 'accepted' };
      }
    }
  }

  /** The principal's grants for the operation (computed once per principal), as a rejection or undefined. */
  #check(principal: Principal, operation: Operation, owner?: string): Rejected | undefined {
    const refusal = authorize(principal, operation, owner);
    return refusal && refused(refusal.kind, refusal.message);
  }

  /**
   * A write asked for by a principal or the hub: admission (open, writable; `quota`: under the
   * disk quota), the cluster write turn, then `decideNow` synchronously; resolved once durable.
   */
  #write(quota: boolean, decideNow: () => Outcome | { readonly sequenced: true; readonly accepted: Accepted }): Promise<Outcome> {
    let turn: Promise<void> | undefined;
    try {
      turn = this.#d.admission.enter();
    } catch (err) {
      return Promise.resolve(rejectedOf(err, 'admission'));
    }
    const now = (): Outcome | Promise<Outcome> => {
      try {
        if (quota) this.#d.admission.assertQuota();
      } catch (err) {
        return rejectedOf(err, 'admission');
      }
      const decided = decideNow();
      if (!('sequenced' in decided)) return decided;
      return this.#d.pipeline.durable().then(
        () => decided.accepted,
        (err: unknown) => rejectedOf(err, 'durability'),
      );
    };
    if (turn) return turn.then(now, (err: unknown) => rejectedOf(err, 'admission'));
    try {
      return Promise.resolve(now());
    } catch (err) {
      return Promise.reject(err); // a bug in deciding: the caller's promise fails, as an async call's would
    }
  }

  /** A catalogue command (synchronous; throws its refusal), once admitted and authorized. */
  #command(run: () => Omit<Accepted, 'outcome'> | undefined): Rejected | { readonly sequenced: true; readonly accepted: Accepted } {
    try {
      const yields = run();
      return { sequenced: true, accepted: { outcome: 'accepted', serverSeq: this.#d.pipeline.serverSeq, ...yields } };
    } catch (err) {
      return rejectedOf(err, 'decision');
    }
  }

  /** An action of a principal on a surface other than AHP: full client validation, no origin. */
  #fromPrincipal(principal: Principal, channel: string, action: WireAction, surface: string, operation: Operation): Outcome | { readonly sequenced: true; readonly accepted: Accepted } {
    const session = this.#visible(principal, channel);
    if (session === false) return refused('storage_unavailable', this.#d.admission.writeRefusal()!);
    if (!session) return refused('not_found', `no channel ${channel}`);
    const decision = this.#check(principal, operation) ?? this.#decide(principal, `hub:${principal.user}`, session, channel, action, surface);
    if ('outcome' in decision) return decision;
    if (!decision.ok) return fromRejection(decision, 'decision');
    const serverSeq = this.#d.sequencer.accept(channel, decision.action, undefined);
    return { sequenced: true, accepted: { outcome: 'accepted', serverSeq } };
  }

  /** An action of the hub itself or an in-process agent: shape and turn checks (like a remote agent's). */
  #fromServer(channel: string, action: WireAction): Outcome | { readonly sequenced: true; readonly accepted: Accepted } {
    let decided: WireAction;
    try {
      decided = this.#d.admission.lookup(() => decideServer(this.#d.state, channel, action));
    } catch (err) {
      return err instanceof ProtocolError ? rejectedOf(err, 'decision') : { ...refused('invalid_params', errorMessage(err)), cause: err };
    }
    const full = this.#d.channelBudget.charge(channel, decided);
    if (full) return fromRejection(budgetRejection(full, this.#d.observer), 'decision');
    return { sequenced: true, accepted: { outcome: 'accepted', serverSeq: this.#d.sequencer.accept(channel, decided, undefined) } };
  }

  /**
   * A client's `dispatchAction`. Unknown or invisible channels are ignored without an echo (AHP).
   * Everything else is either sequenced and echoed to every subscriber with its origin, or echoed
   * to its sender alone with a `rejectionReason` and not applied — at decision time, so in order.
   */
  #fromClient(entry: Entry & { readonly op: 'dispatch' }, client: ClientHandle, clientSeq: number): Outcome | Promise<Outcome> {
    const { channel, action: rawAction } = entry;
    const { gate, closed } = this.#d.host();
    if (entry.refused) {
      // Kept behind this client's earlier dispatches that wait for the write turn.
      if (gate && !gate.isOpen) {
        const later = (): Outcome | Promise<Outcome> => this.#fromClient(entry, client, clientSeq);
        return this.#d.admission.writeTurn().then(later, later);
      }
      return this.#echoRejection(client, channel, clientSeq, rawAction, rejection(entry.refused.kind, entry.refused.message));
    }
    const writeRefusal = this.#d.admission.writeRefusal();
    const quota = writeRefusal === undefined ? this.#d.admission.quotaRefusal() : undefined;
    if (writeRefusal === undefined && quota === undefined && closed) return IGNORED;
    if (writeRefusal !== undefined) return this.#echoRejection(client, channel, clientSeq, echoableRejected(rawAction), rejection('storage_unavailable', writeRefusal), 'admission');
    if (quota !== undefined) return this.#echoRejection(client, channel, clientSeq, echoableRejected(rawAction), rejection('storage_quota_exceeded', quota), 'admission');
    if (gate && !gate.isOpen) {
      // Cluster mode: decide once this process holds the write turn (in arrival order).
      return this.#d.admission.writeTurn().then(
        () => this.#fromClient(entry, client, clientSeq),
        (err: unknown) => this.#echoRejection(client, channel, clientSeq, rawAction, rejectionOf(err), 'admission'),
      );
    }
    const actor = actorOf(client.principal);
    const session = this.#visible(client.principal, channel);
    if (session === false) return this.#echoRejection(client, channel, clientSeq, echoableRejected(rawAction), rejection('storage_unavailable', this.#d.admission.writeRefusal()!));
    if (!session) return IGNORED;
    const duplicate = this.#d.ledger.duplicate(actor, client.clientId, clientSeq);
    if (duplicate?.kind === 'accepted') {
      // A re-sent action that was applied: answer with its original echo, never apply it again.
      const original = this.#d.replay.find(duplicate.serverSeq);
      if (original) {
        this.#d.pipeline.sendPrivate(client.conn, original);
        return { outcome: 'duplicate', echo: original };
      }
    }
    const denied = duplicate ? undefined : this.#check(client.principal, entry.as ?? 'dispatch');
    const decision: Decision = duplicate
      ? rejection('duplicate', duplicate.kind === 'rejected' ? duplicate.reason : `clientSeq ${clientSeq} was already applied; it is not applied again`)
      : denied
        ? rejection(denied.kind, denied.message)
        : this.#decide(client.principal, client.clientId, session, channel, rawAction, CLIENT_SURFACE);
    if (!decision.ok) {
      if (!duplicate && decision.kind !== 'storage_unavailable') this.#d.ledger.rejected(actor, client.clientId, clientSeq, decision.reason); // a storage refusal may be sent again
      return this.#echoRejection(client, channel, clientSeq, echoableRejected(rawAction), decision);
    }
    this.#d.ledger.accepted(actor, client.clientId, clientSeq, this.#d.pipeline.serverSeq + 1);
    // The source connection gets its echo at delivery even when it is not subscribed (AHP lets a
    // client answer a chat it has not subscribed to). The stored origin also names the actor, so
    // recovery can rebuild the principal-scoped ledger; envelopes never carry it.
    const serverSeq = this.#d.sequencer.accept(channel, decision.action, { clientId: client.clientId, clientSeq }, client.conn, actor);
    return { outcome: 'accepted', serverSeq };
  }

  /** The channel's session if the principal's tenant may see it (the one visibility check of an action); false when looking it up failed the hub. */
  #visible(principal: Principal, channel: string): SessionEntry | undefined | false {
    const session = sessionOfVisibleChannel(this.#d.state, principal, channel);
    // Looking up loaded a parked session that could not be read (`Hub.#fail`): refused, not "unknown channel".
    return this.#d.host().failed ? false : session;
  }

  /** The decide stage (decide.ts), then the size budget: an accepted action is charged before it is sequenced. */
  #decide(principal: Principal, clientId: string, session: SessionEntry, channel: string, rawAction: WireAction, surface: string): Decision {
    const decision = decide(this.#d.state, { principal, clientId, session, channel, rawAction, surface, now: this.#d.now() });
    if (this.#d.host().failed) return rejection('storage_unavailable', this.#d.admission.writeRefusal()!);
    if (!decision.ok) return decision;
    const full = this.#d.channelBudget.charge(channel, decision.action);
    return full === undefined ? decision : budgetRejection(full, this.#d.observer);
  }

  /** Echoes a rejection to its sender alone (in order), counted by kind. */
  #echoRejection(client: ClientHandle, channel: string, clientSeq: number, action: WireAction, r: Rejection, at: Stage = 'decision'): Rejected {
    this.#d.observer?.dispatchRejected(r.kind);
    const origin = { clientId: client.clientId, clientSeq };
    this.#d.pipeline.sendPrivate(client.conn, { channel, action, serverSeq: this.#d.pipeline.serverSeq, origin, rejectionReason: r.reason, rejectionKind: r.kind });
    return fromRejection(r, at);
  }
}
