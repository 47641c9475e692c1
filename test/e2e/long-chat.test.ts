/**
 * A long chat opens with only its newest turns built (app/chat-view.ts `TURN_WINDOW`; the newest
 * `OPEN_TURNS` of them at once, the rest on the next frames): the newest turn is on screen, older
 * turns are built a window at a time as the "earlier turns" button at the top comes near the
 * viewport, the turn that was at the top stays where it was on screen, and the
 * button (for keyboard and screen-reader users, and before find-in-page) builds them too.
 */
import { describe, expect, it } from 'vitest';
import { TOKENS } from '../helpers/start-server.js';
import { BrowserHub, sessionPath } from './support.js';

const TURNS = 130;
const WINDOW = 40;
const hub = BrowserHub.perFile();

describe('a long chat in the browser', () => {
  it('builds its newest turns first and older ones as they are scrolled to, without moving what is on screen', async () => {
    const alice = await hub.rpc(TOKENS.alice);
    const agent = await hub.rpc(TOKENS.agent);
    const session = 'ahp-session:/long-chat-e2e';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote', title: 'Long chat' });
    for (let i = 0; i < TURNS; i++) {
      const turnId = `turn-${i}`;
      alice.dispatch(chat, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: { text: `question ${i}`, origin: { kind: 'user' } } });
      // The agent's actions follow the user's turnStarted: wait for each turn to start first.
      await alice.waitForEnvelope((e) => e.action.type === 'chat/turnStarted' && e.action['turnId'] === turnId, `turn ${i} started`);
      agent.dispatch(chat, { type: 'chat/responsePart', turnId, part: { kind: 'markdown', id: 'md', content: `answer ${i}\n\n${'words '.repeat(40)}` } });
      const done = { type: 'chat/turnComplete', turnId, duration: 1 };
      expect((await agent.dispatchAndWait(chat, done)).rejectionReason).toBeUndefined();
    }
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    const newest = page.locator(`article.turn[data-turn="turn-${TURNS - 1}"]`);
    await newest.locator('.part.md', { hasText: `answer ${TURNS - 1}` }).waitFor();
    await expect.poll(() => newest.evaluate((e) => e.getBoundingClientRect().top < (globalThis as unknown as { innerHeight: number }).innerHeight)).toBe(true);
    const turns = page.locator('article.turn');
    // The task that got the snapshot built the newest few; the rest of the window follows a frame later.
    await expect.poll(() => turns.count()).toBe(WINDOW);
    const earlier = page.getByTestId('earlier-turns');
    expect(await earlier.textContent()).toBe(`Show ${TURNS - WINDOW} earlier turns`);
    expect(await turns.first().getAttribute('data-turn')).toBe(`turn-${TURNS - WINDOW}`);

    // Scrolled to the top: the next window is built above, and the turn that was first stays put.
    const firstBefore = page.locator(`article.turn[data-turn="turn-${TURNS - WINDOW}"]`);
    await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
    await expect.poll(() => turns.count()).toBeGreaterThan(WINDOW);
    const top = await firstBefore.evaluate((e) => e.getBoundingClientRect().top);
    expect(top).toBeGreaterThan(0);
    expect(top).toBeLessThan(900);

    // The button builds the rest (keyboard: focus and Enter).
    while ((await turns.count()) < TURNS) {
      await expect.poll(async () => (await earlier.count()) === 0 || (await turns.count()) === TURNS || (await earlier.isVisible())).toBe(true);
      if ((await earlier.count()) === 0) break;
      await earlier.focus();
      await page.keyboard.press('Enter');
    }
    await expect.poll(() => turns.count()).toBe(TURNS);
    expect(await earlier.count()).toBe(0);
    expect(await turns.first().getAttribute('data-turn')).toBe('turn-0');
    // Every turn in order.
    const order = await turns.evaluateAll((list) => list.map((t) => t.getAttribute('data-turn')));
    expect(order).toEqual(Array.from({ length: TURNS }, (_, i) => `turn-${i}`));
    expect(hub.pageErrors).toEqual([]);
  }, 120_000);
});
