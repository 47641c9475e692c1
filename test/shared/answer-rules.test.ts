/**
 * The answer rules shared by the hub (rejections) and the browser app (advice at each field):
 * declared text formats, min/max, selection counts, required questions — each problem worded
 * twice from one check, and every problem of a form reported at once.
 */
import { describe, expect, it } from 'vitest';
import type { ChatInputAnswer, ChatInputQuestion, ChatInputRequest, ChatState } from '../../shared/protocol/state.js';
import { initialChatState } from '../../shared/protocol/state.js';
import { answerProblem, submitProblems } from '../../shared/state/answer-rules.js';
import { validateClientAction } from '../../shared/state/validate-action.js';

const text = (value: string): ChatInputAnswer => ({ state: 'submitted', value: { kind: 'text', value } });
const q = (format: string): ChatInputQuestion => ({ kind: 'text', id: 'field', message: 'x', format });

describe('declared text formats', () => {
  it.each([
    ['email', 'ada@example.com', true],
    ['email', 'not-an-email', false],
    ['email', 'ada@localhost', false],
    ['email', 'a b@example.com', false],
    ['uri', 'https://example.com/a?b=c', true],
    ['uri', 'mailto:ada@example.com', true],
    ['uri', 'example.com', false],
    ['uri', 'https://exa mple.com', false],
    ['date', '2026-02-28', true],
    ['date', '2028-02-29', true],
    ['date', '2026-02-29', false],
    ['date', '2026-13-01', false],
    ['date', 'tomorrow', false],
    ['date-time', '2026-11-30T09:30', true],
    ['date-time', '2026-11-30T09:30:15.123Z', true],
    ['date-time', '2026-11-30T09:30+01:00', true],
    ['date-time', '2026-11-30T24:00', false],
    ['date-time', '2026-11-30', false],
  ])('%s: %j fits = %s', (format, value, fits) => {
    const found = answerProblem(q(format), text(value));
    if (fits) expect(found).toBeUndefined();
    else expect(found).toMatchObject({ questionId: 'field', reason: `question field: answer is not a valid ${format}` });
  });

  it('treats unknown formats as hints and leaves empty text to min length', () => {
    expect(answerProblem(q('color'), text('not a colour'))).toBeUndefined();
    expect(answerProblem(q('email'), text(''))).toBeUndefined();
  });

  it('checks formats on submitted answers only, so a half-typed draft is fine', () => {
    expect(answerProblem(q('email'), { state: 'draft', value: { kind: 'text', value: 'ada@' } })).toBeUndefined();
  });

  it('words the advice for a person, without ids', () => {
    expect(answerProblem(q('email'), text('not-an-email'))?.advice).toBe('Enter an email address like name@example.com.');
  });
});

describe('submitProblems', () => {
  const questions: ChatInputQuestion[] = [
    { kind: 'text', id: 'email', title: 'Email', message: 'x', format: 'email', required: true },
    { kind: 'boolean', id: 'ok', message: 'Continue?', required: true },
    { kind: 'multi-select', id: 'tags', message: 'Tags', max: 3, options: ['a', 'b', 'c', 'd'].map((id) => ({ id, label: id.toUpperCase() })) },
    { kind: 'integer', id: 'n', message: 'How many?', min: 1 },
  ];

  it('reports every problem at once, in form order, with advice per field', () => {
    const problems = submitProblems(questions, {
      email: text('not-an-email'),
      tags: { state: 'submitted', value: { kind: 'selected-many', value: ['a', 'b', 'c', 'd'] } },
      n: { state: 'submitted', value: { kind: 'number', value: 0 } },
    });
    expect(problems.map((p) => [p.questionId, p.advice])).toEqual([
      ['email', 'Enter an email address like name@example.com.'],
      ['ok', 'This question needs an answer.'],
      ['tags', 'Choose at most 3.'],
      ['n', 'Enter 1 or more.'],
    ]);
  });

  it('accepts No as a real answer to a required yes/no question', () => {
    expect(submitProblems(questions.slice(1, 2), { ok: { state: 'submitted', value: { kind: 'boolean', value: false } } })).toEqual([]);
  });
});

describe('the hub enforces the same rules on dispatched answers', () => {
  const request: ChatInputRequest = { id: 'r1', message: 'Contact?', questions: [{ kind: 'text', id: 'email', message: 'Email', format: 'email' }] };
  const chat: ChatState = {
    ...initialChatState('ahp-chat:/c1', 'Chat', '2026-01-01T00:00:00.000Z'),
    activeTurn: { id: 't1', startedAt: '2026-01-01T00:00:00.000Z', message: { text: 'go', origin: { kind: 'user' } }, responseParts: [{ kind: 'inputRequest', request }] },
  } as ChatState;
  const ctx = { channelKind: 'chat' as const, chat, clientId: 'c' };

  it('rejects a submitted answer that is not an email, and accepts one that is', () => {
    expect(validateClientAction(ctx, { type: 'chat/inputCompleted', requestId: 'r1', response: 'accept', answers: { email: text('not-an-email') } } as { type: string })).toBe('question email: answer is not a valid email');
    expect(validateClientAction(ctx, { type: 'chat/inputCompleted', requestId: 'r1', response: 'accept', answers: { email: text('ada@example.com') } } as { type: string })).toBeUndefined();
  });
});
