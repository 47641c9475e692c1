/**
 * Sessions a team can manage (issue 28, items 7 and 8), in real headless Chromium against a hub
 * in this process: rename, archive and unarchive (gone from the default dashboard and from "Next
 * chat that needs input", listed under the Archived filter that the address remembers), and
 * delete with a confirmation, allowed to the owner only.
 */
import { describe, expect, it } from 'vitest';
import { TOKENS } from '../helpers/start-server.js';
import { TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { BrowserHub, sessionPath } from './support.js';

const T = { timeout: 10_000 };

describe('browser app: managing sessions', () => {
  const hub = BrowserHub.perFile();

  it('renames a session from its page; a teammate’s dashboard shows the new title live', async () => {
    const { session, setup } = await hub.scriptedSession(TOKENS.alice, 'Untitled incident', [{ say: 'Looking.' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn end');
    const dashboard = await hub.open(TOKENS.bob, '/');
    const card = dashboard.locator(`[data-session="${session}"]`);
    await card.locator('.session-title', { hasText: 'Untitled incident' }).waitFor(T);

    const page = await hub.open(TOKENS.alice, sessionPath(session));
    await page.locator('h1.session-title', { hasText: 'Untitled incident' }).waitFor(T);
    await page.locator('[data-testid=rename-session]').click();
    // A blank title is refused in words, and nothing changes.
    await page.locator('[data-testid=rename-input]').fill('   ');
    await page.locator('[data-testid=rename-save]').click();
    await page.locator('[data-testid=session-action-error]', { hasText: 'Enter a title' }).waitFor(T);
    await page.locator('[data-testid=rename-input]').fill('Login outage 12 Dec');
    await page.locator('[data-testid=rename-save]').click();
    await page.locator('h1.session-title', { hasText: 'Login outage 12 Dec' }).waitFor(T);
    await card.locator('.session-title', { hasText: 'Login outage 12 Dec' }).waitFor(T);
    expect((await setup.subscribe<{ title: string }>(session)).state.title).toBe('Login outage 12 Dec');
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  it('archives a waiting session: it leaves the default view and “Next chat that needs input”, shows under Archived (kept in the address), and comes back when unarchived', async () => {
    const { session, setup } = await hub.scriptedSession(TOKENS.alice, 'Abandoned question', [{ ask: TWO_QUESTION_REQUEST }, { say: 'never reached' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    const dashboard = await hub.open(TOKENS.bob, '/');
    const card = dashboard.locator(`[data-session="${session}"]`);
    await card.locator('[data-testid=status]', { hasText: 'Needs input' }).waitFor(T);
    await dashboard.locator('[data-testid=next-needs-input]:not([hidden])').waitFor(T);

    const page = await hub.open(TOKENS.alice, sessionPath(session));
    await page.locator('[data-testid=archive-session]', { hasText: 'Archive' }).click();
    await page.locator('[data-testid=archived-badge]:not([hidden])').waitFor(T);
    await page.locator('[data-testid=archive-session]', { hasText: 'Unarchive' }).waitFor(T);

    // Bob's dashboard: gone from the default view, and nothing else waits, so no "Next chat" button.
    await card.waitFor({ state: 'detached', ...T });
    await dashboard.locator('[data-testid=next-needs-input]').waitFor({ state: 'hidden', ...T });
    await expect.poll(() => dashboard.title(), T).not.toMatch(/need input/);
    await dashboard.locator('[data-testid=filter-archived]').check();
    await card.locator('[data-testid=archived]').waitFor(T);
    expect(new URL(dashboard.url()).searchParams.get('archived')).toBe('1');
    // The filter is in the address: a reload shows the same list.
    await dashboard.reload();
    await dashboard.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
    await expect(dashboard.locator('[data-testid=filter-archived]').isChecked()).resolves.toBe(true);
    await card.locator('[data-testid=archived]').waitFor(T);

    await page.locator('[data-testid=archive-session]', { hasText: 'Unarchive' }).click();
    await page.locator('[data-testid=archived-badge]').waitFor({ state: 'hidden', ...T });
    await card.waitFor({ state: 'detached', ...T });
    await dashboard.locator('[data-testid=filter-archived]').uncheck();
    await card.locator('[data-testid=status]', { hasText: 'Needs input' }).waitFor(T);
    await dashboard.locator('[data-testid=next-needs-input]:not([hidden])').waitFor(T);
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  it('deletes a session after a confirmation, as its owner; a teammate is refused with the reason and a viewer is not offered it', async () => {
    const { session, setup } = await hub.scriptedSession(TOKENS.alice, 'Scratch session', [{ say: 'Nothing to keep.' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn end');

    const viewer = await hub.open(TOKENS.viewer, sessionPath(session));
    await viewer.locator('[data-testid=export-markdown]').waitFor(T);
    await expect(viewer.locator('[data-testid=delete-session], [data-testid=rename-session], [data-testid=archive-session]').count()).resolves.toBe(0);

    const bob = await hub.open(TOKENS.bob, sessionPath(session));
    await bob.locator('[data-testid=delete-session]').click();
    await bob.locator('[data-testid=delete-confirm-yes]').click();
    await bob.locator('[data-testid=session-action-error]', { hasText: "only the session's owner (alice) or an admin can delete this session" }).waitFor(T);

    const dashboard = await hub.open(TOKENS.bob, '/');
    const card = dashboard.locator(`[data-session="${session}"]`);
    await card.waitFor(T);

    const page = await hub.open(TOKENS.alice, sessionPath(session));
    await page.locator('[data-testid=delete-session]').click();
    await page.locator('[data-testid=delete-confirm]', { hasText: 'Scratch session' }).waitFor(T);
    await page.locator('[data-testid=delete-cancel]').click();
    await page.locator('[data-testid=delete-confirm]').waitFor({ state: 'detached', ...T });
    expect((await setup.request<{ items: Array<{ resource: string }> }>('listSessions', { channel: 'ahp-root://' })).items.some((s) => s.resource === session)).toBe(true);

    await page.locator('[data-testid=delete-session]').click();
    await page.locator('[data-testid=delete-confirm-yes]').click();
    await expect.poll(() => new URL(page.url()).pathname, T).toBe('/');
    await card.waitFor({ state: 'detached', ...T });
    expect((await setup.request<{ items: Array<{ resource: string }> }>('listSessions', { channel: 'ahp-root://' })).items.some((s) => s.resource === session)).toBe(false);
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);
});
