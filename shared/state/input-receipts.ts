/**
 * Steering receipts as a fold over the log (docs/continuity.md, "Steering receipts").
 *
 * A session's input book is kept beside its state (`SessionEntry.inputs`), never in it, so the
 * state stays what standard reducers make of it and official AHP replicas stay equal to the hub.
 * Every fact comes from a record the log already holds, so the fold gives the same book live, on
 * every cluster node and after a restart (the book is part of the snapshot image like the state):
 * - accepted: the hub's own `chat/steeringMessageSet` (no client origin) whose message carries
 *   the receipt facts in `_meta["hub/userInput"]` (inputId, ordinal, historyEpoch, turnId,
 *   source, acceptedAt);
 * - consumed: a `chat/responsePart` whose `userMessage` part names the input (in-process barrier
 *   or remote agent);
 * - closed / cancelled: the commit that ended the turn (complete, error, cancel, truncation, a
 *   disposed chat), or a `chat/steeringMessageRemoved` of the pending message.
 * Times come from records too (`acceptedAt`, the part's `consumedAt`, turn start + duration), or
 * else the latest time the book has seen, so `updatedAt` replays identically. The history epoch
 * is derived from the session and the serverSeq of the default chat's last truncation.
 *
 * Bounded: a session keeps the receipts of its current turn and its last ended turn only, at
 * most `MAX_RECEIPTS_PER_TURN` each (docs/limits.md). Pure: no clock, no I/O, never mutates.
 */
import type { KnownAction } from '../protocol/actions.js';
import type { ActiveTurn, ChatState } from '../protocol/state.js';
import type { InputReceipt, InputReceiptState, InputSource, InputTarget } from '../protocol/steering.js';
import { sessionIdOf } from '../protocol/uris.js';
import { userInputMeta, userMessagePartInputId } from './selectors.js';

/** Receipts one turn can hold, whatever quota the hub is configured with (the quota is capped to it). */
export const MAX_RECEIPTS_PER_TURN = 256;
/** Longest input id the fold takes (the hub refuses longer ones before they reach the log). */
const MAX_INPUT_ID = 200;

/** The id of the pending steering message an accepted input is shown as. */
export const steeringIdOf = (inputId: string): string => `hub-input:${inputId}`;

export interface ReceiptEntry {
  readonly receipt: InputReceipt;
  /** Length and hash of the accepted text: a retry with other text is a conflict (the text itself lives in the chat). */
  readonly textDigest: string;
}

export interface TurnReceipts {
  readonly historyEpoch: string;
  readonly turnId: string;
  readonly chat: string;
  /** The highest ordinal accepted into the turn (what the per-turn quota counts). */
  readonly accepted: number;
  /** In ordinal order. */
  readonly entries: readonly ReceiptEntry[];
}

export interface InputBook {
  readonly historyEpoch: string;
  /** The open turn inputs went to (absent once it ended). */
  readonly current?: TurnReceipts;
  readonly lastEnded?: TurnReceipts;
  /** The latest time a folded record gave (ISO); the time of transitions whose record has none. */
  readonly clock?: string;
}

/** Where a session's book lives: beside its state, in the hub's catalogue and in snapshots. */
export interface WithInputBook {
  readonly uri: string;
  inputs?: InputBook;
}

/** FNV-1a over UTF-16 code units, 32 bits, as 8 hex digits. */
function fnv(text: string, seed: number): string {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

export function textDigestOf(text: string): string {
  return `${text.length}:${fnv(text, 0x811c9dc5)}${fnv(text, 0x050c5d1f)}`;
}

/** The history epoch: stable across restarts and nodes, new after each truncation of the default chat. */
export function epochFor(session: string, truncatedAtSeq: number): string {
  const base = `epoch-${fnv(session, 0x811c9dc5)}${fnv(session, 0x050c5d1f)}`;
  return truncatedAtSeq > 0 ? `${base}-${truncatedAtSeq}` : base;
}

export function historyEpochOf(session: string, book: InputBook | undefined): string {
  return book?.historyEpoch ?? epochFor(session, 0);
}

/** The retained turn `target` names (current or last ended), if any. */
export function turnOf(book: InputBook | undefined, target: InputTarget): TurnReceipts | undefined {
  for (const t of [book?.current, book?.lastEnded]) {
    if (t && t.historyEpoch === target.historyEpoch && t.turnId === target.turnId) return t;
  }
  return undefined;
}

export function entryOf(turn: TurnReceipts | undefined, inputId: string): ReceiptEntry | undefined {
  return turn?.entries.find((e) => e.receipt.inputId === inputId);
}

export function receiptOf(book: InputBook | undefined, inputId: string, target: InputTarget): InputReceipt | undefined {
  return entryOf(turnOf(book, target), inputId)?.receipt;
}

/** Why a turn's still-accepted inputs end, by the action that ended the turn. */
function turnEndOf(type: string): readonly ['closed' | 'cancelled', string] {
  switch (type) {
    case 'chat/turnComplete':
      return ['closed', 'turn_completed'];
    case 'chat/error':
      return ['closed', 'turn_failed'];
    case 'chat/turnCancelled':
      return ['cancelled', 'turn_cancelled'];
    case 'chat/truncated':
      return ['closed', 'history_replaced'];
    case 'chat/turnStarted':
      return ['closed', 'turn_replaced'];
    default:
      return ['closed', 'turn_ended'];
  }
}

const later = (a: string | undefined, b: string | undefined): string | undefined => (a === undefined ? b : b === undefined || a >= b ? a : b);

function isoAt(ms: number): string | undefined {
  return Number.isFinite(ms) && Math.abs(ms) < 8.64e15 ? new Date(ms).toISOString() : undefined;
}

/** When the turn ended, by the record: its start plus the duration the ending action reports. */
function endTimeOf(turn: ActiveTurn | undefined, action: KnownAction): string | undefined {
  const duration = (action as { duration?: unknown }).duration;
  if (!turn || typeof duration !== 'number') return undefined;
  return isoAt(Date.parse(turn.startedAt) + Math.max(0, duration));
}

function transition(entry: ReceiptEntry, state: InputReceiptState, reason: string | undefined, at: string | undefined): ReceiptEntry {
  const r = entry.receipt;
  const next: InputReceipt = { ...r, state, revision: r.revision + 1, updatedAt: later(at, r.updatedAt) ?? r.updatedAt };
  return { ...entry, receipt: reason === undefined ? next : { ...next, reason } };
}

/** `turn` with every entry `pick` selects moved to `state`; the same object when none is. */
function moveEntries(turn: TurnReceipts, pick: (e: ReceiptEntry) => boolean, state: InputReceiptState, reason: string | undefined, at: string | undefined): TurnReceipts {
  let changed = false;
  const entries = turn.entries.map((e) => {
    if (e.receipt.state !== 'accepted' || !pick(e)) return e;
    changed = true;
    return transition(e, state, reason, at);
  });
  return changed ? { ...turn, entries } : turn;
}

/** The current turn ends: its accepted inputs become `state` and it is the last ended turn. */
function endCurrent(book: InputBook, state: 'closed' | 'cancelled', reason: string, at: string | undefined): InputBook {
  if (!book.current) return book;
  const ended = moveEntries(book.current, () => true, state, reason, at ?? book.clock);
  const { current: _ended, ...rest } = book;
  return { ...rest, lastEnded: ended, clock: later(book.clock, at) };
}

/** One committed chat record, as the fold needs it. */
export interface ChatRecordFacts {
  readonly chat: string;
  /** Whether `chat` is the session's default chat (the one steering inputs go to). */
  readonly isDefault: boolean;
  readonly serverSeq: number;
  readonly action: KnownAction;
  /** A client dispatched it (its stored origin); the hub's own actions have none. */
  readonly fromClient: boolean;
  readonly before: ChatState;
  readonly after: ChatState;
}

/** Folds one committed chat record into the session's book (the same object when nothing changes). */
export function foldChatRecord(session: string, book: InputBook | undefined, r: ChatRecordFacts): InputBook | undefined {
  if (r.after === r.before) return book;
  let next = book;
  const current = next?.current;
  if (next && current && current.chat === r.chat && r.before.activeTurn?.id === current.turnId && r.after.activeTurn?.id !== current.turnId) {
    const [state, reason] = turnEndOf(r.action.type);
    next = endCurrent(next, state, reason, endTimeOf(r.before.activeTurn, r.action));
  }
  const started = r.after.activeTurn;
  if (r.isDefault && started && started.id !== r.before.activeTurn?.id) next = startTurn(session, next, r.chat, started.id);
  const a = r.action;
  switch (a.type) {
    case 'chat/steeringMessageSet':
      return r.fromClient || !r.isDefault ? next : accept(session, next, r, a.steeringMessage);
    case 'chat/steeringMessageRemoved':
      return next && removed(next, r.chat, steeringRemovalReason(r.fromClient), a.id);
    case 'chat/responsePart':
      return next && consumed(next, r.chat, a.turnId, a.part);
    case 'chat/truncated': {
      if (!r.isDefault) return next;
      const closed = next?.current?.chat === r.chat ? endCurrent(next, 'closed', 'history_replaced', undefined) : next;
      return { ...closed, historyEpoch: epochFor(session, r.serverSeq) };
    }
    default:
      return next;
  }
}

const steeringRemovalReason = (fromClient: boolean): string => (fromClient ? 'removed_by_client' : 'removed');

/** A catalogue change: the chat is gone (its open turn's inputs close), or another chat became the default. */
export function foldChatGone(book: InputBook | undefined, chat: string, reason: 'chat_disposed' | 'default_chat_changed'): InputBook | undefined {
  return book?.current?.chat === chat ? endCurrent(book, 'closed', reason, undefined) : book;
}

function removed(book: InputBook, chat: string, reason: string, steeringId: string): InputBook {
  const pick = (e: ReceiptEntry) => steeringIdOf(e.receipt.inputId) === steeringId;
  const current = book.current?.chat === chat ? moveEntries(book.current, pick, 'cancelled', reason, book.clock) : book.current;
  const lastEnded = book.lastEnded?.chat === chat ? moveEntries(book.lastEnded, pick, 'cancelled', reason, book.clock) : book.lastEnded;
  return current === book.current && lastEnded === book.lastEnded ? book : withTurns(book, current, lastEnded);
}

function withTurns(book: InputBook, current: TurnReceipts | undefined, lastEnded: TurnReceipts | undefined): InputBook {
  const { current: _c, lastEnded: _l, ...rest } = book;
  return { ...rest, ...(current && { current }), ...(lastEnded && { lastEnded }) };
}

function consumed(book: InputBook, chat: string, turnId: string, part: { readonly kind?: unknown }): InputBook {
  const inputId = userMessagePartInputId(part);
  const turn = book.current;
  if (inputId === undefined || !turn || turn.chat !== chat || turn.turnId !== turnId) return book;
  const consumedAt = userInputMeta((part as { message?: unknown }).message)?.consumedAt;
  const at = typeof consumedAt === 'string' && isoAt(Date.parse(consumedAt)) !== undefined ? consumedAt : book.clock;
  const next = moveEntries(turn, (e) => e.receipt.inputId === inputId, 'consumed', undefined, at);
  return next === turn ? book : { ...withTurns(book, next, book.lastEnded), clock: later(book.clock, at) };
}

/**
 * A turn of the default chat became active: its receipts start empty, or carry on when it is the
 * last ended turn again (`chat/turnResume`: the same receipts and ordinals). A current turn whose
 * end this book never saw (it belonged to another chat) ends now.
 */
function startTurn(session: string, book: InputBook | undefined, chat: string, turnId: string): InputBook {
  const epoch = historyEpochOf(session, book);
  const base: InputBook = book?.current ? endCurrent(book, 'closed', 'turn_replaced', undefined) : (book ?? { historyEpoch: epoch });
  const ended = base.lastEnded;
  if (ended && ended.chat === chat && ended.turnId === turnId && ended.historyEpoch === epoch) return withTurns(base, ended, undefined);
  return withTurns(base, { historyEpoch: epoch, turnId, chat, accepted: 0, entries: [] }, ended);
}

/** The hub accepted an input (its pending steering message with the receipt facts). */
function accept(session: string, book: InputBook | undefined, r: ChatRecordFacts, steering: { readonly id: string; readonly message: unknown }): InputBook | undefined {
  const meta = userInputMeta(steering.message);
  const text = (steering.message as { text?: unknown } | undefined)?.text;
  if (!meta || typeof text !== 'string') return book;
  const { inputId, ordinal, historyEpoch, turnId, source, acceptedAt } = meta;
  if (typeof inputId !== 'string' || inputId.length === 0 || inputId.length > MAX_INPUT_ID || steering.id !== steeringIdOf(inputId)) return book;
  if (typeof turnId !== 'string' || r.after.activeTurn?.id !== turnId || historyEpoch !== historyEpochOf(session, book)) return book;
  if (typeof ordinal !== 'number' || !Number.isSafeInteger(ordinal) || ordinal < 1 || ordinal > MAX_RECEIPTS_PER_TURN) return book;
  if (typeof acceptedAt !== 'string' || isoAt(Date.parse(acceptedAt)) === undefined) return book;
  const base = book?.current?.chat === r.chat && book.current.turnId === turnId ? book : startTurn(session, book, r.chat, turnId);
  const current = base.current!;
  const epoch = current.historyEpoch;
  if (entryOf(current, inputId) || current.entries.length >= MAX_RECEIPTS_PER_TURN) return book;
  const receipt: InputReceipt = {
    inputId,
    sessionId: sessionIdOf(session),
    historyEpoch: epoch,
    turnId,
    ordinal,
    revision: 1,
    source: (source === 'ws' ? 'ws' : 'http') satisfies InputSource,
    state: 'accepted',
    durability: 'log',
    acceptedAt,
    updatedAt: acceptedAt,
  };
  const entries = [...current.entries, { receipt, textDigest: textDigestOf(text) }].sort((x, y) => x.receipt.ordinal - y.receipt.ordinal);
  const turn: TurnReceipts = { ...current, accepted: Math.max(current.accepted, ordinal), entries };
  return { ...withTurns(base, turn, base.lastEnded), clock: later(base.clock, acceptedAt) };
}
