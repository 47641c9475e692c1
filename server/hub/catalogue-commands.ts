/**
 * The catalogue commands: creating and disposing sessions and chats (JSON-RPC `createSession`,
 * `disposeSession`, `createChat`, `disposeChat`). Each is entered through the door (`door.ts`:
 * admission, visibility, authorization, then the wait for durability), checks limits and quotas
 * synchronously, and sequences its lifecycle records and the session actions that keep the
 * catalogue in the log. What follows a disposal (here or by another process: `sessionGone`,
 * `chatGone`) is here too.
 */
import { ProtocolError } from '../../shared/protocol/errors.js';
import { CHAT_SCHEME, channelKind } from '../../shared/protocol/uris.js';
import type { AgentInfo } from '../agents/agent.js';
import type { Principal } from '../auth/auth.js';
import { CATALOGUE_CHANNEL, CatalogueAction, type CatalogueRecordAction, type ChatEntry, type HubState, type SessionEntry } from './catalogue.js';
import type { ChannelSizeBudget, StateRefusal } from './channel-budget.js';
import type { CommitPipeline } from './commit-pipeline.js';
import type { HookList } from './hook-list.js';
import type { HubLimits, HubObserver } from './hub-options.js';
import type { RootCatalogue } from './root-catalogue.js';
import type { Subscriptions } from './subscriptions.js';

/** What a new session or chat is charged before it is measured (an empty one is a few hundred characters). */
const NEW_CHANNEL_CHARS = 1_024;

/** The hub's parts the commands use (all owned by the hub). */
export interface CatalogueDeps {
  readonly state: HubState;
  readonly pipeline: CommitPipeline;
  readonly channelBudget: ChannelSizeBudget;
  readonly rootCatalogue: RootCatalogue;
  readonly subscriptions: Subscriptions;
  readonly hooks: HookList;
  readonly observer: HubObserver | undefined;
  readonly limits: HubLimits;
  readonly agents: readonly AgentInfo[];
  readonly defaultProvider: string;
  readonly now: () => number;
  readonly newId: () => string;
}

export class CatalogueCommands {
  readonly #d: CatalogueDeps;

  constructor(deps: CatalogueDeps) {
    this.#d = deps;
  }

  /** Sequences a new session and its default chat (returned); throws the named refusal. */
  createSession(principal: Principal, params: { uri: string; provider?: string | undefined; title?: string | undefined }): string {
    if (channelKind(params.uri) !== 'session') {
      throw new ProtocolError('invalid_params', 'channel must be an ahp-session:/<id> URI');
    }
    if (this.#d.state.sessions.has(params.uri)) {
      // The server gives each tenant a hub of its own (tenant-stack.ts), so this is always one
      // of the caller's own tenant's sessions: it says nothing about anyone else's.
      throw new ProtocolError('session_exists', `session ${params.uri} already exists`);
    }
    const provider = params.provider ?? this.#d.defaultProvider;
    if (!this.#d.agents.some((a) => a.provider === provider)) {
      throw new ProtocolError('provider_not_found', `no agent provider ${JSON.stringify(provider)}`);
    }
    let count = 0;
    for (const s of this.#d.state.sessions.values()) if (s.tenant === principal.tenant) count++;
    if (count >= this.#d.limits.maxSessionsPerTenant) {
      throw new ProtocolError('limit_exceeded', `at most ${this.#d.limits.maxSessionsPerTenant} sessions per tenant`);
    }
    this.#refuseOverQuota(this.#d.channelBudget.chargeNew(principal.user, NEW_CHANNEL_CHARS * 2));
    const createdAt = new Date(this.#d.now()).toISOString();
    const title = params.title ?? 'New session';
    this.#sequenceLifecycle({
      type: CatalogueAction.SessionCreated,
      session: params.uri,
      tenant: principal.tenant,
      owner: principal.user,
      provider,
      title,
      createdAt,
    });
    const defaultChat = this.#createChatRecord(params.uri, CHAT_SCHEME + this.#d.newId(), 'Chat', createdAt);
    this.#d.pipeline.sequence(params.uri, { type: 'session/defaultChatChanged', defaultChat });
    this.#d.channelBudget.opened(params.uri);
    this.#d.channelBudget.opened(defaultChat);
    this.#d.rootCatalogue.sessionAdded(this.#d.state.sessions.get(params.uri)!);
    return defaultChat;
  }

  /** Sequences the disposal of a session (and its chats). */
  disposeSession(session: SessionEntry): undefined {
    const chats = [...session.chats];
    this.#sequenceLifecycle({ type: CatalogueAction.SessionDisposed, session: session.uri });
    this.sessionGone(session, chats);
    return undefined;
  }

  /** Sequences a new chat in the session (returned); throws the named refusal. */
  createChat(session: SessionEntry, params: { chat?: string | undefined; title?: string | undefined }): string {
    if (session.chats.size >= this.#d.limits.maxChatsPerSession) {
      throw new ProtocolError('limit_exceeded', `at most ${this.#d.limits.maxChatsPerSession} chats per session`);
    }
    const chat = params.chat ?? CHAT_SCHEME + this.#d.newId();
    if (channelKind(chat) !== 'chat') throw new ProtocolError('invalid_params', 'chat must be an ahp-chat:/<id> URI');
    if (this.#d.state.chats.has(chat)) throw new ProtocolError('already_exists', `chat ${chat} already exists`);
    this.#refuseOverQuota(this.#d.channelBudget.chargeNew(session.owner, NEW_CHANNEL_CHARS));
    this.#createChatRecord(session.uri, chat, params.title ?? 'Chat', new Date(this.#d.now()).toISOString());
    this.#d.channelBudget.opened(chat);
    this.#d.channelBudget.opened(session.uri);
    this.#d.rootCatalogue.sessionChanged(session);
    return chat;
  }

  /** Sequences the disposal of a chat that is not its session's default; throws otherwise. */
  disposeChat(chat: ChatEntry): undefined {
    const chatUri = chat.uri;
    const session = this.#d.state.sessions.get(chat.session)!;
    if (session.state.defaultChat === chatUri) {
      throw new ProtocolError('invalid_params', 'the default chat is disposed with its session');
    }
    for (const entry of session.state.inputNeeded ?? []) {
      if (entry.chat === chatUri) this.#d.pipeline.sequence(session.uri, { type: 'session/inputNeededRemoved', id: entry.id });
    }
    this.#sequenceLifecycle({ type: CatalogueAction.ChatDisposed, chat: chatUri });
    this.#d.pipeline.sequence(session.uri, { type: 'session/chatRemoved', chat: chatUri });
    this.chatGone(chatUri, session.uri);
    this.#d.rootCatalogue.sessionChanged(session);
    return undefined;
  }

  /** Throws the quota refusal, if any, as the named error (and counts it). */
  #refuseOverQuota(refusal: StateRefusal | undefined): void {
    if (!refusal) return;
    this.#d.observer?.quotaRefused?.(refusal.kind);
    throw new ProtocolError('quota_exceeded', refusal.reason);
  }

  /** Sequences a session or chat lifecycle record (the internal catalogue channel; never sent). */
  #sequenceLifecycle(action: CatalogueRecordAction): void {
    this.#d.pipeline.sequence(CATALOGUE_CHANNEL, action);
  }

  #createChatRecord(session: string, chat: string, title: string, createdAt: string): string {
    this.#sequenceLifecycle({ type: CatalogueAction.ChatCreated, chat, session, title, createdAt });
    const state = this.#d.state.chats.get(chat)!.state;
    this.#d.pipeline.sequence(session, {
      type: 'session/chatAdded',
      summary: { resource: chat, title: state.title, status: state.status, modifiedAt: state.modifiedAt, origin: { kind: 'user' } },
    });
    return chat;
  }

  /** After a session's disposal is sequenced (here or by another process): everyone who must know is told. */
  sessionGone(session: { readonly uri: string; readonly tenant: string }, chats: Iterable<string>): void {
    this.#d.rootCatalogue.sessionRemoved(session);
    for (const chat of chats) this.#dropChannel(chat);
    this.#dropChannel(session.uri);
    // Delivered phase: the owners act once the disposal is durable.
    this.#d.pipeline.afterDelivered(() => this.#d.hooks.call((h) => h.sessionDisposed?.({ session: session.uri })));
  }

  /** After a chat's disposal is sequenced (here or by another process). */
  chatGone(chat: string, session: string): void {
    this.#dropChannel(chat);
    this.#d.pipeline.afterDelivered(() => this.#d.hooks.call((h) => h.chatDisposed?.({ chat, session })));
  }

  #dropChannel(channel: string): void {
    this.#d.channelBudget.forget(channel);
    this.#d.subscriptions.dropChannel(channel);
  }
}
