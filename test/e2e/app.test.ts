/**
 * The browser app end to end: real headless Chromium (Debian's `chromium`, driven by
 * playwright-core) against a real hub started in this process on port 0, serving `dist/app`.
 */
import { describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, tempDir, TOKENS } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { ARTIFACTS, BrowserHub, sessionPath } from './support.js';

const REQUEST = {
  id: 'req-1',
  message: 'Two quick questions before I **ship** this.',
  questions: [
    {
      id: 'runtime',
      kind: 'single-select',
      title: 'Runtime',
      message: 'Which runtime?',
      required: true,
      options: [
        { id: 'node', label: 'Node.js' },
        { id: 'deno', label: 'Deno' },
      ],
    },
    { id: 'notes', kind: 'text', title: 'Release notes', message: 'What should the release notes say?', required: true, max: 200 },
  ],
};

describe('browser app', () => {
  const harness = BrowserHub.perFile();

  const rpc = (token: string) => harness.rpc(token);
  const open = (token: string, path: string) => harness.open(token, path);

  it('two tabs answer one request together while a dashboard follows and a viewer watches', async () => {
    // The operator's dashboard is open before the session exists: everything below arrives live.
    const dashboard = await open(TOKENS.alice, '/');
    await dashboard.locator('[data-testid=sessions]').waitFor();

    const setup = await rpc(TOKENS.alice);
    // A few neighbours in other states, so the dashboard has something to sort and count.
    await setup.createSession('Onboarding notes');
    const failing = await setup.createSession('Nightly build');
    await startScriptTurn(setup, failing.chat, [{ fail: 'build server unreachable' }]);
    const busy = await setup.createSession('Dependency audit');
    await startScriptTurn(setup, busy.chat, [{ say: 'Scanning 214 packages…' }, { sleep: 60_000 }]);
    const deploy = await setup.createSession('Deploy to staging');
    await startScriptTurn(setup, deploy.chat, [
      {
        tool: {
          id: 'deploy-1',
          name: 'deploy_staging',
          confirm: true,
          options: [
            { id: 'once', label: 'Allow once', kind: 'approve' },
            { id: 'never', label: 'Never', kind: 'deny' },
          ],
        },
      },
      { say: 'Deployed.' },
    ]);
    const { session, chat } = await setup.createSession('Release 1.4 checklist');
    await setup.subscribe(chat);
    await startScriptTurn(setup, chat, [{ say: 'Reading the changelog… found **3** fixes and one new flag.' }, { ask: REQUEST }, { say: 'Thanks — drafting the release now.' }, { sleep: 60_000 }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');

    const card = dashboard.locator(`[data-session="${session}"]`);
    await card.locator('[data-testid=status]', { hasText: 'Needs input' }).waitFor();
    await expect(card.locator('[data-testid=brief]').textContent()).resolves.toContain('Two quick questions');
    await dashboard.locator(`[data-session="${failing.session}"][data-status="Error"]`).waitFor();
    await dashboard.locator(`[data-session="${busy.session}"][data-status="In progress"]`).waitFor();
    await dashboard.locator(`[data-session="${deploy.session}"][data-status="Needs input"]`).waitFor();
    await expect(dashboard.locator(`[data-session="${deploy.session}"] [data-testid=brief]`).textContent()).resolves.toContain('wants to run');
    await expect(dashboard.locator('[data-count="Needs input"]').textContent()).resolves.toBe('Needs input: 2');
    // A failed session says what failed, in words, with where to go next.
    await expect.poll(() => dashboard.locator(`[data-session="${failing.session}"] [data-testid=failure]`).textContent()).toContain('The agent stopped with an error: “build server unreachable”.');
    await dashboard.screenshot({ path: join(ARTIFACTS, 'dashboard.png') });
    // The filter keeps the sessions that need someone: two waiting for input, one failed.
    await dashboard.locator('[data-testid=filter-needs-input]').check();
    await expect.poll(() => dashboard.locator('[data-session]').count()).toBe(3);
    await dashboard.locator(`[data-session="${failing.session}"]`).waitFor();
    await card.waitFor();

    const a = await open(TOKENS.alice, sessionPath(session));
    const b = await open(TOKENS.bob, sessionPath(session));
    const viewer = await open(TOKENS.viewer, sessionPath(session));
    for (const p of [a, b, viewer]) await p.locator('[data-request="req-1"] [data-question="notes"] textarea').waitFor();
    const notes = (p: Page) => p.locator('[data-request="req-1"] [data-question="notes"] textarea');
    const runtime = (p: Page, option: string) => p.locator(`[data-request="req-1"] [data-question="runtime"] input[value="${option}"]`);

    // A fills question 1, B fills question 2; each sees the other's draft.
    await runtime(a, 'deno').check();
    await notes(b).click();
    await notes(b).pressSequentially('ships the new --fast flag', { delay: 5 });
    await waitFor(async () => ((await runtime(b, 'deno').isChecked()) ? true : undefined), { what: "A's choice in B's form" });
    await waitFor(async () => ((await notes(a).inputValue()) === 'ships the new --fast flag' ? true : undefined), { what: "B's text in A's form" });
    await waitFor(async () => ((await runtime(viewer, 'deno').isChecked()) && (await notes(viewer).inputValue()) === 'ships the new --fast flag' ? true : undefined), { what: 'both drafts at the viewer' });

    // Presence: B sees who is viewing and that A is editing the notes question.
    await expect.poll(() => b.locator('[data-testid=viewers]').textContent()).toContain('alice');
    await notes(a).click();
    await b.locator('[data-question="notes"] [data-testid=presence]', { hasText: 'alice is editing' }).waitFor();

    // Both type into the same answer at once: A at the start, B at the end. Nothing is overwritten.
    await notes(a).press('Control+Home');
    await notes(b).press('Control+End');
    await Promise.all([notes(a).pressSequentially('Highlights: ', { delay: 15 }), notes(b).pressSequentially(' (and 3 fixes)', { delay: 15 })]);
    const expected = 'Highlights: ships the new --fast flag (and 3 fixes)';
    await waitFor(async () => ((await notes(a).inputValue()) === expected && (await notes(b).inputValue()) === expected ? true : undefined), { what: 'merged text in both tabs', timeoutMs: 15_000 });
    // AHP clients without Yjs see the merged text as the draft.
    const plain = await rpc(TOKENS.bob);
    await waitFor(
      async () => {
        const snap = await plain.subscribe<{ activeTurn?: { responseParts: Array<{ request?: { answers?: Record<string, { value?: { value?: unknown } }> } }> } }>(chat);
        const answers = snap.state.activeTurn?.responseParts.find((p) => p.request)?.request?.answers;
        return answers?.['notes']?.value?.value === expected ? true : undefined;
      },
      { what: 'merged draft in chat state' },
    );
    await b.screenshot({ path: join(ARTIFACTS, 'chat.png'), fullPage: true });

    // The viewer sees everything and can change nothing: every control is disabled, and the hub
    // refuses the same completion if the viewer sends it anyway.
    await expect(viewer.locator('[data-request="req-1"] [data-response=accept]').isDisabled()).resolves.toBe(true);
    await expect(notes(viewer).isDisabled()).resolves.toBe(true);
    await expect(viewer.locator('[data-testid=send]').isDisabled()).resolves.toBe(true);
    await viewer
      .locator('[data-request="req-1"] [data-response=accept]')
      .click({ force: true })
      .catch(() => {});
    const viewerRpc = await rpc(TOKENS.viewer);
    const refused = await viewerRpc.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'accept' });
    expect(refused.rejectionReason).toMatch(/read-only/);

    // The viewer closes the tab: its presence disappears for the others.
    await expect.poll(() => a.locator('[data-testid=viewers]').textContent()).toContain('victor');
    await viewer.close();
    await expect.poll(() => a.locator('[data-testid=viewers]').textContent(), { timeout: 10_000 }).not.toContain('victor');

    // B accepts; A's caret is still in the notes, so B is asked first (shared-form.test.ts has
    // the details); every tab shows the answered record; the dashboard moves on to In progress.
    await b.locator('[data-request="req-1"] [data-response=accept]').click();
    const guard = b.locator('[data-request="req-1"] [data-testid=submit-guard]');
    await expect.poll(() => guard.textContent()).toContain('alice is still typing in “Release notes”');
    await guard.locator('[data-testid=submit-anyway]').click();
    for (const p of [a, b]) {
      await p.locator('[data-request="req-1"][data-response=accept]').waitFor();
      await expect(p.locator('[data-request="req-1"] [data-answer=notes]').textContent()).resolves.toBe(expected);
      await expect(p.locator('[data-request="req-1"] [data-answer=runtime]').textContent()).resolves.toBe('Deno');
    }
    await dashboard.locator('[data-testid=filter-needs-input]').uncheck();
    await card.locator('[data-testid=status]', { hasText: 'In progress' }).waitFor();
    await dashboard.screenshot({ path: join(ARTIFACTS, 'dashboard-in-progress.png') });

    // Tool confirmation with offered options; a steering addition that says "approve" approves nothing.
    await a.goto(`${harness.server.url}${sessionPath(deploy.session)}`);
    const tool = a.locator('.tool[data-tool="deploy-1"]');
    await tool.locator('[data-action="Allow once"]').waitFor();
    await expect(tool.locator('[data-action=Never]').count()).resolves.toBe(1);
    await a.locator('[data-testid=composer]').fill('yes, approve it');
    await a.locator('[data-testid=send]').click();
    await a.locator('.receipt[data-state=accepted]').waitFor();
    await expect(tool.getAttribute('data-tool-status')).resolves.toBe('pending-confirmation');
    await tool.locator('[data-action="Allow once"]').click();
    await a.locator('.tool[data-tool="deploy-1"][data-tool-status=completed]', { hasText: 'Approved: Allow once' }).waitFor();
    await a.locator('.part.md', { hasText: 'Deployed.' }).waitFor();

    // The README's copies are refreshed only on request (or when missing), so a test run does not
    // dirty the working tree: UPDATE_SCREENSHOTS=1 npx vitest run test/e2e
    mkdirSync('docs/screenshots', { recursive: true });
    for (const name of ['chat.png', 'dashboard.png']) {
      const target = join('docs/screenshots', name);
      if (process.env['UPDATE_SCREENSHOTS'] === '1' || !existsSync(target)) copyFileSync(join(ARTIFACTS, name), target);
    }
    expect(harness.pageErrors).toEqual([]);
  }, 90_000);

  it('walks the demo tour: every question kind, a URL request, a tool confirmation and a steering addition', async () => {
    const page = await open(TOKENS.alice, '/');
    await page.locator('[data-testid=new-session-title]').fill('Tour');
    await page.locator('[data-testid=new-session]').click();
    await page.locator('[data-testid=composer]').waitFor();
    await page.locator('[data-testid=composer]').fill('hello');
    await page.locator('[data-testid=send]').click();

    const form = page.locator('.input-request:not(.resolved)');
    await form.locator('[data-question=targets]').waitFor();
    // Every kind is there, with required markers and defaults filled in.
    const kinds = await form.locator('[data-question]').evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')));
    expect(kinds).toEqual(['text', 'text', 'number', 'integer', 'boolean', 'single-select', 'multi-select']);
    await expect(form.locator('.required').count()).resolves.toBe(2);
    await expect(form.locator('[data-question=contact] input').getAttribute('type')).resolves.toBe('email');
    await expect(form.locator('[data-question=budget] input').inputValue()).resolves.toBe('1000');
    await expect(form.locator('[data-testid=yes-public]').isChecked()).resolves.toBe(true);
    await expect(form.locator('[data-testid=no-public]').isChecked()).resolves.toBe(false);
    await expect(form.locator('[data-question=runtime] input[value=node]').isChecked()).resolves.toBe(true);

    // While the agent waits, add a requirement to the running turn: a supplement, not an answer.
    await expect(page.locator('[data-testid=send]').textContent()).resolves.toBe('Add to turn');
    await page.locator('[data-testid=composer]').fill('also mention the licence');
    await page.locator('[data-testid=send]').click();
    await page.locator('.receipt[data-state=accepted]').waitFor();
    await expect(form.isVisible()).resolves.toBe(true);

    // Client-side checks say what is missing, at the field, before anything is sent.
    await form.locator('[data-response=accept]').click();
    await form.locator('[data-question=name] [data-testid=field-error]', { hasText: 'This question needs an answer.' }).waitFor();
    await form.locator('[data-question=name] textarea').fill('Hub');
    await form.locator('[data-question=contact] input').fill('team@example.com');
    await form.locator('[data-question=people] input').fill('4');
    await form.locator('[data-question=runtime] input[value=bun]').check();
    await form.locator('[data-question=targets] input[value=linux]').check();
    await form.locator('[data-question=targets] input[value=browser]').check();
    await form.locator('[data-response=accept]').click();
    const record = page.locator('.input-request.resolved[data-response=accept]').first();
    await record.waitFor();
    await expect(record.locator('[data-answer=targets]').textContent()).resolves.toBe('Linux, Browser');
    await expect(record.locator('[data-answer=runtime]').textContent()).resolves.toBe('Bun');
    // The agent took the addition at its next safe point.
    await page.locator('.receipt[data-state=consumed]').waitFor();
    await page.locator('.part.md', { hasText: 'also mention the licence' }).waitFor();

    // URL request: "Mark as done" only after the link was opened.
    const urlForm = page.locator('.input-request:not(.resolved)');
    await urlForm.locator('[data-testid=open-url]').waitFor();
    await expect(urlForm.locator('[data-response=accept]').isDisabled()).resolves.toBe(true);
    const popup = page.context().waitForEvent('page');
    await urlForm.locator('[data-testid=open-url]').click();
    await (await popup).close();
    await urlForm.locator('[data-response=accept]').click();
    await expect.poll(() => page.locator('.input-request.resolved[data-response=accept]').count()).toBe(2);

    // Tool confirmation.
    const tool = page.locator('.tool[data-tool-status=pending-confirmation]');
    await tool.locator('[data-action=Approve]').click();
    await page.locator('.tool[data-tool-status=completed]').waitFor();
    await page.locator('.turn-footer', { hasText: 'Completed' }).waitFor();
    await expect(page.locator('[data-testid=chat-status]').textContent()).resolves.toBe('Idle');
    await page.screenshot({ path: join(ARTIFACTS, 'tour.png'), fullPage: true });
    expect(harness.pageErrors).toEqual([]);
  }, 60_000);

  it('asks for a token when the link has none, and refuses a wrong one', async () => {
    const context = await harness.newContext({});
    const page = await context.newPage();
    await page.goto(`${harness.server.url}/`);
    const token = page.locator('form.signin input[name=token]');
    await token.fill('not-a-valid-token-at-all');
    await page.locator('form.signin button[type=submit]').click();
    await page.locator('form.signin [role=alert]', { hasText: 'missing or invalid' }).waitFor();
    await token.fill(TOKENS.viewer);
    await page.locator('form.signin button[type=submit]').click();
    await page.locator('[data-testid=me]', { hasText: 'victor · viewer' }).waitFor();
    // A viewer gets no new-session form at all, and a read-only banner instead.
    await page.locator('[data-testid=read-only]').waitFor();
    await expect(page.locator('[data-testid=new-session]').count()).resolves.toBe(0);
  }, 30_000);

  it('says when the connection drops, reconnects by itself and catches up; an answer typed while the hub is down reaches everyone', async () => {
    const data = tempDir('hub-e2e-');
    let hub = await startTestServer({ withAuth: true, staticDir: 'dist/app', dataDir: data.dir });
    const port = hub.port;
    try {
      const context = await harness.newContext({ viewport: { width: 1100, height: 700 } });
      const page = harness.watch(await context.newPage());
      await page.goto(`${hub.url}/?token=${TOKENS.bob}`);
      await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor();
      // The token left the address bar once it was read.
      expect(page.url()).not.toContain('token=');
      const before = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
      const first = await before.createSession('Before the restart');
      await before.subscribe(first.chat);
      await startScriptTurn(before, first.chat, [{ ask: REQUEST }]);
      await before.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
      await before.close();
      await page.locator(`[data-session="${first.session}"][data-status="Needs input"]`).waitFor();
      // A second tab has the open request in front of it, with a draft everyone sees.
      const chatPage = harness.watch(await context.newPage());
      await chatPage.goto(`${hub.url}${sessionPath(first.session)}`);
      const notes = chatPage.locator('[data-request="req-1"] [data-question=notes] textarea');
      await notes.waitFor();
      await notes.click();
      await notes.pressSequentially('Gemini draft');
      const draftOf = async (c: RpcClient): Promise<string | undefined> => {
        const s = (await c.subscribe<{ activeTurn?: { responseParts: Array<{ kind: string; request?: { id: string; answers?: Record<string, { value?: { value?: unknown } }> } }> } }>(first.chat)).state;
        const v = s.activeTurn?.responseParts.find((p) => p.kind === 'inputRequest' && p.request?.id === 'req-1')?.request?.answers?.['notes']?.value?.value;
        return typeof v === 'string' ? v : undefined;
      };
      const watcher = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
      await waitFor(async () => ((await draftOf(watcher)) === 'Gemini draft' ? true : undefined), { what: 'the draft before the restart' });
      await watcher.close();

      await hub.close();
      await page.locator('.banner', { hasText: 'reconnecting' }).waitFor();
      await expect(page.locator('[data-testid=connection]').textContent()).resolves.toBe('Reconnecting…');
      // Typed while the hub is down, while the banner promises to send it when it is back.
      await chatPage.locator('.banner', { hasText: 'reconnecting' }).waitFor();
      await notes.pressSequentially(' offline-edit');

      hub = await startTestServer({ withAuth: true, staticDir: 'dist/app', dataDir: data.dir, port });
      await page.locator('.banner', { hasText: 'Reconnected' }).waitFor({ timeout: 15_000 });
      await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor();
      // Live again: a session created now shows up without a reload.
      const after = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
      const second = await after.createSession('After the restart');
      await page.locator(`[data-session="${second.session}"]`).waitFor();
      // The restart did not end the running turn: the question is still open in both tabs…
      await chatPage.locator('.banner', { hasText: 'Reconnected' }).waitFor();
      await expect(page.locator(`[data-session="${first.session}"]`).getAttribute('data-status')).resolves.toBe('Needs input');
      await expect(chatPage.locator('[data-testid=chat-status]').textContent()).resolves.toBe('Needs input');
      // …and what was typed offline is in everyone's snapshot, not silently gone.
      await waitFor(async () => ((await draftOf(after)) === 'Gemini draft offline-edit' ? true : undefined), { what: 'the offline edit in the snapshot', timeoutMs: 15_000 });
      await expect(notes.inputValue()).resolves.toBe('Gemini draft offline-edit');
      await after.close();
    } finally {
      await hub.close();
      data.remove();
    }
  }, 60_000);

  it('renders agent markdown inert: no injected elements, handlers or javascript: links', async () => {
    const setup = await rpc(TOKENS.alice);
    const { session, chat } = await setup.createSession('Injection');
    await setup.subscribe(chat);
    const evil = [
      'Look here <img src=x onerror="window.pwned=1"> and <script>window.pwned=2</script>',
      '',
      '[click me](javascript:window.pwned=3) ![pic](javascript:window.pwned=4) <a href="javascript:window.pwned=5">raw</a>',
      '',
      '[fine](https://example.com/docs) <iframe src="javascript:window.pwned=6"></iframe>',
    ].join('\n');
    await startScriptTurn(setup, chat, [{ say: evil }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/turnComplete', 'turn complete');

    const page = await open(TOKENS.alice, sessionPath(session));
    const part = page.locator('.part.md', { hasText: 'Look here' });
    await part.waitFor();
    const report = await page.locator('[data-testid=transcript]').evaluate((root) => {
      const all = [...root.querySelectorAll('*')];
      return {
        dangerous: all.filter((e) => ['IMG', 'SCRIPT', 'IFRAME', 'OBJECT', 'EMBED', 'svg', 'STYLE'].includes(e.tagName)).map((e) => e.tagName),
        handlers: all.flatMap((e) => [...e.attributes].filter((a) => a.name.startsWith('on')).map((a) => `${e.tagName}.${a.name}`)),
        hrefs: [...root.querySelectorAll('[href]')].map((e) => e.getAttribute('href')),
        inert: root.querySelectorAll('.md-inert-link').length,
        text: root.textContent ?? '',
        xss: (globalThis as { pwned?: unknown }).pwned,
      };
    });
    expect(report.dangerous).toEqual([]);
    expect(report.handlers).toEqual([]);
    expect(report.hrefs).toEqual(['https://example.com/docs']);
    expect(report.inert).toBe(2);
    expect(report.xss).toBeUndefined();
    expect(report.text).toContain('<img src=x onerror="window.pwned=1">');
    expect(report.text).toContain('<script>window.pwned=2</script>');
    // Clicking the inert link does nothing either.
    await page.locator('.md-inert-link', { hasText: 'click me' }).click();
    expect(await page.evaluate(() => (globalThis as { pwned?: unknown }).pwned)).toBeUndefined();
    expect(harness.pageErrors).toEqual([]);
  }, 60_000);
});
