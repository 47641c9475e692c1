/**
 * Sessions a team can manage (issue 28, items 7 and 8), in real headless Chromium against a hub
 * in this process: rename, archive and unarchive (gone from the default dashboard and from "Next
 * chat that needs input", listed under the Archived filter that the address remembers), and
 * delete with a confirmation, allowed to the owner only.
 */
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { TOKENS } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
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

  it('deletes a session after a confirmation, as its owner; neither a teammate nor a viewer is offered it', async () => {
    const { session, setup } = await hub.scriptedSession(TOKENS.alice, 'Scratch session', [{ say: 'Nothing to keep.' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn end');

    const viewer = await hub.open(TOKENS.viewer, sessionPath(session));
    await viewer.locator('[data-testid=export-markdown]').waitFor(T);
    await expect(viewer.locator('[data-testid=delete-session], [data-testid=rename-session], [data-testid=archive-session]').count()).resolves.toBe(0);

    // Bob may rename and archive alice's session but not delete it: no Delete for him (the hub
    // refuses him anyway: session-manage.test.ts at the hub).
    const bob = await hub.open(TOKENS.bob, sessionPath(session));
    await bob.locator('[data-testid=rename-session]').waitFor(T);
    await expect(bob.locator('[data-testid=delete-session]').isHidden()).resolves.toBe(true);

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

  it('filters the dashboard by owner and agent, and the address keeps the filters for a reload', async () => {
    const mine = await (await hub.rpc(TOKENS.bob)).createSession('Bob’s own');
    const theirs = await (await hub.rpc(TOKENS.alice)).createSession('Alice’s');
    const dashboard = await hub.open(TOKENS.bob, '/');
    await dashboard.locator(`[data-session="${theirs.session}"]`).waitFor(T);
    await dashboard.locator('[data-testid=filter-mine]').check();
    await dashboard.locator(`[data-session="${theirs.session}"]`).waitFor({ state: 'detached', ...T });
    await dashboard.locator(`[data-session="${mine.session}"]`).waitFor(T);
    await dashboard.locator('[data-testid=filter-agent]').selectOption('demo');
    const params = new URL(dashboard.url()).searchParams;
    expect([params.get('mine'), params.get('agent')]).toEqual(['1', 'demo']);
    await dashboard.reload();
    await dashboard.locator(`[data-session="${mine.session}"]`).waitFor(T);
    await expect(dashboard.locator('[data-testid=filter-mine]').isChecked()).resolves.toBe(true);
    await expect(dashboard.locator('[data-testid=filter-agent]').inputValue()).resolves.toBe('demo');
    await expect(dashboard.locator(`[data-session="${theirs.session}"]`).count()).resolves.toBe(0);
    // An agent no session uses: nothing matches, and the page says so.
    await dashboard.goto(`${hub.server.url}/?agent=remote`);
    await dashboard.locator('.sessions .empty', { hasText: 'No sessions match these filters.' }).waitFor(T);
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  /** A session of `count` finished turns; turn `at` (0-based) says `word`. Returns the turn ids. */
  async function longSession(title: string, count: number, at: number, word: string): Promise<{ session: string; chat: string; turns: string[] }> {
    const setup = await hub.rpc(TOKENS.alice);
    const { session, chat } = await setup.createSession(title);
    await setup.subscribe(chat);
    const turns: string[] = [];
    for (let i = 0; i < count; i++) {
      const lines = Array.from({ length: 12 }, (_, j) => `Turn ${i + 1}, line ${j + 1} of the review.`).join('\n\n');
      const turnId = await startScriptTurn(setup, chat, [{ say: i === at ? `${lines}\n\nThe ${word} service is the culprit.` : lines }]);
      await setup.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/turnComplete' && e.action['turnId'] === turnId, `turn ${i + 1}`);
      turns.push(turnId);
    }
    return { session, chat, turns };
  }

  const inView = (page: Page, selector: string) =>
    page.locator(selector).evaluate((node): boolean => {
      const r = (node as { getBoundingClientRect(): { top: number; bottom: number } }).getBoundingClientRect();
      return r.bottom > 0 && r.top < (globalThis as unknown as { innerHeight: number }).innerHeight;
    });

  it('searches across sessions from the dashboard, finds a word from a transcript, and opens the chat scrolled to that turn, highlighted', async () => {
    const { session, turns } = await longSession('Long review', 10, 1, 'zeppelin');
    const dashboard = await hub.open(TOKENS.bob, '/');
    await dashboard.locator('[data-testid=search-input]').fill('ZEPPELIN');
    await dashboard.locator('[data-testid=search]').click();
    const hit = dashboard.locator('[data-testid=search-hit]');
    await hit.first().waitFor(T);
    await expect(hit.count()).resolves.toBe(1);
    await expect(hit.getAttribute('data-hit-session')).resolves.toBe(session);
    await expect(hit.locator('mark').textContent()).resolves.toBe('zeppelin');
    await expect(hit.textContent()).resolves.toContain('Long review');
    expect(new URL(dashboard.url()).searchParams.get('q')).toBe('ZEPPELIN');
    await hit.locator('a').click();
    const target = `article.turn[data-turn="${turns[1]}"]`;
    await dashboard.locator(`${target}[data-linked]`).waitFor(T);
    expect(new URL(dashboard.url()).hash).toBe(`#turn=${encodeURIComponent(turns[1]!)}`);
    await expect.poll(() => inView(dashboard, target), T).toBe(true);
    // The newest turn is far below: the page did not jump to the end.
    await expect(inView(dashboard, `article.turn[data-turn="${turns[9]}"]`)).resolves.toBe(false);
    // A word nobody wrote finds nothing, and says so.
    await dashboard.goBack();
    await dashboard.locator('[data-testid=search-input]').fill('no-such-word-anywhere');
    await dashboard.locator('[data-testid=search]').click();
    await dashboard.locator('[data-testid=search-note]', { hasText: 'Nothing found for “no-such-word-anywhere”.' }).waitFor(T);
    expect(hub.pageErrors).toEqual([]);
  }, 90_000);

  it('copies a link to a turn and to an approval; opening either scrolls to it and highlights it', async () => {
    const { session, chat, turns } = await longSession('Linked review', 9, 0, 'anchor');
    const setup = await hub.rpc(TOKENS.alice);
    await setup.subscribe(chat);
    const request = { id: 'req-link', message: 'Which region?', questions: [{ id: 'region', kind: 'text', title: 'Region', message: 'Region?', required: true }] };
    await startScriptTurn(setup, chat, [{ ask: request }, { say: 'Thanks.' }]);
    await setup.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/inputRequested', 'input request');

    const context = await hub.newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: hub.server.url });
    const page = hub.watch(await context.newPage());
    await page.goto(`${hub.server.url}${sessionPath(session)}?token=${TOKENS.alice}`);
    await page.locator(`article.turn[data-turn="${turns[8]}"] [data-testid=copy-turn-link]`).click();
    const turnLink = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(turnLink).toBe(`${hub.server.url}${sessionPath(session)}?chat=${encodeURIComponent(chat)}#turn=${encodeURIComponent(turns[8]!)}`);
    await page.locator('.input-request[data-request=req-link] [data-testid=copy-input-link]').click();
    const inputLink = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(inputLink).toBe(`${hub.server.url}${sessionPath(session)}?chat=${encodeURIComponent(chat)}#input=req-link`);

    // A teammate opens the turn link (the first turn, the top of a long chat) …
    const bob = await hub.open(TOKENS.bob, sessionPath(session));
    const first = `article.turn[data-turn="${turns[0]}"]`;
    const firstLink = turnLink.replace(encodeURIComponent(turns[8]!), encodeURIComponent(turns[0]!));
    await bob.goto(firstLink);
    await bob.locator(`${first}[data-linked]`).waitFor(T);
    await expect.poll(() => inView(bob, first), T).toBe(true);
    // … and the approval link: the open question, highlighted.
    await bob.goto(inputLink);
    await bob.locator('.input-request[data-request=req-link][data-linked]').waitFor(T);
    await expect.poll(() => inView(bob, '.input-request[data-request=req-link]'), T).toBe(true);
    expect(hub.pageErrors).toEqual([]);
  }, 90_000);

  it('exports a transcript from the chat view: the Markdown equals the transcript’s text (message, agent text, tool step, answers)', async () => {
    const request = {
      id: 'req-export',
      message: 'Release details',
      questions: [
        { id: 'version', kind: 'text', title: 'Version', message: 'Which version?', required: true },
        { id: 'ship', kind: 'boolean', title: 'Ship now', message: 'Ship now?', required: true },
      ],
    };
    const { session, setup } = await hub.scriptedSession(TOKENS.alice, 'Release 4.2', [{ say: 'Preparing the **release**.' }, { tool: { id: 'deploy-1', name: 'deploy', confirm: true } }, { ask: request }, { say: 'Shipped.' }]);
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    await page.locator('.tool[data-tool=deploy-1] [data-action=Approve]').click();
    const form = page.locator('.input-request:not(.resolved)[data-request=req-export]');
    await form.locator('[data-question=version] textarea').fill('4.2.0');
    await form.locator('[data-testid=yes-ship]').check();
    await form.locator('[data-response=accept]').click();
    await setup.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn end');
    await page.locator('[data-testid=chat-status]', { hasText: 'Idle' }).waitFor(T);

    // What the page shows, read part by part in transcript order.
    const shown = await page.evaluate<string>(`(() => {
      const text = (n) => (n ? n.textContent : '');
      const blocks = ['# ' + text(document.querySelector('h1.session-title'))];
      document.querySelectorAll('article.turn[data-turn]').forEach((turn, i) => {
        blocks.push('## Turn ' + (i + 1));
        blocks.push('**User:**\\n\\n' + text(turn.querySelector('details.script code')));
        turn.querySelectorAll('.parts > [data-kind]').forEach((part) => {
          const kind = part.getAttribute('data-kind');
          if (kind === 'markdown') blocks.push(part.innerText.trim());
          if (kind === 'toolCall') blocks.push('**Tool ' + text(part.querySelector('.tool-head strong')) + ':** ' + text(part.querySelector('[data-testid=tool-status]')) + '\\n\\n' + part.querySelector('.markdown').innerText.trim());
          if (kind === 'inputRequest') {
            const rows = [...part.querySelectorAll('.answers li')].map((li) => '- ' + li.textContent);
            blocks.push('**Input request:** ' + part.querySelector('.markdown').innerText.trim() + ' — ' + text(part.querySelector('[data-testid=outcome]')) + '\\n\\n' + rows.join('\\n'));
          }
        });
      });
      return blocks.join('\\n\\n') + '\\n';
    })()`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('[data-testid=export-markdown]').click()]);
    expect(download.suggestedFilename()).toBe('Release-4-2.md');
    const markdown = readFileSync((await download.path())!, 'utf8');
    // Agent text is exported as written (Markdown) and the page shows it rendered, so both sides
    // are compared without Markdown's emphasis, list markers and paragraph spacing.
    const plain = (text: string): string =>
      text
        .replace(/\*\*/g, '')
        .replace(/^- /gm, '')
        .replace(/\n{2,}/g, '\n');
    expect(plain(markdown)).toBe(plain(shown));
    expect(markdown).toContain('\n\nPreparing the **release**.\n\n');
    expect(markdown).toContain('- Version: 4.2.0\n- Ship now: Yes');
    expect(markdown).toContain('**Tool deploy:** Done');

    const [json] = await Promise.all([page.waitForEvent('download'), page.locator('[data-testid=export-json]').click()]);
    const exported = JSON.parse(readFileSync((await json.path())!, 'utf8')) as { session: string; turns: Array<{ entries: Array<{ kind: string }> }> };
    expect(exported.session).toBe(session);
    expect(exported.turns[0]!.entries.map((e) => e.kind)).toEqual(['user', 'agent', 'tool', 'input', 'agent', 'agent']);
    expect(hub.pageErrors).toEqual([]);
  }, 90_000);
});
