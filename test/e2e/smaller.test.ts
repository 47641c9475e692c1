/**
 * The smaller points of issue 20: a viewer cannot type into "Other" and is not told the agent
 * needs *their* input; the answerer's own tab says who answered a link request; a CLI script
 * cut to 80 characters still gets a human title and a chosen session id is shown in full; unsent
 * composer text survives a reload; "Completed … ago" counts from the turn's end; the phone top
 * bar stays on one row. Real headless Chromium against a hub on port 0 (see support.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { TOKENS } from '../helpers/start-server.js';
import { BrowserHub, sessionPath } from './support.js';

const T = { timeout: 10_000 };

describe('browser app: the smaller points', () => {
  const hub = BrowserHub.perFile();

  it('a viewer cannot type into "Other" and reads that the agent waits for an answer, not for theirs', async () => {
    const ask = { id: 'req-other', message: 'Pick one', questions: [{ id: 'lang', kind: 'single-select', title: 'Language', message: 'Which language?', options: [{ id: 'ts', label: 'TypeScript' }], allowFreeformInput: true }] };
    const { setup, session } = await hub.scriptedSession(TOKENS.alice, 'Viewer and Other', [{ ask }, { say: 'ok' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    const viewer = await hub.open(TOKENS.viewer, sessionPath(session));
    const form = viewer.locator('.input-request:not(.resolved)[data-request=req-other]');
    await form.waitFor(T);
    await expect(form.locator('input[aria-label=Other]').isDisabled()).resolves.toBe(true);
    await expect(form.locator('h2').textContent()).resolves.toBe('The agent is waiting for an answer');
    const author = await hub.open(TOKENS.alice, sessionPath(session));
    await expect(author.locator('.input-request:not(.resolved)[data-request=req-other] h2').textContent()).resolves.toBe('The agent needs your input');
    await expect(author.locator('.input-request:not(.resolved) input[aria-label=Other]').isDisabled()).resolves.toBe(false);
    expect(hub.pageErrors).toEqual([]);
  });

  it('the tab that marks a link request done shows who did, once the hub has recorded it', async () => {
    const ask = { id: 'req-url', message: 'Sign in to the registry', url: 'https://example.com/login' };
    const { setup, session } = await hub.scriptedSession(TOKENS.alice, 'Link request', [{ ask }, { say: 'ok' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    const form = page.locator('.input-request:not(.resolved)[data-request=req-url]');
    await form.locator('[data-testid=open-url]').waitFor(T);
    // The link opens in a new tab (closed right away); then "Mark as done" is enabled.
    const popup = page.context().waitForEvent('page');
    await form.locator('[data-testid=open-url]').click();
    await (await popup).close();
    await form.locator('[data-response=accept]').click();
    const by = page.locator('.input-request.resolved[data-request=req-url] [data-testid=answered-by]');
    await by.waitFor(T);
    await expect(by.textContent()).resolves.toMatch(/^Answered by alice · in the app/);
    expect(hub.pageErrors).toEqual([]);
  });

  it('a cut CLI script title reads as a title, a chosen session id is whole, and the phone top bar is one row', async () => {
    const script = JSON.stringify({ script: [{ say: 'Checking the nightly build logs' }, { sleep: 10 }, { say: 'done' }] });
    const setup = await hub.rpc(TOKENS.alice);
    const session = 'ahp-session:/nightly-build-check';
    await setup.request('createSession', { channel: session, title: script.slice(0, 60) });
    const page = await hub.open(TOKENS.alice, '/');
    const card = page.locator(`[data-session="${session}"]`);
    await card.waitFor(T);
    await expect(card.locator('.session-title').textContent()).resolves.toBe('Script: Checking the nightly build logs');
    await expect(card.locator('.session-id').textContent()).resolves.toBe('nightly-build-check');

    const phone = hub.watch(await (await hub.newContext({ viewport: { width: 390, height: 844 } })).newPage());
    await phone.goto(`${hub.server.url}/?token=${TOKENS.viewer}`);
    await phone.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor();
    const rows = await phone.evaluate<number>(
      `new Set([...document.querySelector('.topbar').children].filter((c) => c.offsetParent !== null).map((c) => Math.round(c.getBoundingClientRect().top + c.getBoundingClientRect().height / 2) >> 3)).size`,
    );
    expect(rows).toBe(1);
    expect(hub.pageErrors).toEqual([]);
  });

  it('unsent composer text survives a reload, and "Completed … ago" counts from the end of the turn', async () => {
    const { session } = await hub.scriptedSession(TOKENS.alice, 'Unsent text', [{ sleep: 1500 }, { say: 'Done.' }]);
    const page: Page = await hub.open(TOKENS.alice, sessionPath(session));
    const footer = page.locator('.turn-footer', { hasText: 'Completed' });
    await footer.waitFor(T);
    const times = await footer.evaluate((f) => {
      const turn = f.closest('[data-turn]');
      return { ended: f.querySelector('.ago')?.getAttribute('data-at') ?? '', text: f.textContent ?? '', id: turn?.getAttribute('data-turn') ?? '' };
    });
    const seconds = Number(/in (\d+\.\d) s/.exec(times.text)?.[1]);
    expect(seconds).toBeGreaterThanOrEqual(1.5);
    // The end is at least the turn's duration after its start (the footer's own figure).
    const setup = await hub.rpc(TOKENS.alice);
    const chat = page.url().includes('chat=') ? decodeURIComponent(new URL(page.url()).searchParams.get('chat')!) : undefined;
    const { state } = await setup.subscribe<{ defaultChat?: string }>(`ahp-session:/${session.replace('ahp-session:/', '')}`);
    const { state: chatState } = await setup.subscribe<{ turns: Array<{ id: string; startedAt: string; duration: number }> }>(chat ?? state.defaultChat!);
    const turn = chatState.turns.find((t) => t.id === times.id)!;
    expect(Date.parse(times.ended)).toBe(Date.parse(turn.startedAt) + turn.duration);

    await page.locator('[data-testid=composer]').fill('half-written thought');
    await page.reload();
    await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor();
    await expect(page.locator('[data-testid=composer]').inputValue()).resolves.toBe('half-written thought');
    await page.locator('[data-testid=composer]').press('Control+Enter');
    await page.locator('.user-message', { hasText: 'half-written thought' }).waitFor(T);
    await page.reload();
    await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor();
    await expect(page.locator('[data-testid=composer]').inputValue()).resolves.toBe('');
    expect(hub.pageErrors).toEqual([]);
  });
});
