/**
 * Resuming a turn after a hub restart by running a deterministic agent again (the demo agent).
 *
 * The agent runs its steps from the start with a `TurnContext` that matches each step against
 * what the turn already holds in the log instead of doing it twice: text it said is not said
 * again (a part cut off mid-stream is finished), a question it asked is waited on (with every
 * draft people typed), an answer already given is returned at once, and a tool call already
 * started continues from its status. The first step with nothing in the log ends the replay;
 * from there the agent runs as usual. So the position is derived from the chat state alone:
 * nothing besides the log needs to survive the restart.
 */
import type { ResponsePart } from '../../shared/protocol/state.js';
import { isPartOfKind } from '../../shared/protocol/state.js';

/** Where a `say` of the replayed agent lands. */
export type ReplayedSay =
  /** Nothing of this text is in the turn: say it (the replay is over). */
  | { readonly kind: 'new' }
  /** The text is already there: skip it. */
  | { readonly kind: 'said' }
  /** The part `partId` holds the start of the text (cut off mid-stream): stream `rest` into it. */
  | { readonly kind: 'partial'; readonly partId: string; readonly rest: string };

export class TurnReplay {
  /** The turn's markdown parts as they were at the restart, in order. */
  readonly #markdown: Array<{ readonly id: string; readonly content: string }>;
  #next = 0;

  constructor(parts: readonly ResponsePart[]) {
    this.#markdown = parts.filter((p) => isPartOfKind(p, 'markdown')).map((p) => ({ id: p.id, content: p.content }));
  }

  /** True while some recorded text has not been matched yet. */
  get replaying(): boolean {
    return this.#next < this.#markdown.length;
  }

  /**
   * Matches one `say`. Recorded parts that do not start the text are passed over: they came
   * from something that does not happen again on replay (a steering input acknowledged at a
   * barrier is consumed once, so the barrier returns it only the first time).
   */
  say(text: string): ReplayedSay {
    while (this.#next < this.#markdown.length) {
      const part = this.#markdown[this.#next++]!;
      if (part.content === text) return { kind: 'said' };
      if (text.startsWith(part.content)) return { kind: 'partial', partId: part.id, rest: text.slice(part.content.length) };
    }
    return { kind: 'new' };
  }
}
