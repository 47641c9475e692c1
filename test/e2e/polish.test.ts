/**
 * Code blocks, the theme menu and Enter to send (issue 28 item 8), in real headless Chromium
 * against a hub on port 0:
 * - a code block in agent text shows its fence's language as text and its Copy button puts the
 *   code on the clipboard (read back through the page's own clipboard, permission granted), while
 *   the part is still streaming, for a finished block and for the unfinished one at the tail; with
 *   the Clipboard API taken away the fallback copies too;
 * - the theme menu pins light or dark over the system's setting, is remembered across a reload,
 *   and "system" follows the system again (axe in both pinned themes: a11y.test.ts);
 * - Enter sends the composer (while a turn runs: adds to it), Shift+Enter makes a new line, and a
 *   form's multi-line answer keeps Enter for a new line.
 */
import { describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { TOKENS } from '../helpers/start-server.js';
import { BrowserHub, sessionPath } from './support.js';

const T = { timeout: 10_000 };
const hub = BrowserHub.perFile();

async function openIn(context: BrowserContext, token: string, path: string): Promise<Page> {
  const page = hub.watch(await context.newPage());
  await page.goto(`${hub.server.url}${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`);
  await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
  return page;
}

const clipboardOf = (page: Page): Promise<string> => page.evaluate<string>('navigator.clipboard.readText()');

/** A session of the remote provider: the test is its agent and streams the parts itself. */
async function remoteSession(id: string): Promise<{ chat: string; session: string }> {
  const alice = await hub.rpc(TOKENS.alice);
  const session = `ahp-session:/${id}`;
  const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote', title: id });
  await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: new Date().toISOString(), message: { text: 'show me code', origin: { kind: 'user' } } });
  return { chat, session };
}

const background = (page: Page): Promise<string> => page.evaluate<string>('getComputedStyle(document.body.parentElement).backgroundColor');
/** Code with markup in it: copied as the characters it is. */
const CODE = 'const answer = 42;\nconsole.log("<b>" + answer + "</b>");';
const LIGHT_BG = 'rgb(246, 247, 249)';
const DARK_BG = 'rgb(18, 21, 27)';

describe('browser app: code blocks, theme, Enter to send', () => {
  it('a code block shows its language and Copy copies it, while the part streams', async () => {
    const { chat, session } = await remoteSession('code-copy');
    const agent = await hub.rpc(TOKENS.agent);
    const context = await hub.newContext({ viewport: { width: 1100, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
    const page = await openIn(context, TOKENS.alice, sessionPath(session));
    const first = `Run this:\n\n\`\`\`ts title="deploy.ts"\n${CODE}\n\`\`\`\n\n`;
    await agent.dispatchAndWait(chat, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: first } });
    // The turn is still running, and a second block is only half streamed (no closing fence yet).
    await agent.dispatchAndWait(chat, { type: 'chat/delta', turnId: 't1', partId: 'p1', content: 'Then:\n\n```<img src=x onerror=alert(1)>\nprint("half' });
    const blocks = page.locator('article.turn[data-turn=t1] .md-code');
    await expect.poll(() => blocks.count(), T).toBe(2);
    await expect(blocks.nth(0).locator('.md-code-lang').textContent()).resolves.toBe('ts');
    // Markup in the info string is only a label's text.
    await expect(blocks.nth(1).locator('.md-code-lang').textContent()).resolves.toBe('<img');
    await expect(page.locator('article.turn img').count()).resolves.toBe(0);
    await expect(page.locator('article.turn[data-turn=t1].active').count()).resolves.toBe(1);

    await blocks.nth(0).locator('button.md-copy').click();
    await blocks.nth(0).locator('button.md-copy', { hasText: 'Copied' }).waitFor(T);
    await expect(clipboardOf(page)).resolves.toBe(CODE);
    // A screen reader hears it too (the focused button's new text alone is not announced).
    await expect(page.locator('[data-testid=copy-status][role=status]').textContent()).resolves.toBe('Copied to the clipboard.');

    // The tail block is rebuilt each frame as text arrives; its button copies what is shown now.
    await agent.dispatchAndWait(chat, { type: 'chat/delta', turnId: 't1', partId: 'p1', content: ' done")' });
    await blocks.nth(1).locator('code', { hasText: 'half done' }).waitFor(T);
    await blocks.nth(1).locator('button.md-copy').click();
    await blocks.nth(1).locator('button.md-copy', { hasText: 'Copied' }).waitFor(T);
    await expect(clipboardOf(page)).resolves.toBe('print("half done")');
    await agent.dispatchAndWait(chat, { type: 'chat/turnComplete', turnId: 't1', duration: 1 });

    // Without the Clipboard API (an http:// address that is not loopback) the textarea fallback copies.
    const bare = await hub.newContext({ viewport: { width: 1100, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
    await bare.addInitScript('Object.defineProperty(Navigator.prototype, "clipboard", { get: () => undefined, configurable: true })');
    const old = await openIn(bare, TOKENS.alice, sessionPath(session));
    await expect(old.evaluate<string>('typeof navigator.clipboard')).resolves.toBe('undefined');
    await page.evaluate('navigator.clipboard.writeText("before the fallback")');
    await expect(clipboardOf(page)).resolves.toBe('before the fallback');
    const oldBlock = old.locator('article.turn[data-turn=t1] .md-code').nth(0);
    await oldBlock.locator('button.md-copy').click();
    await oldBlock.locator('button.md-copy', { hasText: 'Copied' }).waitFor(T);
    await expect(clipboardOf(page)).resolves.toBe(CODE);
    // The session id's Copy takes the same path (copy-button.ts → copyAndConfirm): copied without
    // the Clipboard API too, and said to a screen reader.
    await old.evaluate('document.querySelector("[data-testid=copy-status]").textContent = ""');
    await old.locator('[data-testid=copy-session-id]').click();
    await old.locator('[data-testid=copy-session-id]', { hasText: 'Copied' }).waitFor(T);
    await expect(clipboardOf(page)).resolves.toBe(session.replace('ahp-session:/', ''));
    await expect(old.locator('[data-testid=copy-status][role=status]').textContent()).resolves.toBe('Copied to the clipboard.');
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  it('the theme menu pins light or dark over the system, is remembered across a reload, and "system" follows the system', async () => {
    const context = await hub.newContext({ viewport: { width: 1100, height: 900 }, colorScheme: 'light' });
    const page = await openIn(context, TOKENS.alice, '/');
    const theme = page.locator('[data-testid=theme]');
    await expect(theme.inputValue()).resolves.toBe('system');
    await expect(background(page)).resolves.toBe(LIGHT_BG);
    await page.emulateMedia({ colorScheme: 'dark' });
    await expect.poll(() => background(page), T).toBe(DARK_BG);

    // Light pinned while the system is dark.
    await theme.selectOption('light');
    await expect.poll(() => background(page), T).toBe(LIGHT_BG);
    await expect(page.evaluate<string | null>('localStorage.getItem("ahp-hub-theme")')).resolves.toBe('light');
    await page.reload();
    await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
    await expect(theme.inputValue()).resolves.toBe('light');
    await expect(background(page)).resolves.toBe(LIGHT_BG);

    // Dark pinned while the system is light, also across a reload.
    await page.emulateMedia({ colorScheme: 'light' });
    await theme.selectOption('dark');
    await expect.poll(() => background(page), T).toBe(DARK_BG);
    await page.reload();
    await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor(T);
    await expect(theme.inputValue()).resolves.toBe('dark');
    await expect(background(page)).resolves.toBe(DARK_BG);
    // The pinned theme is on the page before the app's bundle runs: with /app.js held back, the
    // boot page ("Connecting to the hub…") is already dark.
    // The app's service worker would serve /app.js from its cache (app/sw.ts): unregistered
    // first, so the held-back bundle stays held back.
    await page.evaluate('navigator.serviceWorker.getRegistrations().then((rs) => Promise.all(rs.map((r) => r.unregister())))');
    const early = hub.watch(await context.newPage());
    await early.route('**/app.js', (route) => route.abort());
    await early.goto(`${hub.server.url}/`);
    await early.locator('.boot').waitFor(T);
    await expect(early.evaluate<string | null>('document.documentElement.getAttribute("data-theme")')).resolves.toBe('dark');
    await expect(background(early)).resolves.toBe(DARK_BG);
    await early.close();
    // Another tab of this browser follows the choice.
    const other = await openIn(context, TOKENS.alice, '/');
    await expect(other.locator('[data-testid=theme]').inputValue()).resolves.toBe('dark');
    await expect(background(other)).resolves.toBe(DARK_BG);

    // Back to the system: nothing is kept, and the page follows the system both ways.
    await theme.selectOption('system');
    await expect.poll(() => background(page), T).toBe(LIGHT_BG);
    await expect(page.evaluate<string | null>('localStorage.getItem("ahp-hub-theme")')).resolves.toBeNull();
    await page.emulateMedia({ colorScheme: 'dark' });
    await expect.poll(() => background(page), T).toBe(DARK_BG);
    await expect.poll(() => other.locator('[data-testid=theme]').inputValue(), T).toBe('system');

    // On a 390-px phone the menu shows only its symbol: the top bar still fits (a wider page would
    // make a mobile browser zoom out, which click-lands.test.ts's phone case once caught).
    const phone = await openIn(await hub.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }), TOKENS.alice, '/');
    await expect(phone.evaluate<number>('document.documentElement.scrollWidth')).resolves.toBe(390);
    await expect(phone.locator('[data-testid=theme]').isVisible()).resolves.toBe(true);
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  it('Enter sends the composer, Shift+Enter makes a new line; a multi-line answer keeps Enter for a new line', async () => {
    const alice = await hub.rpc(TOKENS.alice);
    const session = 'ahp-session:/enter-sends';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote', title: 'Enter sends' });
    await alice.subscribe(chat);
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    const composer = page.locator('[data-testid=composer]');
    await composer.click();
    await composer.pressSequentially('first line');
    await composer.press('Shift+Enter');
    await composer.pressSequentially('second line');
    await expect(composer.inputValue()).resolves.toBe('first line\nsecond line');
    await expect(page.locator('.composer-note').textContent()).resolves.toBe('Enter to send · Shift+Enter for a new line.');
    const started = alice.waitForEnvelope((e) => e.action.type === 'chat/turnStarted', 'the turn the composer starts');
    await composer.press('Enter');
    // Had Shift+Enter sent, the turn's message would be "first line" alone.
    const envelope = await started;
    expect((envelope.action as unknown as { message: { text: string } }).message.text).toBe('first line\nsecond line');
    await expect.poll(() => composer.inputValue(), T).toBe('');
    await expect(page.locator('article.turn .user-message').textContent()).resolves.toBe('first line\nsecond line');
    // While the turn runs, Enter adds the text to that turn (a steering input), never a new turn.
    await page.locator('[data-testid=send]', { hasText: 'Add to turn' }).waitFor(T);
    await composer.pressSequentially('also check the licence');
    await composer.press('Enter');
    await page.locator('.receipt[data-state=accepted]', { hasText: 'also check the licence' }).waitFor(T);
    await expect(page.locator('article.turn').count()).resolves.toBe(1);

    // A text question's answer is a multi-line textarea: Enter is a new line there, never a submit.
    const ask = { id: 'notes', message: 'Release notes', questions: [{ id: 'notes', kind: 'text', title: 'Notes', message: 'What changed?' }] };
    const { setup, session: formSession } = await hub.scriptedSession(TOKENS.alice, 'Multi-line answer', [{ ask }, { say: 'ok' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    const formPage = await hub.open(TOKENS.alice, sessionPath(formSession));
    const field = formPage.locator('.input-request:not(.resolved) [data-testid=text-notes]');
    await field.click();
    await field.pressSequentially('fixed login');
    await field.press('Enter');
    await field.pressSequentially('fixed logout');
    await expect(field.inputValue()).resolves.toBe('fixed login\nfixed logout');
    // Still open: Enter did not submit it.
    await expect(formPage.locator('.input-request:not(.resolved)[data-request=notes]').count()).resolves.toBe(1);
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);
});
