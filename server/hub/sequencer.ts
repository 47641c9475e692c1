/**
 * The sequence stage: a decided action (local) or a record another process appended (cluster
 * mode, `foldRemote`) is sequenced through the commit pipeline with the roll-up it causes
 * (chat → session → root), and announced to the hooks' commit phase; their delivered phase runs
 * once the record is durable (persist and deliver are the pipeline's, `commit-pipeline.ts`).
 */
import { isKnownAction, STREAMING_ONLY_ACTIONS, type KnownAction } from '../../shared/protocol/actions.js';
import type { ActionOrigin, WireAction } from '../../shared/protocol/messages.js';
import type { LogRecord } from '../storage/action-log.js';
import { CatalogueAction, catalogueActionOf, type ChatEntry, type HubState } from './catalogue.js';
import type { CatalogueCommands } from './catalogue-commands.js';
import type { ChannelSizeBudget } from './channel-budget.js';
import type { Actor, ClientLedger } from './client-ledger.js';
import type { CommitPipeline, DeliveredPhase } from './commit-pipeline.js';
import type { Connection } from './connection.js';
import type { HookList } from './hook-list.js';
import type { CommitFacts } from './hub-port.js';
import { chatRollUpActions } from './rollup.js';
import type { RootCatalogue } from './root-catalogue.js';

export interface SequencerDeps {
  readonly state: HubState;
  readonly pipeline: CommitPipeline;
  readonly rootCatalogue: RootCatalogue;
  readonly hooks: HookList;
  readonly channelBudget: ChannelSizeBudget;
  readonly ledger: ClientLedger;
  readonly catalogue: CatalogueCommands;
}

export class Sequencer {
  readonly #d: SequencerDeps;

  constructor(deps: SequencerDeps) {
    this.#d = deps;
  }

  /**
   * Sequences a decided action, then the roll-up it causes (chat → session → root), and announces
   * it to the hooks. Returns its serverSeq; it is durable once the pipeline's next batch is.
   */
  accept(channel: string, action: WireAction, origin: ActionOrigin | undefined, source?: Connection, actor?: Actor): number {
    const turnBefore = this.#d.state.chats.get(channel)?.state.activeTurn?.id;
    // The delivered phase is known only once the commit phase ran, after sequencing: the commit carries it as data.
    const delivered: DeliveredPhase = {};
    const seq = this.#d.pipeline.sequence(channel, action, origin, source, actor, delivered);
    const chat = this.#d.state.chats.get(channel);
    const known = isKnownAction(action) ? action : undefined;
    if (chat && !STREAMING_ONLY_ACTIONS.has(action.type)) this.#rollUpChat(chat, known);
    else if (!chat) this.#rollUpSession(channel);
    delivered.run = this.#announceCommit({ channel, action, known, serverSeq: seq, origin }, turnBefore);
    return seq;
  }

  /** Sequences the session actions that bring the session in line with the chat, then publishes its summary. */
  #rollUpChat(chat: ChatEntry, after: KnownAction | undefined): void {
    const session = this.#d.state.sessions.get(chat.session);
    if (!session) return;
    for (const action of chatRollUpActions(chat, session, after)) this.#d.pipeline.sequence(session.uri, action);
    this.#d.rootCatalogue.sessionChanged(session);
  }

  /** Publishes the session's summary to the root catalogue when it changed (no-op for other channels). */
  #rollUpSession(uri: string): void {
    const session = this.#d.state.sessions.get(uri);
    if (session) this.#d.rootCatalogue.sessionChanged(session);
  }

  /**
   * Runs a commit's commit phase in the owners' hooks and returns its delivered phase, which the
   * pipeline runs once the record is durable (the phases and the turn-end rule live in `HookList`).
   */
  #announceCommit(event: CommitFacts, turnBefore: string | undefined): () => void {
    const chat = this.#d.state.chats.get(event.channel);
    return this.#d.hooks.announceCommit(event, chat && { uri: chat.uri, session: chat.session, activeTurnId: chat.state.activeTurn?.id }, turnBefore);
  }

  /**
   * Cluster mode: records another process appended, folded through the path recovery uses
   * (`HubState.applyRecord`; roll-up records are in the log, so nothing is recomputed), then
   * delivered to this process's subscribers and features exactly like local ones.
   */
  foldRemote(records: readonly LogRecord[]): void {
    for (const r of records) {
      const lifecycle = catalogueActionOf(r);
      const disposedSession = lifecycle?.type === CatalogueAction.SessionDisposed ? this.#d.state.sessions.get(lifecycle.session) : undefined;
      const disposedChat = lifecycle?.type === CatalogueAction.ChatDisposed ? this.#d.state.chats.get(lifecycle.chat) : undefined;
      const turnBefore = this.#d.state.chats.get(r.channel)?.state.activeTurn?.id;
      const delivered: DeliveredPhase = {};
      this.#d.pipeline.adoptDurable(r, delivered);
      this.#d.channelBudget.applied(r.channel, r.action);
      this.#d.ledger.acceptedFromLog(r);
      if (lifecycle) {
        if (lifecycle.type === CatalogueAction.SessionCreated) {
          const session = this.#d.state.sessions.get(lifecycle.session);
          if (session) this.#d.rootCatalogue.sessionAdded(session);
          this.#d.channelBudget.opened(lifecycle.session);
        } else if (lifecycle.type === CatalogueAction.ChatCreated) {
          this.#d.channelBudget.opened(lifecycle.chat);
        } else if (disposedSession) {
          this.#d.catalogue.sessionGone(disposedSession, disposedSession.chats);
        } else if (disposedChat) {
          this.#d.catalogue.chatGone(disposedChat.uri, disposedChat.session);
        }
        continue;
      }
      const action = r.action as WireAction;
      const session = this.#d.state.sessionOf(r.channel);
      if (session && !STREAMING_ONLY_ACTIONS.has(action.type)) this.#d.rootCatalogue.sessionChanged(session);
      delivered.run = this.#announceCommit({ channel: r.channel, action, known: isKnownAction(action) ? action : undefined, serverSeq: r.serverSeq, origin: r.origin, remote: true }, turnBefore);
    }
  }
}
