/**
 * The hub's facade: the `HubPort` features see and the API the composition root, the JSON-RPC
 * methods and the tests call. It holds the decision: every dispatch is validated against current
 * state, checked against the duplicate ledger and the channel's size budget, and accepted or
 * rejected synchronously (`#decide`), so "first reply wins" needs no lock. An accepted action is
 * sequenced through the commit pipeline together with the roll-up it causes (chat → session →
 * root), so the log replays to the same state without recomputing anything.
 *
 * The rest lives beside it, each behind a narrow interface:
 * - `commit-pipeline.ts`: sequencing, group commit, delivery in order, durability waiters, held
 *   answers, snapshot cadence — where "nothing reaches a client before it is durable; answers
 *   never overtake envelopes" is enforced;
 * - `recovery.ts`: open from snapshot + replay, ledger rebuild, listing interrupted turns;
 * - `subscriptions.ts`: who is subscribed to what, reconnect (replay or snapshots);
 * - `root-catalogue.ts`: the session summaries root subscribers were last sent;
 * - `write-gate.ts`: cluster mode (decisions wait for the write turn).
 *
 * The hub knows connections only through the `Connection` interface and storage only through
 * the `ActionLog` port.
 */
import { ProtocolError, ErrorCode } from '../../shared/protocol/errors.js';
import type { ActionOrigin, ReconnectParams, ReconnectResult, Snapshot, WireAction } from '../../shared/protocol/messages.js';
import { CLIENT_DISPATCHABLE_ACTIONS, STREAMING_ONLY_ACTIONS, isKnownAction, parseAction, type KnownAction } from '../../shared/protocol/actions.js';
import { validateParsedClientAction } from '../../shared/state/validate-action.js';
import { CHAT_SCHEME, ROOT_URI, channelKind } from '../../shared/protocol/uris.js';
import { checkJsonBounds } from '../../shared/protocol/json-bounds.js';
import { isSharedActionLog, type ActionLog, type LogRecord } from '../storage/action-log.js';
import type { AgentInfo } from '../agents/agent.js';
import { canActAsAgent, canWrite, type Principal } from '../auth/auth.js';
import type { Logger } from '../log.js';
import { errorFields, errorMessage } from '../log.js';
import { CATALOG_CHANNEL, CatalogAction, catalogActionOf, chatSnapshotMeta, type CatalogRecordAction, type ChatEntry, type HubState, type SessionEntry } from './catalog.js';
import type { Connection } from './connection.js';
import { DEFAULT_FANOUT_LIMITS, type FanoutLimits } from './fanout.js';
import { chatRollUpActions, sessionSummary, type SessionSummaryView } from './rollup.js';
import { actorOf, LEDGER_LIMITS, type Actor, type ClaimOutcome, type ClientLedger, type LedgerLimits } from './client-ledger.js';
import { validateAgentAction } from './agent-actions.js';
import { ChannelSizeBudget, DEFAULT_MAX_CHANNEL_JSON_CHARS, DEFAULT_MAX_TENANT_STATE_CHARS, DEFAULT_MAX_USER_STATE_CHARS, type StateRefusal } from './channel-budget.js';
import { WriteGate } from './write-gate.js';
import { ReplayWindow } from './replay-window.js';
import type { CommitEvent, HookOwner, HubHooks, HubPort, RejectionCode, SubmitOutcome } from './hub-port.js';
import { HookList } from './hook-list.js';
import { CommitPipeline, STORAGE_UNAVAILABLE_REASON } from './commit-pipeline.js';
import { Subscriptions } from './subscriptions.js';
import { RootCatalogue } from './root-catalogue.js';
import { interruptedTurns, recoverFromLog, snapshotImageOf, type InterruptedTurn, type RecoveredHub } from './recovery.js';
import { hasTurn } from '../../shared/state/selectors.js';
import { ANSWERED_BY_META } from '../../shared/state/answered-by.js';
import { defaultMaxLoadStateChars } from './load-guard.js';

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
  /** Everything the sessions one user owns may hold together (JSON characters; channel-budget.ts). */
  readonly maxUserStateChars: number;
  /** Everything this tenant's sessions may hold together (JSON characters). */
  readonly maxTenantStateChars: number;
  /** A log holding more state than this is refused at start with a message saying what to do (load-guard.ts). */
  readonly maxLoadStateChars: number;
  /** A snapshot is written after this many records, so recovery replays at most that many. */
  readonly snapshotEvery: number;
  /**
   * Bytes the tenant's log and snapshots may take on disk (`ActionLog.storedBytes`; SQLite). Over
   * it, writes from clients are refused with `StorageQuotaExceeded`; agents can still end turns.
   */
  readonly maxTenantDiskBytes: number;
  readonly fanout: FanoutLimits;
  /** The duplicate ledger's bounds per principal (client-ledger.ts). */
  readonly ledger: LedgerLimits;
}

/** Default per-tenant disk quota (`--tenant-disk-quota`). */
export const DEFAULT_TENANT_DISK_BYTES = 1024 * 1024 * 1024;
/** How long a disk-usage measurement is reused before the next decision measures again. */
const DISK_USAGE_TTL_MS = 100;

export const DEFAULT_HUB_LIMITS: HubLimits = {
  maxSessionsPerTenant: 10_000,
  maxChatsPerSession: 64,
  maxSubscriptionsPerConnection: 1_024,
  replayBufferSize: 20_000,
  replayBufferChars: 64 * 1024 * 1024,
  maxChannelJsonChars: DEFAULT_MAX_CHANNEL_JSON_CHARS,
  maxUserStateChars: DEFAULT_MAX_USER_STATE_CHARS,
  maxTenantStateChars: DEFAULT_MAX_TENANT_STATE_CHARS,
  maxLoadStateChars: defaultMaxLoadStateChars(),
  snapshotEvery: 5_000,
  maxTenantDiskBytes: DEFAULT_TENANT_DISK_BYTES,
  fanout: DEFAULT_FANOUT_LIMITS,
  ledger: LEDGER_LIMITS,
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
  /** A quota on what a user or tenant holds refused something (`StateRefusal.kind`, `client_id_quota`). */
  quotaRefused?(quota: string): void;
}

/** Answers, approvals and stops, stamped with who gave them (see `#stampAnswer`). */
const ANSWER_ACTIONS: ReadonlySet<string> = new Set(['chat/inputCompleted', 'chat/toolCallConfirmed', 'chat/toolCallResultConfirmed', 'chat/turnCancelled']);
/** The surface of a WebSocket (AHP) client that does not name itself. */
const CLIENT_SURFACE = 'AHP client';
/** What a new session or chat is charged before it is measured (an empty one is a few hundred characters). */
const NEW_CHANNEL_CHARS = 1_024;

/** A client that dispatches actions: the connection it speaks on and who it is. */
export interface ClientHandle {
  readonly conn: Connection;
  readonly principal: Principal;
  readonly clientId: string;
}

export class Hub implements HubPort {
  readonly limits: HubLimits;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #newId: () => string;
  readonly #agents: readonly AgentInfo[];
  readonly #defaultProvider: string;
  /** Every session and chat with its current state (catalog.ts). */
  readonly #state: HubState;
  readonly #ledger: ClientLedger;
  readonly #pipeline: CommitPipeline;
  readonly #subscriptions: Subscriptions;
  readonly #rootCatalogue: RootCatalogue;
  readonly #replay: ReplayWindow;
  readonly #channelBudget: ChannelSizeBudget;
  /** Registered hooks, kept sorted by `HOOK_ORDER` (then registration order). */
  readonly #hooks = new HookList((err) => this.#logger.error('hub listener failed', errorFields(err)));
  readonly #observer: HubObserver | undefined;
  /** Cluster mode only (a shared log): decisions wait for the write turn. See write-gate.ts. */
  #gate: WriteGate | undefined;
  #failed: Error | undefined;
  #closed = false;
  readonly #log: ActionLog;
  /** The last disk-usage measurement and when it was taken (see `#quotaRefusal`). */
  #diskUsage = { bytes: 0, at: Number.NEGATIVE_INFINITY };
  /** Set by the composition root: what to do when the log fails (exit so a supervisor restarts). */
  #onFatal: ((err: Error) => void) | undefined;

  private constructor(options: HubOptions, limits: HubLimits, replay: ReplayWindow, recovered: RecoveredHub) {
    this.limits = limits;
    this.#logger = options.logger;
    this.#now = options.now;
    this.#newId = options.newId;
    this.#agents = options.agents;
    this.#defaultProvider = options.defaultProvider;
    this.#observer = options.observer;
    this.#log = options.log;
    this.#state = recovered.state;
    this.#ledger = recovered.ledger;
    this.#replay = replay;
    const state = recovered.state;
    this.#channelBudget = new ChannelSizeBudget(limits, {
      stateOf: (channel) => state.chats.get(channel)?.state ?? state.sessions.get(channel)?.state,
      ownerOf: (channel) => state.sessionOf(channel)?.owner,
      *channels() {
        yield* state.sessions.keys();
        yield* state.chats.keys();
      },
    }, recovered.measured);
    this.#subscriptions = new Subscriptions(limits.maxSubscriptionsPerConnection, limits.fanout, replay);
    this.#pipeline = new CommitPipeline({
      log: options.log,
      logger: options.logger,
      state: recovered.state,
      receivers: this.#subscriptions,
      replay,
      fanoutLimits: limits.fanout,
      snapshotEvery: limits.snapshotEvery,
      keepBehindSnapshot: limits.replayBufferSize,
      snapshotImage: () => snapshotImageOf(this.#state, this.#ledger),
      headSeq: recovered.headSeq,
      onAppendFailed: (err) => this.#fail(err),
    });
    this.#rootCatalogue = new RootCatalogue(recovered.state, this.#pipeline);
    this.#rootCatalogue.publishedFromState();
  }

  /**
   * Opens a hub on a log (see recovery.ts): loads the newest snapshot and replays the records
   * after it. Turns that were running when the previous process stopped stay open and are listed
   * in `interruptedTurns`: the agent runner resumes or ends each (never silently).
   */
  static async open(options: HubOptions): Promise<Hub> {
    const limits = { ...DEFAULT_HUB_LIMITS, ...options.limits };
    const replay = new ReplayWindow(limits.replayBufferSize, limits.replayBufferChars);
    const hub = new Hub(options, limits, replay, await recoverFromLog(options.log, options.agents, replay, { now: options.now, ledger: limits.ledger }, limits.maxLoadStateChars));
    if (isSharedActionLog(options.log)) {
      // Other processes share this log and may be running the turns recovery finds active, so
      // they are not ended here (see the README's Cluster section for what ends them).
      const pipeline = hub.#pipeline;
      hub.#gate = new WriteGate(options.log, {
        get serverSeq() {
          return pipeline.serverSeq;
        },
        get inDoubt() {
          return pipeline.storageProblem;
        },
        hasPendingRecords: () => pipeline.hasPendingRecords,
        foldRemote: (records) => hub.#foldRemote(records),
        fail: (err) => hub.#fail(err),
      }, options.logger);
      pipeline.appendThrough(hub.#gate);
    } else {
      // Left running: the agent runner decides, per provider, whether each one continues or ends.
      hub.interruptedTurns = interruptedTurns(hub.#state);
    }
    // A log that refuses the first batch (a full disk at start) must not keep the hub from
    // starting: it refuses writes until the log takes the batch (commit-pipeline.ts, "in doubt").
    await Promise.race([hub.drain(), hub.#pipeline.whenInDoubt()]);
    return hub;
  }

  /**
   * The turns that were running when the previous process stopped (a single hub's own log only;
   * empty in cluster mode, where another process may be running them). See recovery.ts.
   */
  interruptedTurns: readonly InterruptedTurn[] = [];

  // ─── Queries ────────────────────────────────────────────────────────────────

  /** Last serverSeq sequenced (applied in memory; durable once the current batch is appended). */
  get serverSeq(): number {
    return this.#pipeline.serverSeq;
  }

  /**
   * Why this hub refuses writes right now: a batch in doubt (its append failed and is retried),
   * the shared log unreachable, or memory no longer the log's (the tenant is being reloaded).
   */
  get storageProblem(): string | undefined {
    return this.#pipeline.storageProblem ?? this.#gate?.unavailable ?? (this.#failed ? `memory no longer matches the log (${this.#failed.message})` : undefined);
  }

  get agents(): readonly AgentInfo[] {
    return this.#agents;
  }

  hook(owner: HookOwner, hooks: HubHooks): () => void {
    return this.#hooks.add(owner, hooks);
  }

  /** A session the principal may see, or undefined (other tenants' sessions do not exist for them). */
  visibleSession(principal: Principal, uri: string): SessionEntry | undefined {
    const s = this.#state.sessions.get(uri);
    return s && s.tenant === principal.tenant ? s : undefined;
  }

  visibleChat(principal: Principal, uri: string): ChatEntry | undefined {
    const c = this.#state.chats.get(uri);
    return c && this.visibleSession(principal, c.session) ? c : undefined;
  }

  /** Lookups for the agent runner and features, with no tenant check: they act for the hub. */
  sessionEntry(uri: string): SessionEntry | undefined {
    return this.#state.sessions.get(uri);
  }

  chatEntry(uri: string): ChatEntry | undefined {
    return this.#state.chats.get(uri);
  }

  /**
   * The session's default chat, only when the catalogue says that chat belongs to the session.
   * Features follow this rather than `state.defaultChat`, which a peer's action wrote.
   */
  defaultChatOf(sessionUri: string): string | undefined {
    const session = this.#state.sessions.get(sessionUri);
    const chat = session?.state.defaultChat;
    return chat !== undefined && session!.chats.has(chat) && this.#state.chats.get(chat)?.session === sessionUri ? chat : undefined;
  }

  listSessions(principal: Principal): SessionSummaryView[] {
    const out: SessionSummaryView[] = [];
    for (const s of this.#state.sessions.values()) {
      if (s.tenant === principal.tenant) out.push(sessionSummary(s, this.#state));
    }
    return out.sort((a, b) => Date.parse(b.modifiedAt) - Date.parse(a.modifiedAt));
  }

  /** The snapshot of a channel visible to the principal; throws SessionNotFound/NotFound otherwise. */
  snapshot(principal: Principal, channel: string): Snapshot {
    const kind = channelKind(channel);
    const fromSeq = this.#pipeline.serverSeq;
    if (kind === 'root') return { resource: ROOT_URI, state: this.#state.root, fromSeq };
    if (kind === 'session') {
      const s = this.visibleSession(principal, channel);
      if (!s) throw new ProtocolError(ErrorCode.SessionNotFound, `session ${channel} not found`);
      return { resource: channel, state: s.state, fromSeq };
    }
    if (kind === 'chat') {
      const c = this.visibleChat(principal, channel);
      if (!c) throw new ProtocolError(ErrorCode.NotFound, `chat ${channel} not found`);
      // Who answered and who stopped stay beside the state (see shared/state/answered-by.ts).
      const meta = chatSnapshotMeta(c);
      return meta ? { resource: channel, state: c.state, fromSeq, _meta: meta } : { resource: channel, state: c.state, fromSeq };
    }
    throw new ProtocolError(ErrorCode.InvalidParams, `unsupported channel URI ${JSON.stringify(channel)}`);
  }

  // ─── Subscriptions (subscriptions.ts) ───────────────────────────────────────

  subscribe(conn: Connection, principal: Principal, channel: string, maxLatencyMs = 0): Snapshot {
    this.#assertReadable();
    const snapshot = this.snapshot(principal, channel);
    this.#subscriptions.attach(conn, principal.tenant, channel, snapshot.fromSeq, this.#pipeline.deliveredSeq, maxLatencyMs);
    this.#hooks.call((h) => h.subscribed?.({ channel, principal }));
    return snapshot;
  }

  unsubscribe(conn: Connection, channel: string): void {
    this.#subscriptions.unsubscribe(conn, channel);
  }

  disconnect(conn: Connection): void {
    this.#subscriptions.dropConnection(conn);
    this.#hooks.call((h) => h.disconnected?.(conn));
  }

  /** Upper estimate of the JSON characters every session and chat holds together (metrics; channel-budget.ts). */
  get stateChars(): number {
    return this.#channelBudget.totalChars;
  }

  /** Channel subscriptions held by every connection together (metrics). */
  get subscriptionCount(): number {
    return this.#subscriptions.count;
  }

  subscriptionsOf(conn: Connection): ReadonlySet<string> {
    return this.#subscriptions.of(conn);
  }

  /**
   * Legacy AHP reconnect: the envelopes missed since `lastSeenServerSeq` when the replay window
   * still covers the gap, else snapshots; invisible channels are `missing` (see subscriptions.ts).
   */
  reconnect(conn: Connection, principal: Principal, params: ReconnectParams): ReconnectResult {
    this.#assertReadable();
    const result = this.#subscriptions.reconnect(conn, principal.tenant, params, {
      visible: (channel) => channel === ROOT_URI || this.#sessionOfVisibleChannel(principal, channel) !== undefined,
      snapshot: (channel) => this.snapshot(principal, channel),
      serverSeq: this.#pipeline.serverSeq,
      deliveredSeq: this.#pipeline.deliveredSeq,
    });
    this.#observer?.reconnectServed(result.type);
    const missing = new Set(result.missing);
    for (const channel of params.subscriptions) if (!missing.has(channel)) this.#hooks.call((h) => h.subscribed?.({ channel, principal }));
    return result;
  }

  /**
   * Cluster mode: waits (at most `timeoutMs`) until this process has folded the shared log up to
   * `serverSeq`, so a client that moves here from a node further ahead gets a replay from its
   * cursor instead of an older snapshot. undefined when there is nothing to wait for (always on
   * a single hub), so callers stay synchronous there.
   */
  caughtUpTo(serverSeq: number, timeoutMs = 2_000): Promise<void> | undefined {
    return this.#gate && this.#pipeline.serverSeq < serverSeq ? this.#gate.reach(serverSeq, timeoutMs) : undefined;
  }

  // ─── Commands ───────────────────────────────────────────────────────────────

  async createSession(principal: Principal, params: { uri: string; provider?: string | undefined; title?: string | undefined }): Promise<{ defaultChat: string }> {
    const turn = this.#enterWrite();
    if (turn) await turn;
    this.#assertQuota();
    if (!canWrite(principal)) throw new ProtocolError(ErrorCode.PermissionDenied, 'viewers cannot create sessions');
    if (channelKind(params.uri) !== 'session') {
      throw new ProtocolError(ErrorCode.InvalidParams, 'channel must be an ahp-session:/<id> URI');
    }
    if (this.#state.sessions.has(params.uri)) {
      // The server gives each tenant a hub of its own (tenant-stack.ts), so this is always one
      // of the caller's own tenant's sessions: it says nothing about anyone else's.
      throw new ProtocolError(ErrorCode.SessionAlreadyExists, `session ${params.uri} already exists`);
    }
    const provider = params.provider ?? this.#defaultProvider;
    if (!this.#agents.some((a) => a.provider === provider)) {
      throw new ProtocolError(ErrorCode.ProviderNotFound, `no agent provider ${JSON.stringify(provider)}`);
    }
    let count = 0;
    for (const s of this.#state.sessions.values()) if (s.tenant === principal.tenant) count++;
    if (count >= this.limits.maxSessionsPerTenant) {
      throw new ProtocolError(ErrorCode.LimitExceeded, `at most ${this.limits.maxSessionsPerTenant} sessions per tenant`);
    }
    this.#refuseOverQuota(this.#channelBudget.chargeNew(principal.user, NEW_CHANNEL_CHARS * 2));
    const createdAt = new Date(this.#now()).toISOString();
    const title = params.title ?? 'New session';
    this.#sequenceLifecycle({
      type: CatalogAction.SessionCreated,
      session: params.uri,
      tenant: principal.tenant,
      owner: principal.user,
      provider,
      title,
      createdAt,
    });
    const defaultChat = this.#createChatRecord(params.uri, CHAT_SCHEME + this.#newId(), 'Chat', createdAt);
    this.#pipeline.sequence(params.uri, { type: 'session/defaultChatChanged', defaultChat });
    this.#channelBudget.opened(params.uri);
    this.#channelBudget.opened(defaultChat);
    this.#rootCatalogue.sessionAdded(this.#state.sessions.get(params.uri)!);
    await this.#pipeline.durable();
    return { defaultChat };
  }

  async disposeSession(principal: Principal, uri: string): Promise<void> {
    const turn = this.#enterWrite();
    if (turn) await turn;
    const session = this.visibleSession(principal, uri);
    if (!session) throw new ProtocolError(ErrorCode.SessionNotFound, `session ${uri} not found`);
    if (!canWrite(principal)) throw new ProtocolError(ErrorCode.PermissionDenied, 'viewers cannot dispose sessions');
    const chats = [...session.chats];
    this.#sequenceLifecycle({ type: CatalogAction.SessionDisposed, session: uri });
    this.#sessionGone(session, chats);
    await this.#pipeline.durable();
  }

  async createChat(principal: Principal, sessionUri: string, params: { chat?: string | undefined; title?: string | undefined }): Promise<{ chat: string }> {
    const turn = this.#enterWrite();
    if (turn) await turn;
    this.#assertQuota();
    const session = this.visibleSession(principal, sessionUri);
    if (!session) throw new ProtocolError(ErrorCode.SessionNotFound, `session ${sessionUri} not found`);
    if (!canWrite(principal)) throw new ProtocolError(ErrorCode.PermissionDenied, 'viewers cannot create chats');
    if (session.chats.size >= this.limits.maxChatsPerSession) {
      throw new ProtocolError(ErrorCode.LimitExceeded, `at most ${this.limits.maxChatsPerSession} chats per session`);
    }
    const chat = params.chat ?? CHAT_SCHEME + this.#newId();
    if (channelKind(chat) !== 'chat') throw new ProtocolError(ErrorCode.InvalidParams, 'chat must be an ahp-chat:/<id> URI');
    if (this.#state.chats.has(chat)) throw new ProtocolError(ErrorCode.AlreadyExists, `chat ${chat} already exists`);
    this.#refuseOverQuota(this.#channelBudget.chargeNew(session.owner, NEW_CHANNEL_CHARS));
    this.#createChatRecord(sessionUri, chat, params.title ?? 'Chat', new Date(this.#now()).toISOString());
    this.#channelBudget.opened(chat);
    this.#channelBudget.opened(sessionUri);
    this.#rootCatalogue.sessionChanged(session);
    await this.#pipeline.durable();
    return { chat };
  }

  async disposeChat(principal: Principal, chatUri: string): Promise<void> {
    const turn = this.#enterWrite();
    if (turn) await turn;
    const chat = this.visibleChat(principal, chatUri);
    if (!chat) throw new ProtocolError(ErrorCode.NotFound, `chat ${chatUri} not found`);
    if (!canWrite(principal)) throw new ProtocolError(ErrorCode.PermissionDenied, 'viewers cannot dispose chats');
    const session = this.#state.sessions.get(chat.session)!;
    if (session.state.defaultChat === chatUri) {
      throw new ProtocolError(ErrorCode.InvalidParams, 'the default chat is disposed with its session');
    }
    for (const entry of session.state.inputNeeded ?? []) {
      if (entry.chat === chatUri) this.#pipeline.sequence(session.uri, { type: 'session/inputNeededRemoved', id: entry.id });
    }
    this.#sequenceLifecycle({ type: CatalogAction.ChatDisposed, chat: chatUri });
    this.#pipeline.sequence(session.uri, { type: 'session/chatRemoved', chat: chatUri });
    this.#chatGone(chatUri, session.uri);
    this.#rootCatalogue.sessionChanged(session);
    await this.#pipeline.durable();
  }

  /** Throws the quota refusal, if any, as the named error (and counts it). */
  #refuseOverQuota(refusal: StateRefusal | undefined): void {
    if (!refusal) return;
    this.#observer?.quotaRefused?.(refusal.kind);
    throw new ProtocolError(ErrorCode.QuotaExceeded, refusal.reason);
  }

  /** A budget refusal as a decision: the channel's size is a limit, the user's and tenant's totals quotas. */
  #budgetRefusal(refusal: StateRefusal): { ok: false; code: RejectionCode; reason: string } {
    if (refusal.kind === 'channel_too_large') return { ok: false, code: ErrorCode.LimitExceeded, reason: refusal.reason };
    this.#observer?.quotaRefused?.(refusal.kind);
    return { ok: false, code: ErrorCode.QuotaExceeded, reason: refusal.reason };
  }

  /** Sequences a session or chat lifecycle record (the internal catalogue channel; never sent). */
  #sequenceLifecycle(action: CatalogRecordAction): void {
    this.#pipeline.sequence(CATALOG_CHANNEL, action);
  }

  #createChatRecord(session: string, chat: string, title: string, createdAt: string): string {
    this.#sequenceLifecycle({ type: CatalogAction.ChatCreated, chat, session, title, createdAt });
    const state = this.#state.chats.get(chat)!.state;
    this.#pipeline.sequence(session, {
      type: 'session/chatAdded',
      summary: { resource: chat, title: state.title, status: state.status, modifiedAt: state.modifiedAt, origin: { kind: 'user' } },
    });
    return chat;
  }

  /** After a session's disposal is sequenced (here or by another process): everyone who must know is told. */
  #sessionGone(session: { readonly uri: string; readonly tenant: string }, chats: Iterable<string>): void {
    this.#rootCatalogue.sessionRemoved(session);
    for (const chat of chats) this.#dropChannel(chat);
    this.#dropChannel(session.uri);
    // Delivered phase: the owners act once the disposal is durable.
    this.#pipeline.afterDelivered(() => this.#hooks.call((h) => h.sessionDisposed?.({ session: session.uri })));
  }

  /** After a chat's disposal is sequenced (here or by another process). */
  #chatGone(chat: string, session: string): void {
    this.#dropChannel(chat);
    this.#pipeline.afterDelivered(() => this.#hooks.call((h) => h.chatDisposed?.({ chat, session })));
  }

  #dropChannel(channel: string): void {
    this.#channelBudget.forget(channel);
    this.#subscriptions.dropChannel(channel);
  }

  // ─── Dispatch and decision ──────────────────────────────────────────────────

  /**
   * A client's `dispatchAction`. Unknown or invisible channels are ignored without an echo (AHP).
   * Everything else is either sequenced and echoed to every subscriber with its origin, or echoed
   * to its sender alone with a `rejectionReason` and not applied.
   */
  dispatchFromClient(client: ClientHandle, channel: string, clientSeq: number, rawAction: WireAction): void {
    const refusal = this.#writeRefusal() ?? this.#quotaRefusal();
    if (refusal === undefined && this.#closed) return;
    if (refusal !== undefined) {
      this.#observer?.dispatchRejected(refusal);
      this.#pipeline.sendPrivate(client.conn, {
        channel, action: echoableRejected(rawAction), serverSeq: this.#pipeline.serverSeq, origin: { clientId: client.clientId, clientSeq }, rejectionReason: refusal,
      });
      return;
    }
    if (this.#gate && !this.#gate.isOpen) {
      // Cluster mode: decide once this process holds the write turn (in arrival order).
      this.#writeTurn().then(
        () => this.dispatchFromClient(client, channel, clientSeq, rawAction),
        (err: unknown) => this.#pipeline.sendPrivate(client.conn, {
          channel, action: rawAction, serverSeq: this.#pipeline.serverSeq, origin: { clientId: client.clientId, clientSeq }, rejectionReason: errorMessage(err),
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
      if (original) return this.#pipeline.sendPrivate(client.conn, original);
    }
    const decision = duplicate
      ? ({ ok: false, reason: duplicate.kind === 'rejected' ? duplicate.reason : `clientSeq ${clientSeq} was already applied; it is not applied again` } as const)
      : this.#decide(client.principal, client.clientId, channel, rawAction, CLIENT_SURFACE);
    if (!decision) return;
    if (!decision.ok) {
      this.#observer?.dispatchRejected(decision.reason);
      if (!duplicate) this.#ledger.rejected(actor, client.clientId, clientSeq, decision.reason);
      this.#pipeline.sendPrivate(client.conn, { channel, action: echoableRejected(rawAction), serverSeq: this.#pipeline.serverSeq, origin, rejectionReason: decision.reason });
      return;
    }
    this.#ledger.accepted(actor, client.clientId, clientSeq, this.#pipeline.serverSeq + 1);
    // The source connection gets its echo at delivery even when it is not subscribed (AHP lets a
    // client answer a chat it has not subscribed to). The stored origin also names the actor, so
    // recovery can rebuild the principal-scoped ledger; envelopes never carry it.
    this.#accept(channel, decision.action, origin, client.conn, actor);
  }

  /**
   * Dispatches a client-dispatchable action on behalf of a caller that is not an AHP connection
   * (HTTP replies, SSE clients, the collaboration bridge). It gets exactly the validation a client
   * dispatch gets, is decided synchronously (so the first of several racing callers wins), is
   * broadcast without an origin, and resolves once durable. An unknown or invisible channel is
   * `{ok: false, code: ErrorCode.NotFound}`.
   */
  async submitAs(principal: Principal, channel: string, rawAction: WireAction, surface = 'hub'): Promise<SubmitOutcome> {
    const turn = this.#enterWrite();
    if (turn) await turn;
    this.#assertQuota();
    const decision = this.#decide(principal, `hub:${principal.user}`, channel, rawAction, surface);
    if (!decision) return { ok: false, code: ErrorCode.NotFound, message: `no channel ${channel}` };
    if (!decision.ok) return { ok: false, code: decision.code, message: decision.reason };
    const serverSeq = this.#accept(channel, decision.action, undefined);
    await this.#pipeline.durable();
    return { ok: true, serverSeq };
  }

  #sessionOfVisibleChannel(principal: Principal, channel: string): SessionEntry | undefined {
    const session = this.#state.sessionOf(channel);
    return session && session.tenant === principal.tenant ? session : undefined;
  }

  /** Validation shared by every client path. undefined = channel unknown or invisible (ignore). */
  #decide(principal: Principal, clientId: string, channel: string, rawAction: WireAction, surface: string):
    | { ok: true; action: WireAction }
    | { ok: false; code: RejectionCode; reason: string }
    | undefined {
    const session = this.#sessionOfVisibleChannel(principal, channel);
    if (!session) return undefined;
    const chat = channelKind(channel) === 'chat' ? this.#state.chats.get(channel) : undefined;
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
    const full = this.#channelBudget.charge(channel, decided);
    return full === undefined ? { ok: true, action: decided } : this.#budgetRefusal(full);
  }

  /** True when some chat of the session has, or had, a turn with this id. */
  #turnIdUsed(session: SessionEntry, turnId: string): boolean {
    for (const uri of session.chats) {
      const state = this.#state.chats.get(uri)?.state;
      if (state && hasTurn(state, turnId)) return true;
    }
    return false;
  }

  /**
   * Records who answered, from which surface and when, in the answer's `_meta["hub/answeredBy"]`
   * (the standard reducers carry it onto the tool call; for input requests it is indexed beside
   * the chat state and sent as the snapshot's `_meta`, see answered-by.ts), so every client can say
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
   * ledger). `in_use` when another principal already uses it: echoes carry only the clientId, so
   * sharing one would let each take the other's echoes for its own. `client_id_quota` when the
   * principal has as many clientIds as it may hold (client-ledger.ts; counted as a quota refusal).
   */
  claimClientId(principal: Principal, clientId: string): ClaimOutcome {
    const outcome = this.#ledger.claim(actorOf(principal), clientId);
    if (outcome === 'client_id_quota') this.#observer?.quotaRefused?.(outcome);
    return outcome;
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
    this.#pipeline.sendPrivate(client.conn, { channel, action, serverSeq: this.#pipeline.serverSeq, origin, rejectionReason: reason });
  }

  /**
   * An action produced by the hub itself or an in-process agent. Validated for shape and turn
   * (like a remote agent's), sequenced, and resolved once durable. Rejections throw.
   */
  async dispatchServer(channel: string, action: WireAction): Promise<number> {
    const turn = this.#enterWrite();
    if (turn) await turn;
    const parsed = parseAction(action);
    if (!parsed.ok) throw new Error(`invalid server action ${action.type}: ${parsed.message}`);
    const chat = this.#state.chats.get(channel);
    const session = this.#state.sessionOf(channel);
    if (!chat && !this.#state.sessions.has(channel)) throw new ProtocolError(ErrorCode.NotFound, `no channel ${channel}`);
    const reason = validateAgentAction(parsed.action as WireAction, chat?.state, session && { session: session.uri, chats: session.chats });
    if (reason !== undefined) throw new ProtocolError(ErrorCode.InvalidParams, reason);
    const full = this.#channelBudget.charge(channel, parsed.action);
    if (full) {
      const refusal = this.#budgetRefusal(full);
      throw new ProtocolError(refusal.code, refusal.reason);
    }
    const seq = this.#accept(channel, parsed.action as WireAction, undefined);
    await this.#pipeline.durable();
    return seq;
  }

  /**
   * Sequences a decided action, then the roll-up it causes (chat → session → root), and announces
   * it to the hooks. Returns its serverSeq; it is durable once the pipeline's next batch is.
   */
  #accept(channel: string, action: WireAction, origin: ActionOrigin | undefined, source?: Connection, actor?: Actor): number {
    const turnBefore = this.#state.chats.get(channel)?.state.activeTurn?.id;
    // The delivered phase is known only once the commit phase ran, after sequencing.
    let delivered: (() => void) | undefined;
    const seq = this.#pipeline.sequence(channel, action, origin, source, actor, () => delivered?.());
    const chat = this.#state.chats.get(channel);
    const known = isKnownAction(action) ? action : undefined;
    if (chat && !STREAMING_ONLY_ACTIONS.has(action.type)) this.#rollUpChat(chat, known);
    else if (!chat) this.#rollUpSession(channel);
    delivered = this.#announceCommit({ channel, action, known, serverSeq: seq, origin }, turnBefore);
    return seq;
  }

  /** Sequences the session actions that bring the session in line with the chat, then publishes its summary. */
  #rollUpChat(chat: ChatEntry, after: KnownAction | undefined): void {
    const session = this.#state.sessions.get(chat.session);
    if (!session) return;
    for (const action of chatRollUpActions(chat, session, after)) this.#pipeline.sequence(session.uri, action);
    this.#rootCatalogue.sessionChanged(session);
  }

  /** Publishes the session's summary to the root catalogue when it changed (no-op for other channels). */
  #rollUpSession(uri: string): void {
    const session = this.#state.sessions.get(uri);
    if (session) this.#rootCatalogue.sessionChanged(session);
  }

  /**
   * Runs a commit's commit phase in the owners' hooks and returns its delivered phase, which the
   * pipeline runs once the record is durable (the phases and the turn-end rule live in `HookList`).
   */
  #announceCommit(event: CommitEvent, turnBefore: string | undefined): () => void {
    const chat = this.#state.chats.get(event.channel);
    return this.#hooks.announceCommit(event, chat && { uri: chat.uri, session: chat.session, activeTurnId: chat.state.activeTurn?.id }, turnBefore);
  }

  // ─── Cluster mode ───────────────────────────────────────────────────────────

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
      throw new ProtocolError(this.#closed ? ErrorCode.InternalError : ErrorCode.StorageUnavailable, errorMessage(err));
    }
  }

  /**
   * Where every decision that writes starts: open, writable, then (cluster) the write turn.
   * Refuses a write now (closed, storage away) or, in cluster mode, returns the write turn to
   * await. On one node it returns undefined and the caller decides without awaiting anything:
   * `await undefined` would still defer the decision by a microtask, and the hub's rule is that
   * a dispatch is decided synchronously within the call (AGENTS.md).
   */
  #enterWrite(): Promise<void> | undefined {
    this.#assertOpen();
    this.#assertWritable();
    if (!this.#gate) return undefined;
    // The log may have failed while this call waited for the turn.
    return this.#writeTurn().then(() => this.#assertWritable());
  }


  /** Why a write would be refused now (a `StorageUnavailable` reason), or undefined. */
  #writeRefusal(): string | undefined {
    // Not the gate's last failure: taking the turn finds out whether the log is back.
    const problem = this.#pipeline.storageProblem ?? (this.#failed ? this.storageProblem : undefined);
    return problem === undefined ? undefined : `${STORAGE_UNAVAILABLE_REASON}: ${problem}`;
  }

  #assertWritable(): void {
    const refusal = this.#writeRefusal();
    if (refusal !== undefined) throw new ProtocolError(ErrorCode.StorageUnavailable, refusal);
  }

  /**
   * While a batch is in doubt memory holds records the log may never take: a snapshot now could
   * show them, so reads that answer with state are refused exactly when writes are.
   */
  #assertReadable(): void {
    this.#assertWritable();
  }

  /**
   * Why a client's write would be refused for the tenant's disk quota, or undefined. Measured at
   * most every DISK_USAGE_TTL_MS, so a burst may overshoot by what it writes in that time.
   */
  #quotaRefusal(): string | undefined {
    if (!this.#log.storedBytes) return undefined;
    const now = this.#now();
    if (now - this.#diskUsage.at >= DISK_USAGE_TTL_MS) {
      try {
        this.#diskUsage = { bytes: this.#log.storedBytes(), at: now };
      } catch {
        return undefined; // the log is failing: the append will say so
      }
    }
    const { bytes } = this.#diskUsage;
    const max = this.limits.maxTenantDiskBytes;
    if (bytes <= max) return undefined;
    return `${STORAGE_QUOTA_REASON}: this tenant's log and snapshots take ${mib(bytes)} MiB of its ${mib(max)} MiB disk quota; ` +
      'writes are refused until sessions are disposed (space returns as the log is compacted) or the quota (--tenant-disk-quota) is raised';
  }

  #assertQuota(): void {
    const refusal = this.#quotaRefusal();
    if (refusal !== undefined) throw new ProtocolError(ErrorCode.StorageQuotaExceeded, refusal);
  }

  /**
   * Cluster mode: records another process appended, folded through the path recovery uses
   * (`HubState.applyRecord`; roll-up records are in the log, so nothing is recomputed), then
   * delivered to this process's subscribers and features exactly like local ones.
   */
  #foldRemote(records: readonly LogRecord[]): void {
    for (const r of records) {
      const lifecycle = catalogActionOf(r);
      const disposedSession = lifecycle?.type === CatalogAction.SessionDisposed ? this.#state.sessions.get(lifecycle.session) : undefined;
      const disposedChat = lifecycle?.type === CatalogAction.ChatDisposed ? this.#state.chats.get(lifecycle.chat) : undefined;
      const turnBefore = this.#state.chats.get(r.channel)?.state.activeTurn?.id;
      let delivered: (() => void) | undefined;
      this.#pipeline.adoptDurable(r, () => delivered?.());
      this.#channelBudget.applied(r.channel, r.action);
      this.#ledger.acceptedFromLog(r);
      if (lifecycle) {
        if (lifecycle.type === CatalogAction.SessionCreated) {
          const session = this.#state.sessions.get(lifecycle.session);
          if (session) this.#rootCatalogue.sessionAdded(session);
          this.#channelBudget.opened(lifecycle.session);
        } else if (lifecycle.type === CatalogAction.ChatCreated) {
          this.#channelBudget.opened(lifecycle.chat);
        } else if (disposedSession) {
          this.#sessionGone(disposedSession, disposedSession.chats);
        } else if (disposedChat) {
          this.#chatGone(disposedChat.uri, disposedChat.session);
        }
        continue;
      }
      const action = r.action as WireAction;
      const session = this.#state.sessionOf(r.channel);
      if (session && !STREAMING_ONLY_ACTIONS.has(action.type)) this.#rootCatalogue.sessionChanged(session);
      delivered = this.#announceCommit({ channel: r.channel, action, known: isKnownAction(action) ? action : undefined, serverSeq: r.serverSeq, origin: r.origin, remote: true }, turnBefore);
    }
  }

  // ─── Failure and shutdown ───────────────────────────────────────────────────

  /**
   * Memory no longer matches the log (a batch in doubt was abandoned because the log holds other
   * records in its place, or folding failed): this hub refuses everything from now on and the
   * composition root replaces it with one recovered from the log (`onFatal`).
   */
  #fail(err: unknown): void {
    if (this.#failed) return;
    this.#failed = err instanceof Error ? err : new Error(String(err));
    this.#logger.error('memory no longer matches the action log: the hub refuses actions and is reloaded from the log', errorFields(err));
    this.#onFatal?.(this.#failed);
  }

  /** Set by the composition root: what to do when memory no longer matches the log (reload the tenant). */
  onFatal(handler: (err: Error) => void): void {
    this.#onFatal = handler;
  }

  #assertOpen(): void {
    if (this.#closed && this.#failed) throw new ProtocolError(ErrorCode.StorageUnavailable, `${STORAGE_UNAVAILABLE_REASON}: this tenant is being reloaded from its log`);
    if (this.#closed) throw new ProtocolError(ErrorCode.InternalError, 'the hub is shutting down');
  }

  /**
   * Sends `text` (a JSON-RPC answer) to `conn` once everything sequenced so far is durable and
   * delivered, so an answer never shows state a crash could take back nor overtakes envelopes
   * (see `CommitPipeline.sendInOrder`).
   */
  sendInOrder(conn: Connection, text: string): void {
    this.#pipeline.sendInOrder(conn, text);
  }

  /** Runs `fn` after everything queued so far (envelopes and answers) has been delivered. */
  afterDelivered(fn: () => void): void {
    this.#pipeline.afterDelivered(fn);
  }

  /** Resolves once everything sequenced so far is durable and delivered. */
  drain(): Promise<void> {
    return this.#pipeline.durable();
  }

  /** Stops accepting work, flushes, writes a final snapshot. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    // A batch in doubt is not waited for: it was never acknowledged, and the log may stay away.
    if (this.#pipeline.storageProblem === undefined && !this.#failed) await Promise.race([this.drain(), this.#pipeline.whenInDoubt()]).catch(() => undefined);
    this.#pipeline.stopRetrying();
    this.#closed = true;
    await this.#gate?.close();
    this.#subscriptions.flushAll();
    await this.#pipeline.settled();
    if (!this.#failed) await this.#pipeline.snapshotIfBehind();
  }
}

/** How every `StorageQuotaExceeded` refusal begins (rejection echoes have no code field). */
export const STORAGE_QUOTA_REASON = 'storage quota exceeded';

function mib(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}

/**
 * The action a rejection echo carries: the action as sent, unless its JSON is out of bounds, in
 * which case only its type (a rejection must never send the refused value back, nor fail to encode).
 */
function echoableRejected(raw: WireAction): WireAction {
  return checkJsonBounds(raw) ? { type: typeof raw.type === 'string' ? raw.type.slice(0, 128) : 'unknown' } : raw;
}

