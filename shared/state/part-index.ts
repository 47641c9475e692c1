/**
 * Where a tool call or an input request sits among a turn's response parts, without scanning
 * them (issue 18.7: a burst of 3,000 permission requests made every new tool call, every
 * transition and every waiter's check scan all earlier parts, quadratic in the burst).
 *
 * The index lives beside the state, in a WeakMap keyed by the parts array, so the state stays
 * plain JSON and every function here stays pure to its callers: an answer is always what a scan
 * of `parts` would give. Reducers hand the index on to the array they derive (`appendPart`,
 * `replacePart`), so a turn's index is built once and grows by one entry per new part. Several
 * arrays may share one index (each derived from the last): an entry is trusted only when the
 * part at that position still has that key, anything else falls back to a scan.
 */
import { isPartOfKind, type ResponsePart, type ToolCallState } from '../protocol/state.js';

interface PartIndex {
  /** Key → position of the last part with that key, in the arrays sharing this index. */
  readonly at: Map<string, number>;
  /** Keys seen at more than one position (an answered request's id asked again): always scanned. */
  readonly repeated: Set<string>;
}

const indexes = new WeakMap<readonly ResponsePart[], PartIndex>();
/** How many parts of an array wait for a person (`isBlockingPart`), kept like the index. */
const blockingCounts = new WeakMap<readonly ResponsePart[], number>();

/** Tool statuses that wait for a person: a confirmation prompt or an MCP sign-in. */
const USER_BLOCKING_TOOL_STATUSES: ReadonlySet<ToolCallState['status']> = new Set(['pending-confirmation', 'pending-result-confirmation', 'auth-required']);

/** A part a person must answer (§2.5): an open input request, or a tool waiting for them. A client-executed running tool is not. */
export function isBlockingPart(part: ResponsePart): boolean {
  if (isPartOfKind(part, 'inputRequest')) return part.response === undefined;
  return isPartOfKind(part, 'toolCall') && USER_BLOCKING_TOOL_STATUSES.has(part.toolCall.status);
}

/** How many of `parts` wait for a person; counted once per turn, then kept up by `appendPart` / `replacePart`. */
export function blockingPartCount(parts: readonly ResponsePart[]): number {
  let count = blockingCounts.get(parts);
  if (count === undefined) {
    count = 0;
    for (const part of parts) if (isBlockingPart(part)) count++;
    blockingCounts.set(parts, count);
  }
  return count;
}

/** Lookups that fell back to a scan (a work counter: tests check a burst does not scan). */
let scans = 0;
export const partIndexScans = (): number => scans;

export const toolKey = (toolCallId: string): string => `t${toolCallId}`;
export const inputKey = (requestId: string): string => `i${requestId}`;

function keyOf(part: ResponsePart): string | undefined {
  if (isPartOfKind(part, 'toolCall')) return toolKey(part.toolCall.toolCallId);
  if (isPartOfKind(part, 'inputRequest')) return inputKey(part.request.id);
  return undefined;
}

function note(index: PartIndex, key: string, position: number): void {
  const known = index.at.get(key);
  if (known !== undefined && known !== position) index.repeated.add(key);
  index.at.set(key, position);
}

function indexOf(parts: readonly ResponsePart[]): PartIndex {
  let index = indexes.get(parts);
  if (!index) {
    index = { at: new Map(), repeated: new Set() };
    parts.forEach((part, position) => {
      const key = keyOf(part);
      if (key !== undefined) note(index!, key, position);
    });
    indexes.set(parts, index);
  }
  return index;
}

/**
 * Positions of the parts with `key`, in order, that pass `accept` (a scan's result, found through
 * the index). Almost always zero or one position.
 */
export function positionsOf(parts: readonly ResponsePart[], key: string, accept: (part: ResponsePart) => boolean = () => true): number[] {
  const index = indexOf(parts);
  const position = index.at.get(key);
  if (position === undefined) return [];
  const part = parts[position];
  if (!index.repeated.has(key) && part !== undefined && keyOf(part) === key) return accept(part) ? [position] : [];
  scans++;
  const found: number[] = [];
  parts.forEach((p, i) => {
    if (keyOf(p) === key && accept(p)) found.push(i);
  });
  return found;
}

/** The first position of a part with `key` that passes `accept`, or -1. */
export function firstPositionOf(parts: readonly ResponsePart[], key: string, accept?: (part: ResponsePart) => boolean): number {
  return positionsOf(parts, key, accept)[0] ?? -1;
}

/** The last position of a part with `key` that passes `accept`, or -1. */
export function lastPositionOf(parts: readonly ResponsePart[], key: string, accept?: (part: ResponsePart) => boolean): number {
  return positionsOf(parts, key, accept).at(-1) ?? -1;
}

/** `[...parts, part]`, indexed from `parts`'s index. */
export function appendPart(parts: readonly ResponsePart[], part: ResponsePart): ResponsePart[] {
  const next = [...parts, part];
  const count = blockingCounts.get(parts);
  if (count !== undefined) blockingCounts.set(next, count + (isBlockingPart(part) ? 1 : 0));
  const index = indexes.get(parts);
  if (index) {
    const key = keyOf(part);
    if (key !== undefined) note(index, key, parts.length);
    indexes.set(next, index);
  }
  return next;
}

/** `parts` with `part` at `position` instead (same key, so the index carries over); `parts` itself when out of range. */
export function replacePart(parts: readonly ResponsePart[], position: number, part: ResponsePart): readonly ResponsePart[] {
  const current = parts[position];
  if (current === undefined || current === part) return parts;
  const next = parts.slice();
  next[position] = part;
  const count = blockingCounts.get(parts);
  if (count !== undefined) blockingCounts.set(next, count - (isBlockingPart(current) ? 1 : 0) + (isBlockingPart(part) ? 1 : 0));
  const index = indexes.get(parts);
  if (index && keyOf(current) === keyOf(part)) indexes.set(next, index);
  return next;
}
