/**
 * Immutable helpers for the reducers. Each returns its input unchanged (same reference) when
 * there is nothing to do, so reducers can report no-ops by identity.
 */

/** Replaces the first item with the same key, or appends `item` when there is none. */
export function upsertBy<T>(items: readonly T[] | undefined, item: T, keyOf: (item: T) => string): T[] {
  const list = items ?? [];
  const key = keyOf(item);
  const index = list.findIndex((existing) => keyOf(existing) === key);
  if (index === -1) return [...list, item];
  return list.map((existing, i) => (i === index ? item : existing));
}

/** Drops every item matching `predicate`; returns `items` itself when none matched. */
export function removeWhere<T>(items: readonly T[], predicate: (item: T) => boolean): readonly T[] {
  return items.some(predicate) ? items.filter((item) => !predicate(item)) : items;
}

/** Replaces the item at `index` with `update(item)`; returns `items` itself when it is unchanged. */
export function updateAt<T>(items: readonly T[], index: number, update: (item: T) => T): readonly T[] {
  const current = items[index];
  if (index < 0 || index >= items.length || current === undefined) return items;
  const next = update(current);
  return next === current ? items : items.map((item, i) => (i === index ? next : item));
}

/** `undefined` for an empty list: AHP represents "no entries" by an absent field, never `[]`. */
export function nonEmpty<T>(items: readonly T[]): T[] | undefined {
  return items.length > 0 ? [...items] : undefined;
}

/**
 * Sets `key` to `value`, or removes the key when `value` is undefined (absent, not `undefined`,
 * so snapshots stay minimal). Returns `obj` itself when nothing changes.
 */
export function withField<T extends object, K extends keyof T>(obj: T, key: K, value: T[K] | undefined): T {
  if (value === undefined) {
    if (!(key in obj)) return obj;
    const copy = { ...obj };
    delete copy[key];
    return copy;
  }
  return Object.is(obj[key], value) ? obj : { ...obj, [key]: value };
}

/**
 * Sets (or, for `undefined`, deletes) one entry of a string-keyed record, keeping key order.
 * Built with `Object.fromEntries` so a key such as `__proto__` becomes an own property instead of
 * reaching the prototype setter (record keys can come from clients).
 */
export function setEntry<V>(record: Readonly<Record<string, V>> | undefined, key: string, value: V | undefined): Record<string, V> {
  const entries = Object.entries(record ?? {});
  const index = entries.findIndex(([existing]) => existing === key);
  if (value === undefined) return Object.fromEntries(entries.filter((_, i) => i !== index));
  if (index === -1) return Object.fromEntries([...entries, [key, value]]);
  return Object.fromEntries(entries.map((entry, i): [string, V] => (i === index ? [key, value] : entry)));
}

/** `undefined` for an empty record (absent field), otherwise the record. */
export function nonEmptyRecord<V>(record: Record<string, V>): Record<string, V> | undefined {
  return Object.keys(record).length > 0 ? record : undefined;
}
