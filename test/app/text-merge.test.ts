/** Merging a text typed offline into a restarted hub's text (app/text-merge.ts). */
import { describe, expect, it } from 'vitest';
import { mergeOfflineText } from '../../app/text-merge.js';

describe('mergeOfflineText', () => {
  it('keeps the hub text when this tab changed nothing (it never writes its older text over a merge)', () => {
    expect(mergeOfflineText('Fixes login', 'Fixes login', 'Fixes login and logout')).toEqual({ kind: 'merged', text: 'Fixes login and logout' });
  });

  it('takes our edit when the hub text is what we had in common', () => {
    expect(mergeOfflineText('Fixes login', 'Fixes login and logout', 'Fixes login')).toEqual({ kind: 'merged', text: 'Fixes login and logout' });
  });

  it('applies both edits when they touch separate words', () => {
    expect(mergeOfflineText('Fixes login', 'Fixes login and logout', 'Hotfix: Fixes login')).toEqual({ kind: 'merged', text: 'Hotfix: Fixes login and logout' });
    expect(mergeOfflineText('one two three', 'one three', 'one two three four')).toEqual({ kind: 'merged', text: 'one three four' });
    expect(mergeOfflineText('one two three', 'zero one two three', 'one 2 three')).toEqual({ kind: 'merged', text: 'zero one 2 three' });
  });

  it('puts ours after theirs when both inserted at one place, and keeps one copy of words both typed', () => {
    expect(mergeOfflineText('Fixes login', 'Fixes login and logout', 'Fixes login, signup')).toEqual({ kind: 'merged', text: 'Fixes login, signup and logout' });
    expect(mergeOfflineText('Fixes login', 'Fixes login and logout', 'Fixes login and')).toEqual({ kind: 'merged', text: 'Fixes login and logout' });
  });

  it('keeps theirs when it already holds our words and more (our base was a draft older than what we sent)', () => {
    // Seen in Chromium: alice's base was the draft mirrored mid-typing, bob appended offline.
    expect(mergeOfflineText('Fixes lo', 'Fixes login 2', 'Fixes login 2 and logout')).toEqual({ kind: 'merged', text: 'Fixes login 2 and logout' });
    expect(mergeOfflineText('', 'Fixes login 5', 'Fixes login 5 and logout')).toEqual({ kind: 'merged', text: 'Fixes login 5 and logout' });
  });

  it('reports a conflict (hub text kept, ours handed back) when both changed the same words', () => {
    expect(mergeOfflineText('Fixes login', 'Fixes sign-in', 'Fixes log-in')).toEqual({ kind: 'conflict', text: 'Fixes log-in', ours: 'Fixes sign-in' });
  });

  it('is a no-op when both sides ended with the same text', () => {
    expect(mergeOfflineText('a', 'abc', 'abc')).toEqual({ kind: 'merged', text: 'abc' });
  });
});
