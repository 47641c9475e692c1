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
import type { ChatInputRequest, ChatState, Message, ResponsePart } from '../../shared/protocol/state.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { turnResponseParts } from '../../shared/state/selectors.js';

/**
 * `_meta` key of a turn's message that names the turn it resumes: one a restart ended because
 * its agent died with the hub (the app's **Resume**). Questions the new turn asks start with the
 * answers people had given there.
 */
export const RESUMES_META_KEY = 'hub/resumes';

/** The turn id a message resumes, if it names one. */
export function resumedTurnOf(message: Message): string | undefined {
  const id = message._meta?.[RESUMES_META_KEY];
  return typeof id === 'string' ? id : undefined;
}

/**
 * `request` with the answers given to the same questions (same id and kind) in the resumed turn,
 * newest request first, as drafts: pre-filled, still to be submitted. Unchanged when nothing matches.
 */
export function withCarriedAnswers(chat: ChatState, resumedTurn: string, request: ChatInputRequest): ChatInputRequest {
  const questions = request.questions ?? [];
  if (questions.length === 0) return request;
  const earlier = turnResponseParts(chat, resumedTurn)
    .filter((p) => isPartOfKind(p, 'inputRequest'))
    .reverse();
  const answers: Record<string, NonNullable<ChatInputRequest['answers']>[string]> = { ...request.answers };
  for (const q of questions) {
    if (answers[q.id] !== undefined) continue;
    for (const part of earlier) {
      const before = part.request.answers?.[q.id];
      const sameQuestion = part.request.questions?.some((e) => e.id === q.id && e.kind === q.kind);
      if (!before || !sameQuestion || before.state === 'skipped') continue;
      answers[q.id] = { ...before, state: 'draft' };
      break;
    }
  }
  return Object.keys(answers).length === 0 ? request : { ...request, answers };
}

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
