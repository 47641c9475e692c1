/**
 * The steering input engine: one in-memory input book per session (durability `memory`).
 *
 * Target = `{historyEpoch, turnId}` of the active turn of the session's default chat (null when
 * idle). `historyEpoch` is a fresh random id per session per process (so a restart changes it)
 * and is replaced when that chat is truncated (explicit history replacement); nothing else
 * changes it.
 *
 * Life of an input: `submit` → `accepted` (ordinal = acceptance order in the turn, revision 1),
 * mirrored to every AHP subscriber as a pending steering message (`chat/steeringMessageSet`).
 * At the agent's next safe barrier (`consumeAtBarrier`) every accepted input of that turn becomes
 * `consumed`: its steering message is removed and a `userMessage` response part carrying an AHP
 * user `Message` is appended to the active turn. When the turn completes or errors first, the
 * remaining inputs become `closed`; when it is cancelled (or a client removes the pending steering
 * message) they become `cancelled` — each with a `reason`. Receipts are kept for the current turn
 * and the last ended turn only. A remote agent (no in-process barrier) consumes an input by
 * dispatching the same `userMessage` part with `_meta['hub/userInput'].inputId`.
 */
import { HeldUntilDurable } from '../hub/held-until-durable.js';
import { createHash, randomUUID } from 'node:crypto';
import type { WireAction } from '../../shared/protocol/messages.js';
import { USER_INPUT_META, USER_MESSAGE_PART } from '../../shared/protocol/steering.js';
import { acceptedUserInputs, consumedUserInputs, userInputMeta, userMessagePartInputId } from '../../shared/state/selectors.js';
import { sessionIdOf } from '../../shared/protocol/uris.js';
import type { SteeringInput } from '../agents/agent.js';
import type { SteeringPort } from '../agents/agent-runner.js';
import type { CommitEvent, HubHooks, HubPort, TurnEndReason, TurnEndedEvent } from '../hub/hub-port.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import {
  DEFAULT_TURN_QUOTA,
  INPUT_PROTOCOL_VERSION,
  InputError,
  MAX_BLOCKS,
  MAX_INPUT_ID_LENGTH,
  MAX_INPUT_TEXT_LENGTH,
  type InputReceipt,
  type InputSource,
  type InputTarget,
  type ReceiptState,
  type SubmitRequest,
} from './inputs.js';

export interface SteeringOptions {
  /** Most inputs accepted per turn (retries of an accepted id do not count). Default 32. */
  readonly quotaPerTurn?: number;
  /**
   * Cluster mode (a shared log): every process folds every steering action into its book, so
   * receipts, ordinals and the quota are the cluster's, and `historyEpoch` is derived from the
   * session (the same on every node, across restarts) instead of being random per process.
   */
  readonly shared?: boolean;
}


/** The receipt state and reason the still-accepted inputs of a turn get when the turn ends. */
const TURN_END_RECEIPTS: Readonly<Record<TurnEndReason, readonly ['closed' | 'cancelled', string]>> = {
  completed: ['closed', 'turn_completed'],
  failed: ['closed', 'turn_failed'],
  cancelled: ['cancelled', 'turn_cancelled'],
  truncated: ['closed', 'history_replaced'],
  other: ['closed', 'turn_ended'],
};

/** The id of the steering message an accepted input is shown as (one per input id). */
const steeringIdOf = (inputId: string): string => `hub-input:${inputId}`;

/** A fresh receipt: accepted at `at`, first revision, held in memory. */
function acceptedReceipt(session: string, turn: TurnBook, inputId: string, ordinal: number, source: InputSource, at: string): InputReceipt {
  return {
    inputId,
    sessionId: sessionIdOf(session),
    historyEpoch: turn.historyEpoch,
    turnId: turn.turnId,
    ordinal,
    revision: 1,
    source,
    state: 'accepted',
    durability: 'memory',
    acceptedAt: at,
    updatedAt: at,
  };
}

interface Entry {
  receipt: InputReceipt;
  readonly text: string;
  readonly steeringId: string;
}

interface TurnBook {
  readonly historyEpoch: string;
  readonly turnId: string;
  readonly chat: string;
  readonly entries: Map<string, Entry>;
  accepted: number;
  open: boolean;
  endReason?: string;
}

interface SessionBook {
  readonly session: string;
  historyEpoch: string;
  current: TurnBook | undefined;
  lastEnded: TurnBook | undefined;
}

export interface InputCapabilities {
  readonly version: number;
  readonly sessionId: string;
  readonly content: readonly string[];
  readonly blockTypes: readonly string[];
  readonly ack: readonly string[];
  readonly defaultAck: 'memory';
  readonly durableAck: false;
  readonly image: false;
  readonly durability: 'memory';
  readonly target: InputTarget | null;
  readonly retention: {
    readonly turns: readonly string[];
    readonly current: InputTarget | null;
    readonly lastEnded: InputTarget | null;
  };
  readonly quotaPerTurn: number;
  readonly limits: { readonly inputIdLength: number; readonly textLength: number; readonly blocks: number };
  /** Why there is no target although a turn may be running: the session's agent cannot take input mid-turn. */
  readonly targetUnavailable?: SteeringUnavailable;
}

/** A session whose agent has no channel for mid-turn input (`code` is stable, `message` readable). */
export interface SteeringUnavailable {
  readonly code: string;
  readonly message: string;
}

export type SubmitResult = { readonly outcome: 'accepted'; readonly receipt: InputReceipt; readonly duplicate: boolean };

export class SteeringEngine implements SteeringPort {
  readonly quotaPerTurn: number;
  readonly #shared: boolean;
  readonly #books = new Map<string, SessionBook>();
  /** Follow-up dispatches commit phases cause wait here for their commit to be durable. */
  readonly #held = new HeldUntilDurable();
  #unavailable: (session: string) => SteeringUnavailable | undefined = () => undefined;

  constructor(
    private readonly hub: HubPort,
    private readonly logger: Logger,
    private readonly now: () => number,
    options: SteeringOptions = {},
  ) {
    this.quotaPerTurn = options.quotaPerTurn ?? DEFAULT_TURN_QUOTA;
    this.#shared = options.shared ?? hub.sharesLog;
  }

  /** Single node: fresh per process and per history replacement. Cluster: one per session, the same on every node. */
  #newEpoch(session: string): string {
    return this.#shared ? `epoch-${createHash('sha256').update(session).digest('hex').slice(0, 32)}` : newEpoch();
  }

  /** Installed by the feature: asks the agent runner whether a session's agent can take input mid-turn. */
  setAvailability(check: (session: string) => SteeringUnavailable | undefined): void {
    this.#unavailable = check;
  }

  // ─── Queries ────────────────────────────────────────────────────────────────

  /** The session's default chat and its active turn id (undefined when idle). */
  #live(session: string): { chat: string | undefined; turnId: string | undefined } {
    // The catalogue's view, never the raw `defaultChat` field: that one came from an action.
    const chat = this.hub.defaultChatOf(session);
    const turnId = chat ? this.hub.chatEntry(chat)?.state.activeTurn?.id : undefined;
    return { chat, turnId };
  }

  #book(session: string): SessionBook {
    let book = this.#books.get(session);
    if (!book) {
      book = { session, historyEpoch: this.#newEpoch(session), current: undefined, lastEnded: undefined };
      this.#books.set(session, book);
    }
    // Catch up with a turn that started before this book existed.
    const { chat, turnId } = this.#live(session);
    if (chat && turnId && !(book.current && book.current.turnId === turnId && book.current.chat === chat)) this.#startTurn(book, chat, turnId);
    else if (book.current && !turnId) this.#endTurn(book, book.current, 'closed', 'turn_ended', true);
    return book;
  }

  target(session: string): InputTarget | null {
    const book = this.#book(session);
    // The hub never accepts an input it cannot deliver.
    if (this.#unavailable(session)) return null;
    const current = book.current;
    return current && current.open && current.historyEpoch === book.historyEpoch ? { historyEpoch: current.historyEpoch, turnId: current.turnId } : null;
  }

  capabilities(session: string): InputCapabilities {
    const book = this.#book(session);
    const target = this.target(session);
    const unavailable = this.#unavailable(session);
    const ref = (t: TurnBook | undefined): InputTarget | null => (t ? { historyEpoch: t.historyEpoch, turnId: t.turnId } : null);
    return {
      version: INPUT_PROTOCOL_VERSION,
      sessionId: sessionIdOf(session),
      content: ['text', 'blocks'],
      blockTypes: ['text'],
      ack: ['memory'],
      defaultAck: 'memory',
      durableAck: false,
      image: false,
      durability: 'memory',
      target,
      retention: { turns: ['current', 'lastEnded'], current: ref(book.current), lastEnded: ref(book.lastEnded) },
      quotaPerTurn: this.quotaPerTurn,
      limits: { inputIdLength: MAX_INPUT_ID_LENGTH, textLength: MAX_INPUT_TEXT_LENGTH, blocks: MAX_BLOCKS },
      ...(unavailable && { targetUnavailable: unavailable }),
    };
  }

  /** The retained receipt for `(inputId, target)`, or undefined (outside the window / never seen). Never changes anything. */
  status(session: string, inputId: string, target: InputTarget): InputReceipt | undefined {
    return this.#find(this.#book(session), target)?.entries.get(inputId)?.receipt;
  }

  #find(book: SessionBook, target: InputTarget): TurnBook | undefined {
    for (const t of [book.current, book.lastEnded]) {
      if (t && t.historyEpoch === target.historyEpoch && t.turnId === target.turnId) return t;
    }
    return undefined;
  }

  // ─── Submit ─────────────────────────────────────────────────────────────────

  /**
   * Accepts an input into the target turn, or returns the original receipt of an identical
   * retry (whatever its state now). Throws InputError: 409 `input_conflict` (same id, other
   * text), 409 `turn_closed` (closed or stale target; never redirected), 429 `input_quota_exceeded`.
   */
  submit(session: string, request: SubmitRequest, source: InputSource): SubmitResult {
    const book = this.#book(session);
    const turn = this.#find(book, request.target);
    const existing = turn?.entries.get(request.inputId);
    if (existing) {
      if (existing.text !== request.text) {
        throw new InputError(409, 'rejected', 'input_conflict', `input ${request.inputId} was already submitted to this turn with different text; use a new inputId for new text`, {
          receipt: existing.receipt,
        });
      }
      return { outcome: 'accepted', receipt: existing.receipt, duplicate: true };
    }
    const unavailable = this.#unavailable(session);
    if (unavailable) throw new InputError(422, 'rejected', 'steering_unavailable', unavailable.message, { reason: unavailable.code });
    const { chat, turnId } = this.#live(session);
    if (!turn || !turn.open || request.target.historyEpoch !== book.historyEpoch || turnId !== turn.turnId || chat !== turn.chat) {
      const why =
        request.target.historyEpoch !== book.historyEpoch
          ? 'stale_history_epoch'
          : turnId === undefined
            ? 'no_active_turn'
            : 'turn_not_active';
      throw new InputError(409, 'closed', 'turn_closed', `the target turn ${request.target.turnId} is not open for input (${why}); it is never redirected to another turn`, {
        reason: why,
      });
    }
    if (turn.accepted >= this.quotaPerTurn) {
      throw new InputError(429, 'rejected', 'input_quota_exceeded', `at most ${this.quotaPerTurn} inputs may be added to one turn`, { quotaPerTurn: this.quotaPerTurn });
    }
    turn.accepted++;
    const receipt = acceptedReceipt(session, turn, request.inputId, turn.accepted, source, new Date(this.now()).toISOString());
    const entry: Entry = { receipt, text: request.text, steeringId: steeringIdOf(request.inputId) };
    turn.entries.set(request.inputId, entry);
    this.#dispatch(turn.chat, {
      type: 'chat/steeringMessageSet',
      steeringMessage: { id: entry.steeringId, message: this.#userMessage(entry) },
    });
    return { outcome: 'accepted', receipt, duplicate: false };
  }

  #userMessage(entry: Entry): Record<string, unknown> {
    const r = entry.receipt;
    return {
      text: entry.text,
      origin: { kind: 'user' },
      _meta: { [USER_INPUT_META]: { inputId: r.inputId, ordinal: r.ordinal, historyEpoch: r.historyEpoch, turnId: r.turnId, source: r.source, acceptedAt: r.acceptedAt } },
    };
  }

  // ─── Barrier ────────────────────────────────────────────────────────────────

  /**
   * Called by the agent between steps. Everything here up to the dispatches runs synchronously,
   * so the turn cannot end between the check and the commits: the inputs are consumed and
   * appear in the transcript together, or stay accepted.
   */
  async consumeAtBarrier(target: { session: string; chat: string; turnId: string }, only?: readonly string[]): Promise<readonly SteeringInput[]> {
    if (this.hub.chatEntry(target.chat)?.state.activeTurn?.id !== target.turnId) return [];
    const foreign = this.#consumeForeign(target);
    const book = this.#books.get(target.session);
    const turn = book?.current;
    if (!book || !turn || !turn.open || turn.turnId !== target.turnId || turn.chat !== target.chat) return this.#settle(foreign);
    // `only`: an agent that consumes inputs itself (an ACP agent's mid-turn channel) names the ones it took.
    const ready = [...turn.entries.values()]
      .filter((e) => e.receipt.state === 'accepted' && (only === undefined || only.includes(e.receipt.inputId)))
      .sort((a, b) => a.receipt.ordinal - b.receipt.ordinal);
    if (ready.length === 0) return this.#settle(foreign);
    const pending: Array<Promise<unknown>> = [...foreign.pending];
    for (const entry of ready) {
      this.#transition(entry, 'consumed', undefined);
      pending.push(
        this.#dispatchAwait(turn.chat, {
          type: 'chat/responsePart',
          turnId: turn.turnId,
          part: { kind: USER_MESSAGE_PART, id: `user-input-${entry.receipt.ordinal}-${randomUUID()}`, message: this.#userMessage(entry) },
        }),
        this.#dispatchAwait(turn.chat, { type: 'chat/steeringMessageRemoved', id: entry.steeringId }),
      );
    }
    await Promise.all(pending);
    return [...foreign.inputs, ...ready.map((e) => ({ inputId: e.receipt.inputId, text: e.text }))];
  }

  /**
   * Cluster mode: inputs another hub process accepted for this turn are in the chat state as
   * steering messages carrying `hub/userInput` metadata, but not in this process's book. The
   * barrier consumes them the way a remote agent does — the `userMessage` part naming the input —
   * and takes the steering message down itself (the accepting process may be gone); every
   * process, seeing that part in the log, marks its receipt consumed. (With every process folding
   * every acceptance into its book, this path only serves messages no book holds.)
   */
  #consumeForeign(target: { chat: string; turnId: string }): { inputs: SteeringInput[]; pending: Array<Promise<unknown>> } {
    const mine = new Set<string>();
    for (const entry of this.#books.get(this.hub.chatEntry(target.chat)?.session ?? '')?.current?.entries.values() ?? []) mine.add(entry.steeringId);
    // Already consumed here (its part is in the turn) but not yet removed by the accepting process.
    const state = this.hub.chatEntry(target.chat)?.state;
    for (const consumed of state ? consumedUserInputs(state) : []) mine.add(steeringIdOf(consumed.inputId));
    const inputs: SteeringInput[] = [];
    const pending: Array<Promise<unknown>> = [];
    const waiting = (state ? acceptedUserInputs(state) : [])
      .filter(({ steering, meta }) => !mine.has(steering.id) && meta.turnId === target.turnId)
      .sort((a, b) => Number(a.meta.ordinal ?? 0) - Number(b.meta.ordinal ?? 0));
    for (const { inputId, meta, steering } of waiting) {
      inputs.push({ inputId, text: steering.message.text });
      pending.push(this.#dispatchAwait(target.chat, {
        type: 'chat/responsePart',
        turnId: target.turnId,
        part: { kind: USER_MESSAGE_PART, id: `user-input-${String(meta.ordinal)}-${randomUUID()}`, message: steering.message },
      }), this.#dispatchAwait(target.chat, { type: 'chat/steeringMessageRemoved', id: steering.id }));
    }
    return { inputs, pending };
  }

  async #settle(foreign: { inputs: SteeringInput[]; pending: Array<Promise<unknown>> }): Promise<readonly SteeringInput[]> {
    await Promise.all(foreign.pending);
    return foreign.inputs;
  }

  // ─── Hub events ─────────────────────────────────────────────────────────────

  /** What the feature registers on the hub for the engine (`hub.hook('steering', engine.hooks)`). */
  readonly hooks: HubHooks = {
    sessionDisposed: (e) => {
      this.#books.delete(e.session);
    },
    chatDisposed: (e) => {
      const book = this.#books.get(e.session);
      if (book?.current?.chat === e.chat) this.#endTurn(book, book.current, 'closed', 'chat_disposed', false);
    },
    afterCommit: (e) => this.#held.fold(e.serverSeq, () => this.#onCommit(e)),
    turnEnded: (e) => this.#held.fold(e.commit.serverSeq, () => this.#onTurnEnded(e)),
    afterDurable: (e) => this.#held.release(e.serverSeq),
  };

  #onCommit(e: CommitEvent): void {
    const { channel, known: action, origin } = e;
    if (!action) return;
    // Cluster mode: what another process sequenced is folded here too, but its follow-up actions
    // (removing steering messages) are that process's to dispatch, so they are not sent twice.
    const sequencedHere = !e.remote;
    const chat = this.hub.chatEntry(channel);
    if (!chat) return;
    const book = this.#books.get(chat.session);
    const isDefault = this.hub.defaultChatOf(chat.session) === channel;
    // Only the hub's own steering messages (no client origin) are inputs: a client could dispatch
    // a steering message carrying `hub/userInput` itself.
    if (action.type === 'chat/steeringMessageSet' && this.#shared && e.remote && origin === undefined) {
      this.#foldAccepted(channel, action.steeringMessage);
      return;
    }
    if (action.type === 'chat/steeringMessageRemoved' && book) {
      // A client took the pending input back (AHP: removing a steering message cancels it).
      const id = action.id;
      for (const t of [book.current, book.lastEnded]) {
        for (const entry of t?.entries.values() ?? []) {
          if (entry.steeringId === id && entry.receipt.state === 'accepted' && t?.chat === channel) {
            this.#transition(entry, 'cancelled', origin ? 'removed_by_client' : 'removed');
          }
        }
      }
      return;
    }
    if (action.type === 'chat/responsePart' && book) {
      // A remote agent (which has no barrier in this process) consumes an input by appending the
      // same `userMessage` part the in-process barrier appends, naming the input in `_meta`.
      const inputId = userMessagePartInputId(action.part);
      const turn = book.current;
      const entry = inputId !== undefined && turn?.open && turn.chat === channel && turn.turnId === action.turnId ? turn.entries.get(inputId) : undefined;
      if (entry && turn && entry.receipt.state === 'accepted') {
        this.#transition(entry, 'consumed', undefined);
        if (sequencedHere) this.#dispatch(turn.chat, { type: 'chat/steeringMessageRemoved', id: entry.steeringId });
      }
      return;
    }
    if (!isDefault) return;
    if (action.type === 'chat/truncated') {
      if (!book) return; // a book created later gets a fresh epoch anyway
      if (book.current?.open) this.#endTurn(book, book.current, 'closed', 'history_replaced', sequencedHere);
      if (!this.#shared) book.historyEpoch = this.#newEpoch(book.session);
      return;
    }
    if (!book) return;
    const current = book.current;
    if (action.type === 'chat/turnStarted' || action.type === 'chat/turnResume') {
      const turnId = action.turnId;
      if (chat.state.activeTurn?.id === turnId && !(current?.open && current.turnId === turnId && current.chat === channel)) {
        if (current?.open) this.#endTurn(book, current, 'closed', 'turn_replaced', sequencedHere);
        this.#startTurn(book, channel, turnId);
      }
      return;
    }
  }

  /**
   * The hub derived that a chat's active turn ended (after every owner's `afterCommit`): the
   * default chat's open turn closes with its inputs. A truncation or a replacing turn already
   * closed it in `#onCommit`, with its own reason.
   */
  #onTurnEnded(e: TurnEndedEvent): void {
    const book = this.#books.get(e.session);
    const current = book?.current;
    if (!book || !current?.open || current.chat !== e.chat || current.turnId !== e.turnId) return;
    if (this.hub.defaultChatOf(e.session) !== e.chat) return;
    const [state, reason] = TURN_END_RECEIPTS[e.reason];
    // Cluster mode: the follow-up removals belong to the process that sequenced the ending commit.
    this.#endTurn(book, current, state, reason, !e.commit.remote);
  }

  /**
   * Cluster mode: an input another process accepted (its pending steering message, carrying the
   * receipt's facts in `hub/userInput`) joins this process's book, so ordinals, the quota,
   * retries and status answers are the cluster's. The accepting process decided it under the
   * write turn, after folding every earlier acceptance, so ordinals never repeat.
   */
  #foldAccepted(chat: string, message: { id?: unknown; message?: { text?: unknown; _meta?: Record<string, unknown> } } | undefined): void {
    const meta = userInputMeta(message?.message);
    const session = this.hub.chatEntry(chat)?.session;
    if (!meta || !session || typeof message?.id !== 'string' || typeof message.message?.text !== 'string') return;
    const book = this.#book(session);
    const turn = book.current;
    const { inputId, ordinal, historyEpoch, turnId, source, acceptedAt } = meta;
    if (!turn || turn.chat !== chat || turn.turnId !== turnId || turn.historyEpoch !== historyEpoch) return;
    if (typeof inputId !== 'string' || inputId.length > MAX_INPUT_ID_LENGTH || message.id !== steeringIdOf(inputId) || turn.entries.has(inputId)) return;
    // Every process enforces the same quota, so an entry beyond it cannot be one of the hub's.
    if (!Number.isSafeInteger(ordinal) || (ordinal as number) < 1 || (ordinal as number) > this.quotaPerTurn || turn.entries.size >= this.quotaPerTurn) return;
    const at = typeof acceptedAt === 'string' ? acceptedAt : new Date(this.now()).toISOString();
    const receipt = acceptedReceipt(session, turn, inputId, ordinal as number, source === 'ws' ? 'ws' : 'http', at);
    turn.entries.set(inputId, { receipt, text: message.message.text, steeringId: message.id });
    turn.accepted = Math.max(turn.accepted, ordinal as number);
  }

  #startTurn(book: SessionBook, chat: string, turnId: string): void {
    const ended = book.lastEnded;
    if (!book.current && ended && ended.turnId === turnId && ended.chat === chat && ended.historyEpoch === book.historyEpoch) {
      // `chat/turnResume` reopens the same turn: its receipts (and ordinals) carry on.
      ended.open = true;
      delete ended.endReason;
      book.current = ended;
      book.lastEnded = undefined;
      return;
    }
    const previous = book.current;
    if (previous) {
      if (previous.open) this.#endTurn(book, previous, 'closed', 'turn_replaced', true);
      book.lastEnded = previous;
    }
    book.current = { historyEpoch: book.historyEpoch, turnId, chat, entries: new Map(), accepted: 0, open: true };
    if (this.#shared) this.#seedFromState(book.current);
  }

  /**
   * Cluster mode: a process that starts (or first looks at a session) while the turn runs learns
   * its inputs from the chat state every process folds: pending steering messages are accepted
   * inputs, `userMessage` parts in the turn are consumed ones. (Inputs that were closed or
   * cancelled before this process started are not in the state; they answer 404.)
   */
  #seedFromState(turn: TurnBook): void {
    const state = this.hub.chatEntry(turn.chat)?.state;
    if (state?.activeTurn?.id !== turn.turnId) return;
    for (const m of state.steeringMessages ?? []) {
      this.#foldAccepted(turn.chat, m as never);
    }
    for (const { inputId, message } of consumedUserInputs(state)) {
      if (turn.entries.has(inputId)) continue;
      this.#foldAccepted(turn.chat, { id: steeringIdOf(inputId), message: message as { text?: unknown; _meta?: Record<string, unknown> } | undefined });
      const entry = turn.entries.get(inputId);
      if (entry) this.#transition(entry, 'consumed', undefined);
    }
  }

  /** Ends a turn's window: remaining accepted inputs become closed/cancelled and leave the steering list. */
  #endTurn(book: SessionBook, turn: TurnBook, state: 'closed' | 'cancelled', reason: string, removeMessages: boolean): void {
    turn.open = false;
    turn.endReason = reason;
    for (const entry of turn.entries.values()) {
      if (entry.receipt.state !== 'accepted') continue;
      this.#transition(entry, state, reason);
      if (removeMessages) this.#dispatch(turn.chat, { type: 'chat/steeringMessageRemoved', id: entry.steeringId });
    }
    if (book.current === turn) {
      book.current = undefined;
      book.lastEnded = turn;
    }
  }

  #transition(entry: Entry, state: ReceiptState, reason: string | undefined): void {
    const r = entry.receipt;
    const next: InputReceipt = { ...r, state, revision: r.revision + 1, updatedAt: new Date(this.now()).toISOString() };
    entry.receipt = reason === undefined ? next : { ...next, reason };
  }

  /** Dispatches now, or (from a commit phase) once the commit being folded is durable. */
  #dispatch(chat: string, action: WireAction): void {
    // The book changed in the commit phase already; the dispatch waits for that commit.
    this.#held.whenDurable(() => void this.#dispatchAwait(chat, action));
  }

  #dispatchAwait(chat: string, action: WireAction): Promise<unknown> {
    if (!this.hub.chatEntry(chat)) return Promise.resolve();
    return this.hub.dispatchServer(chat, action).catch((err: unknown) => this.logger.debug('steering action not applied', { type: action.type, ...errorFields(err) }));
  }
}

function newEpoch(): string {
  return `epoch-${randomUUID()}`;
}
