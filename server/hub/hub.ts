/**
 * The hub's facade: the `HubPort` features see and the API the composition root, the JSON-RPC
 * methods and the tests call. It runs a dispatch through its stages, each in its own module:
 *
 *   decode (`../ahp/rpc.ts` framing and bounds, `../ahp/ahp-methods.ts` params) → the door
 *   (`door.ts`: admission, visibility, authorization) → decide (`decide.ts`: pure, state + action → `Decision`; then the
 *   size budget) → sequence (`sequencer.ts`: the action with its roll-up, the hooks' commit
 *   phase) → persist (`commit-pipeline.ts` group commit) → deliver (`fanout.ts`, after the log
 *   append, then the hooks' delivered phase).
 *
 * Every action and command enters through one door (`enter`, `door.ts`: admission, visibility, authorization, then the
 * decision, synchronously within the call, so "first reply wins" needs no lock) and gets one `Outcome`; session and chat
 * lifecycle commands are `catalogue-commands.ts`, reads `queries.ts`; the rest lives beside it behind narrow interfaces: `recovery.ts` (open from
 * snapshot + replay), `subscriptions.ts` (who is subscribed, reconnect), `root-catalogue.ts` (root summaries),
 * `write-gate.ts` (cluster mode). It knows connections only through `Connection`, storage only through `ActionLog`.
 */
import { cursorEpochOf, type ReconnectParams, type ReconnectResult, type Snapshot, type WireAction } from '../../shared/protocol/messages.js';
import type { ChannelReconnectParams, ChannelReconnectResult } from '../../shared/protocol/messages-1-1.js';
import { ROOT_URI } from '../../shared/protocol/uris.js';
import { isSharedActionLog } from '../storage/action-log.js';
import { HistoryEpochs } from '../storage/history-epochs.js';
import type { AgentInfo } from '../agents/agent.js';
import type { Principal } from '../auth/auth.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import type { ChatEntry, HubState, SessionEntry } from './catalogue.js';
import type { Connection } from './connection.js';
import type { SessionSummaryView } from './rollup.js';
import { actorOf, type ClaimOutcome, type ClientLedger } from './client-ledger.js';
import { ChannelSizeBudget } from './channel-budget.js';
import type { WriteGate } from './write-gate.js';
import { ReplayWindow } from './replay-window.js';
import type { HookOwner, HubHooks, HubPort } from './hub-port.js';
import { Door } from './door.js';
import { accepted, sequenced, submitted, type CheckEntry, type Entry, type Outcome, type SubmitOutcome } from './entry.js';
import { HookList } from './hook-list.js';
import { CommitPipeline } from './commit-pipeline.js';
import { Subscriptions } from './subscriptions.js';
import { RootCatalogue } from './root-catalogue.js';
import { interruptedTurns, recoverFromLog, snapshotImageOf, type InterruptedTurn, type RecoveredHub } from './recovery.js';
import { DEFAULT_HUB_LIMITS, type ClientHandle, type HubLimits, type HubObserver, type HubOptions } from './hub-options.js';
import { sessionOfVisibleChannel } from './decide.js';
import { gateFor, WriteAdmission } from './write-admission.js';
import { CatalogueCommands } from './catalogue-commands.js';
import { Sequencer } from './sequencer.js';
import { parkCacheFailure, SessionParking, type ParkingHost } from './session-parking.js';
import { defaultChatIn, listSessionsIn, sessionReaderOf, snapshotIn, visibleChatIn, visibleSessionIn, type SessionReader } from './queries.js';

export { DEFAULT_HUB_LIMITS, DEFAULT_TENANT_DISK_BYTES, type ClientHandle, type HubLimits, type HubObserver, type HubOptions } from './hub-options.js';
export { STORAGE_QUOTA_REASON } from './write-admission.js';

export class Hub implements HubPort {
  readonly limits: HubLimits;
  readonly #logger: Logger;
  readonly #agents: readonly AgentInfo[];
  /** Every session and chat with its current state (catalogue.ts). */
  readonly #state: HubState;
  readonly reader: SessionReader = sessionReaderOf(() => this.#state); // search, export: never loads a parked session
  readonly #ledger: ClientLedger;
  readonly #pipeline: CommitPipeline;
  readonly #subscriptions: Subscriptions;
  readonly #rootCatalogue: RootCatalogue;
  readonly #channelBudget: ChannelSizeBudget;
  /** Registered hooks, kept sorted by `HOOK_ORDER` (then registration order). */
  readonly #hooks = new HookList((err) => this.#logger.error('hub listener failed', errorFields(err)));
  readonly #observer: HubObserver | undefined;
  /** Cluster mode only (a shared log): decisions wait for the write turn. See write-gate.ts. */
  #gate: WriteGate | undefined;
  #failed: Error | undefined;
  #closed = false;
  /** Whether a write is taken now (open, writable, disk quota, cluster write turn). */
  readonly #admission: WriteAdmission;
  /** createSession, disposeSession, createChat, disposeChat (catalogue-commands.ts). */
  readonly #catalogue: CatalogueCommands;
  /** Sequencing with roll-up and the hooks' commit phase, local and remote (sequencer.ts). */
  readonly #sequencer: Sequencer;
  /** Where every action and command enters (door.ts); the AHP methods call it directly (no relay through the facade). */
  readonly door: Door;
  /** Set by the composition root: what to do when the log fails (exit so a supervisor restarts). */
  #onFatal: ((err: Error) => void) | undefined;
  /** Unwatched, idle sessions leave memory (session-parking.ts); `residency` is a metric. */
  readonly parking: SessionParking;
  /** The epochs of this log's history (storage/history-epochs.ts); undefined for a log that keeps none (PostgreSQL). */
  epochs: HistoryEpochs | undefined;

  private constructor(options: HubOptions, limits: HubLimits, replay: ReplayWindow, recovered: RecoveredHub) {
    this.limits = limits;
    this.#logger = options.logger;
    this.#agents = options.agents;
    this.#observer = options.observer;
    const admissionHost = () => ({ pipelineProblem: this.#pipeline.storageProblem, storageProblem: this.storageProblem, gate: this.#gate, failed: this.#failed, closed: this.#closed });
    this.#admission = new WriteAdmission(admissionHost, options.log, options.now, limits.maxTenantDiskBytes);
    this.#state = recovered.state;
    this.#ledger = recovered.ledger;
    const state = recovered.state;
    this.#channelBudget = new ChannelSizeBudget(
      limits,
      {
        stateOf: (channel) => state.chats.get(channel)?.state ?? state.sessions.get(channel)?.state,
        ownerOf: (channel) => state.sessionOf(channel)?.owner,
        *channels() {
          yield* state.sessions.keys();
          yield* state.chats.keys();
        },
      },
      recovered.measured,
    );
    this.#subscriptions = new Subscriptions(limits.maxSubscriptionsPerConnection, limits.fanout, replay);
    // A parked session that cannot be read back is missing from memory, not from the log: refuse and be rebuilt (`#fail`).
    const parkingHost: ParkingHost = { watched: (c) => (this.#subscriptions.fanoutOf(c)?.size ?? 0) > 0, parked: (chats) => this.#channelBudget.released(chats), unreadable: (err) => this.#fail(parkCacheFailure(err)) };
    this.parking = new SessionParking(state, { idleMs: limits.parkIdleMs, dir: options.parkDir, logger: options.logger }, parkingHost);
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
    const { agents, defaultProvider, observer, now, newId } = options;
    const parts = { state, pipeline: this.#pipeline, channelBudget: this.#channelBudget, rootCatalogue: this.#rootCatalogue, subscriptions: this.#subscriptions, hooks: this.#hooks };
    this.#catalogue = new CatalogueCommands({
      ...parts,
      observer,
      limits,
      agents,
      defaultProvider,
      now,
      newId,
    });
    this.#sequencer = new Sequencer({ ...parts, ledger: this.#ledger, catalogue: this.#catalogue });
    const host = () => ({ gate: this.#gate, failed: this.#failed, closed: this.#closed });
    this.door = new Door({ ...parts, admission: this.#admission, ledger: this.#ledger, replay, sequencer: this.#sequencer, catalogue: this.#catalogue, observer, now, host });
  }

  /**
   * Opens a hub on a log (see recovery.ts): loads the newest snapshot and replays the records
   * after it. Turns that were running when the previous process stopped stay open and are listed
   * in `interruptedTurns`: the agent runner resumes or ends each (never silently).
   */
  static async open(options: HubOptions): Promise<Hub> {
    const limits = { ...DEFAULT_HUB_LIMITS, ...options.limits };
    const replay = new ReplayWindow(limits.replayBufferSize, limits.replayBufferChars);
    const spans = await options.log.openEpoch?.();
    const hub = new Hub(options, limits, replay, await recoverFromLog(options.log, options.agents, replay, { now: options.now, ledger: limits.ledger }, limits.maxLoadStateChars));
    hub.epochs = spans && new HistoryEpochs(spans);
    if (isSharedActionLog(options.log)) {
      // Other processes share this log and may be running the turns recovery finds active, so
      // they are not ended here (see the README's Cluster section for what ends them).
      hub.#gate = gateFor(
        options.log,
        hub.#pipeline,
        (records) => hub.#sequencer.foldRemote(records),
        (err) => hub.#fail(err),
        options.logger,
      );
    } else {
      // Left running: the agent runner decides, per provider, whether each one continues or ends.
      hub.interruptedTurns = interruptedTurns(hub.#state);
    }
    // A log that refuses the first batch (a full disk at start) must not keep the hub from
    // starting: it refuses writes until the log takes the batch (commit-pipeline.ts, "in doubt").
    await Promise.race([hub.drain(), hub.#pipeline.whenInDoubt()]);
    return hub;
  }

  /** The turns that were running when the previous process stopped (a single hub's own log only; empty in cluster mode, where another process may be running them). See recovery.ts. */
  interruptedTurns: readonly InterruptedTurn[] = [];

  // ─── Queries ────────────────────────────────────────────────────────────────

  /** Last serverSeq sequenced (applied in memory; durable once the current batch is appended). */
  get serverSeq(): number {
    return this.#pipeline.serverSeq;
  }

  /** Why this hub refuses writes right now: a batch in doubt (its append failed and is retried), the shared log unreachable, or memory no longer the log's (the tenant is being reloaded). */
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
    return visibleSessionIn(this.#state, principal, uri);
  }

  visibleChat(principal: Principal, uri: string): ChatEntry | undefined {
    return this.#admission.lookup(() => visibleChatIn(this.#state, principal, uri));
  }

  /** Lookups for the agent runner and features, with no tenant check: they act for the hub. */
  sessionEntry(uri: string): SessionEntry | undefined {
    return this.#state.sessions.get(uri);
  }

  chatEntry(uri: string): ChatEntry | undefined {
    return this.#state.chats.get(uri);
  }

  /** The session's default chat, only when the catalogue says that chat belongs to the session (features follow this, not `state.defaultChat`, which a peer's action wrote). */
  defaultChatOf(sessionUri: string): string | undefined {
    return defaultChatIn(this.#state, sessionUri);
  }

  listSessions(principal: Principal): SessionSummaryView[] {
    return listSessionsIn(this.#state, principal);
  }

  /** The snapshot of a channel visible to the principal; throws SessionNotFound/NotFound otherwise. */
  snapshot(principal: Principal, channel: string): Snapshot {
    return this.#admission.lookup(() => snapshotIn(this.#state, principal, channel, this.#pipeline.serverSeq));
  }

  // ─── Subscriptions (subscriptions.ts) ───────────────────────────────────────

  subscribe(conn: Connection, principal: Principal, channel: string, maxLatencyMs = 0): Snapshot {
    this.#admission.assertReadable();
    const snapshot = this.snapshot(principal, channel);
    this.#subscriptions.attach(conn, principal.tenant, channel, snapshot.fromSeq, this.#pipeline.deliveredSeq, maxLatencyMs);
    this.#hooks.call((h) => h.subscribed?.({ channel, principal }));
    return snapshot;
  }

  unsubscribe(conn: Connection, channel: string): void {
    this.#subscriptions.unsubscribe(conn, channel);
  }

  disconnect(conn: Connection): void {
    this.#ledger.disconnected(conn);
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

  /** AHP reconnect: connection-wide, or (1.1) one recovery per channel's cursor; a cursor of another history (its epoch) gets snapshots; see subscriptions.ts. */
  reconnect<P extends ReconnectParams | ChannelReconnectParams>(conn: Connection, principal: Principal, params: P): P extends ReconnectParams ? ReconnectResult : ChannelReconnectResult {
    this.#admission.assertReadable();
    const view = {
      visible: (channel: string) => channel === ROOT_URI || sessionOfVisibleChannel(this.#state, principal, channel) !== undefined,
      snapshot: (channel: string) => this.snapshot(principal, channel),
      serverSeq: this.#pipeline.serverSeq,
      deliveredSeq: this.#pipeline.deliveredSeq,
      sameHistory: 'lastSeenServerSeq' in params ? this.epochs?.admits(cursorEpochOf(params), params.lastSeenServerSeq, this.#pipeline.serverSeq) : undefined,
      cursorOfThisHistory: this.epochs ? (seq: number) => this.epochs!.admits(cursorEpochOf(params), seq, this.#pipeline.serverSeq) : undefined,
    };
    const served = 'lastSeenServerSeq' in params ? this.#subscriptions.reconnect(conn, principal.tenant, params, view) : this.#subscriptions.reconnectChannels(conn, principal.tenant, params as ChannelReconnectParams, view);
    this.#observer?.reconnectServed(served.kind);
    for (const channel of served.resumed) this.#hooks.call((h) => h.subscribed?.({ channel, principal }));
    return served.result as P extends ReconnectParams ? ReconnectResult : ChannelReconnectResult;
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

  // ─── The door (door.ts): every action and command enters here ─────────────────

  /** One entry, one `Outcome`: decided synchronously within the call; a promise only for the cluster write turn and durability. */
  enter(entry: CheckEntry): Outcome;
  enter(entry: Entry): Outcome | Promise<Outcome>;
  enter(entry: Entry): Outcome | Promise<Outcome> {
    return this.door.enter(entry);
  }

  /** A client's `dispatchAction` (AHP): the door echoes a rejection or duplicate to the sender, in order. */
  dispatchFromClient(client: ClientHandle, channel: string, clientSeq: number, action: WireAction): void {
    void this.door.enter({ op: 'dispatch', by: { from: 'client', client, clientSeq }, channel, action });
  }

  // Renderings over the door for in-process callers and tests (features use `enter`).
  async submitAs(principal: Principal, channel: string, action: WireAction, surface = 'hub'): Promise<SubmitOutcome> {
    return submitted(await this.door.enter({ op: 'dispatch', by: { from: 'principal', principal, surface }, channel, action }));
  }

  async dispatchServer(channel: string, action: WireAction): Promise<number> {
    return sequenced(await this.door.enter({ op: 'dispatch', by: { from: 'server' }, channel, action }));
  }

  async createSession(principal: Principal, params: { uri: string; provider?: string | undefined; title?: string | undefined }): Promise<{ defaultChat: string }> {
    return { defaultChat: accepted(await this.door.enter({ op: 'createSession', principal, ...params })).defaultChat! };
  }

  async disposeSession(principal: Principal, uri: string): Promise<void> {
    accepted(await this.door.enter({ op: 'disposeSession', principal, uri }));
  }

  async createChat(principal: Principal, session: string, params: { chat?: string | undefined; title?: string | undefined }): Promise<{ chat: string }> {
    return { chat: accepted(await this.door.enter({ op: 'createChat', principal, session, ...params })).chat! };
  }

  async disposeChat(principal: Principal, chat: string): Promise<void> {
    accepted(await this.door.enter({ op: 'disposeChat', principal, chat }));
  }

  /**
   * Binds a clientId to the principal for this hub's lifetime (and across restarts, through the
   * ledger). `in_use` when another principal already uses it: echoes carry only the clientId, so
   * sharing one would let each take the other's echoes for its own. `client_id_quota` when the
   * principal has as many clientIds as it may hold (client-ledger.ts; counted as a quota refusal).
   */
  claimClientId(principal: Principal, clientId: string, conn: Connection): ClaimOutcome {
    const outcome = this.#ledger.claim(actorOf(principal), clientId);
    if (outcome === 'client_id_quota') this.#observer?.quotaRefused?.(outcome);
    if (outcome === 'claimed') this.#ledger.connected(conn, actorOf(principal), clientId); // never forgotten while open
    return outcome;
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
    return this.#gate && !this.#gate.isOpen ? this.#admission.writeTurn() : undefined;
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
    this.parking.close();
  }
}
