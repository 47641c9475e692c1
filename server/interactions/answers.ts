/**
 * Answers by question index (Qwen `ask_user_question` / DataWorks `Answers`) → AHP answers by
 * question id.
 *
 * Keys: a key must be exactly the canonical decimal form of a safe integer `i` with
 * `0 <= i < questionCount` (Qwen's rule). Qwen silently ignores other keys; this hub rejects
 * them as parameter errors instead (`"01"`, `"-0"`, `"1.0"`, `" 1"` are malformed and rejected
 * before the request is looked up; an out-of-range index is rejected once the request is known).
 *
 * Values are text and are parsed per AHP question kind (every answer becomes `submitted`):
 * - `text`: the string as is (length limits of the question apply).
 * - `number` / `integer`: a decimal number (`42`, `-1.5`, `1e3`); `integer` needs a whole number;
 *   min/max apply.
 * - `boolean`: `true`/`false`, `yes`/`no`, `y`/`n`, `1`/`0` (case-insensitive).
 * - `single-select`: an option id, else an option label (case-insensitive, trimmed); free text
 *   only when the question allows free-form input.
 * - `multi-select`: the whole string if it names one option, else a comma-separated list of
 *   option ids/labels; unmatched entries become free-form values when the question allows them;
 *   min/max count the selections.
 * - Unknown (newer) kinds: sent as a `text` value.
 * Anything that does not fit is a parameter error naming the question.
 */
import type { ChatInputAnswer, ChatInputAnswers, ChatInputOption, ChatInputQuestion } from '../../shared/protocol/state.js';
import { isKnownQuestion } from '../../shared/protocol/state.js';
import { validateAnswerValue } from '../../shared/state/validate-action.js';

/** Upper bound on `Answers` entries (AHP allows 50 questions per request). */
export const MAX_ANSWER_KEYS = 50;
/** Longest answer text accepted (AHP text limit). */
export const MAX_ANSWER_LENGTH = 100_000;

const CANONICAL_INDEX = /^(0|[1-9][0-9]*)$/;

/** True when `key` is a canonical non-negative decimal index (range is checked later). */
export function isCanonicalIndexKey(key: string): boolean {
  return CANONICAL_INDEX.test(key) && Number.isSafeInteger(Number(key));
}

export type AnswerMapping = { ok: true; answers: ChatInputAnswers } | { ok: false; code: 'invalid_answer_key' | 'invalid_answer'; message: string };

/** Maps `{index: text}` onto the request's questions; every key must be in range and every value must fit. */
export function mapIndexedAnswers(questions: readonly ChatInputQuestion[], indexed: Readonly<Record<string, string>>): AnswerMapping {
  const answers: ChatInputAnswers = {};
  for (const [key, text] of Object.entries(indexed)) {
    const index = Number(key);
    const question = questions[index];
    if (!isCanonicalIndexKey(key) || !question) {
      return {
        ok: false,
        code: 'invalid_answer_key',
        message: `Answers key "${key}" is not a question index: this request has ${questions.length} question(s), keyed "0"${questions.length > 1 ? `..."${questions.length - 1}"` : ''}`,
      };
    }
    const parsed = parseAnswer(question, text);
    if (typeof parsed === 'string') return { ok: false, code: 'invalid_answer', message: `Answers["${key}"] (question ${question.id}): ${parsed}` };
    const problem = validateAnswerValue(question, parsed);
    if (problem) return { ok: false, code: 'invalid_answer', message: `Answers["${key}"]: ${problem}` };
    answers[question.id] = parsed;
  }
  return { ok: true, answers };
}

/** One answer text → a submitted AHP answer, or a readable reason why it does not fit. */
export function parseAnswer(question: ChatInputQuestion, text: string): ChatInputAnswer | string {
  if (!isKnownQuestion(question)) return submitted({ kind: 'text', value: text });
  switch (question.kind) {
    case 'text':
      return submitted({ kind: 'text', value: text });
    case 'number':
    case 'integer': {
      const trimmed = text.trim();
      if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(trimmed)) return `"${clip(text)}" is not a number`;
      const value = Number(trimmed);
      if (!Number.isFinite(value)) return `"${clip(text)}" is not a finite number`;
      return submitted({ kind: 'number', value });
    }
    case 'boolean': {
      const t = text.trim().toLowerCase();
      if (['true', 'yes', 'y', '1'].includes(t)) return submitted({ kind: 'boolean', value: true });
      if (['false', 'no', 'n', '0'].includes(t)) return submitted({ kind: 'boolean', value: false });
      return `"${clip(text)}" is not a yes/no answer (use true or false)`;
    }
    case 'single-select': {
      const option = findOption(question.options, text);
      if (option) return submitted({ kind: 'selected', value: option.id });
      if (question.allowFreeformInput === true && text.trim() !== '') return submitted({ kind: 'selected', value: text.trim() });
      return `"${clip(text)}" is not one of the options (${describeOptions(question.options)})`;
    }
    case 'multi-select': {
      const whole = findOption(question.options, text);
      const entries = whole
        ? [whole.id]
        : text
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== '');
      const selected: string[] = [];
      const freeform: string[] = [];
      for (const entry of entries) {
        const option = whole ? whole : findOption(question.options, entry);
        if (option) selected.push(option.id);
        else if (question.allowFreeformInput === true) freeform.push(entry);
        else return `"${clip(entry)}" is not one of the options (${describeOptions(question.options)})`;
      }
      return submitted(freeform.length > 0 ? { kind: 'selected-many', value: selected, freeformValues: freeform } : { kind: 'selected-many', value: selected });
    }
  }
}

function submitted(value: Extract<ChatInputAnswer, { state: 'submitted' | 'draft' }>['value']): ChatInputAnswer {
  return { state: 'submitted', value };
}

function findOption(options: readonly ChatInputOption[], text: string): ChatInputOption | undefined {
  const t = text.trim();
  const byId = options.find((o) => o.id === t);
  if (byId) return byId;
  const lower = t.toLowerCase();
  return options.find((o) => o.label.trim().toLowerCase() === lower);
}

function describeOptions(options: readonly ChatInputOption[]): string {
  return (
    options
      .slice(0, 10)
      .map((o) => (o.id === o.label ? o.id : `${o.id} = ${o.label}`))
      .join(', ') + (options.length > 10 ? ', …' : '')
  );
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
