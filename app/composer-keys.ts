/**
 * Which key presses send the composer's message. The composer is a one-line field until used,
 * so Enter sends and Shift+Enter starts a new line (as in most chat apps); Ctrl/Cmd+Enter, the
 * earlier shortcut, still sends. Enter that confirms an input method's composition (Japanese,
 * Chinese… keyboards) never sends. The answer fields of forms are not the composer: their
 * multi-line textareas keep Enter for a new line.
 */

/** The fields of a `KeyboardEvent` the decision reads (a plain object in unit tests). */
export interface EnterPress {
  readonly key: string;
  readonly shiftKey: boolean;
  readonly altKey: boolean;
  readonly isComposing: boolean;
  /** 229 while an input method composes (some browsers report `isComposing` false then). */
  readonly keyCode: number;
}

export function composerSends(e: EnterPress): boolean {
  if (e.key !== 'Enter' || e.isComposing || e.keyCode === 229) return false;
  return !e.shiftKey && !e.altKey;
}

/** What the composer's note says about sending. */
export const SEND_HINT = 'Enter to send · Shift+Enter for a new line.';
