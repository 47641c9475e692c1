/**
 * Every message in words with the next step, never a raw id, URI or code (issue 20): the sign-in
 * page after a refused token, the loser of an approve/deny race, Deny shown as "Denied", a
 * session that does not exist, and the notifications switch while the browser does not allow notifications.
 * Real headless Chromium against a hub on port 0 (see support.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Page, WebSocketRoute } from 'playwright-core';
import { TOKENS } from '../helpers/start-server.js';
import { BrowserHub, sessionPath } from './support.js';

const T = { timeout: 10_000 };
/** What no message may show: a hub URI, a UUID-like id, or a snake_case code. */
const RAW = /ahp-(session|chat):|[0-9a-f]{8}-[0-9a-f]{4}-|\b[a-z]+_[a-z_]+\b/;

describe('browser app: messages in words', () => {
  const hub = BrowserHub.perFile();

  async function openPage(path: string): Promise<Page> {
    const page = hub.watch(await (await hub.newContext()).newPage());
    await page.goto(`${hub.server.url}${path}`);
    return page;
  }

  it('sign-in: a wrong token says "missing or invalid" with what to do; no token shows the form without blame', async () => {
    const wrong = await openPage('/?token=not-a-real-token');
    const problem = wrong.locator('.signin [role=alert]');
    await problem.waitFor(T);
    await expect(problem.textContent()).resolves.toBe('That token is missing or invalid. Paste the access token you were given (or ask whoever runs the hub for one) and sign in again.');
    // Signing in with the right token from that page works.
    await wrong.locator('input[name=token]').fill(TOKENS.alice);
    await wrong.locator('.signin button[type=submit]').click();
    await wrong.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);

    const fresh = await openPage('/');
    await fresh.locator('.signin input[name=token]').waitFor(T);
    await expect(fresh.locator('.signin [role=alert]').count()).resolves.toBe(0);
    expect(hub.pageErrors).toEqual([]);
  });

  it('a lost approve/deny race names who won and what they chose; Deny reads "Denied", not "Cancelled"', async () => {
    const tool = { id: 'race-tool', name: 'drop_table', confirm: true };
    const { setup, session, chat } = await hub.scriptedSession(TOKENS.alice, 'Race', [{ tool }, { say: 'Done.' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/toolCallReady', 'tool ready');
    // Alice's tab: what the hub sends it can be held back, so her click races bob's denial.
    const context = await hub.newContext();
    const page = hub.watch(await context.newPage());
    let holding = false;
    const held: Array<() => void> = [];
    await page.routeWebSocket(/\/ahp/, (ws: WebSocketRoute) => {
      const server = ws.connectToServer();
      server.onMessage((m) => (holding ? held.push(() => ws.send(m)) : ws.send(m)));
      ws.onMessage((m) => server.send(m));
    });
    await page.goto(`${hub.server.url}${sessionPath(session)}?token=${TOKENS.alice}`);
    const approve = page.locator('[data-tool=race-tool] [data-action=Approve]');
    await approve.waitFor(T);

    holding = true;
    const bob = await hub.rpc(TOKENS.bob);
    const { state } = await bob.subscribe<{ activeTurn?: { id: string } }>(chat);
    const denied = await bob.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId: state.activeTurn!.id, toolCallId: 'race-tool', approved: false, reason: 'denied' });
    expect(denied.rejectionReason).toBeUndefined();
    await approve.click();
    holding = false;
    for (const send of held.splice(0)) send();

    const refusal = page.locator('[data-tool=race-tool] [data-testid=tool-refusal]');
    await refusal.waitFor(T);
    await expect(refusal.textContent()).resolves.toBe('bob denied this first.');
    await expect(page.locator('[data-tool=race-tool] [data-testid=tool-status]').textContent()).resolves.toBe('Denied');
    expect(hub.pageErrors).toEqual([]);
  });

  it('a session that does not exist says "not found" in words: no "Loading…", no URI', async () => {
    const page = await hub.open(TOKENS.alice, '/s/does-not-exist');
    await page.locator('h1', { hasText: 'Session not found' }).waitFor(T);
    const text = (await page.locator('main').textContent()) ?? '';
    expect(text).not.toContain('Loading…');
    expect(text).toContain('There is no such session here');
    expect(text).not.toMatch(RAW);
    expect(hub.pageErrors).toEqual([]);
  });

  it('the notifications switch explains itself when the browser does not allow notifications', async () => {
    const page = await hub.open(TOKENS.alice, '/');
    await expect(page.evaluate<string>('Notification.permission')).resolves.not.toBe('granted');
    await page.locator('[data-testid=notify-toggle]').click();
    const note = page.locator('[data-testid=notify-note]');
    await note.waitFor(T);
    await expect(note.textContent()).resolves.toMatch(/^(Your browser blocks notifications for this site\. Allow them in the site settings|Notifications were not allowed\. Turn them on again)/);
    await expect(page.locator('[data-testid=notify-toggle]').getAttribute('aria-pressed')).resolves.toBe('false');
    expect(hub.pageErrors).toEqual([]);
  });
});
