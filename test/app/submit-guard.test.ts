/**
 * Submit's question (app/submit-guard.ts) and who changed what (app/form-draft-sync.ts), with
 * explicit times: the rules behind "bob changed “Severity” to SEV3 just now" and "bob is still
 * typing in “Summary”". The browser side is in test/e2e/shared-form.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { ChannelChange } from '../../shared/client/channel-view.js';
import { DraftActivity, freeTextOf, pickedIds, teammateDraftOf } from '../../app/form-draft-sync.js';
import { RECENT_CHANGE_MS, submitWarnings, type GuardQuestion } from '../../app/submit-guard.js';

const QUESTIONS: GuardQuestion[] = [
  { id: 'sev', title: 'Severity', kind: 'single-select' },
  { id: 'summary', title: 'Summary', kind: 'text' },
];
const SHOWN: Record<string, string> = { sev: 'SEV3', summary: 'DB failover' };
const shownText = (id: string): string => SHOWN[id] ?? '—';

describe('submitWarnings', () => {
  it('asks about a teammate’s change within the window, naming who, what and the value shown', () => {
    const activity = new DraftActivity();
    activity.notePresence([{ name: 'bob', question: 'sev' }]);
    activity.noteChange('sev', 10_000);
    const at = (now: number) => submitWarnings({ now, questions: QUESTIONS, changes: activity.recent(now, RECENT_CHANGE_MS), editing: [], shownText });
    expect(at(10_200)).toEqual(['bob changed “Severity” to SEV3 just now.']);
    expect(at(12_000)).toEqual(['bob changed “Severity” to SEV3 2 s ago.']);
    // Past the window nothing is asked.
    expect(at(10_000 + RECENT_CHANGE_MS + 1)).toEqual([]);
  });

  it('names the last editor presence showed, when the change arrives after they left the question', () => {
    const activity = new DraftActivity();
    activity.notePresence([{ name: 'bob', question: 'sev' }]);
    activity.notePresence([{ name: 'bob', question: null }]);
    activity.noteChange('sev', 5_000);
    expect(activity.recent(5_000, RECENT_CHANGE_MS)).toEqual([{ questionId: 'sev', who: 'bob', at: 5_000 }]);
    // Nobody ever shown editing it: the line still asks, without a name.
    const anonymous = new DraftActivity();
    anonymous.noteChange('sev', 5_000);
    expect(submitWarnings({ now: 5_000, questions: QUESTIONS, changes: anonymous.recent(5_000, RECENT_CHANGE_MS), editing: [], shownText })).toEqual(['A teammate changed “Severity” to SEV3 just now.']);
  });

  it('warns that someone is still typing: presence in a text answer, or its text changed just now', () => {
    const inSummary = [{ name: 'bob', question: 'summary' }];
    expect(submitWarnings({ now: 0, questions: QUESTIONS, changes: [], editing: inSummary, shownText })).toEqual(['bob is still typing in “Summary”.']);
    expect(submitWarnings({ now: 1_000, questions: QUESTIONS, changes: [{ questionId: 'summary', who: 'carol', at: 0 }], editing: inSummary, shownText })).toEqual(['bob and carol are still typing in “Summary”.']);
    // Focus in a choice question is not typing; an old text change is not either.
    expect(submitWarnings({ now: 60_000, questions: QUESTIONS, changes: [{ questionId: 'summary', who: 'carol', at: 0 }], editing: [{ name: 'bob', question: 'sev' }], shownText })).toEqual([]);
  });

  it('lists every unsettled answer in form order', () => {
    const lines = submitWarnings({
      now: 1_000,
      questions: QUESTIONS,
      changes: [
        { questionId: 'summary', who: 'carol', at: 900 },
        { questionId: 'sev', who: 'bob', at: 800 },
      ],
      editing: [],
      shownText,
    });
    expect(lines).toEqual(['bob changed “Severity” to SEV3 just now.', 'carol is still typing in “Summary”.']);
  });
});

describe('teammateDraftOf', () => {
  const envelope = (origin: { clientId: string; clientSeq: number } | undefined, action: Record<string, unknown>, rejectionReason?: string): ChannelChange => ({
    type: 'envelope',
    replayed: false,
    envelope: { channel: 'ahp-chat:/c', serverSeq: 7, action: { type: 'chat/inputAnswerChanged', requestId: 'r1', questionId: 'sev', ...action }, ...(origin ? { origin } : {}), ...(rejectionReason ? { rejectionReason } : {}) },
  });

  it('is the question of another client’s accepted draft in this request', () => {
    expect(teammateDraftOf(envelope({ clientId: 'bob-tab', clientSeq: 1 }, {}), 'r1', 'alice-tab')).toBe('sev');
  });

  it('ignores own echoes, the hub’s own mirror drafts, rejections, other requests and other actions', () => {
    expect(teammateDraftOf(envelope({ clientId: 'alice-tab', clientSeq: 1 }, {}), 'r1', 'alice-tab')).toBeUndefined();
    expect(teammateDraftOf(envelope(undefined, {}), 'r1', 'alice-tab')).toBeUndefined();
    expect(teammateDraftOf(envelope({ clientId: 'bob-tab', clientSeq: 1 }, {}, 'refused'), 'r1', 'alice-tab')).toBeUndefined();
    expect(teammateDraftOf(envelope({ clientId: 'bob-tab', clientSeq: 1 }, { requestId: 'r2' }), 'r1', 'alice-tab')).toBeUndefined();
    expect(teammateDraftOf(envelope({ clientId: 'bob-tab', clientSeq: 1 }, { type: 'chat/inputCompleted' }), 'r1', 'alice-tab')).toBeUndefined();
    expect(teammateDraftOf({ type: 'reset', fromSeq: 3 }, 'r1', 'alice-tab')).toBeUndefined();
  });
});

describe('synced choice answers', () => {
  it('reads the picked option ids and the free text of single and multi answers', () => {
    expect(pickedIds({ state: 'draft', value: { kind: 'selected', value: 'sev3' } })).toEqual(['sev3']);
    expect(pickedIds({ state: 'draft', value: { kind: 'selected-many', value: ['db', 'api'], freeformValues: ['dns'] } })).toEqual(['db', 'api']);
    expect(freeTextOf({ state: 'draft', value: { kind: 'selected-many', value: ['db'], freeformValues: ['dns'] } })).toBe('dns');
    expect(pickedIds({ state: 'skipped' })).toEqual([]);
    expect(pickedIds(undefined)).toEqual([]);
    expect(freeTextOf(undefined)).toBe('');
  });
});
