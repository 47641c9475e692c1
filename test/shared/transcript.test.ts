/** The transcript export (shared/state/transcript.ts): the words for each kind of entry, and Markdown rendered from the same entries as the JSON. */
import { describe, expect, it } from 'vitest';
import { initialChatState, type ChatState } from '../../shared/protocol/state.js';
import { answerInWords, transcriptMarkdown, transcriptOf } from '../../shared/state/transcript.js';

const AT = '2026-01-01T00:00:00.000Z';
const user = (text: string) => ({ text, origin: { kind: 'user' as const } });

function chat(): ChatState {
  const base = initialChatState('ahp-chat:/c', 'Main', AT);
  return {
    ...base,
    turns: [
      {
        id: 't1',
        startedAt: AT,
        message: user('Deploy please'),
        state: 'cancelled',
        usage: undefined,
        responseParts: [
          { kind: 'toolCall', toolCall: { status: 'cancelled', toolCallId: 'tc', toolName: 'deploy', displayName: 'Deploy', reason: 'denied' } },
          {
            kind: 'inputRequest',
            request: {
              id: 'r',
              message: 'Pick',
              questions: [{ id: 'env', kind: 'single-select', title: 'Environment', message: 'Where?', options: [{ id: 'prod', label: 'Production' }] }],
              answers: { env: { state: 'submitted', value: { kind: 'selected', value: 'prod' } } },
            },
            response: 'decline',
          },
        ],
      },
      { id: 't2', startedAt: AT, message: user('Again'), state: 'error', usage: undefined, responseParts: [], error: { errorType: 'network', message: 'model unreachable' } },
    ],
  } as unknown as ChatState;
}

describe('transcript export', () => {
  it('says what happened in each turn: a denied tool, a declined answer, a failed turn', () => {
    const t = transcriptOf(chat(), { uri: 'ahp-session:/s', title: 'Ops' }, AT);
    expect(t.turns.map((x) => x.entries.map((e) => e.kind))).toEqual([
      ['user', 'tool', 'input'],
      ['user', 'error'],
    ]);
    expect(transcriptMarkdown(t)).toBe(
      [
        '# Ops',
        '## Turn 1 (stopped)',
        '**User:**\n\nDeploy please',
        '**Tool Deploy:** Denied',
        '**Input request:** Pick — Declined\n\n- Environment: Production',
        '## Turn 2 (failed)',
        '**User:**\n\nAgain',
        '**Error:** model unreachable',
      ].join('\n\n') + '\n',
    );
  });

  it('words answers as the app does: Yes / No, option labels, free-form values, skipped, none', () => {
    expect(answerInWords({ state: 'submitted', value: { kind: 'boolean', value: false } } as never)).toBe('No');
    expect(
      answerInWords(
        { state: 'submitted', value: { kind: 'selected-many', value: ['a', 'b'], freeformValues: ['c'] } } as never,
        {
          id: 'q',
          kind: 'multi-select',
          message: 'm',
          options: [
            { id: 'a', label: 'A' },
            { id: 'b', label: 'B' },
          ],
        } as never,
      ),
    ).toBe('A, B, c');
    expect(answerInWords({ state: 'skipped' } as never)).toBe('skipped');
    expect(answerInWords(undefined)).toBe('—');
  });
});
