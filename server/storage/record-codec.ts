/**
 * The record codec every ActionLog engine shares: argument checks, (de)serialisation of records
 * and snapshots as JSON text, and readable errors for corrupt rows. Sharing it is what makes the
 * memory engine behave exactly like the SQLite one.
 */
import type { LogRecord, LogSnapshot } from './action-log.js';
import { errorMessage } from '../log.js';
import { actionJson } from '../action-json.js';

/** How many snapshots an engine keeps; older ones are dropped when a newer one is saved. */
export const SNAPSHOTS_KEPT = 2;

/** A record in its stored form: the columns of the SQLite `records` table. */
export interface StoredRecord {
  readonly seq: number;
  readonly channel: string;
  /** JSON text of `LogRecord.action`. */
  readonly action: string;
  /** JSON text of `LogRecord.origin`, or null when the record has none. */
  readonly origin: string | null;
}

/** A row as read back from storage, before validation: columns may hold anything if corrupted. */
export interface RawRecordRow {
  readonly seq: number;
  readonly channel: unknown;
  readonly action: unknown;
  readonly origin: unknown;
}

/** Rejects a sequence-number argument that is not a non-negative safe integer. */
export function requireSeqArgument(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`action log: ${name} must be a non-negative integer, got ${String(value)}`);
  }
}

/** Rejects a read limit that is neither a non-negative integer nor Infinity. */
export function requireLimitArgument(limit: number): void {
  if (limit !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(limit) || limit < 0)) {
    throw new RangeError(`action log: limit must be a non-negative integer or Infinity, got ${String(limit)}`);
  }
}

/**
 * Validates an append batch and converts it to stored rows. Throws (it does not report a
 * conflict) when the batch itself is malformed: non-contiguous seqs or non-JSON payloads are
 * programming errors in the caller, and retrying them against a fresh head would never help.
 */
export function encodeAppendBatch(expectedHead: number, records: readonly LogRecord[]): StoredRecord[] {
  requireSeqArgument('expectedHead', expectedHead);
  return records.map((record, index) => {
    const wanted = expectedHead + 1 + index;
    if (record.serverSeq !== wanted) {
      throw new Error(`action log: append(expectedHead=${expectedHead}) got serverSeq ${String(record.serverSeq)} at index ${index}; ` + `records must carry contiguous serverSeqs starting at ${expectedHead + 1}, so expected ${wanted}`);
    }
    return encodeRecord(record);
  });
}

function encodeRecord(record: LogRecord): StoredRecord {
  const seq = record.serverSeq;
  if (typeof record.channel !== 'string' || record.channel === '') {
    throw new Error(`action log: record ${seq} needs a non-empty string channel`);
  }
  if (!isActionShaped(record.action)) {
    throw new Error(`action log: record ${seq} needs an action object with a string "type"`);
  }
  const origin = record.origin;
  if (origin !== undefined && !isOriginShaped(origin)) {
    throw new Error(`action log: record ${seq} has an origin that is not { clientId: string, clientSeq: integer }`);
  }
  return {
    seq,
    channel: record.channel,
    // The text the hub already built for this action (size budget, envelope): encoded once per commit.
    action: toJson(record.action, `record ${seq} action`, actionJson),
    origin: origin === undefined ? null : toJson(origin, `record ${seq} origin`),
  };
}

/**
 * Turns a stored row back into a LogRecord, or throws an error naming the seq when the row is
 * corrupt, so an operator sees "record 1234 has a corrupt action column" instead of a bare
 * SyntaxError from deep inside JSON.parse.
 */
export function decodeRecord(row: RawRecordRow): LogRecord {
  const seq = row.seq;
  if (typeof row.channel !== 'string') {
    throw new Error(`action log: record ${seq} is corrupt: channel column is not text`);
  }
  const action = parseColumn(row.action, `record ${seq} is corrupt: action column`);
  if (!isActionShaped(action)) {
    throw new Error(`action log: record ${seq} is corrupt: action is not an object with a string "type"`);
  }
  // A record without origin has no `origin` key at all (not `origin: undefined`), exactly as the
  // producer most likely built it, so toStrictEqual-style comparisons hold after a round trip.
  if (row.origin === null) return { serverSeq: seq, channel: row.channel, action };
  const origin = parseColumn(row.origin, `record ${seq} is corrupt: origin column`);
  if (!isOriginShaped(origin)) {
    throw new Error(`action log: record ${seq} is corrupt: origin is not { clientId: string, clientSeq: integer }`);
  }
  return { serverSeq: seq, channel: row.channel, action, origin };
}

/** Serialises snapshot data, refusing values JSON.stringify would silently turn into nothing. */
export function encodeSnapshotData(snapshot: LogSnapshot): string {
  return toJson(snapshot.data, `snapshot ${snapshot.serverSeq} data`);
}

export function decodeSnapshot(seq: number, data: unknown): LogSnapshot {
  return { serverSeq: seq, data: parseColumn(data, `snapshot ${seq} is corrupt: data column`) };
}

function toJson(value: unknown, what: string, encode: (value: never) => string | undefined = JSON.stringify): string {
  let text: string | undefined;
  try {
    text = encode(value as never);
  } catch (cause) {
    throw new Error(`action log: ${what} is not JSON-serialisable: ${errorMessage(cause)}`, { cause });
  }
  // JSON.stringify returns undefined (not a string) for undefined, functions and symbols.
  if (typeof text !== 'string') throw new Error(`action log: ${what} is not JSON-serialisable`);
  return text;
}

function parseColumn(value: unknown, what: string): unknown {
  if (typeof value !== 'string') throw new Error(`action log: ${what} is not text`);
  try {
    return JSON.parse(value);
  } catch (cause) {
    throw new Error(`action log: ${what} is not valid JSON: ${errorMessage(cause)}`, { cause });
  }
}

function isActionShaped(value: unknown): value is LogRecord['action'] {
  return isPlainObject(value) && typeof value['type'] === 'string';
}

function isOriginShaped(value: unknown): value is NonNullable<LogRecord['origin']> {
  return isPlainObject(value) && typeof value['clientId'] === 'string' && Number.isSafeInteger(value['clientSeq']);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A snapshot claiming to cover records that were never appended is a bug in the caller. */
export function requireSnapshotWithinHead(snapshotSeq: number, head: number): void {
  if (snapshotSeq > head) {
    throw new Error(`action log: snapshot at serverSeq ${snapshotSeq} is beyond the log head ${head}`);
  }
}

/**
 * Enforces the port's precondition "callers only compact what a saved snapshot covers": dropping
 * records no snapshot reflects would lose state for good, so it is refused loudly.
 */
export function requireCompactionCovered(uptoSeq: number, latestSnapshotSeq: number | undefined): void {
  if (uptoSeq === 0) return;
  if (latestSnapshotSeq === undefined || latestSnapshotSeq < uptoSeq) {
    throw new Error(`action log: refusing to compact up to ${uptoSeq}: the newest snapshot covers ` + (latestSnapshotSeq === undefined ? 'nothing (there is none)' : `only up to ${latestSnapshotSeq}`));
  }
}

/**
 * Decodes the rows of one `read`, in seq order, refusing a gap between them: a log whose records
 * are not consecutive lost some (`where` names the log in the message).
 */
export function decodeConsecutiveRecords(rows: readonly RawRecordRow[], where: string): LogRecord[] {
  return rows.map((row, index) => {
    const previous = rows[index - 1];
    if (previous !== undefined && row.seq !== previous.seq + 1) {
      throw new Error(`action log: ${where} is corrupt: records ${previous.seq + 1}..${row.seq - 1} are missing`);
    }
    return decodeRecord(row);
  });
}
