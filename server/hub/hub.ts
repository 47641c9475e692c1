/**
 * The hub: one authoritative state per channel, an ordered action log, and fan-out.
 *
 * Every accepted action goes through `#sequence`: it gets the next global serverSeq, is applied
 * through the pure reducers, is queued for the log and for delivery. Queued records are appended
 * to the log in one batch per event-loop turn (group commit); only after the append resolves are
 * their envelopes delivered and their waiters resolved, so an echo always means "durable".
 * Rejections travel through the same ordered outbox so a client never sees a rejection before
 * the echo of an action it dispatched earlier.
 *
 * The hub knows connections only through the `Connection` interface and storage only through
 * the `ActionLog` port. Roll-up (chat → session → root) happens here because it must be
 * sequenced together with the action that caused it.
 */
import { ProtocolError, ErrorCode } from '../../shared/protocol/errors.js';
import type {
  ActionEnvelope,
  ActionOrigin,
  ReconnectParams,
  ReconnectResult,
  Snapshot,
  WireAction,
} from '../../shared/protocol/messages.js';
import { ServerNotification } from '../../shared/protocol/messages.js';
import { CLIENT_DISPATCHABLE_ACTIONS, STREAMING_ONLY_ACTIONS, parseAction } from '../../shared/protocol/actions.js';
import { initialRootState } from '../../shared/protocol/state.js';
import { validateParsedClientAction } from '../../shared/state/validate-action.js';
import { CHAT_SCHEME, ROOT_URI, channelKind } from '../../shared/protocol/uris.js';
import { isSharedActionLog, type ActionLog, type LogRecord } from '../storage/action-log.js';
import type { AgentInfo } from '../agents/agent.js';
import { canActAsAgent, canWrite, type Principal } from '../auth/auth.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import { HubState, CATALOG_CHANNEL, CatalogAction, type CatalogImage, type ChatEntry, type SessionEntry } from './catalog.js';
import { CloseCode, type Connection } from './connection.js';
import { ChannelFanout, DEFAULT_FANOUT_LIMITS, deliverEnvelopeRun, deliverPrivate, encodeNotification, sendOrCloseSlow, type FanoutLimits } from './fanout.js';
import { chatRollUpActions, sessionSummary, summaryChanges, type SessionSummaryView } from './rollup.js';
import { ClientLedger, actorOf, type Actor, type LedgerImage } from './client-ledger.js';
import { checkJsonBounds } from '../../shared/protocol/json-bounds.js';
import { validateAgentAction } from './agent-actions.js';
import { ChannelSizeBudget, DEFAULT_MAX_CHANNEL_JSON_CHARS } from './channel-budget.js';
import { WriteGate } from './write-gate.js';
import { ReplayWindow } from './replay-window.js';
import type { CommitEvent, HookOwner, HubHooks, HubPort, RejectionCode, SubmitOutcome } from './hub-port.js';
import { HookList } from './hook-list.js';
import { isKnownAction } from '../../shared/protocol/actions.js';

export interface HubLimits {
  readonly maxSessionsPerTenant: number;
  readonly maxChatsPerSession: number;
  readonly maxSubscriptionsPerConnection: number;
  /** Envelopes kept in memory for `reconnect` replay; older gaps get snapshots. */
  readonly replayBufferSize: number;
  /** …and at most this many characters of encoded envelopes, whichever bound is hit first. */
  readonly replayBufferChars: number;
  /** Largest encoded state (JSON characters) one chat or session may grow to. */
  readonly maxChannelJsonChars: number;
  /** A snapshot is written after this many records, so recovery replays at most that many. */
  readonly snapshotEvery: number;
  readonly fanout: FanoutLimits;
}

export const DEFAULT_HUB_LIMITS: HubLimits = {
  maxSessionsPerTenant: 10_000,
  maxChatsPerSession: 64,
  maxSubscriptionsPerConnection: 1_024,
  replayBufferSize: 20_000,
  replayBufferChars: 64 * 1024 * 1024,
  maxChannelJsonChars: DEFAULT_MAX_CHANNEL_JSON_CHARS,
  snapshotEvery: 5_000,
  fanout: DEFAULT_FANOUT_LIMITS,
};

export interface HubOptions {
  readonly log: ActionLog;
  readonly logger: Logger;
  /** Wall clock in ms; the only source of time. Reducers never read a clock. */
  readonly now: () => number;
  /** Fresh opaque ids (chat URIs, tool request ids). */
  readonly newId: () => string;
  readonly agents: readonly AgentInfo[];
  readonly defaultProvider: string;
  readonly limits?: Partial<HubLimits>;
  /** Told about rejections and reconnect answers (metrics); optional. */
  readonly observer?: HubObserver | undefined;
}

/** What the hub reports for metrics; counters only, called on the hot path. */
export interface HubObserver {
  dispatchRejected(reason: string): void;
  reconnectServed(kind: 'replay' | 'snapshot'): void;
}

/** A client that dispatches actions: the connection it speaks on and who it is. */
/** Answers and approvals, stamped with who gave them (see `#stampAnswer`). */
const ANSWER_ACTIONS: ReadonlySet<string> = new Set(['chat/inputCompleted', 'chat/toolCallConfirmed', 'chat/toolCallResultConfirmed']);
export const ANSWERED_BY_META = 'hub/answeredBy';
/** The surface of a WebSocket (AHP) client that does not name itself. */
const CLIENT_SURFACE = 'AHP client';

export interface ClientHandle {
  readonly conn: Connection;
  readonly principal: Principal;
  readonly clientId: string;
}


type OutboxItem =
  /** `source`: the connection that dispatched it, when a client did. */
  | { kind: 'envelope'; envelope: ActionEnvelope; source?: Connection | undefined }
  | { kind: 'private'; conn: Connection; envelope: ActionEnvelope }
  | { kind: 'root'; tenant: string; text: string }
  /** A JSON-RPC answer, sent once everything sequenced before it is durable and delivered. */
  | { kind: 'reply'; conn: Connection; text: string }
  /** Runs once everything queued before it has been delivered. */
  | { kind: 'call'; fn: () => void }
  | { kind: 'durable'; resolve: () => void };



export class Hub implements HubPort {
  readonly limits: HubLimits;
  readonly #log: ActionLog;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #newId: () => string;
  readonly #agents: readonly AgentInfo[];
  readonly #defaultProvider: string;
  #catalog: HubState;

  /** Last serverSeq assigned (applied in memory). */
  #seq = 0;
  /** Last serverSeq appended durably. */
  #durableSeq = 0;
  /** Last serverSeq whose envelope was handed to subscribers. */
  #deliveredSeq = 0;
  #recordsSinceSnapshot = 0;

  #pendingRecords: LogRecord[] = [];
  #outbox: OutboxItem[] = [];
  #flushScheduled = false;
  #flushing: Promise<void> | undefined;
  #failed: Error | undefined;
  #closed = false;
  /** Cluster mode only (a shared log): decisions wait for the write turn. See write-gate.ts. */
  #gate: WriteGate | undefined;

  readonly #replay: ReplayWindow;
  readonly #channelBudget: ChannelSizeBudget;
  readonly #fanouts = new Map<string, ChannelFanout>();
  readonly #rootSubscribers = new Map<string, Set<Connection>>();
  readonly #subscriptionsByConn = new Map<Connection, Set<string>>();
  readonly #publishedSummaries = new Map<string, SessionSummaryView>();
  #ledger = new ClientLedger();
  /** Registered hooks, kept sorted by `HOOK_ORDER` (then registration order). */
  readonly #hooks = new HookList((err) => this.#logger.error('hub listener failed', errorFields(err)));
  /** Characters of answers queued in the outbox per connection (see `sendInOrder`). */
  readonly #heldReplyChars = new WeakMap<Connection, number>();
  readonly #observer: HubObserver | undefined;

  private constructor(options: HubOptions, catalog: HubState) {
    this.#log = options.log;
    this.#logger = options.logger;
    this.#now = options.now;
    this.#newId = options.newId;
    this.#agents = options.agents;
    this.#defaultProvider = options.defaultProvider;
    this.limits = { ...DEFAULT_HUB_LIMITS, ...options.limits };
    this.#catalog = catalog;
    this.#channelBudget = new ChannelSizeBudget(this.limits.maxChannelJsonChars);
    this.#replay = new ReplayWindow(this.limits.replayBufferSize, this.limits.replayBufferChars);
    this.#observer = options.observer;
  }

  /**
   * Opens a hub on a log: loads the newest snapshot, replays the records after it, then ends
   * every turn that was running when the previous process stopped (as errored, never silently).
   */
  static async open(options: HubOptions): Promise<Hub> {
    const snapshot = await options.log.latestSnapshot();
    const image = snapshot?.data as { catalog: CatalogImage; ledger?: LedgerImage } | undefined;
    const catalog = image ? HubState.fromImage(image.catalog) : new HubState(initialRootState(options.agents.map((a) => ({ ...a }))));
    // The agent list is configuration, not history: a restart with another agents file lists what runs now.
    catalog.root = { ...catalog.root, agents: options.agents.map((a) => ({ ...a })) };
    const hub = new Hub(options, catalog);
    hub.#ledger = ClientLedger.fromImage(image?.ledger);
    let seq = snapshot?.serverSeq ?? 0;
    const PAGE = 2_000;
    for (;;) {
      const records = await options.log.read(seq, PAGE);
      for (const r of records) {
        hub.#catalog.applyRecord(r);
        const actor = (r.origin as { actor?: Actor } | undefined)?.actor;
        if (r.origin && actor) hub.#ledger.accepted(actor, r.origin.clientId, r.origin.clientSeq, r.serverSeq);
        if (r.channel !== CATALOG_CHANNEL) hub.#replay.keep(hub.#envelopeOf(r));
        seq = r.serverSeq;
      }
      if (records.length < PAGE) break;
    }
    const head = await options.log.head();
    hub.#seq = hub.#durableSeq = hub.#deliveredSeq = Math.max(seq, head);
    for (const s of hub.#catalog.sessions.values()) hub.#publishedSummaries.set(s.uri, sessionSummary(s, hub.#catalog));
    if (isSharedActionLog(options.log)) {
      // Other processes share this log and may be running the turns recovery finds active, so
      // they are not ended here (see the README's Cluster section for what ends them).
      hub.#gate = new WriteGate(options.log, {
        get serverSeq() {
          return hub.#seq;
        },
        hasPendingRecords: () => hub.#pendingRecords.length > 0 || hub.#seq !== hub.#durableSeq,
        foldRemote: (records) => hub.#foldRemote(records),
        fail: (err) => hub.#fail(err),
      }, options.logger);
    } else {
      hub.#failInterruptedTurns();
    }
    await hub.drain();
    return hub;
  }

  // ─── Queries ────────────────────────────────────────────────────────────────

  get serverSeq(): number {
    return this.#seq;
  }

  /** Cluster mode: why the shared log refuses writes right now (unreachable), else undefined. */
  get storageProblem(): string | undefined {
    return this.#gate?.unavailable;
  }

  get agents(): readonly AgentInfo[] {
    return this.#agents;
  }

  hook(owner: HookOwner, hooks: HubHooks): () => void {
    return this.#hooks.add(owner, hooks);
  }

  /** A session the principal may see, or undefined (other tenants' sessions do not exist for them). */
  visibleSession(principal: Principal, uri: string): SessionEntry | undefined {
    const s = this.#catalog.sessions.get(uri);
    return s && s.tenant === principal.tenant ? s : undefined;
  }

  visibleChat(principal: Principal, uri: string): ChatEntry | undefined {
    const c = this.#catalog.chats.get(uri);
    return c && this.visibleSession(principal, c.session) ? c : undefined;
  }

  /** Lookups for the agent runner and features, with no tenant check: they act for the hub. */
  sessionEntry(uri: string): SessionEntry | undefined {
    return this.#catalog.sessions.get(uri);
  }

  chatEntry(uri: string): ChatEntry | undefined {
    return this.#catalog.chats.get(uri);
  }

  /**
   * The session's default chat, only when the catalogue says that chat belongs to the session.
   * Features follow this rather than `state.defaultChat`, which a peer's action wrote.
   */
  defaultChatOf(sessionUri: string): string | undefined {
    const session = this.#catalog.sessions.get(sessionUri);
    const chat = session?.state.defaultChat;
    return chat !== undefined && session!.chats.has(chat) && this.#catalog.chats.get(chat)?.session === sessionUri ? chat : undefined;
  }

  listSessions(principal: Principal): SessionSummaryView[] {
    const out: SessionSummaryView[] = [];
    for (const s of this.#catalog.sessions.values()) {
      if (s.tenant === principal.tenant) out.push(sessionSummary(s, this.#catalog));
    }
    return out.sort((a, b) => Date.parse(b.modifiedAt) - Date.parse(a.modifiedAt));
  }

  /** The snapshot of a channel visible to the principal; throws SessionNotFound/NotFound otherwise. */
  snapshot(principal: Principal, channel: string): Snapshot {
    const kind = channelKind(channel);
    if (kind === 'root') return { resource: ROOT_URI, state: this.#catalog.root, fromSeq: this.#seq };
    if (kind === 'session') {
      const s = this.visibleSession(principal, channel);
      if (!s) throw new ProtocolError(ErrorCode.SessionNotFound, `session ${channel} not found`);
      return { resource: channel, state: s.state, fromSeq: this.#seq };
    }
    if (kind === 'chat') {
      const c = this.visibleChat(principal, channel);
      if (!c) throw new ProtocolError(ErrorCode.NotFound, `chat ${channel} not found`);
      return { resource: channel, state: c.state, fromSeq: this.#seq };
    }
    throw new ProtocolError(ErrorCode.InvalidParams, `unsupported channel URI ${JSON.stringify(channel)}`);
  }

  // ─── Subscriptions ──────────────────────────────────────────────────────────

  subscribe(conn: Connection, principal: Principal, channel: string, maxLatencyMs = 0): Snapshot {
    const snapshot = this.snapshot(principal, channel);
    this.#attach(conn, principal, channel, snapshot.fromSeq, maxLatencyMs);
    return snapshot;
  }

  unsubscribe(conn: Connection, channel: string): void {
    this.#subscriptionsByConn.get(conn)?.delete(channel);
    if (channel === ROOT_URI) {
      for (const set of this.#rootSubscribers.values()) set.delete(conn);
      return;
    }
    const f = this.#fanouts.get(channel);
    if (!f) return;
    f.remove(conn);
    if (f.size === 0) this.#fanouts.delete(channel);
  }

  disconnect(conn: Connection): void {
    const subs = this.#subscriptionsByConn.get(conn);
    if (subs) for (const channel of [...subs]) this.unsubscribe(conn, channel);
    this.#subscriptionsByConn.delete(conn);
    this.#hooks.call((h) => h.disconnected?.(conn));
  }

  /** Channel subscriptions held by every connection together (metrics). */
  get subscriptionCount(): number {
    let n = 0;
    for (const subs of this.#subscriptionsByConn.values()) n += subs.size;
    return n;
  }

  subscriptionsOf(conn: Connection): ReadonlySet<string> {
    return this.#subscriptionsByConn.get(conn) ?? new Set();
  }

  /**
   * Legacy AHP reconnect: replay every delivered envelope after `lastSeenServerSeq` for the
   * requested channels when the replay buffer still covers the gap, else snapshots. Channels that
   * no longer exist (or are not visible) are reported `missing`. Either way the connection is
   * re-subscribed at the live edge.
   */
  reconnect(conn: Connection, principal: Principal, params: ReconnectParams): ReconnectResult {
    const visible: string[] = [];
    const missing: string[] = [];
    for (const ch of new Set(params.subscriptions)) {
      const kind = channelKind(ch);
      const ok = kind === 'root' || (kind === 'session' && this.visibleSession(principal, ch)) || (kind === 'chat' && this.visibleChat(principal, ch));
      (ok ? visible : missing).push(ch);
    }
    const oldest = this.#replay.oldestSeq ?? this.#deliveredSeq + 1;
    const canReplay = params.lastSeenServerSeq <= this.#seq && params.lastSeenServerSeq >= oldest - 1;
    if (canReplay) {
      const wanted = new Set(visible);
      const actions = this.#replay.since(params.lastSeenServerSeq, wanted);
      for (const ch of visible) this.#attach(conn, principal, ch, this.#deliveredSeq, 0);
      this.#observer?.reconnectServed('replay');
      return { type: 'replay', actions, missing };
    }
    const snapshots = visible.map((ch) => this.subscribe(conn, principal, ch));
    this.#observer?.reconnectServed('snapshot');
    return { type: 'snapshot', snapshots, missing };
  }

  /**
   * Cluster mode: waits (at most `timeoutMs`) until this process has folded the shared log up to
   * `serverSeq`, so a client that moves here from a node further ahead gets a replay from its
   * cursor instead of an older snapshot. undefined when there is nothing to wait for (always on
   * a single hub), so callers stay synchronous there.
   */
  caughtUpTo(serverSeq: number, timeoutMs = 2_000): Promise<void> | undefined {
    return this.#gate && this.#seq < serverSeq ? this.#gate.reach(serverSeq, timeoutMs) : undefined;
  }

  #attach(conn: Connection, principal: Principal, channel: string, fromSeq: number, maxLatencyMs: number): void {
    let subs = this.#subscriptionsByConn.get(conn);
    if (!subs) {
      subs = new Set();
      this.#subscriptionsByConn.set(conn, subs);
    }
    if (!subs.has(channel) && subs.size >= this.limits.maxSubscriptionsPerConnection) {
      throw new ProtocolError(ErrorCode.LimitExceeded, `at most ${this.limits.maxSubscriptionsPerConnection} subscriptions per connection`);
    }
    subs.add(channel);
    if (channel === ROOT_URI) {
      let set = this.#rootSubscribers.get(principal.tenant);
      if (!set) {
        set = new Set();
        this.#rootSubscribers.set(principal.tenant, set);
      }
      set.add(conn);
      return;
    }
    let f = this.#fanouts.get(channel);
    if (!f) {
      f = new ChannelFanout(this.limits.fanout);
      this.#fanouts.set(channel, f);
    }
    f.add(conn, fromSeq, this.#deliveredSeq, maxLatencyMs);
  }

  // ─── Commands ───────────────────────────────────────────────────────────────

  async createSession(principal: Principal, params: { uri: string; provider?: string | undefined; title?: string | undefined }): Promise<{ defaultChat: string }> {
    this.#assertOpen();
    if (this.#gate) await this.#writeTurn();
    if (!canWrite(principal)) throw new ProtocolError(ErrorCode.PermissionDenied, 'viewers cannot create sessions');
    if (channelKind(params.uri) !== 'session') {
      throw new ProtocolError(ErrorCode.InvalidParams, 'channel must be an ahp-session:/<id> URI');
    }
    if (this.#catalog.sessions.has(params.uri)) {
      // Indistinguishable for other tenants too: the URI is taken either way.
      throw new ProtocolError(ErrorCode.SessionAlreadyExists, `session ${params.uri} already exists`);
    }
    const provider = params.provider ?? this.#defaultProvider;
    if (!this.#agents.some((a) => a.provider === provider)) {
      throw new ProtocolError(ErrorCode.ProviderNotFound, `no agent provider ${JSON.stringify(provider)}`);
    }
    let count = 0;
    for (const s of this.#catalog.sessions.values()) if (s.tenant === principal.tenant) count++;
    if (count >= this.limits.maxSessionsPerTenant) {
      throw new ProtocolError(ErrorCode.LimitExceeded, `at most ${this.limits.maxSessionsPerTenant} sessions per tenant`);
    }
    const createdAt = new Date(this.#now()).toISOString();
    const title = params.title ?? 'New session';
    this.#sequence(CATALOG_CHANNEL, {
      type: CatalogAction.SessionCreated,
      session: params.uri,
      tenant: principal.tenant,
      owner: principal.user,
      provider,
      title,
      createdAt,
    });
    const defaultChat = this.#createChatRecord(params.uri, CHAT_SCHEME + this.#newId(), 'Chat', createdAt);
    this.#sequence(params.uri, { type: 'session/defaultChatChanged', defaultChat });
    const session = this.#catalog.sessions.get(params.uri)!;
    const summary = sessionSummary(session, this.#catalog);
    this.#publishedSummaries.set(params.uri, summary);
    this.#queueRoot(principal.tenant, ServerNotification.SessionAdded, { channel: ROOT_URI, summary });
    await this.#durable();
    return { defaultChat };
  }

  async disposeSession(principal: Principal, uri: string): Promise<void> {
    this.#assertOpen();
    if (this.#gate) await this.#writeTurn();
    const session = this.visibleSession(principal, uri);
    if (!session) throw new ProtocolError(ErrorCode.SessionNotFound, `session ${uri} not found`);
    if (!canWrite(principal)) throw new ProtocolError(ErrorCode.PermissionDenied, 'viewers cannot dispose sessions');
    const chats = [...session.chats];
    this.#sequence(CATALOG_CHANNEL, { type: CatalogAction.SessionDisposed, session: uri });
    this.#publishedSummaries.delete(uri);
    this.#queueRoot(session.tenant, ServerNotification.SessionRemoved, { channel: ROOT_URI, session: uri });
    for (const chat of chats) this.#dropChannel(chat);
    this.#dropChannel(uri);
    this.#hooks.call((h) => h.sessionDisposed?.({ session: uri }));
    await this.#durable();
  }

  async createChat(principal: Principal, sessionUri: string, params: { chat?: string | undefined; title?: string | undefined }): Promise<{ chat: string }> {
    this.#assertOpen();
    if (this.#gate) await this.#writeTurn();
    const session = this.visibleSession(principal, sessionUri);
    if (!session) throw new ProtocolError(ErrorCode.SessionNotFound, `session ${sessionUri} not found`);
    if (!canWrite(principal)) throw new ProtocolError(ErrorCode.PermissionDenied, 'viewers cannot create chats');
    if (session.chats.size >= this.limits.maxChatsPerSession) {
      throw new ProtocolError(ErrorCode.LimitExceeded, `at most ${this.limits.maxChatsPerSession} chats per session`);
    }
    const chat = params.chat ?? CHAT_SCHEME + this.#newId();
    if (channelKind(chat) !== 'chat') throw new ProtocolError(ErrorCode.InvalidParams, 'chat must be an ahp-chat:/<id> URI');
    if (this.#catalog.chats.has(chat)) throw new ProtocolError(ErrorCode.AlreadyExists, `chat ${chat} already exists`);
    this.#createChatRecord(sessionUri, chat, params.title ?? 'Chat', new Date(this.#now()).toISOString());
    this.#rollUpSession(sessionUri);
    await this.#durable();
    return { chat };
  }

  async disposeChat(principal: Principal, chatUri: string): Promise<void> {
    this.#assertOpen();
    if (this.#gate) await this.#writeTurn();
    const chat = this.visibleChat(principal, chatUri);
    if (!chat) throw new ProtocolError(ErrorCode.NotFound, `chat ${chatUri} not found`);
    if (!canWrite(principal)) throw new ProtocolError(ErrorCode.PermissionDenied, 'viewers cannot dispose chats');
    const session = this.#catalog.sessions.get(chat.session)!;
    if (session.state.defaultChat === chatUri) {
      throw new ProtocolError(ErrorCode.InvalidParams, 'the default chat is disposed with its session');
    }
    for (const entry of session.state.inputNeeded ?? []) {
      if (entry.chat === chatUri) this.#sequence(session.uri, { type: 'session/inputNeededRemoved', id: entry.id });
    }
    this.#sequence(CATALOG_CHANNEL, { type: CatalogAction.ChatDisposed, chat: chatUri });
    this.#sequence(session.uri, { type: 'session/chatRemoved', chat: chatUri });
    this.#dropChannel(chatUri);
    this.#hooks.call((h) => h.chatDisposed?.({ chat: chatUri, session: session.uri }));
    this.#rollUpSession(session.uri);
    await this.#durable();
  }

  #createChatRecord(session: string, chat: string, title: string, createdAt: string): string {
    this.#sequence(CATALOG_CHANNEL, { type: CatalogAction.ChatCreated, chat, session, title, createdAt });
    const state = this.#catalog.chats.get(chat)!.state;
    this.#sequence(session, {
      type: 'session/chatAdded',
      summary: { resource: chat, title: state.title, status: state.status, modifiedAt: state.modifiedAt, origin: { kind: 'user' } },
    });
    return chat;
  }

  // ─── Dispatch ───────────────────────────────────────────────────────────────

  /**
   * A client's `dispatchAction`. Unknown or invisible channels are ignored without an echo (AHP).
   * Everything else is either sequenced and echoed to every subscriber with its origin, or echoed
   * to its sender alone with a `rejectionReason` and not applied.
   */
  dispatchFromClient(client: ClientHandle, channel: string, clientSeq: number, rawAction: WireAction): void {
    if (this.#failed || this.#closed) return;
    if (this.#gate && !this.#gate.isOpen) {
      // Cluster mode: decide once this process holds the write turn (in arrival order).
      this.#writeTurn().then(
        () => this.dispatchFromClient(client, channel, clientSeq, rawAction),
        (err: unknown) => this.#queuePrivate(client.conn, {
          channel, action: rawAction, serverSeq: this.#seq, origin: { clientId: client.clientId, clientSeq }, rejectionReason: errorMessageOf(err),
        }),
      );
      return;
    }
    const origin = { clientId: client.clientId, clientSeq };
    const actor = actorOf(client.principal);
    const duplicate = this.#sessionOfVisibleChannel(client.principal, channel) ? this.#ledger.duplicate(actor, client.clientId, clientSeq) : undefined;
    if (duplicate?.kind === 'accepted') {
      // A re-sent action that was applied: answer with its original echo, never apply it again.
      const original = this.#replay.find(duplicate.serverSeq);
      if (original) return this.#queuePrivate(client.conn, original);
    }
    const decision = duplicate
      ? ({ ok: false, reason: duplicate.kind === 'rejected' ? duplicate.reason : `clientSeq ${clientSeq} was already applied; it is not applied again` } as const)
      : this.#decide(client.principal, client.clientId, channel, rawAction, CLIENT_SURFACE);
    if (!decision) return;
    if (!decision.ok) {
      this.#observer?.dispatchRejected(decision.reason);
      if (!duplicate) this.#ledger.rejected(actor, client.clientId, clientSeq, decision.reason);
      this.#queuePrivate(client.conn, { channel, action: echoableRejected(rawAction), serverSeq: this.#seq, origin, rejectionReason: decision.reason });
      return;
    }
    this.#ledger.accepted(actor, client.clientId, clientSeq, this.#seq + 1);
    // The source connection gets its echo at delivery even when it is not subscribed (AHP lets a
    // client answer a chat it has not subscribed to). The stored origin also names the actor, so
    // recovery can rebuild the principal-scoped ledger; envelopes never carry it.
    this.#commit(channel, decision.action, origin, client.conn, actor);
  }

  /**
   * Dispatches a client-dispatchable action on behalf of a caller that is not an AHP connection
   * (HTTP replies, SSE clients, the collaboration bridge). It gets exactly the validation a client
   * dispatch gets, is decided synchronously (so the first of several racing callers wins), is
   * broadcast without an origin, and resolves once durable. Unknown or invisible channels give
   * `{ok: false, notFound: true}`.
   */
  async submitAs(principal: Principal, channel: string, rawAction: WireAction, surface = 'hub'): Promise<SubmitOutcome> {
    this.#assertOpen();
    if (this.#gate) await this.#writeTurn();
    const decision = this.#decide(principal, `hub:${principal.user}`, channel, rawAction, surface);
    if (!decision) return { ok: false, code: ErrorCode.NotFound, message: `no channel ${channel}` };
    if (!decision.ok) return { ok: false, code: decision.code, message: decision.reason };
    const serverSeq = this.#commit(channel, decision.action, undefined);
    await this.#durable();
    return { ok: true, serverSeq };
  }

  #sessionOfVisibleChannel(principal: Principal, channel: string): SessionEntry | undefined {
    const kind = channelKind(channel);
    if (kind === 'session') return this.visibleSession(principal, channel);
    const chat = kind === 'chat' ? this.visibleChat(principal, channel) : undefined;
    return chat ? this.#catalog.sessions.get(chat.session) : undefined;
  }

  /** Validation shared by every client path. undefined = channel unknown or invisible (ignore). */
  #decide(principal: Principal, clientId: string, channel: string, rawAction: WireAction, surface: string):
    | { ok: true; action: WireAction }
    | { ok: false; code: RejectionCode; reason: string }
    | undefined {
    const session = this.#sessionOfVisibleChannel(principal, channel);
    if (!session) return undefined;
    const chat = channelKind(channel) === 'chat' ? this.#catalog.chats.get(channel) : undefined;
    if (!canWrite(principal)) return { ok: false, code: ErrorCode.PermissionDenied, reason: 'read-only access: viewers cannot dispatch actions' };
    const parsed = parseAction(rawAction);
    if (!parsed.ok) return { ok: false, code: ErrorCode.InvalidParams, reason: `invalid ${rawAction.type}: ${parsed.message}` };
    const action = parsed.action as WireAction;
    // Server-side actions (streaming, input requests, turn end) are open to agents only, and are
    // checked for shape and turn; everything a client may dispatch gets the full AHP validation.
    const reason = !CLIENT_DISPATCHABLE_ACTIONS.has(action.type) && canActAsAgent(principal)
      ? validateAgentAction(action, chat?.state, { session: session.uri, chats: session.chats })
      : validateParsedClientAction(
          {
            channelKind: chat ? 'chat' : 'session',
            chat: chat?.state,
            session: session.state,
            clientId,
            sessionChats: [...session.chats],
            allTurnIds: (turnId: string) => this.#turnIdUsed(session, turnId),
          },
          action,
        );
    if (reason !== undefined) {
      // Starting a turn while one runs is the one refusal callers answer differently (HTTP 409).
      const code = action.type === 'chat/turnStarted' && chat?.state.activeTurn ? ErrorCode.TurnInProgress : ErrorCode.InvalidParams;
      return { ok: false, code, reason };
    }
    const decided = ANSWER_ACTIONS.has(action.type) ? this.#stampAnswer(action, principal, surface) : action;
    const full = this.#channelBudget.charge(channel, () => (chat ? chat.state : session.state), decided);
    return full === undefined ? { ok: true, action: decided } : { ok: false, code: ErrorCode.LimitExceeded, reason: full };
  }

  /**
   * Records who answered, from which surface and when, in the answer's `_meta["hub/answeredBy"]`
   * (kept by the reducers on the tool call and the input request), so every client can say
   * "approved by alice in the app, 10:42" whichever surface the answer came from. The user is
   * always the authenticated one; a WebSocket client may only name itself (`hub/client`, e.g.
   * "app"), which becomes the surface "<name> (AHP)".
   */
  #stampAnswer(action: WireAction, principal: Principal, surface: string): WireAction {
    const meta = (action as { _meta?: Record<string, unknown> })._meta;
    const named = meta?.['hub/client'];
    const from = surface === CLIENT_SURFACE && typeof named === 'string' && /^[\w .-]{1,40}$/.test(named) ? named : surface;
    const answeredBy = { user: principal.user, surface: from, at: new Date(this.#now()).toISOString() };
    return { ...action, _meta: { ...meta, [ANSWERED_BY_META]: answeredBy } };
  }

  /**
   * Binds a clientId to the principal for this hub's lifetime (and across restarts, through the
   * ledger). False when another principal already uses it: echoes carry only the clientId, so
   * sharing one would let each take the other's echoes for its own.
   */
  claimClientId(principal: Principal, clientId: string): boolean {
    return this.#ledger.claim(actorOf(principal), clientId);
  }

  /** Echoes a rejection to the sender without looking at the action (e.g. rate limits), in order. */
  rejectFromClient(client: ClientHandle, channel: string, clientSeq: number, action: WireAction, reason: string): void {
    if (this.#gate && !this.#gate.isOpen) {
      // Keeps the rejection behind this client's earlier dispatches that wait for the write turn.
      const later = (): void => this.rejectFromClient(client, channel, clientSeq, action, reason);
      this.#writeTurn().then(later, later);
      return;
    }
    const origin = { clientId: client.clientId, clientSeq };
    this.#observer?.dispatchRejected(reason);
    this.#queuePrivate(client.conn, { channel, action, serverSeq: this.#seq, origin, rejectionReason: reason });
  }

  /**
   * An action produced by the hub itself or an in-process agent. Validated for shape and turn
   * (like a remote agent's), sequenced, and resolved once durable. Rejections throw.
   */
  async dispatchServer(channel: string, action: WireAction): Promise<number> {
    this.#assertOpen();
    if (this.#gate) await this.#writeTurn();
    const parsed = parseAction(action);
    if (!parsed.ok) throw new Error(`invalid server action ${action.type}: ${parsed.message}`);
    const chat = this.#catalog.chats.get(channel);
    const session = this.#catalog.sessions.get(chat ? chat.session : channel);
    if (!chat && !this.#catalog.sessions.has(channel)) throw new ProtocolError(ErrorCode.NotFound, `no channel ${channel}`);
    const reason = validateAgentAction(parsed.action as WireAction, chat?.state, session && { session: session.uri, chats: session.chats }) ??
      this.#channelBudget.charge(channel, () => (chat ? chat.state : session?.state), parsed.action);
    if (reason !== undefined) throw new ProtocolError(ErrorCode.InvalidParams, reason);
    const seq = this.#commit(channel, parsed.action as WireAction, undefined);
    await this.#durable();
    return seq;
  }

  /** Sequences a validated action, then rolls chat status up to the session and root. */
  #commit(channel: string, action: WireAction, origin: ActionOrigin | undefined, source?: Connection, actor?: Actor): number {
    const turnBefore = this.#catalog.chats.get(channel)?.state.activeTurn?.id;
    const seq = this.#sequence(channel, action, origin, source, actor);
    const chat = this.#catalog.chats.get(channel);
    if (chat && !STREAMING_ONLY_ACTIONS.has(action.type)) this.#rollUpChat(chat);
    else if (this.#catalog.sessions.has(channel)) this.#rollUpSession(channel);
    this.#announceCommit({ channel, action, known: isKnownAction(action) ? action : undefined, serverSeq: seq, origin }, turnBefore);
    return seq;
  }

  #rollUpChat(chat: ChatEntry): void {
    const session = this.#catalog.sessions.get(chat.session);
    if (!session) return;
    for (const action of chatRollUpActions(chat, session)) this.#sequence(session.uri, action);
    this.#rollUpSession(session.uri);
  }

  /** Publishes the session's summary (with its aggregate status) to the root channel when it changed. */
  #rollUpSession(uri: string): void {
    const session = this.#catalog.sessions.get(uri);
    if (!session) return;
    const next = sessionSummary(session, this.#catalog);
    const prev = this.#publishedSummaries.get(uri);
    const changes = prev ? summaryChanges(prev, next) : next;
    if (changes) {
      this.#publishedSummaries.set(uri, next);
      this.#queueRoot(session.tenant, ServerNotification.SessionSummaryChanged, { channel: ROOT_URI, session: uri, changes });
    }
  }

  #turnIdUsed(session: SessionEntry, turnId: string): boolean {
    for (const uri of session.chats) {
      const state = this.#catalog.chats.get(uri)?.state;
      if (!state) continue;
      if (state.activeTurn?.id === turnId) return true;
      if (state.turns.some((t) => t.id === turnId)) return true;
    }
    return false;
  }

  /** After a restart, turns that were running cannot continue: end them as errors. */
  #failInterruptedTurns(): void {
    for (const chat of this.#catalog.chats.values()) {
      const turn = chat.state.activeTurn;
      if (!turn) continue;
      const duration = Math.max(0, this.#now() - Date.parse(turn.startedAt));
      this.#commit(chat.uri, {
        type: 'chat/error',
        turnId: turn.id,
        duration: Number.isFinite(duration) ? duration : 0,
        error: { errorType: 'hubRestarted', message: 'The hub restarted while this turn was running; the turn was ended.' },
      }, undefined);
    }
  }

  // ─── Sequencing, persistence, delivery ──────────────────────────────────────

  #sequence(channel: string, action: WireAction | { type: string }, origin?: ActionOrigin, source?: Connection, actor?: Actor): number {
    const serverSeq = ++this.#seq;
    const record: LogRecord = origin
      ? { serverSeq, channel, action: action as LogRecord['action'], origin: actor ? { ...origin, actor } : origin }
      : { serverSeq, channel, action: action as LogRecord['action'] };
    this.#catalog.applyRecord(record);
    this.#pendingRecords.push(record);
    if (channel !== CATALOG_CHANNEL) this.#outbox.push({ kind: 'envelope', envelope: this.#envelopeOf(record), source });
    this.#scheduleFlush();
    return serverSeq;
  }

  #envelopeOf(record: LogRecord): ActionEnvelope {
    const envelope: ActionEnvelope = { channel: record.channel, action: record.action as WireAction, serverSeq: record.serverSeq };
    if (record.origin) envelope.origin = { clientId: record.origin.clientId, clientSeq: record.origin.clientSeq };
    return envelope;
  }

  #queuePrivate(conn: Connection, envelope: ActionEnvelope): void {
    this.#outbox.push({ kind: 'private', conn, envelope });
    this.#scheduleFlush();
  }

  #queueRoot(tenant: string, method: string, params: unknown): void {
    if (!this.#rootSubscribers.get(tenant)?.size) return;
    this.#outbox.push({ kind: 'root', tenant, text: encodeNotification(method, params) });
    this.#scheduleFlush();
  }

  /**
   * Sends `text` (a JSON-RPC answer) to `conn` after everything sequenced so far is durable and
   * delivered. A snapshot in a `subscribe` answer, or `serverSeq` in `initialize`, may include
   * actions applied in memory but not yet appended; holding the answer until they are durable means
   * no client ever sees state that a crash could take back, and the answer never arrives after
   * envelopes that follow it.
   */
  sendInOrder(conn: Connection, text: string): void {
    if (this.#outbox.length === 0 && this.#pendingRecords.length === 0 && !this.#flushing) {
      sendOrCloseSlow(conn, text, this.limits.fanout);
      return;
    }
    // Answers waiting for durability count against the connection's limit too: a client that
    // asks for big snapshots faster than the log commits must not pile them up here instead.
    // Same rule as for sending: more than the limit already waiting → close, else queue this one.
    const held = this.#heldReplyChars.get(conn) ?? 0;
    if (held + conn.bufferedAmount > this.limits.fanout.maxBufferedBytes) {
      conn.close(CloseCode.SlowConsumer, 'slow consumer: reconnect and resume');
      return;
    }
    this.#heldReplyChars.set(conn, held + text.length);
    this.#outbox.push({ kind: 'reply', conn, text });
    this.#scheduleFlush();
  }

  /** Runs `fn` after everything queued so far (envelopes and answers) has been delivered. */
  afterDelivered(fn: () => void): void {
    this.#outbox.push({ kind: 'call', fn });
    this.#scheduleFlush();
  }

  /** Resolves once everything sequenced so far is durable and delivered. */
  #durable(): Promise<void> {
    return new Promise((resolve) => {
      this.#outbox.push({ kind: 'durable', resolve });
      this.#scheduleFlush();
    });
  }

  /** Public form of #durable for extensions and tests. */
  drain(): Promise<void> {
    return this.#durable();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    // setImmediate, not a microtask: frames that arrive in the same I/O turn share one append.
    setImmediate(() => {
      this.#flushScheduled = false;
      if (!this.#flushing) this.#flushing = this.#flushLoop().finally(() => (this.#flushing = undefined));
    });
  }

  async #flushLoop(): Promise<void> {
    while (this.#outbox.length > 0 || this.#pendingRecords.length > 0) {
      const records = this.#pendingRecords;
      const outbox = this.#outbox;
      this.#pendingRecords = [];
      this.#outbox = [];
      if (records.length > 0) {
        try {
          const result = await (this.#gate ?? this.#log).append(this.#durableSeq, records);
          if (!result.ok) throw new Error(`action log head moved to ${result.head}; another writer appended (expected ${this.#durableSeq})`);
        } catch (err) {
          this.#fail(err);
          return;
        }
        this.#durableSeq = records[records.length - 1]!.serverSeq;
        this.#recordsSinceSnapshot += records.length;
      }
      this.#deliver(outbox);
      if (this.#recordsSinceSnapshot >= this.limits.snapshotEvery) await this.#writeSnapshot();
    }
  }

  #deliver(outbox: OutboxItem[]): void {
    for (let i = 0; i < outbox.length; i++) {
      const item = outbox[i]!;
      switch (item.kind) {
        case 'envelope': {
          // Coalescing of adjacent envelopes (and of subscribers' latency windows) is fanout.ts's.
          const start = i;
          const run = deliverEnvelopeRun(
            this.#fanouts.get(item.envelope.channel),
            item,
            (k) => {
              const next = outbox[start + k];
              return next?.kind === 'envelope' ? next : undefined;
            },
            this.limits.fanout,
            (env, text) => this.#replay.keep(env, text),
          );
          i += run.consumed;
          this.#deliveredSeq = run.lastSeq;
          break;
        }
        case 'private':
          deliverPrivate(this.#fanouts.get(item.envelope.channel), item.conn, item.envelope, this.limits.fanout);
          break;
        case 'root': {
          const subs = this.#rootSubscribers.get(item.tenant);
          if (subs) for (const conn of subs) sendOrCloseSlow(conn, item.text, this.limits.fanout);
          break;
        }
        case 'reply': {
          const held = (this.#heldReplyChars.get(item.conn) ?? 0) - item.text.length;
          if (held > 0) this.#heldReplyChars.set(item.conn, held);
          else this.#heldReplyChars.delete(item.conn);
          sendOrCloseSlow(item.conn, item.text, this.limits.fanout);
          break;
        }
        case 'call':
          item.fn();
          break;
        case 'durable':
          item.resolve();
          break;
      }
    }
  }

  async #writeSnapshot(): Promise<void> {
    // The in-memory image includes every sequenced record, so it can only be labelled with a seq
    // when nothing sequenced is still waiting to be appended; otherwise try again after the next batch.
    if (this.#pendingRecords.length > 0 || this.#seq !== this.#durableSeq) return;
    const seq = this.#durableSeq;
    this.#recordsSinceSnapshot = 0;
    try {
      await this.#log.saveSnapshot({ serverSeq: seq, data: { catalog: this.#catalog.toImage(), ledger: this.#ledger.toImage() } });
      // Keep the replay window's worth of records; older ones are covered by the snapshot. A
      // shared log is not compacted by a hub: another process may not have read them yet.
      const keepFrom = seq - this.limits.replayBufferSize;
      if (keepFrom > 0 && !this.#gate) await this.#log.compact(keepFrom);
    } catch (err) {
      this.#logger.warn('snapshot failed; recovery will replay more records', errorFields(err));
    }
  }

  /** True when this hub shares its log with other processes (cluster mode). */
  get sharesLog(): boolean {
    return this.#gate !== undefined;
  }

  /**
   * Cluster mode: resolves once this process holds the write turn and has folded everything
   * other processes appended; a feature that decides from folded state (steering ordinals) runs
   * its synchronous decision right after. undefined with a local log (every decision is in turn).
   */
  decisionTurn(): Promise<void> | undefined {
    return this.#gate && !this.#gate.isOpen ? this.#writeTurn() : undefined;
  }

  /** Cluster mode: waits for the write turn; a log that cannot be reached is a clear error. */
  async #writeTurn(): Promise<void> {
    try {
      await this.#gate!.turn();
    } catch (err) {
      throw new ProtocolError(ErrorCode.InternalError, errorMessageOf(err));
    }
  }

  /**
   * Cluster mode: records another process appended, folded through the path recovery uses
   * (`HubState.applyRecord`; roll-up records are in the log, so nothing is recomputed), then
   * delivered to this process's subscribers and features exactly like local ones.
   */
  #foldRemote(records: readonly LogRecord[]): void {
    if (this.#pendingRecords.length > 0 || this.#seq !== this.#durableSeq) {
      throw new Error('internal: folding remote records while local ones are pending');
    }
    for (const r of records) {
      if (r.serverSeq !== this.#seq + 1) throw new Error(`folding record ${r.serverSeq} after ${this.#seq}: the log has a gap`);
      const action = r.action as { type: string } & Record<string, unknown>;
      const disposedSession = action.type === CatalogAction.SessionDisposed ? this.#catalog.sessions.get(String(action['session'])) : undefined;
      const disposedChat = action.type === CatalogAction.ChatDisposed ? this.#catalog.chats.get(String(action['chat'])) : undefined;
      const turnBefore = this.#catalog.chats.get(r.channel)?.state.activeTurn?.id;
      this.#catalog.applyRecord(r);
      this.#channelBudget.applied(r.channel, action);
      this.#seq = this.#durableSeq = r.serverSeq;
      const actor = (r.origin as { actor?: Actor } | undefined)?.actor;
      if (r.origin && actor) this.#ledger.accepted(actor, r.origin.clientId, r.origin.clientSeq, r.serverSeq);
      if (r.channel === CATALOG_CHANNEL) {
        if (action.type === CatalogAction.SessionCreated) {
          const session = this.#catalog.sessions.get(String(action['session']));
          if (session) {
            const summary = sessionSummary(session, this.#catalog);
            this.#publishedSummaries.set(session.uri, summary);
            this.#queueRoot(session.tenant, ServerNotification.SessionAdded, { channel: ROOT_URI, summary });
          }
        } else if (disposedSession) {
          this.#publishedSummaries.delete(disposedSession.uri);
          this.#queueRoot(disposedSession.tenant, ServerNotification.SessionRemoved, { channel: ROOT_URI, session: disposedSession.uri });
          for (const chat of disposedSession.chats) this.#dropChannel(chat);
          this.#dropChannel(disposedSession.uri);
          this.#hooks.call((h) => h.sessionDisposed?.({ session: disposedSession.uri }));
        } else if (disposedChat) {
          this.#dropChannel(disposedChat.uri);
          this.#hooks.call((h) => h.chatDisposed?.({ chat: disposedChat.uri, session: disposedChat.session }));
        }
        continue;
      }
      this.#outbox.push({ kind: 'envelope', envelope: this.#envelopeOf(r) });
      const sessionUri = this.#catalog.sessions.has(r.channel) ? r.channel : this.#catalog.chats.get(r.channel)?.session;
      const session = sessionUri === undefined ? undefined : this.#catalog.sessions.get(sessionUri);
      if (session && !STREAMING_ONLY_ACTIONS.has(action.type)) {
        const next = sessionSummary(session, this.#catalog);
        const prev = this.#publishedSummaries.get(session.uri);
        const changes = prev ? summaryChanges(prev, next) : next;
        if (changes) {
          this.#publishedSummaries.set(session.uri, next);
          this.#queueRoot(session.tenant, ServerNotification.SessionSummaryChanged, { channel: ROOT_URI, session: session.uri, changes });
        }
      }
      const committed = r.action as WireAction;
      this.#announceCommit({ channel: r.channel, action: committed, known: isKnownAction(committed) ? committed : undefined, serverSeq: r.serverSeq, origin: r.origin, remote: true }, turnBefore);
    }
    this.#scheduleFlush();
  }

  #fail(err: unknown): void {
    this.#failed = err instanceof Error ? err : new Error(String(err));
    this.#logger.error('action log append failed: the hub stops accepting actions', errorFields(err));
    this.#emitFatal?.(this.#failed);
  }

  /** Set by the composition root: what to do when the log fails (exit so a supervisor restarts). */
  #emitFatal: ((err: Error) => void) | undefined;
  onFatal(handler: (err: Error) => void): void {
    this.#emitFatal = handler;
  }

  #assertOpen(): void {
    if (this.#failed) throw new ProtocolError(ErrorCode.InternalError, 'the hub cannot persist actions right now');
    if (this.#closed) throw new ProtocolError(ErrorCode.InternalError, 'the hub is shutting down');
  }

  #dropChannel(channel: string): void {
    this.#channelBudget.forget(channel);
    const f = this.#fanouts.get(channel);
    if (f) f.flush();
    this.#fanouts.delete(channel);
    for (const subs of this.#subscriptionsByConn.values()) subs.delete(channel);
  }

  /** Announces a commit to the owners' hooks (the turn-end rule lives in `HookList`). */
  #announceCommit(event: CommitEvent, turnBefore: string | undefined): void {
    const chat = this.#catalog.chats.get(event.channel);
    this.#hooks.announceCommit(event, chat && { uri: chat.uri, session: chat.session, activeTurnId: chat.state.activeTurn?.id }, turnBefore);
  }

  /** Stops accepting work, flushes, writes a final snapshot. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.drain();
    this.#closed = true;
    await this.#gate?.close();
    for (const f of this.#fanouts.values()) f.flush();
    await this.#flushing;
    if (!this.#failed && this.#durableSeq > 0 && this.#recordsSinceSnapshot > 0) await this.#writeSnapshot();
  }
}


/**
 * The action a rejection echo carries: the action as sent, unless its JSON is out of bounds, in
 * which case only its type (a rejection must never send the refused value back, nor fail to encode).
 */
function echoableRejected(raw: WireAction): WireAction {
  return checkJsonBounds(raw) ? { type: typeof raw.type === 'string' ? raw.type.slice(0, 128) : 'unknown' } : raw;
}

function errorMessageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
