/**
 * The first click after sending lands (issue 20): after Ctrl+Enter the composer must not change
 * the layout when the next press moves focus away from it, so the button under the pointer at
 * mousedown is still there at mouseup; and the composer never covers the newest message's
 * controls. Real mouse down/up on a desktop and a real tap on a 390×844 touch phone, in
 * Debian's headless Chromium against a hub on port 0 (see support.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { TOKENS } from '../helpers/start-server.js';
import { BrowserHub, sessionPath } from './support.js';

const T = { timeout: 10_000 };
/** Forty lines of agent text first, so the chat is scrolled and the composer sits over content. */
const LONG = Array.from({ length: 40 }, (_, i) => `Line ${i + 1} of the plan.`).join('\n\n');
const SCRIPT = JSON.stringify({ script: [{ say: LONG }, { tool: { id: 'deploy-now', name: 'deploy', confirm: true } }, { say: 'Deployed.' }] });

describe('browser app: the click after sending lands', () => {
  const hub = BrowserHub.perFile();

  /**
   * Records where the Approve button is at every mousedown/mouseup/touchstart/touchend and which
   * element the click landed on, in the page itself (nothing between the events can move it).
   */
  async function recordPointer(page: Page): Promise<void> {
    await page.evaluate(`(() => {
      window.__pointer = [];
      const where = (type, e) => {
        const b = document.querySelector('[data-tool=deploy-now] [data-action=Approve]');
        window.__pointer.push({ type, top: b ? Math.round(b.getBoundingClientRect().top) : null, target: e.target && e.target.dataset ? e.target.dataset.action ?? e.target.tagName : null });
      };
      for (const type of ['mousedown', 'mouseup', 'click', 'touchstart', 'touchend']) document.addEventListener(type, (e) => where(type, e), true);
    })()`);
  }

  async function sendScript(page: Page): Promise<void> {
    const composer = page.locator('[data-testid=composer]');
    await composer.click();
    await composer.fill(SCRIPT);
    await composer.press('Control+Enter');
    // The tool asks while the composer still has focus: nothing has been clicked since sending.
    await page.locator('[data-tool=deploy-now][data-tool-status=pending-confirmation] [data-action=Approve]').waitFor(T);
    await expect(page.evaluate<boolean>('document.activeElement === document.querySelector("[data-testid=composer]")')).resolves.toBe(true);
  }

  /** The Approve button is wholly above the sticky composer (not covered by it). */
  async function approveIsClearOfComposer(page: Page): Promise<boolean> {
    return page.evaluate<boolean>(`(() => {
      const b = document.querySelector('[data-tool=deploy-now] [data-action=Approve]').getBoundingClientRect();
      const c = document.querySelector('[data-testid=composer-form]').getBoundingClientRect();
      return b.bottom <= c.top && b.top >= 0;
    })()`);
  }

  async function expectApproved(page: Page): Promise<void> {
    await page.locator('[data-tool=deploy-now][data-tool-status=completed]').waitFor(T);
    const events = await page.evaluate<Array<{ type: string; top: number | null; target: string | null }>>('window.__pointer');
    const at = (type: string) => events.filter((e) => e.type === type);
    // The button did not move between the press and the release, and the click landed on it.
    const down = at('mousedown')[0]!;
    const up = at('mouseup')[0]!;
    expect(down.target).toBe('Approve');
    expect(up.top).toBe(down.top);
    expect(at('click')[0]?.target).toBe('Approve');
  }

  it('desktop: real mouse down and up on Approve right after Ctrl+Enter approves the tool', async () => {
    const { session } = await hub.scriptedSession(TOKENS.alice, 'Click after send', [{ say: 'Ready.' }]);
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    await page.locator('.turn-footer', { hasText: 'Completed' }).first().waitFor(T);
    await sendScript(page);
    await expect(approveIsClearOfComposer(page)).resolves.toBe(true);
    await recordPointer(page);
    const box = (await page.locator('[data-tool=deploy-now] [data-action=Approve]').boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.up();
    await expectApproved(page);
    expect(hub.pageErrors).toEqual([]);
  });

  it('phone 390×844: a tap on Approve right after sending approves it, and the composer never covers it', async () => {
    const { session } = await hub.scriptedSession(TOKENS.alice, 'Tap after send', [{ say: 'Ready.' }]);
    const context = await hub.newContext({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
    const page = hub.watch(await context.newPage());
    await page.goto(`${hub.server.url}${sessionPath(session)}?token=${TOKENS.alice}`);
    await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor();
    await page.locator('.turn-footer', { hasText: 'Completed' }).first().waitFor(T);
    await sendScript(page);
    await expect(approveIsClearOfComposer(page)).resolves.toBe(true);
    // Writing the next message grows the composer; the Approve button stays above it.
    await page.locator('[data-testid=composer]').fill('next: tag the release\nand tell the team');
    await expect.poll(() => page.locator('[data-testid=composer-form]').getAttribute('class'), T).toContain('expanded');
    await expect.poll(() => approveIsClearOfComposer(page), T).toBe(true);
    await recordPointer(page);
    await page.locator('[data-tool=deploy-now] [data-action=Approve]').tap({ noWaitAfter: true });
    await expectApproved(page);
    expect(hub.pageErrors).toEqual([]);
  });
});
