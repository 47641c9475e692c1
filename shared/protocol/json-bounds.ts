/**
 * Bounds on the shape of any JSON value a client sends, known keys and unknown ones alike.
 *
 * Schemas bound the fields they know, but objects are loose (unknown keys survive for forward
 * compatibility), so without this check a client could hide a value nested thousands of levels
 * deep, or a megabyte-long key, under a key nobody validates. `JSON.parse` accepts such a value,
 * but `JSON.stringify`, `structuredClone` and every recursive walk overflow the stack on it, and
 * the server stores and echoes what it accepted. The walk here is iterative, so checking never
 * overflows itself, and it stops at the first violation.
 *
 * Total size is bounded elsewhere (the WebSocket frame limit, HTTP body limits); this bounds how
 * that size may be shaped.
 */

export const JsonBounds = {
  /** Objects and arrays nested inside each other; a legitimate AHP action needs about 12. */
  maxDepth: 64,
  /** Characters in one object key; every AHP key, id and `_meta` key is far shorter. */
  maxKeyLength: 1_024,
  /**
   * JSON characters of all the values under keys a known action's schema does not name (kept for
   * forward compatibility, never validated): issue 33.5f, a 1,000,000-character value under such
   * a key was stored and echoed to every subscriber.
   */
  maxUnknownFieldChars: 16_384,
} as const;

/** Stable codes a rejection carries, so a client can tell them apart without parsing text. */
export type JsonBoundsViolation = 'json_too_deep' | 'json_key_too_long' | 'unknown_fields_too_large';

export interface JsonBoundsResult {
  readonly code: JsonBoundsViolation;
  readonly message: string;
}

/** undefined when `value` is within bounds, else the first violation found. */
export function checkJsonBounds(value: unknown, bounds: { maxDepth: number; maxKeyLength: number } = JsonBounds): JsonBoundsResult | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  // Depth-first with explicit stacks (parallel arrays: no allocation per node); depth counts
  // containers. This runs on every client message, so it stays cheap for the usual small ones.
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    if (depth > bounds.maxDepth) {
      return { code: 'json_too_deep', message: `JSON nested deeper than ${bounds.maxDepth} levels` };
    }
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const item: unknown = node[i];
        if (typeof item === 'object' && item !== null) {
          nodes.push(item);
          depths.push(depth + 1);
        }
      }
      continue;
    }
    for (const key in node) {
      if (key.length > bounds.maxKeyLength) {
        return { code: 'json_key_too_long', message: `JSON object key longer than ${bounds.maxKeyLength} characters` };
      }
      const child = (node as Record<string, unknown>)[key];
      if (typeof child === 'object' && child !== null) {
        nodes.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return undefined;
}
