/**
 * The pending-interaction registry: one per session, fed by chat state through hub events.
 *
 * Every open input request and every tool call in `pending-confirmation` in a chat's active turn
 * is an interaction with a `requestId` (input requests keep their AHP request id unless it is
 * unusable in a URL or already pending in the session; tools always get a fresh id, never the
 * toolCallId), ACP-style options, and for questions the question list by index.
 *
 * Resolution is first-wins because it is decided by the hub: a reply becomes a client action via
 * `hub.submitAs`, which validates and commits synchronously in the single-threaded hub, and this
 * registry reconciles synchronously inside that commit. Whichever surface's action commits first
 * (AHP tab, HTTP reply, auto-approval or auto-denial) resolves the interaction; every later
 * reply finds it gone.
 * Turn end, cancel, truncation and disposal resolve whatever is still pending as `cancelled`.
 *
 * Resolved ids are remembered in a bounded FIFO only to tell late replies apart in the SSE
 * stream (`permission_already_resolved`); callers get the same `false`/404 either way.
 *
 * The registry folds in the hooks' commit phase (so a reply decided right after finds it up to
 * date) but publishes in the delivered phase: the frames a commit causes are held, tagged with
 * its serverSeq, and go to the SSE streams only once that commit is in the log.
 */
import { HeldUntilDurable } from '../hub/held-until-durable.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import { isPartOfKind, type ChatInputQuestion, type ChatInputRequest, type ChatState, type ConfirmationOption, type PendingConfirmationToolCall, type ResponsePart, type ToolCallState } from '../../shared/protocol/state.js';
import { interactionIdOf } from '../../shared/state/status.js';
import { firstPositionOf, inputKey, lastPositionOf, toolKey } from '../../shared/state/part-index.js';
import { APPROVED_TOOLS_META, DENIED_TOOLS_META, findEndedTurn, findOpenInputRequest, isOpenInputRequest, isToolCallDecided, openInteractions, rememberedTools, turnResponseParts } from '../../shared/state/selectors.js';
import { sessionIdOf } from '../../shared/protocol/uris.js';
import type { Principal } from '../auth/auth.js';
import { authorize } from '../auth/authorize.js';
import { STREAMING_ONLY_ACTIONS, type KnownAction } from '../../shared/protocol/actions.js';
import type { CommitEvent, HubPort, TurnEndedEvent } from '../hub/hub-port.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import { acpToolKind, acpUpdatesFor, hubNotify, qwenNotify, qwenQuestion, rawInputOf, sessionUpdate, type PermissionOption, type PermissionOutcome } from '../acp-mapping/index.js';
import { mapIndexedAnswers } from './answers.js';
import { acpOptionKind, permissionOutcome } from '../acp-mapping/index.js';
import type { SessionStreams, TurnEnd } from './event-stream.js';

export const ASK_USER_QUESTION = 'ask_user_question';

export interface Interaction {
  readonly requestId: string;
  readonly session: string;
  readonly chat: string;
  readonly turnId: string;
  /** `input:<ahp request id>` or `tool:<toolCallId>`: its identity inside the chat. */
  readonly key: string;
  readonly kind: 'question' | 'permission';
  readonly inputRequestId?: string;
  questions: readonly ChatInputQuestion[];
  readonly toolCallId?: string;
  readonly toolName: string;
  readonly options: readonly PermissionOption[];
  /** ACP optionId → AHP confirmation option id, for tools that offered their own options. */
  readonly ahpOptions: ReadonlyMap<string, string>;
  /** The ACP `toolCall` announced in `permission_request`. */
  readonly toolCall: Record<string, unknown>;
  /** Set for the duration of a reply's commit so the resolution records the exact option chosen. */
  claimed?: PermissionOutcome | undefined;
  /** Its `permission_request` went out: the commit that opened it is durable. */
  announced?: boolean;
}

export type Lookup = { state: 'pending'; interaction: Interaction } | { state: 'resolved' } | { state: 'unknown' };

/** A validated reply, independent of its wire shape (DataWorks or Qwen). */
export interface Reply {
  readonly outcome: PermissionOutcome;
  /** Answers by canonical question index (already checked for key form and string values). */
  readonly answers?: Readonly<Record<string, string>> | undefined;
}

export type ReplyErrorCode = 'INVALID_OPTION_ID' | 'INVALID_ANSWER_KEY' | 'INVALID_ANSWER' | 'MISSING_REQUIRED_ANSWER' | 'ANSWERS_NOT_EXPECTED' | 'PERMISSION_DENIED' | 'INTERNAL_ERROR';

export type ReplyResult = { kind: 'accepted' } | { kind: 'notAccepted' } | { kind: 'error'; code: ReplyErrorCode; message: string };

/** Resolved ids remembered for `permission_already_resolved` (Qwen keeps 512). */
const RESOLVED_FIFO = 4_096;

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
  /** What commit phases cause (frames, automatic answers) waits here for its commit to be durable. */
  readonly #held = new HeldUntilDurable();
  #unsubscribe: (() => void) | undefined;
  #closed = false;

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
      afterCommit: (e) => this.#held.fold(e.serverSeq, () => this.#onCommit(e)),
      turnEnded: (e) => this.#held.fold(e.commit.serverSeq, () => this.#onTurnEnded(e)),
      afterDurable: (e) => this.#held.release(e.serverSeq),
    });
  }

  stop(): void {
    this.#closed = true;
    this.#unsubscribe?.();
  }

  #publish(session: string, event: Parameters<SessionStreams['publish']>[1]): void {
    this.#held.whenDurable(() => this.streams.publish(session, event));
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
    const refused = authorize(principal, 'answerPermission');
    if (refused) return { kind: 'error', code: 'PERMISSION_DENIED', message: refused.message };
    if (!this.hub.visibleSession(principal, session)) return { kind: 'notAccepted' };
    const found = this.lookup(session, requestId);
    if (found.state !== 'pending') {
      if (found.state === 'resolved') this.#alreadyResolved(session, requestId);
      return { kind: 'notAccepted' };
    }
    const it = found.interaction;
    const built = this.#actionFor(it, reply);
    if ('code' in built) return { kind: 'error', ...built };

    // An alias is recorded as the option it stands for, so every stream reports the offered id.
    const canonical = reply.outcome.outcome === 'selected' ? offeredOption(it.options, reply.outcome.optionId) : undefined;
    it.claimed = canonical ? { outcome: 'selected', optionId: canonical.optionId } : reply.outcome;
    let submitted: ReturnType<HubPort['submitAs']>;
    try {
      // Decided and committed synchronously: the registry has reconciled when this returns.
      submitted = this.hub.submitAs(principal, it.chat, built.action, surface);
    } catch (err) {
      it.claimed = undefined;
      this.logger.warn('permission reply could not be applied', errorFields(err));
      return { kind: 'error', code: 'INTERNAL_ERROR', message: 'the hub cannot apply replies right now' };
    } finally {
      if (this.#bySession.get(session)?.get(requestId) === it) it.claimed = undefined;
    }
    let result: Awaited<ReturnType<HubPort['submitAs']>>;
    try {
      result = await submitted;
    } catch (err) {
      this.logger.warn('permission reply could not be applied', errorFields(err));
      return { kind: 'error', code: 'INTERNAL_ERROR', message: 'the hub cannot apply replies right now' };
    }
    if (!result.ok) {
      this.logger.debug('permission reply not accepted', { requestId, reason: result.message });
      this.#alreadyResolved(session, requestId);
      return { kind: 'notAccepted' };
    }
    if (it.kind === 'permission' && canonical?.kind === 'allow_always') await this.#rememberToolChoice(session, it.toolName, 'approval');
    if (it.kind === 'permission' && canonical?.kind === 'reject_always') await this.#rememberToolChoice(session, it.toolName, 'denial');
    return { kind: 'accepted' };
  }

  /** The AHP client action a reply becomes, or a parameter error. */
  #actionFor(it: Interaction, reply: Reply): { action: WireAction } | { code: ReplyErrorCode; message: string } {
    const answersGiven = reply.answers !== undefined && Object.keys(reply.answers).length > 0;
    if (reply.outcome.outcome === 'cancelled') {
      if (it.kind === 'question') return { action: { type: 'chat/inputCompleted', requestId: it.inputRequestId!, response: 'cancel' } };
      return {
        action: {
          type: 'chat/toolCallConfirmed',
          turnId: it.turnId,
          toolCallId: it.toolCallId!,
          approved: false,
          reason: 'skipped',
          reasonMessage: 'The permission request was cancelled.',
        },
      };
    }
    const optionId = reply.outcome.optionId;
    const option = offeredOption(it.options, optionId);
    if (!option) {
      return { code: 'INVALID_OPTION_ID', message: `option "${optionId}" was not offered for this request; offered: ${it.options.map((o) => o.optionId).join(', ')}` };
    }
    const allow = option.kind === 'allow_once' || option.kind === 'allow_always';
    if (it.kind === 'permission') {
      if (answersGiven) return { code: 'ANSWERS_NOT_EXPECTED', message: 'Answers are only accepted for ask_user_question requests; omit them for a tool permission' };
      const ahpOption = it.ahpOptions.get(option.optionId);
      const action: WireAction = allow
        ? { type: 'chat/toolCallConfirmed', turnId: it.turnId, toolCallId: it.toolCallId!, approved: true, confirmed: 'user-action' }
        : { type: 'chat/toolCallConfirmed', turnId: it.turnId, toolCallId: it.toolCallId!, approved: false, reason: 'denied' };
      if (ahpOption !== undefined) action['selectedOptionId'] = ahpOption;
      return { action };
    }
    const mapped = mapIndexedAnswers(it.questions, reply.answers ?? {});
    if (!mapped.ok) return { code: mapped.code, message: mapped.message };
    if (allow) {
      const part = this.#openPart(it);
      const merged = { ...(part?.answers ?? {}), ...mapped.answers };
      const missing = it.questions.findIndex((q) => q.required === true && (!Object.hasOwn(merged, q.id) || merged[q.id]?.state !== 'submitted'));
      if (missing !== -1) {
        return { code: 'MISSING_REQUIRED_ANSWER', message: `question ${missing} (${it.questions[missing]!.id}) is required: give Answers["${missing}"]` };
      }
    }
    const action: WireAction = { type: 'chat/inputCompleted', requestId: it.inputRequestId!, response: allow ? 'accept' : 'decline' };
    if (Object.keys(mapped.answers).length > 0) action['answers'] = mapped.answers;
    return { action };
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
  async #rememberToolChoice(session: string, toolName: string, choice: 'approval' | 'denial'): Promise<void> {
    const remembered = this.#remembered(session, toolName);
    if (remembered === choice) return;
    const type = choice === 'approval' ? 'x-session/toolApprovalRemembered' : 'x-session/toolDenialRemembered';
    try {
      await this.hub.dispatchServer(session, { type, toolName });
    } catch (err) {
      this.logger.warn(`could not record the remembered ${choice}`, { toolName, ...errorFields(err) });
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
      void this.hub.submitAs(principal, it.chat, action, 'remembered choice').catch((err: unknown) => this.logger.warn(`${what} failed`, errorFields(err)));
    } catch (err) {
      this.logger.warn(`${what} failed`, errorFields(err));
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
    const it = w.input ? this.#questionInteraction(session, chat, turnId, key, w.input) : this.#toolInteraction(session, chat, turnId, key, w.tool!);
    this.#register(it);
    const remembered = it.kind === 'permission' ? this.#remembered(session, it.toolName) : undefined;
    if (remembered) this.#held.whenDurable(() => setImmediate(() => this.#autoAnswer(it, remembered)));
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
    this.#held.whenDurable(() => {
      it.announced = true;
      this.streams.publish(it.session, { chat: it.chat, turnId: it.turnId, payload: this.requestFrame(it) });
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
  }

  #freshRequestId(session: string, preferred: string | undefined): string {
    const usable = preferred !== undefined && preferred !== '.' && preferred !== '..' && !this.#bySession.get(session)?.has(preferred);
    return usable ? preferred : this.newId();
  }

  #questionInteraction(session: string, chat: string, turnId: string, key: string, request: ChatInputRequest): Interaction {
    const requestId = this.#freshRequestId(session, request.id);
    const questions = request.questions ?? [];
    const qwenQuestions = questions.map(qwenQuestion);
    const rawInput: Record<string, unknown> = { questions: qwenQuestions };
    if (request.message !== undefined) rawInput['message'] = request.message;
    if (request.url !== undefined) rawInput['url'] = request.url;
    return {
      requestId,
      session,
      chat,
      turnId,
      key,
      kind: 'question',
      inputRequestId: request.id,
      questions,
      toolName: ASK_USER_QUESTION,
      options: [
        { optionId: 'proceed_once', name: 'Submit answers', kind: 'allow_once' },
        { optionId: 'decline', name: 'Decline', kind: 'reject_once' },
      ],
      ahpOptions: new Map(),
      toolCall: {
        toolCallId: request.id,
        title: request.message ?? 'Questions for you',
        kind: 'other',
        status: 'pending',
        toolName: ASK_USER_QUESTION,
        rawInput,
        _meta: { toolName: ASK_USER_QUESTION, qwenInteractionKind: 'user_question', qwenQuestions, 'hub/chat': chat, 'hub/turnId': turnId },
      },
    };
  }

  #toolInteraction(session: string, chat: string, turnId: string, key: string, tool: PendingConfirmationToolCall): Interaction {
    const { options, ahpOptions } = toolOptions(tool.options);
    const toolCall: Record<string, unknown> = {
      toolCallId: tool.toolCallId,
      title: tool.confirmationTitle ?? tool.displayName,
      kind: acpToolKind(tool.toolName),
      status: 'pending',
      toolName: tool.toolName,
      _meta: { toolName: tool.toolName, 'hub/chat': chat, 'hub/turnId': turnId },
    };
    if (tool.toolInput !== undefined) toolCall['rawInput'] = rawInputOf(tool.toolInput);
    if (tool.invocationMessage) toolCall['content'] = [{ type: 'content', content: { type: 'text', text: tool.invocationMessage } }];
    return {
      requestId: this.newId(),
      session,
      chat,
      turnId,
      key,
      kind: 'permission',
      questions: [],
      toolCallId: tool.toolCallId,
      toolName: tool.toolName,
      options,
      ahpOptions,
      toolCall,
    };
  }
}

/**
 * ACP options for a tool. AHP options (`approve`/`deny`) keep their ids and labels and map to
 * `allow_once` / `reject_once`; `allow_always` and `reject_always` (and `allow_once` / `reject_once`
 * when the tool brought none of that kind) are added with ids that do not collide with the tool's own.
 */
/** What an open interaction is made from: its input request or its tool call waiting for confirmation. */
interface Wanted {
  readonly input?: ChatInputRequest;
  readonly tool?: PendingConfirmationToolCall;
}

/** The open interaction `key` (`input:<id>` / `tool:<id>`) among a turn's parts, newest first. */
function wantedOf(parts: readonly ResponsePart[], key: string): Wanted | undefined {
  const id = key.slice(key.indexOf(':') + 1);
  const tool = key.startsWith('tool:');
  const part = parts[lastPositionOf(parts, tool ? toolKey(id) : inputKey(id))];
  if (part && isPartOfKind(part, 'toolCall')) return part.toolCall.status === 'pending-confirmation' ? { tool: part.toolCall } : undefined;
  if (part && isOpenInputRequest(part)) return { input: part.request };
  return undefined;
}

export function toolOptions(ahp: readonly ConfirmationOption[] | undefined): { options: PermissionOption[]; ahpOptions: Map<string, string> } {
  const options: PermissionOption[] = [];
  const ahpOptions = new Map<string, string>();
  for (const o of ahp ?? []) {
    // An option relayed from an ACP agent keeps the agent's own kind (allow_always…).
    options.push({ optionId: o.id, name: o.label, kind: acpOptionKind(o) });
    ahpOptions.set(o.id, o.id);
  }
  const taken = new Set(options.map((o) => o.optionId));
  const add = (id: string, name: string, kind: PermissionOption['kind']): void => {
    let optionId = id;
    for (let i = 2; taken.has(optionId); i++) optionId = `${id}_${i}`;
    taken.add(optionId);
    options.push({ optionId, name, kind });
  };
  const has = (kind: PermissionOption['kind']): boolean => options.some((o) => o.kind === kind);
  if (!has('allow_once')) add('proceed_once', 'Allow', 'allow_once');
  if (!has('allow_always')) add('proceed_always', 'Always allow this tool in this session', 'allow_always');
  if (!has('reject_once')) add('reject_once', 'Reject', 'reject_once');
  if (!has('reject_always')) add('reject_always', 'Always deny this tool in this session', 'reject_always');
  return { options, ahpOptions };
}

/** How an interaction ended, read from the chat state after it stopped being pending. */
function deriveOutcome(it: Interaction, state: ChatState): PermissionOutcome {
  const parts = turnResponseParts(state, it.turnId);
  const allowOnce = it.options.find((o) => o.kind === 'allow_once')!.optionId;
  const rejectOnce = it.options.find((o) => o.kind === 'reject_once')!.optionId;
  if (it.kind === 'question') {
    const part = it.inputRequestId === undefined ? undefined : parts[firstPositionOf(parts, inputKey(it.inputRequestId))];
    const response = part && isPartOfKind(part, 'inputRequest') ? part.response : undefined;
    if (response === 'accept') return { outcome: 'selected', optionId: allowOnce };
    if (response === 'decline') return { outcome: 'selected', optionId: rejectOnce };
    return { outcome: 'cancelled' };
  }
  const last = it.toolCallId === undefined ? undefined : parts[lastPositionOf(parts, toolKey(it.toolCallId))];
  const tool: ToolCallState | undefined = last && isPartOfKind(last, 'toolCall') ? last.toolCall : undefined;
  if (!tool || !isToolCallDecided(tool)) return { outcome: 'cancelled' };
  const selected = 'selectedOption' in tool ? (tool.selectedOption as ConfirmationOption | undefined) : undefined;
  // Only the tool's own options count as selected (`toolOptions` gives each its id unchanged and
  // always adds allow_once, allow_always, reject_once and reject_always, so a fallback exists).
  const selectedOption = selected && it.ahpOptions.has(selected.id) ? selected : undefined;
  return permissionOutcome(it.options, { ...(tool as Parameters<typeof permissionOutcome>[1]), selectedOption });
}

/**
 * qwen serve's own option ids, accepted for the option of the same kind offered here: its
 * "always allow" scopes (project / user) are this session's `allow_always`, its `cancel`
 * option is a rejection (the tool is not run; `cancelled` as an outcome stays a skip).
 */
const QWEN_OPTION_ALIASES: Readonly<Record<string, PermissionOption['kind']>> = {
  proceed_always_project: 'allow_always',
  proceed_always_user: 'allow_always',
  cancel: 'reject_once',
};

/** The offered option with that id, else the offered option a qwen alias stands for. */
export function offeredOption(options: readonly PermissionOption[], optionId: string): PermissionOption | undefined {
  const exact = options.find((o) => o.optionId === optionId);
  if (exact) return exact;
  const kind = Object.hasOwn(QWEN_OPTION_ALIASES, optionId) ? QWEN_OPTION_ALIASES[optionId] : undefined;
  return kind === undefined ? undefined : options.find((o) => o.kind === kind);
}

/**
 * Stop reason of a turn that just stopped being active:
 * `chat/turnComplete` → `end_turn`; `chat/turnCancelled`, `chat/truncated`, disposal → `cancelled`;
 * `chat/error` with `errorType: "refusal"` → `refusal`; any other `chat/error` → `error` (prompt
 * streams end with a JSON-RPC error for it).
 */
function turnEndOf(action: KnownAction | undefined, turnId: string, state: ChatState): TurnEnd {
  switch (action?.type) {
    case 'chat/turnComplete':
      return { stopReason: 'end_turn' };
    case 'chat/error': {
      const info = action.error ?? findEndedTurn(state, turnId)?.error;
      const errorType = info?.errorType ?? 'error';
      if (errorType === 'refusal') return { stopReason: 'refusal' };
      return { stopReason: 'error', error: { errorType, message: info?.message ?? 'The turn failed.' } };
    }
    default:
      return { stopReason: 'cancelled' };
  }
}
