/**
 * Every tab says who did it, in a person's words (issue 20): a stopped turn names who stopped it
 * in the other tabs (live, and in a tab opened afterwards from the snapshot), and in dev mode,
 * where every answer is the hub's one local user "dev", other tabs say "you" rather than "dev".
 * Real headless Chromium against hubs on port 0 (see support.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startTestServer, TOKENS } from '../helpers/start-server.js';
import { BrowserHub, sessionPath } from './support.js';

const T = { timeout: 15_000 };

describe('browser app: who did it', () => {
  const hub = BrowserHub.perFile();

  const footer = (page: Page) => page.locator('article.turn .turn-footer').last();

  it('a stopped turn says who stopped it in the other tabs, live and after a reload', async () => {
    const { session } = await hub.scriptedSession(TOKENS.alice, 'Stop me', [{ say: 'Working on it.' }, { sleep: 60_000 }, { say: 'Done.' }]);
    const alice = await hub.open(TOKENS.alice, sessionPath(session));
    const bob = await hub.open(TOKENS.bob, sessionPath(session));
    await bob.locator('[data-testid=stop]').waitFor(T);
    await alice.locator('[data-testid=stop]').click();
    await expect.poll(() => footer(bob).textContent(), T).toMatch(/^Stopped by alice after \d+\.\d s/);
    await expect.poll(() => footer(alice).textContent(), T).toMatch(/^Stopped by you after \d+\.\d s/);
    // A tab opened later reads it from the snapshot (the stamp is kept beside the chat state).
    const victor = await hub.open(TOKENS.viewer, sessionPath(session));
    await expect.poll(() => footer(victor).textContent(), T).toMatch(/^Stopped by alice after \d+\.\d s/);
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  it('in dev mode an answer from another tab reads "you", never the principal name "dev"', async () => {
    const dev = await startTestServer({ staticDir: 'dist/app' });
    try {
      const a = hub.watch(await (await hub.newContext()).newPage());
      const b = hub.watch(await (await hub.newContext()).newPage());
      await a.goto(`${dev.url}/`);
      await a.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
      await a.locator('[data-testid=new-session-title]').fill('Dev answers');
      await a.locator('[data-testid=new-session]').click();
      await a.locator('[data-testid=empty-chat]').waitFor(T);
      const script = { script: [{ tool: { id: 'ship-tool', name: 'deploy', confirm: true } }, { sleep: 60_000 }] };
      await a.locator('[data-testid=composer]').fill(JSON.stringify(script));
      await a.locator('[data-testid=send]').click();
      await b.goto(a.url());
      const approve = a.locator('[data-tool=ship-tool] [data-action=Approve]');
      await approve.waitFor(T);
      await b.locator('[data-tool=ship-tool] [data-action=Approve]').waitFor(T);
      await approve.click();
      const by = b.locator('[data-tool=ship-tool] [data-testid=answered-by]');
      await expect.poll(() => by.textContent(), T).toMatch(/^Approved by you · in the app · \d\d:\d\d/);
      // Stopping it from tab A: tab B says "you" too.
      await a.locator('[data-testid=stop]').click();
      await expect.poll(() => footer(b).textContent(), T).toMatch(/^Stopped by you after /);
      expect(await b.locator('article.turn').last().textContent()).not.toMatch(/\bdev\b/);
    } finally {
      await dev.stop();
    }
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);
});
