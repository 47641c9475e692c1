/**
 * The steering input engine: the hub adapter around the receipt book.
 *
 * The book itself (receipt table and transitions) is a pure fold over the log,
 * `shared/state/input-receipts.ts`, kept beside each session's state by `HubState` — so it is
 * rebuilt by recovery, is part of the snapshot image, and is the same on every cluster node
 * (durability `log`; docs/continuity.md, "Steering receipts"). This adapter decides (submit,
 * barrier), dispatches what a decision causes, reads the book, and takes down pending steering
 * messages whose input is no longer accepted.
 *
 * Target = `{historyEpoch, turnId}` of the active turn of the session's default chat (null when
 * idle). `historyEpoch` comes from the log (the session and its default chat's last truncation),
 * so a restart keeps it and an explicit history replacement changes it.
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
import { randomUUID } from 'node:crypto';
import { ProtocolError } from '../../shared/protocol/errors.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import { USER_INPUT_META, USER_MESSAGE_PART } from '../../shared/protocol/steering.js';
import { acceptedUserInputs } from '../../shared/state/selectors.js';
import { entryOf, historyEpochOf, MAX_RECEIPTS_PER_TURN, receiptOf, steeringIdOf, textDigestOf, turnOf, type InputBook, type TurnReceipts } from '../../shared/state/input-receipts.js';
import { sessionIdOf } from '../../shared/protocol/uris.js';
import type { SteeringInput } from '../agents/agent.js';
import type { SteeringPort } from '../agents/agent-runner.js';
import type { CommitEvent, HubHooks, HubPort } from '../hub/hub-port.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import { DEFAULT_TURN_QUOTA, INPUT_PROTOCOL_VERSION, InputError, MAX_BLOCKS, MAX_INPUT_ID_LENGTH, MAX_INPUT_TEXT_LENGTH, type InputReceipt, type InputSource, type InputTarget, type SubmitRequest } from './inputs.js';
import { dispatchAsHub } from '../hub/entry.js';

export interface SteeringOptions {
  /** Most inputs accepted per turn (retries of an accepted id do not count). Default 32, at most 256. */
  readonly quotaPerTurn?: number;
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
  readonly durability: 'log';
  /** Receipts are folded from the durable log: a receipt id answers the same after a restart of the hub or of every node. */
  readonly durableReceipts: true;
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

const ref = (t: TurnReceipts | undefined): InputTarget | null => (t ? { historyEpoch: t.historyEpoch, turnId: t.turnId } : null);

export class SteeringEngine implements SteeringPort {
  readonly quotaPerTurn: number;
  /** Steering messages whose removal this process has dispatched (or holds) and not yet seen committed. */
  readonly #removing = new Set<string>();
  /** Acceptances dispatched and not yet durable, per `session\nepoch\nturn`: the ordinals they took and their answers. */
  readonly #inFlight = new Map<string, { reserved: number; readonly inputs: Map<string, { readonly digest: string; readonly done: Promise<SubmitResult> }> }>();
  #unavailable: (session: string) => SteeringUnavailable | undefined = () => undefined;

  constructor(
    private readonly hub: HubPort,
    private readonly logger: Logger,
    private readonly now: () => number,
    options: SteeringOptions = {},
  ) {
    this.quotaPerTurn = Math.min(options.quotaPerTurn ?? DEFAULT_TURN_QUOTA, MAX_RECEIPTS_PER_TURN);
  }

  /** Installed by the feature: asks the agent runner whether a session's agent can take input mid-turn. */
  setAvailability(check: (session: string) => SteeringUnavailable | undefined): void {
    this.#unavailable = check;
  }

  // ─── Queries ────────────────────────────────────────────────────────────────

  #book(session: string): InputBook | undefined {
    return this.hub.sessionEntry(session)?.inputs;
  }

  /** The session's default chat and its active turn id (undefined when idle). */
  #live(session: string): { chat: string | undefined; turnId: string | undefined } {
    // The catalogue's view, never the raw `defaultChat` field: that one came from an action.
    const chat = this.hub.defaultChatOf(session);
    const turnId = chat ? this.hub.chatEntry(chat)?.state.activeTurn?.id : undefined;
    return { chat, turnId };
  }

  target(session: string): InputTarget | null {
    // The hub never accepts an input it cannot deliver.
    if (this.#unavailable(session)) return null;
    const { turnId } = this.#live(session);
    return turnId === undefined ? null : { historyEpoch: historyEpochOf(session, this.#book(session)), turnId };
  }

  capabilities(session: string): InputCapabilities {
    const book = this.#book(session);
    const unavailable = this.#unavailable(session);
    return {
      version: INPUT_PROTOCOL_VERSION,
      sessionId: sessionIdOf(session),
      content: ['text', 'blocks'],
      blockTypes: ['text'],
      ack: ['memory'],
      defaultAck: 'memory',
      durableAck: false,
      image: false,
      durability: 'log',
      durableReceipts: true,
      target: this.target(session),
      retention: { turns: ['current', 'lastEnded'], current: ref(book?.current), lastEnded: ref(book?.lastEnded) },
      quotaPerTurn: this.quotaPerTurn,
      limits: { inputIdLength: MAX_INPUT_ID_LENGTH, textLength: MAX_INPUT_TEXT_LENGTH, blocks: MAX_BLOCKS },
      ...(unavailable && { targetUnavailable: unavailable }),
    };
  }

  /** The retained receipt for `(inputId, target)`, or undefined (outside the window / never seen). Never changes anything. */
  status(session: string, inputId: string, target: InputTarget): InputReceipt | undefined {
    return receiptOf(this.#book(session), inputId, target);
  }

  // ─── Submit ─────────────────────────────────────────────────────────────────

  /**
   * Accepts an input into the target turn, or returns the original receipt of an identical
   * retry (whatever its state now). Decided synchronously (cluster mode: the caller holds the
   * write turn); the answer is given once the acceptance is in the log. Throws InputError:
   * 409 `input_conflict` (same id, other text), 409 `turn_closed` (closed or stale target; never
   * redirected), 429 `input_quota_exceeded`, and when the hub cannot record the input 429
   * `input_limit_exceeded` (a state budget) or 503 `storage_unavailable`.
   */
  async submit(session: string, request: SubmitRequest, source: InputSource): Promise<SubmitResult> {
    const book = this.#book(session);
    const turn = turnOf(book, request.target);
    const existing = entryOf(turn, request.inputId);
    const digest = textDigestOf(request.text);
    if (existing) {
      if (existing.textDigest !== digest) throw conflict(request.inputId, existing.receipt);
      return { outcome: 'accepted', receipt: existing.receipt, duplicate: true };
    }
    const key = `${session}\n${request.target.historyEpoch}\n${request.target.turnId}`;
    const flight = this.#inFlight.get(key);
    const racing = flight?.inputs.get(request.inputId);
    if (racing) {
      // The same input is being recorded right now (a retry that overtook the first answer).
      const first = await racing.done.catch(() => undefined);
      if (racing.digest !== digest) throw conflict(request.inputId, first?.receipt);
      if (first) return { ...first, duplicate: true };
    }
    const unavailable = this.#unavailable(session);
    if (unavailable) throw new InputError('steering_unavailable', 'rejected', unavailable.message, { reason: unavailable.code });
    const { chat, turnId } = this.#live(session);
    const epoch = historyEpochOf(session, book);
    if (chat === undefined || request.target.historyEpoch !== epoch || turnId !== request.target.turnId) {
      const why = request.target.historyEpoch !== epoch ? 'stale_history_epoch' : turnId === undefined ? 'no_active_turn' : 'turn_not_active';
      throw new InputError('turn_closed', 'closed', `the target turn ${request.target.turnId} is not open for input (${why}); it is never redirected to another turn`, {
        reason: why,
      });
    }
    const accepted = Math.max(turn?.chat === chat ? turn.accepted : 0, flight?.reserved ?? 0);
    if (accepted >= this.quotaPerTurn) {
      throw new InputError('input_quota_exceeded', 'rejected', `at most ${this.quotaPerTurn} inputs may be added to one turn`, { quotaPerTurn: this.quotaPerTurn });
    }
    const message = {
      text: request.text,
      origin: { kind: 'user' },
      _meta: { [USER_INPUT_META]: { inputId: request.inputId, ordinal: accepted + 1, historyEpoch: epoch, turnId, source, acceptedAt: new Date(this.now()).toISOString() } },
    };
    // Cluster mode: sequencing waits for the write turn once more, so the ordinal is reserved here
    // until the acceptance is folded into the book (on one node it is folded before this returns).
    const committed = dispatchAsHub(this.hub, chat, { type: 'chat/steeringMessageSet', steeringMessage: { id: steeringIdOf(request.inputId), message } });
    const done = committed.then(
      () => {
        const receipt = this.status(session, request.inputId, request.target);
        if (!receipt) throw notRecorded(request.inputId, undefined);
        return { outcome: 'accepted', receipt, duplicate: false } as const;
      },
      (err: unknown) => {
        throw notRecorded(request.inputId, err);
      },
    );
    const pending = flight ?? { reserved: 0, inputs: new Map() };
    pending.reserved = accepted + 1;
    pending.inputs.set(request.inputId, { digest, done });
    this.#inFlight.set(key, pending);
    try {
      return await done;
    } finally {
      pending.inputs.delete(request.inputId);
      if (pending.inputs.size === 0 && this.#inFlight.get(key) === pending) this.#inFlight.delete(key);
    }
  }

  // ─── Barrier ────────────────────────────────────────────────────────────────

  /**
   * Called by the agent between steps. From the check to the dispatches everything runs
   * synchronously (cluster mode: under the write turn), so the turn cannot end in between: the
   * inputs are consumed and appear in the transcript together, or stay accepted.
   */
  async consumeAtBarrier(target: { session: string; chat: string; turnId: string }, only?: readonly string[]): Promise<readonly SteeringInput[]> {
    // Cluster mode: the inputs another node accepted are folded before deciding.
    const writeTurn = this.hub.decisionTurn();
    if (writeTurn) await writeTurn;
    const state = this.hub.chatEntry(target.chat)?.state;
    const turn = this.#book(target.session)?.current;
    if (!state || state.activeTurn?.id !== target.turnId || !turn || turn.chat !== target.chat || turn.turnId !== target.turnId) return [];
    const pendingMessages = new Map(acceptedUserInputs(state).map((a) => [a.steering.id, a.steering]));
    const consumedAt = new Date(this.now()).toISOString();
    const pending: Array<Promise<unknown>> = [];
    const taken: SteeringInput[] = [];
    // `only`: an agent that consumes inputs itself (an ACP agent's mid-turn channel) names the ones it took.
    for (const entry of turn.entries) {
      const { inputId, ordinal } = entry.receipt;
      const steering = pendingMessages.get(steeringIdOf(inputId));
      if (entry.receipt.state !== 'accepted' || !steering || (only !== undefined && !only.includes(inputId))) continue;
      const meta = { ...(steering.message._meta?.[USER_INPUT_META] as Record<string, unknown>), consumedAt };
      const message = { ...steering.message, _meta: { ...steering.message._meta, [USER_INPUT_META]: meta } };
      // Marked first: the part's own commit phase must not take the message down a second time.
      this.#removing.add(steering.id);
      pending.push(this.#dispatchAwait(target.chat, { type: 'chat/responsePart', turnId: target.turnId, part: { kind: USER_MESSAGE_PART, id: `user-input-${ordinal}-${randomUUID()}`, message } }), this.#remove(target.chat, steering.id));
      taken.push({ inputId, text: steering.message.text });
    }
    await Promise.all(pending);
    // What the book says now: an input whose part the hub refused was not consumed.
    return taken.filter((t) => this.status(target.session, t.inputId, { historyEpoch: turn.historyEpoch, turnId: turn.turnId })?.state === 'consumed');
  }

  // ─── Hub events ─────────────────────────────────────────────────────────────

  /** What the feature registers on the hub for the engine (`hub.hook('steering', engine.hooks)`). */
  readonly hooks: HubHooks = {
    afterCommit: (e) => this.#onCommit(e),
  };

  /**
   * The book already folded the commit (HubState did, as it sequenced it). What remains is the
   * follow-up: a pending steering message whose input is no longer accepted (its turn ended, a
   * remote agent consumed it) is taken down, once the commit is durable. Cluster mode: only by
   * the process that sequenced the commit, so it is not sent twice.
   */
  #onCommit(e: CommitEvent): void {
    if (e.known?.type === 'chat/steeringMessageRemoved') this.#removing.delete(e.known.id);
    if (e.remote) return;
    const chat = this.hub.chatEntry(e.channel);
    if (!chat?.state.steeringMessages?.length) return;
    const book = this.#book(chat.session);
    if (!book) return;
    for (const { inputId, meta, steering } of acceptedUserInputs(chat.state)) {
      if (steering.id !== steeringIdOf(inputId) || this.#removing.has(steering.id)) continue;
      const target = { historyEpoch: String(meta.historyEpoch), turnId: String(meta.turnId) };
      const receipt = receiptOf(book, inputId, target);
      // Not in the book at all: a client's look-alike, or evicted; only the hub's own, settled inputs are taken down.
      if (!receipt || receipt.state === 'accepted') continue;
      this.#removing.add(steering.id);
      e.afterAppend(() => void this.#remove(e.channel, steering.id));
    }
  }

  #dispatchAwait(chat: string, action: WireAction): Promise<boolean> {
    if (!this.hub.chatEntry(chat)) return Promise.resolve(false);
    return dispatchAsHub(this.hub, chat, action).then(
      () => true,
      (err: unknown) => {
        this.logger.debug('steering action not applied', { type: action.type, ...errorFields(err) });
        return false;
      },
    );
  }

  /** Takes a pending steering message down (once per message while the removal is on its way). */
  #remove(chat: string, steeringId: string): Promise<unknown> {
    this.#removing.add(steeringId);
    return this.#dispatchAwait(chat, { type: 'chat/steeringMessageRemoved', id: steeringId }).then((ok) => {
      if (!ok) this.#removing.delete(steeringId);
    });
  }
}

function conflict(inputId: string, receipt: InputReceipt | undefined): InputError {
  return new InputError('input_conflict', 'rejected', `input ${inputId} was already submitted to this turn with different text; use a new inputId for new text`, receipt ? { receipt } : {});
}

/** The hub could not record an acceptance: a state budget is full, or the log is away. */
function notRecorded(inputId: string, err: unknown): InputError {
  if (err instanceof ProtocolError && (err.family === 'limit_exceeded' || err.family === 'quota_exceeded' || err.family === 'storage_quota_exceeded')) {
    return new InputError('input_limit_exceeded', 'rejected', `input ${inputId} was not accepted: ${err.message}`);
  }
  if (err instanceof ProtocolError && err.family === 'storage_unavailable') {
    return new InputError('storage_unavailable', 'rejected', `input ${inputId} was not accepted: ${err.message}; retry it with the same inputId`);
  }
  return new InputError('input_not_recorded', 'rejected', `input ${inputId} was not accepted; retry it with the same inputId`);
}
