import { describe, expect, it } from 'vitest';
import { composerSends, type EnterPress } from '../../app/composer-keys.js';

const press = (over: Partial<EnterPress>): EnterPress => ({ key: 'Enter', shiftKey: false, altKey: false, isComposing: false, keyCode: 13, ...over });

describe('composer keys', () => {
  it('Enter sends; Shift+Enter and Alt+Enter make a new line', () => {
    expect(composerSends(press({}))).toBe(true);
    expect(composerSends(press({ shiftKey: true }))).toBe(false);
    expect(composerSends(press({ altKey: true }))).toBe(false);
  });

  it('Enter that ends an input method composition never sends', () => {
    expect(composerSends(press({ isComposing: true }))).toBe(false);
    expect(composerSends(press({ keyCode: 229 }))).toBe(false);
  });

  it('other keys never send', () => {
    expect(composerSends(press({ key: 'a', keyCode: 65 }))).toBe(false);
  });
});
