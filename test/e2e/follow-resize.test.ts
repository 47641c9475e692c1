/**
 * Following the end when the window changes, and a new question held at its top (app/chat-follow.ts).
 * A shorter window keeps the scroll offset, so a followed chat's end (the last turn's footer, its
 * Stop and copy-link buttons) would slip under the sticky composer: the page goes back to the end.
 * A question that appears is shown from its top, below the sticky top bar, and stays there while
 * its own fields finish drawing. Real headless Chromium against a hub on port 0 (support.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { TOKENS } from '../helpers/start-server.js';
import { BrowserHub, sessionPath } from './support.js';

const T = { timeout: 10_000 };
/** Forty lines of agent text: the chat is taller than the window. */
const LONG = Array.from({ length: 40 }, (_, i) => `Line ${i + 1} of the analysis.`).join('\n\n');
/** Tall enough to nearly fill a 1100×900 window: at its top, the end is a few pixels below. */
const FORM = {
  id: 'tall-form',
  message: 'Three questions before the release.',
  questions: [
    { id: 'name', kind: 'text', title: 'Project name', message: 'What is the project called?', required: true, max: 40 },
    {
      id: 'runtime',
      kind: 'single-select',
      title: 'Runtime',
      message: 'Which runtime?',
      options: [
        { id: 'node', label: 'Node.js', recommended: true },
        { id: 'deno', label: 'Deno' },
      ],
      allowFreeformInput: true,
    },
    {
      id: 'targets',
      kind: 'multi-select',
      title: 'Targets',
      message: 'Where should it run?',
      options: [
        { id: 'linux', label: 'Linux' },
        { id: 'mac', label: 'macOS' },
      ],
      max: 2,
    },
    { id: 'ship', kind: 'boolean', title: 'Ship now', message: 'Ship it today?', required: true },
  ],
};

describe('browser app: following the end as the window changes', () => {
  const hub = BrowserHub.perFile();
  const box = async (page: Page, selector: string) => (await page.locator(selector).first().boundingBox())!;
  /** The last turn's footer is on screen and wholly above the composer. */
  const footerClear = async (page: Page): Promise<boolean> => {
    const footer = await box(page, '.transcript > .turn:last-child .turn-footer');
    return footer.y > 0 && footer.y + footer.height <= (await box(page, '[data-testid=composer-form]')).y;
  };
  /** Two frames and the task after them: whatever the page follows after layout has run. */
  const settled = (page: Page) => page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(resolve, 0))))');

  it('a shorter window brings a followed chat back to its end, the footer above the composer', async () => {
    const { setup, session } = await hub.scriptedSession(TOKENS.alice, 'Resized', [{ say: LONG }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn end');
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    await page.locator('.turn-footer', { hasText: 'Completed' }).waitFor(T);
    await expect.poll(() => footerClear(page), T).toBe(true);
    // 200 px shorter, the same width: the transcript keeps its size, only the window changed.
    await page.setViewportSize({ width: 1100, height: 700 });
    await expect.poll(() => footerClear(page), T).toBe(true);
    await expect(page.evaluate<boolean>('window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 1')).resolves.toBe(true);
    expect(await page.locator('[data-testid=jump-latest]').isHidden()).toBe(true);
    expect(hub.pageErrors).toEqual([]);
  }, 30_000);

  it('a new question is shown from its top, below the top bar, and stays there as its fields draw', async () => {
    const { setup, session } = await hub.scriptedSession(TOKENS.alice, 'Tall form', [{ ask: FORM }, { say: 'Thanks.' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    const form = page.locator('.input-request:not(.resolved)[data-request=tall-form]');
    // The text field's shared cursors are drawn once its document is joined: the form grows then.
    await form.locator('.cursor-host').waitFor({ state: 'attached', ...T });
    await settled(page);
    const top = (await box(page, '.input-request[data-request=tall-form]')).y;
    expect(top).toBeGreaterThanOrEqual((await box(page, '.topbar')).y + (await box(page, '.topbar')).height);
    expect(top).toBeLessThan(100);
    // Then the window changes: the end is followed again, the footer clear of the composer.
    await page.setViewportSize({ width: 1280, height: 800 });
    await expect.poll(() => footerClear(page), T).toBe(true);
    expect(hub.pageErrors).toEqual([]);
  }, 30_000);
});
