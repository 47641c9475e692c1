/**
 * The pending-interaction registry: one per session, fed by chat state through hub events.
 *
 * Every open input request and every tool call in `pending-confirmation` in a chat's active turn
 * is an interaction with a `requestId` (input requests keep their AHP request id unless it is
 * unusable in a URL or already pending in the session; tools always get a fresh id, never the
 * toolCallId), ACP-style options, and for questions the question list by index.
 *
 * Resolution is first-wins because it is decided by the hub: a reply becomes a client action via
 * the hub's door (`hub.enter`), which validates and commits synchronously in the single-threaded hub, and this
 * registry reconciles synchronously inside that commit. Whichever surface's action commits first
 * (AHP tab, HTTP reply, auto-approval or auto-denial) resolves the interaction; every later
 * reply finds it gone.
 * Turn end, cancel, truncation and disposal resolve whatever is still pending as `cancelled`.
 *
 * Resolved ids are remembered in a bounded FIFO only to tell late replies apart in the SSE
 * stream (`permission_already_resolved`); callers get the same `false`/404 either way.
 *
 * The registry folds in the hooks' commit phase (so a reply decided right after finds it up to
 * date) but publishes in the delivered phase: the frames and answers a commit causes are
 * registered on that commit (`CommitEvent.afterAppend`) and go out only once it is in the log.
 */
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatInputRequest, ChatState } from '../../shared/protocol/state.js';
import { interactionIdOf } from '../../shared/state/status.js';
import { APPROVED_TOOLS_META, DENIED_TOOLS_META, findOpenInputRequest, openInteractions, rememberedTools } from '../../shared/state/selectors.js';
import { sessionIdOf } from '../../shared/protocol/uris.js';
import type { Principal } from '../auth/auth.js';
import { STREAMING_ONLY_ACTIONS } from '../../shared/protocol/actions.js';
import type { CommitEvent, HubPort, TurnEndedEvent } from '../hub/hub-port.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import { acpUpdatesFor, hubNotify, qwenNotify, sessionUpdate, type PermissionOutcome } from '../acp-mapping/index.js';
import type { SessionStreams, TurnEnd } from './event-stream.js';
import type { AnsweredBy } from '../../shared/state/answered-by.js';
import { agentGrantOf, decisionStamp, rememberedChoiceAction, toolCallOf } from './standing-grants.js';
import { deriveOutcome, type Interaction, type Lookup, offeredOption, questionInteraction, type Reply, type ReplyResult, replyAction, toolInteraction, turnEndOf, type Wanted, wantedOf } from './interaction-model.js';
import { dispatchAsHub } from '../hub/entry.js';

/** Resolved ids remembered for `permission_already_resolved` (Qwen keeps 512). */
const RESOLVED_FIFO = 4_096;

/** Told of every interaction once its opening is durable, and of its resolution once that is (push notifications). */
export interface InteractionWatcher {
  opened(it: Interaction): void;
  resolved(it: Interaction, outcome: PermissionOutcome): void;
}

export class InteractionRegistry {
  /** session URI → requestId → pending interaction. */
  readonly #bySession = new Map<string, Map<string, Interaction>>();
  /** chat URI → key → pending interaction. */
  readonly #byChat = new Map<string, Map<string, Interaction>>();
  /** `${session}\n${requestId}` of resolved interactions, oldest first. */
  readonly #resolved = new Map<string, { outcome: PermissionOutcome; chat: string; turnId: string }>();
  /** chat URI → id of its active turn as last seen (to notice turn ends of any kind). */
  readonly #activeTurns = new Map<string, string>();
  #visits = 0;
  /** The commit whose commit phase is being folded: what it causes is registered on it (`#later`). */
  #commit: CommitEvent | undefined;
  #unsubscribe: (() => void) | undefined;
  #closed = false;
  readonly #watchers = new Set<InteractionWatcher>();

  constructor(
    private readonly hub: HubPort,
    private readonly streams: SessionStreams,
    private readonly logger: Logger,
    private readonly newId: () => string,
  ) {}

  start(): void {
    this.#unsubscribe = this.hub.hook('interactions', {
      sessionDisposed: (e) => this.#onSessionDisposed(e.session),
      chatDisposed: (e) => this.#onChatDisposed(e.chat, e.session),
      afterCommit: (e) => this.#folding(e, () => this.#onCommit(e)),
      turnEnded: (e) => this.#folding(e.commit, () => this.#onTurnEnded(e)),
    });
  }

  stop(): void {
    this.#closed = true;
    this.#unsubscribe?.();
  }

  /** Adds a watcher (delivered phase only: called once the commit is durable); returns its removal. */
  watch(watcher: InteractionWatcher): () => void {
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  #tell(call: (w: InteractionWatcher) => void): void {
    for (const w of this.#watchers) {
      try {
        call(w);
      } catch (err) {
        this.logger.warn('an interaction watcher failed', errorFields(err));
      }
    }
  }

  /** Runs a commit-phase reaction; what it causes (`#later`) waits for that commit's append. */
  #folding(commit: CommitEvent, reaction: () => void): void {
    const outer = this.#commit;
    this.#commit = commit;
    try {
      reaction();
    } finally {
      this.#commit = outer;
    }
  }

  /** Inside a commit phase: once that commit is durable; outside (a disposal, delivered already): now. */
  #later(effect: () => void): void {
    if (this.#commit) this.#commit.afterAppend(effect);
    else effect();
  }

  #publish(session: string, event: Parameters<SessionStreams['publish']>[1]): void {
    this.#later(() => this.streams.publish(session, event));
  }

  /** Pending interactions of a session, oldest first. */
  pending(session: string): Interaction[] {
    return [...(this.#bySession.get(session)?.values() ?? [])];
  }

  /** Pending interactions whose request is durable (what a late listener may be shown), oldest first. */
  announced(session: string): Interaction[] {
    return this.pending(session).filter((it) => it.announced === true);
  }

  /** Sessions with a pending interaction of that id (qwen's session-less `POST /permission/{requestId}`). */
  sessionsWithPending(requestId: string): string[] {
    const out: string[] = [];
    for (const [session, byId] of this.#bySession) if (byId.has(requestId)) out.push(session);
    return out;
  }

  lookup(session: string, requestId: string): Lookup {
    const pending = this.#bySession.get(session)?.get(requestId);
    if (pending) return { state: 'pending', interaction: pending };
    return this.#resolved.has(`${session}\n${requestId}`) ? { state: 'resolved' } : { state: 'unknown' };
  }

  /** The `_qwen/notify permission_request` frame of an interaction. */
  requestFrame(it: Interaction): unknown {
    return qwenNotify('permission_request', {
      requestId: it.requestId,
      sessionId: sessionIdOf(it.session),
      toolCall: it.toolCall,
      options: it.options,
    });
  }

  // ─── Replies ────────────────────────────────────────────────────────────────

  /**
   * Applies a reply from a non-AHP surface. The session must be visible to the caller; an
   * unknown, resolved or invisible request is `notAccepted` (indistinguishable). Option and
   * answer problems of a pending request are errors. First-wins is the hub's: see the file header.
   */
  /** `surface` names where the reply came from; the hub records it with the user (`hub/answeredBy`). */
  async reply(principal: Principal, session: string, requestId: string, reply: Reply, surface = 'HTTP reply'): Promise<ReplyResult> {
    const refused = this.hub.enter({ op: 'answerPermission', principal });
    if (refused.outcome === 'rejected') return { kind: 'error', code: 'permission_denied', message: refused.message };
    if (!this.hub.visibleSession(principal, session)) return { kind: 'notAccepted' };
    const found = this.lookup(session, requestId);
    if (found.state !== 'pending') {
      if (found.state === 'resolved') this.#alreadyResolved(session, requestId);
      return { kind: 'notAccepted' };
    }
    const it = found.interaction;
    const built = replyAction(it, reply, () => this.#openPart(it));
    if ('code' in built) return { kind: 'error', ...built };

    // An alias is recorded as the option it stands for, so every stream reports the offered id.
    const canonical = reply.outcome.outcome === 'selected' ? offeredOption(it.options, reply.outcome.optionId) : undefined;
    it.claimed = canonical ? { outcome: 'selected', optionId: canonical.optionId } : reply.outcome;
    let submitted: ReturnType<HubPort['enter']>;
    try {
      // Decided and committed synchronously: the registry has reconciled when this returns.
      submitted = this.hub.enter({ op: 'dispatch', by: { from: 'principal', principal, surface }, channel: it.chat, action: built.action, as: 'answerPermission' });
    } finally {
      if (this.#bySession.get(session)?.get(requestId) === it) it.claimed = undefined;
    }
    const result = await submitted;
    if (result.outcome === 'rejected' && result.at !== 'decision') {
      // The hub took no write (storage away, shutting down) or the batch never became durable.
      this.logger.warn('permission reply could not be applied', errorFields(result.cause ?? new Error(result.message)));
      return { kind: 'error', code: 'reply_not_applied', message: 'the hub cannot apply replies right now' };
    }
    if (result.outcome !== 'accepted') {
      this.logger.debug('permission reply not accepted', { requestId, reason: result.outcome === 'rejected' ? result.message : result.outcome });
      this.#alreadyResolved(session, requestId);
      return { kind: 'notAccepted' };
    }
    // Only the hub's own "always" options are hub-kept; an agent's own allow_always is the
    // agent's rule (recorded for display by the commit hook, `agentGrantOf`).
    const hubKept = canonical !== undefined && !it.ahpOptions.has(canonical.optionId) && it.identity !== undefined;
    if (it.kind === 'permission' && hubKept && (canonical.kind === 'allow_always' || canonical.kind === 'reject_always')) {
      const state = this.hub.chatEntry(it.chat)?.state;
      const by = state && it.toolCallId !== undefined ? decisionStamp(toolCallOf(state, it.turnId, it.toolCallId)) : undefined;
      await this.#rememberToolChoice(session, it.identity!, canonical.kind === 'allow_always' ? 'approval' : 'denial', by);
    }
    return { kind: 'accepted' };
  }

  #openPart(it: Interaction): ChatInputRequest | undefined {
    const state = this.hub.chatEntry(it.chat)?.state;
    return state && it.inputRequestId !== undefined ? findOpenInputRequest(state, it.inputRequestId)?.request : undefined;
  }

  #alreadyResolved(session: string, requestId: string): void {
    const resolved = this.#resolved.get(`${session}\n${requestId}`);
    const data: Record<string, unknown> = { requestId, sessionId: sessionIdOf(session) };
    if (resolved) data['outcome'] = resolved.outcome;
    this.streams.publish(session, { chat: resolved?.chat, turnId: resolved?.turnId, payload: qwenNotify('permission_already_resolved', data) });
  }

  /**
   * Records an "always" choice for a tool in the session log. The reducer keeps the approved and
   * denied lists exclusive (the latest choice wins), so this is a no-op only when the tool is
   * already in the right list and not in the other.
   */
  async #rememberToolChoice(session: string, toolName: string, choice: 'approval' | 'denial', by: AnsweredBy | undefined): Promise<void> {
    const remembered = this.#remembered(session, toolName);
    if (remembered === choice) return;
    try {
      await dispatchAsHub(this.hub, session, rememberedChoiceAction(choice, toolName, by));
    } catch (err) {
      this.logger.warn(`could not record the remembered ${choice}`, { toolName, ...errorFields(err) });
    }
  }

  async #recordAgentGrant(session: string, grant: WireAction): Promise<void> {
    try {
      await dispatchAsHub(this.hub, session, grant);
    } catch (err) {
      this.logger.warn('could not record the agent-kept grant', { toolName: grant['toolName'], ...errorFields(err) });
    }
  }

  /** `approval` / `denial` when exactly one list of the session names the tool, else `undefined`. */
  #remembered(session: string, toolName: string): 'approval' | 'denial' | undefined {
    const state = this.hub.sessionEntry(session)?.state;
    const approved = rememberedTools(state, APPROVED_TOOLS_META).includes(toolName);
    const denied = rememberedTools(state, DENIED_TOOLS_META).includes(toolName);
    if (approved === denied) return undefined;
    return approved ? 'approval' : 'denial';
  }

  /**
   * Answers a pending tool the session answered with `allow_always` / `reject_always` earlier:
   * approves it (`confirmed: 'setting'`) or denies it (`reason: 'denied'`), as the same hub
   * decision a reply would be, so a racing reply still finds it resolved.
   */
  #autoAnswer(it: Interaction, choice: 'approval' | 'denial'): void {
    if (this.#closed || this.#bySession.get(it.session)?.get(it.requestId) !== it) return;
    const session = this.hub.sessionEntry(it.session);
    if (!session) return;
    const always = it.options.find((o) => o.kind === (choice === 'approval' ? 'allow_always' : 'reject_always'));
    it.claimed = always ? { outcome: 'selected', optionId: always.optionId } : undefined;
    const principal: Principal = { user: choice === 'approval' ? 'hub:remembered-approval' : 'hub:remembered-denial', tenant: session.tenant, role: 'user' };
    const action: WireAction =
      choice === 'approval'
        ? { type: 'chat/toolCallConfirmed', turnId: it.turnId, toolCallId: it.toolCallId!, approved: true, confirmed: 'setting' }
        : {
            type: 'chat/toolCallConfirmed',
            turnId: it.turnId,
            toolCallId: it.toolCallId!,
            approved: false,
            reason: 'denied',
            reasonMessage: `"${it.toolName}" was set to "always deny" in this session.`,
          };
    const what = choice === 'approval' ? 'auto-approval' : 'auto-denial';
    try {
      void Promise.resolve(this.hub.enter({ op: 'dispatch', by: { from: 'principal', principal, surface: 'remembered choice' }, channel: it.chat, action })).then((o) => {
        if (o.outcome === 'rejected' && o.at !== 'decision') this.logger.warn(`${what} failed`, errorFields(o.cause ?? new Error(o.message)));
      });
    } finally {
      if (this.#bySession.get(it.session)?.get(it.requestId) === it) it.claimed = undefined;
    }
  }

  // ─── Reconciliation with chat state ─────────────────────────────────────────

  #onSessionDisposed(session: string): void {
    for (const it of this.pending(session)) this.#resolve(it, { outcome: 'cancelled' });
    // The session's chats are gone already; any tracked turn whose chat vanished was in it.
    for (const [chat, turnId] of [...this.#activeTurns]) {
      if (this.hub.chatEntry(chat)) continue;
      this.#activeTurns.delete(chat);
      this.#publishTurnEnd(session, chat, turnId, { stopReason: 'cancelled' });
    }
    this.streams.closeSession(session);
  }

  #onChatDisposed(chat: string, session: string): void {
    for (const it of [...(this.#byChat.get(chat)?.values() ?? [])]) this.#resolve(it, { outcome: 'cancelled' });
    const turnId = this.#activeTurns.get(chat);
    if (turnId !== undefined) {
      this.#activeTurns.delete(chat);
      this.#publishTurnEnd(session, chat, turnId, { stopReason: 'cancelled' });
    }
  }

  #onCommit(e: CommitEvent): void {
    const { channel, action, known } = e;
    if (known?.type === 'x-session/toolChoiceForgotten') {
      // Clearing a standing permission is worth a line in the operator's log, not only the action log.
      this.logger.info('remembered tool choice forgotten', { session: channel, toolName: known.toolName, clientId: e.origin?.clientId });
      return;
    }
    const chat = this.hub.chatEntry(channel);
    if (!chat) return;
    const turnId = chat.state.activeTurn?.id ?? (known && 'turnId' in known && typeof known.turnId === 'string' ? known.turnId : undefined);
    if (this.streams.isStreamed(chat.session))
      for (const update of acpUpdatesFor(known)) {
        this.#publish(chat.session, { chat: channel, turnId, payload: sessionUpdate(sessionIdOf(chat.session), update, channel, turnId) });
      }
    if (STREAMING_ONLY_ACTIONS.has(action.type)) return;
    const grant = e.remote ? undefined : agentGrantOf(known, chat.state);
    if (grant) this.#later(() => void this.#recordAgentGrant(chat.session, grant));
    const only = interactionIdOf(known);
    if (only !== undefined && known!.type.startsWith('chat/tool')) this.#reconcileOne(chat.session, channel, chat.state, `tool:${only}`);
    else if (only !== undefined) this.#reconcileOne(chat.session, channel, chat.state, `input:${only}`);
    else this.#reconcile(chat.session, channel, chat.state);
    // Remembered for disposal, which ends a chat's turn without a commit.
    const current = chat.state.activeTurn?.id;
    if (current !== undefined) this.#activeTurns.set(channel, current);
  }

  /** The hub derived that a chat's active turn ended: prompt streams learn how it stopped. */
  #onTurnEnded(e: TurnEndedEvent): void {
    if (this.#activeTurns.get(e.chat) === e.turnId) this.#activeTurns.delete(e.chat);
    const chat = this.hub.chatEntry(e.chat);
    if (!chat) return;
    this.#publishTurnEnd(e.session, e.chat, e.turnId, turnEndOf(e.commit.known, e.turnId, chat.state));
  }

  #publishTurnEnd(session: string, chat: string, turnId: string, end: TurnEnd): void {
    const data: Record<string, unknown> = { sessionId: sessionIdOf(session), turnId, stopReason: end.stopReason };
    if (end.error) data['error'] = end.error;
    this.#publish(session, { chat, turnId, turnEnd: end, payload: hubNotify('turn_end', data) });
  }

  /** Brings every interaction of the chat in line with its state (after a commit that may change several). */
  #reconcile(session: string, chat: string, state: ChatState): void {
    const wanted = new Map<string, Wanted>();
    const turn = state.activeTurn;
    for (const open of openInteractions(state)) {
      this.#visits++;
      if (open.kind === 'input') wanted.set(`input:${open.request.id}`, { input: open.request });
      else wanted.set(`tool:${open.toolCall.toolCallId}`, { tool: open.toolCall });
    }
    const existing = this.#byChat.get(chat);
    if (existing) {
      for (const [key, it] of [...existing]) {
        this.#visits++;
        this.#reconcileExisting(it, wanted.get(key), state);
      }
    }
    if (!turn) return;
    for (const [key, w] of wanted) if (!this.#byChat.get(chat)?.has(key)) this.#open(session, chat, turn.id, key, w);
  }

  /**
   * After a commit that changed one tool call or input request only (`interactionIdOf`): just its
   * interaction, so a burst of permission requests costs linear time, not every one per commit.
   */
  #reconcileOne(session: string, chat: string, state: ChatState, key: string): void {
    this.#visits++;
    const turn = state.activeTurn;
    const w = turn ? wantedOf(turn.responseParts, key) : undefined;
    const it = this.#byChat.get(chat)?.get(key);
    if (it) this.#reconcileExisting(it, w, state);
    if (turn && w && !this.#byChat.get(chat)?.has(key)) this.#open(session, chat, turn.id, key, w);
  }

  #reconcileExisting(it: Interaction, w: Wanted | undefined, state: ChatState): void {
    if (!w || it.turnId !== state.activeTurn?.id) this.#resolve(it, it.claimed ?? deriveOutcome(it, state));
    else if (w.input?.questions) it.questions = w.input.questions;
  }

  #open(session: string, chat: string, turnId: string, key: string, w: Wanted): void {
    const it = w.input ? questionInteraction(this.#freshRequestId(session, w.input.id), session, chat, turnId, key, w.input) : toolInteraction(this.newId(), session, chat, turnId, key, w.tool!);
    this.#register(it);
    const remembered = it.kind === 'permission' && it.identity !== undefined ? this.#remembered(session, it.identity) : undefined;
    if (remembered) this.#later(() => setImmediate(() => this.#autoAnswer(it, remembered)));
  }

  /** Interactions examined while reconciling, since start (a work counter: tests check it grows linearly). */
  get visits(): number {
    return this.#visits;
  }

  #register(it: Interaction): void {
    let s = this.#bySession.get(it.session);
    if (!s) this.#bySession.set(it.session, (s = new Map()));
    s.set(it.requestId, it);
    let c = this.#byChat.get(it.chat);
    if (!c) this.#byChat.set(it.chat, (c = new Map()));
    c.set(it.key, it);
    this.#resolved.delete(`${it.session}\n${it.requestId}`);
    this.#later(() => {
      it.announced = true;
      this.streams.publish(it.session, { chat: it.chat, turnId: it.turnId, payload: this.requestFrame(it) });
      this.#tell((w) => w.opened(it));
    });
  }

  #resolve(it: Interaction, outcome: PermissionOutcome): void {
    const s = this.#bySession.get(it.session);
    if (s?.get(it.requestId) !== it) return;
    s.delete(it.requestId);
    if (s.size === 0) this.#bySession.delete(it.session);
    const c = this.#byChat.get(it.chat);
    c?.delete(it.key);
    if (c?.size === 0) this.#byChat.delete(it.chat);
    it.claimed = undefined;
    const key = `${it.session}\n${it.requestId}`;
    this.#resolved.delete(key);
    this.#resolved.set(key, { outcome, chat: it.chat, turnId: it.turnId });
    if (this.#resolved.size > RESOLVED_FIFO) this.#resolved.delete(this.#resolved.keys().next().value!);
    this.#publish(it.session, {
      chat: it.chat,
      turnId: it.turnId,
      payload: qwenNotify('permission_resolved', { requestId: it.requestId, sessionId: sessionIdOf(it.session), outcome }),
    });
    this.#later(() => this.#tell((w) => w.resolved(it, outcome)));
  }

  #freshRequestId(session: string, preferred: string | undefined): string {
    const usable = preferred !== undefined && preferred !== '.' && preferred !== '..' && !this.#bySession.get(session)?.has(preferred);
    return usable ? preferred : this.newId();
  }
}
