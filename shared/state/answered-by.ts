/**
 * Who answered an input request, kept beside the chat state rather than in it.
 *
 * The hub stamps every answer and approval with `_meta["hub/answeredBy"]` (user, surface, time).
 * For tool calls the standard reducers carry an action's `_meta` onto the tool call, so the stamp
 * lands in state exactly as an official AHP replica would have it. `chat/inputCompleted` is
 * different: the standard reducer leaves the input-request part's `_meta` alone, so a stamp
 * copied there would make the hub's snapshot differ from every official replica. The stamp
 * therefore stays in the action (the log and the envelope clients receive), and the hub keeps a
 * per-chat index of it, sent as the chat snapshot's own `_meta["hub/answeredBy"]` (outside
 * `state`): `{ [requestId]: AnsweredBy }`. A client that wants to show who answered reads the
 * snapshot's index and the stamps of later `chat/inputCompleted` envelopes (`AnswerRecords`).
 */

export const ANSWERED_BY_META = 'hub/answeredBy';

/**
 * Who stopped a turn. `chat/turnCancelled` is stamped like an answer (`_meta["hub/answeredBy"]` on
 * the action), and, as the standard reducer keeps no `_meta` of it, the hub indexes the stamp by
 * turn id beside the chat state and sends it as the snapshot's `_meta["hub/stoppedBy"]`.
 */
export const STOPPED_BY_META = 'hub/stoppedBy';

export interface AnsweredBy {
  readonly user: string;
  readonly surface: string;
  readonly at: string;
}

/** requestId → who answered it; the newest MAX_ANSWER_RECORDS per chat. */
export type AnswerIndex = Readonly<Record<string, AnsweredBy>>;

/** Bounds the index a chat snapshot carries (oldest answers are forgotten first). */
export const MAX_ANSWER_RECORDS = 500;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The stamp in a `_meta` object, if it has the expected shape. */
export function answeredByIn(meta: unknown): AnsweredBy | undefined {
  const raw = isRecord(meta) ? meta[ANSWERED_BY_META] : undefined;
  if (!isRecord(raw) || typeof raw['user'] !== 'string' || typeof raw['surface'] !== 'string' || typeof raw['at'] !== 'string') return undefined;
  return { user: raw['user'], surface: raw['surface'], at: raw['at'] };
}

/**
 * The index in a chat snapshot's `_meta` (entries with a wrong shape are skipped): who answered
 * (by request id), or with `STOPPED_BY_META` who stopped (by turn id).
 */
export function answerIndexIn(snapshotMeta: unknown, key: typeof ANSWERED_BY_META | typeof STOPPED_BY_META = ANSWERED_BY_META): Record<string, AnsweredBy> {
  const raw = isRecord(snapshotMeta) ? snapshotMeta[key] : undefined;
  const out: Record<string, AnsweredBy> = {};
  if (!isRecord(raw)) return out;
  for (const [requestId, entry] of Object.entries(raw)) {
    const by = answeredByIn({ [ANSWERED_BY_META]: entry });
    if (by) out[requestId] = by;
  }
  return out;
}

/** The index with `requestId` (or a turn id) (re)recorded as the newest entry, bounded. Never mutates `index`. */
export function withAnswer(index: AnswerIndex | undefined, requestId: string, by: AnsweredBy): AnswerIndex {
  const next: Record<string, AnsweredBy> = {};
  const kept = Object.entries(index ?? {}).filter(([id]) => id !== requestId);
  for (const [id, entry] of kept.slice(Math.max(0, kept.length - (MAX_ANSWER_RECORDS - 1)))) next[id] = entry;
  next[requestId] = by;
  return next;
}
