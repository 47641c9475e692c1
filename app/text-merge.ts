/**
 * Merging a text this tab changed while the hub was down into the text a restarted hub holds.
 *
 * A restarted hub's shared document is new (seeded from the durable drafts), so Yjs cannot merge
 * this tab's history into it item by item. What can be merged is text: `base` is what this tab
 * had in common with the hub when the connection went, `ours` what it holds now, `theirs` what
 * the new document holds (the durable draft plus whatever other tabs merged back before us). Each
 * side's change is one edit of `base` (`textDiff`); edits of separate regions are both applied.
 * Edits that overlap or touch (one word edited on both sides) conflict: the hub's text stays and
 * ours is handed back, so the tab can say "Not delivered" and offer to resend it, rather than one
 * side's words vanishing.
 */
import { textDiff } from '../shared/protocol/collab.js';

export type TextMerge =
  /** `text` is the merge (ours alone, theirs alone, or both edits). */
  | { readonly kind: 'merged'; readonly text: string }
  /** Both sides changed the same words: `text` is theirs, `ours` did not reach the hub. */
  | { readonly kind: 'conflict'; readonly text: string; readonly ours: string };

export function mergeOfflineText(base: string, ours: string, theirs: string): TextMerge {
  if (ours === base || ours === theirs) return { kind: 'merged', text: theirs };
  if (theirs === base) return { kind: 'merged', text: ours };
  const mine = textDiff(base, ours);
  const other = textDiff(base, theirs);
  const mineEnd = mine.index + mine.remove;
  const otherEnd = other.index + other.remove;
  // Both insert at one place: when ours starts with theirs, both sides typed those words (keep
  // one copy); otherwise theirs were merged first and ours follow.
  const sameInsertionPoint = mine.remove === 0 && other.remove === 0 && mine.index === other.index;
  if (sameInsertionPoint && mine.insert.startsWith(other.insert)) return { kind: 'merged', text: ours };
  // The other way round: theirs already holds our words and more. That is the hub merging back
  // what we sent before the outage (our base was an older durable draft, written while we typed)
  // and another tab's addition after it: inserting ours again would double them.
  if (sameInsertionPoint && other.insert.startsWith(mine.insert)) return { kind: 'merged', text: theirs };
  if (sameInsertionPoint || otherEnd < mine.index) {
    return { kind: 'merged', text: base.slice(0, other.index) + other.insert + base.slice(otherEnd, mine.index) + mine.insert + base.slice(mineEnd) };
  }
  if (mineEnd < other.index) {
    return { kind: 'merged', text: base.slice(0, mine.index) + mine.insert + base.slice(mineEnd, other.index) + other.insert + base.slice(otherEnd) };
  }
  return { kind: 'conflict', text: theirs, ours };
}
