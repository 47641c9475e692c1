/**
 * The rules an answer must follow to fit its question, in one place: the hub enforces them on
 * every surface that accepts answers (WebSocket actions through `validate-action.ts`, HTTP reply
 * routes) and the browser app runs the very same function to say, at each field and before
 * sending, what the hub would refuse.
 *
 * Every problem comes in two wordings from the same check: `reason` names the question for logs
 * and rejection echoes ("question email: answer is not a valid email address"), `advice` tells a
 * person at the field what to do ("Enter an email address like name@example.com.").
 */
import {
  isAnswerValueOfKind,
  isKnownQuestion,
  type AnswerValueKind,
  type ChatInputAnswer,
  type ChatInputAnswers,
  type ChatInputAnswerValue,
  type ChatInputQuestion,
  type KnownChatInputQuestion,
  type MultiSelectQuestion,
  type SingleSelectQuestion,
} from '../protocol/state.js';

export interface AnswerProblem {
  readonly questionId: string;
  /** For rejection echoes and logs: names the question. */
  readonly reason: string;
  /** For the person at the field: what to change, without ids. */
  readonly advice: string;
}

/** The answer value kind each known question kind takes (§4). */
const VALUE_KIND_FOR_QUESTION: Readonly<Record<KnownChatInputQuestion['kind'], AnswerValueKind>> = {
  text: 'text',
  number: 'number',
  integer: 'number',
  boolean: 'boolean',
  'single-select': 'selected',
  'multi-select': 'selected-many',
};

/**
 * Checks one answer against its question. Skipped answers always fit. Drafts and submitted
 * answers need a value of the question's kind (an integer for `integer`); submitted answers must
 * also respect option ids (unless free-form input is allowed), min/max and the declared text
 * `format` (`email`, `uri`, `date`, `date-time`; other formats are hints only). Questions of a
 * kind this version does not know accept any value.
 */
export function answerProblem(question: ChatInputQuestion, answer: ChatInputAnswer): AnswerProblem | undefined {
  if (answer.state === 'skipped') return undefined;
  const value: ChatInputAnswerValue | undefined = answer.value;
  if (value === undefined) return problem(question, `answer to question ${question.id} is ${answer.state} but has no value`, 'Give an answer.');
  if (!isKnownQuestion(question)) return undefined;
  const wanted = VALUE_KIND_FOR_QUESTION[question.kind];
  if (value.kind !== wanted) {
    return problem(question, `question ${question.id} (${question.kind}) needs a ${wanted} answer, not ${value.kind}`, `This answer must be a ${wanted} value.`);
  }
  return checkValue(question, value, answer.state === 'submitted');
}

/**
 * What an accepting submit must satisfy as a whole: every answer fits, and every required
 * question has a submitted answer. Returns every problem at once (one per question, in form order).
 */
export function submitProblems(questions: readonly ChatInputQuestion[], answers: ChatInputAnswers): AnswerProblem[] {
  const problems: AnswerProblem[] = [];
  for (const question of questions) {
    const answer = Object.hasOwn(answers, question.id) ? answers[question.id] : undefined;
    const found = answer ? answerProblem(question, answer) : undefined;
    if (found) problems.push(found);
    else if (question.required === true && answer?.state !== 'submitted') problems.push(requiredProblem(question));
  }
  return problems;
}

function requiredProblem(question: ChatInputQuestion): AnswerProblem {
  return problem(question, `question ${question.id} is required and has no submitted answer`, 'This question needs an answer.');
}

function problem(question: ChatInputQuestion, reason: string, advice: string): AnswerProblem {
  return { questionId: question.id, reason, advice };
}

/** `value` already has the kind `question` wants; constraints apply to submitted answers only. */
function checkValue(question: KnownChatInputQuestion, value: ChatInputAnswerValue, submitted: boolean): AnswerProblem | undefined {
  const subject = `question ${question.id}`;
  switch (question.kind) {
    case 'text': {
      if (!isAnswerValueOfKind(value, 'text') || !submitted) return undefined;
      const length = checkRange(question, `${subject}: answer length`, value.value.length, question.min, question.max, 'characters');
      if (length) return length;
      return checkFormat(question, value.value);
    }
    case 'number':
    case 'integer':
      if (!isAnswerValueOfKind(value, 'number')) return undefined;
      if (question.kind === 'integer' && !Number.isInteger(value.value)) {
        return problem(question, `${subject} needs a whole number, not ${value.value}`, 'Enter a whole number.');
      }
      return submitted ? checkRange(question, `${subject}: answer`, value.value, question.min, question.max, '') : undefined;
    case 'boolean':
      return undefined;
    case 'single-select':
      if (!isAnswerValueOfKind(value, 'selected') || !submitted) return undefined;
      return checkSelection(question, [value.value], value.freeformValues);
    case 'multi-select':
      if (!isAnswerValueOfKind(value, 'selected-many') || !submitted) return undefined;
      return (
        checkSelection(question, value.value, value.freeformValues) ??
        // Free-form entries are selections too ("in addition to" options).
        checkRange(question, `${subject}: number of selections`, value.value.length + (value.freeformValues?.length ?? 0), question.min, question.max, 'selections')
      );
  }
}

function checkRange(question: ChatInputQuestion, what: string, actual: number, min: number | undefined, max: number | undefined, unit: string): AnswerProblem | undefined {
  const advise = (bound: 'at least' | 'at most', n: number): string => {
    if (unit === 'characters') return `Use ${bound} ${n} character${n === 1 ? '' : 's'}.`;
    if (unit === 'selections') return bound === 'at least' ? `Choose at least ${n}.` : `Choose at most ${n}.`;
    return bound === 'at least' ? `Enter ${n} or more.` : `Enter ${n} or less.`;
  };
  if (min !== undefined && actual < min) return problem(question, `${what} ${actual} is below the minimum ${min}`, advise('at least', min));
  if (max !== undefined && actual > max) return problem(question, `${what} ${actual} is above the maximum ${max}`, advise('at most', max));
  return undefined;
}

/** Selections must be option ids, each at most once, unless the question allows free-form input. */
function checkSelection(question: SingleSelectQuestion | MultiSelectQuestion, selected: readonly string[], freeformValues: readonly string[] | undefined): AnswerProblem | undefined {
  const duplicate = selected.find((id, index) => selected.indexOf(id) !== index);
  if (duplicate !== undefined) return problem(question, `question ${question.id}: option ${duplicate} is selected more than once`, 'Choose each option once.');
  if (question.allowFreeformInput === true) return undefined;
  const optionIds = new Set(question.options.map((option) => option.id));
  const unknown = selected.find((id) => !optionIds.has(id));
  if (unknown !== undefined) return problem(question, `question ${question.id}: "${unknown}" is not one of its options`, 'Choose one of the listed options.');
  if (freeformValues && freeformValues.length > 0) return problem(question, `question ${question.id} does not accept free-form input`, 'Choose one of the listed options.');
  return undefined;
}

// ─── Formats ─────────────────────────────────────────────────────────────────

const EMAIL = /^[^\s@"<>(),;:]+@[^\s@"<>(),;:]+\.[^\s@"<>(),;:.]{2,}$/;
/** A scheme (RFC 3986) followed by a non-empty rest without spaces. */
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** `YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM]` (a browser's date-time field omits seconds and zone). */
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?$/;

function isCalendarDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  return day <= days;
}

function fitsFormat(format: string, text: string): boolean | undefined {
  switch (format) {
    case 'email':
      return EMAIL.test(text);
    case 'uri':
      return URI.test(text);
    case 'date':
      return isCalendarDate(text);
    case 'date-time': {
      const m = DATE_TIME.exec(text);
      return m !== null && isCalendarDate(m[1]!) && Number(m[2]) < 24 && Number(m[3]) < 60 && Number(m[4] ?? 0) < 60;
    }
    default:
      return undefined;
  }
}

const FORMAT_ADVICE: Readonly<Record<string, string>> = {
  email: 'Enter an email address like name@example.com.',
  uri: 'Enter a full link like https://example.com/page.',
  date: 'Enter a date as YYYY-MM-DD.',
  'date-time': 'Enter a date and time as YYYY-MM-DDTHH:MM.',
};

/** An empty text is left to min length and `required`; a non-empty one must fit its format. */
function checkFormat(question: KnownChatInputQuestion & { kind: 'text' }, text: string): AnswerProblem | undefined {
  const format = question.format;
  if (format === undefined || text === '' || fitsFormat(format, text) !== false) return undefined;
  return problem(question, `question ${question.id}: answer is not a valid ${format}`, FORMAT_ADVICE[format] ?? `Enter a valid ${format}.`);
}

/**
 * Why an input request's `url` is refused, or undefined for an http(s) URL. Surfaces open that URL
 * for the person answering (the app, editors through the ACP bridge): `javascript:`, `file:`,
 * `data:` and the like would run or read something on their machine, so they are never stored.
 */
export function inputRequestUrlRefusal(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  return /^https?:\/\/[^\s/?#]+[^\s]*$/i.test(url) ? undefined : `chat/inputRequested: url must be an http:// or https:// URL (got ${JSON.stringify(url.slice(0, 40))})`;
}
