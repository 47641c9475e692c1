/**
 * Accessibility to WCAG 2.2 AA (issue 20): axe-core (the npm package) runs inside the app's own
 * pages — the dashboard, an empty chat, a chat with an open form, a tool approval and the sign-in
 * page — in the light and the dark theme, on a desktop and a 390×844 phone, and reports no
 * serious or critical violation; also with the theme menu's light or dark pinned against the
 * other system theme, on a chat with a code block (its label and Copy button). Plus what axe cannot judge alone: question text and hints are
 * linked to their inputs, choice groups have names, the required mark reads as ", required", and
 * live regions announce new messages and questions. Real headless Chromium, hub on port 0.
 */
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { TOKENS } from '../helpers/start-server.js';
import { ARTIFACTS, BrowserHub, sessionPath } from './support.js';

const T = { timeout: 10_000 };
// Evaluated rather than added as a <script>: the app's CSP (script-src 'self') refuses inline scripts.
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const LOOKS = [
  { name: 'light desktop', colorScheme: 'light', viewport: { width: 1280, height: 800 } },
  { name: 'dark desktop', colorScheme: 'dark', viewport: { width: 1280, height: 800 } },
  { name: 'light phone', colorScheme: 'light', viewport: { width: 390, height: 844 } },
  { name: 'dark phone', colorScheme: 'dark', viewport: { width: 390, height: 844 } },
] as const;

const FORM = {
  id: 'a11y-form',
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

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[]; failureSummary?: string }>;
}

describe('browser app: accessibility (axe-core, WCAG 2.2 AA)', () => {
  const hub = BrowserHub.perFile();

  /** Serious and critical WCAG A/AA violations axe finds on the page as it is now. */
  async function seriousViolations(page: Page): Promise<string[]> {
    if (!(await page.evaluate<boolean>('typeof window.axe !== "undefined"'))) await page.evaluate(AXE);
    const violations = await page.evaluate<Violation[]>(`axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] }).then((r) => r.violations)`);
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v) =>
          `${v.id} (${v.impact}): ${v.help} — ${v.nodes
            .slice(0, 4)
            .map((n) => `${n.target.join(' ')}: ${n.failureSummary ?? ''}`)
            .join(' | ')}`,
      );
  }

  /** Runs axe on `page` in every look; `ready` waits for what must be on screen. */
  async function expectNoSeriousViolations(page: Page, what: string, ready: (page: Page) => Promise<unknown>): Promise<void> {
    const found: string[] = [];
    for (const look of LOOKS) {
      await page.emulateMedia({ colorScheme: look.colorScheme });
      await page.setViewportSize(look.viewport);
      await ready(page);
      for (const v of await seriousViolations(page)) found.push(`${what}, ${look.name}: ${v}`);
    }
    expect(found).toEqual([]);
  }

  const openChat = async (token: string, session: string): Promise<Page> => hub.open(token, sessionPath(session));

  it('the sign-in page and the dashboard', async () => {
    const signIn = hub.watch(await (await hub.newContext()).newPage());
    await signIn.goto(`${hub.server.url}/?token=wrong-token`);
    await expectNoSeriousViolations(signIn, 'sign-in', (p) => p.locator('.signin [role=alert]').waitFor(T));

    const setup = await hub.rpc(TOKENS.alice);
    await setup.createSession('Release notes');
    const dashboard = await hub.open(TOKENS.alice, '/');
    await expectNoSeriousViolations(dashboard, 'dashboard', (p) => p.locator('[data-testid=sessions] .session').first().waitFor(T));
    const viewer = await hub.open(TOKENS.viewer, '/');
    await expectNoSeriousViolations(viewer, 'dashboard (viewer)', (p) => p.locator('[data-testid=sessions] .session').first().waitFor(T));
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  it('an empty chat and a tool approval', async () => {
    const setup = await hub.rpc(TOKENS.alice);
    const empty = await setup.createSession('Empty chat');
    const page = await openChat(TOKENS.alice, empty.session);
    await expectNoSeriousViolations(page, 'empty chat', (p) => p.locator('[data-testid=empty-chat]').waitFor(T));

    const { session } = await hub.scriptedSession(TOKENS.alice, 'Approval', [{ say: 'Ready to deploy.' }, { tool: { id: 'a11y-tool', name: 'deploy', confirm: true } }]);
    const approval = await openChat(TOKENS.alice, session);
    await expectNoSeriousViolations(approval, 'tool approval', (p) => p.locator('[data-tool=a11y-tool] [data-action=Approve]').waitFor(T));
    // What waits for someone, and then the turn's end, are announced (not the streamed text).
    const announcer = approval.locator('[data-testid=announcer]');
    await expect(announcer.textContent()).resolves.toBe('The agent wants to run deploy and waits for approval.');
    await approval.locator('[data-tool=a11y-tool] [data-action=Approve]').click();
    await approval.locator('[data-testid=announcer]', { hasText: 'The agent finished.' }).waitFor({ state: 'attached', ...T });

    // A viewer's disabled composer looks disabled in the dark theme too: not the field colour of
    // an enabled input (the author's composer), and marked with a dashed border.
    const viewer = await openChat(TOKENS.viewer, session);
    const author = await openChat(TOKENS.alice, session);
    const look = (p: Page) => p.evaluate<{ bg: string; border: string }>(`(() => { const s = getComputedStyle(document.querySelector('[data-testid=composer]')); return { bg: s.backgroundColor, border: s.borderTopStyle }; })()`);
    for (const p of [viewer, author]) await p.emulateMedia({ colorScheme: 'dark' });
    await expect(viewer.locator('[data-testid=composer]').isDisabled()).resolves.toBe(true);
    const [disabled, enabled] = [await look(viewer), await look(author)];
    expect(disabled.bg).not.toBe(enabled.bg);
    expect(disabled.border).toBe('dashed');
    expect(enabled.border).toBe('solid');
    await expectNoSeriousViolations(viewer, 'tool approval (viewer)', (p) => p.locator('[data-tool=a11y-tool]').waitFor(T));
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  it('the theme menu: light and dark pinned against the other system theme, with a code block', async () => {
    const alice = await hub.rpc(TOKENS.alice);
    const agent = await hub.rpc(TOKENS.agent);
    const session = 'ahp-session:/a11y-themes';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote', title: 'Themes' });
    await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: new Date().toISOString(), message: { text: 'code please', origin: { kind: 'user' } } });
    await agent.dispatchAndWait(chat, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: 'Here:\n\n```sh\nnpm ci && npm start\n```\n\nand `inline` code.' } });
    await agent.dispatchAndWait(chat, { type: 'chat/turnComplete', turnId: 't1', duration: 1 });
    const page = await openChat(TOKENS.alice, session);
    const ready = (p: Page) => p.locator('.md-code .md-copy').waitFor(T);
    const found: string[] = [];
    for (const [pinned, system] of [
      ['dark', 'light'],
      ['light', 'dark'],
    ] as const) {
      await page.emulateMedia({ colorScheme: system });
      await page.locator('[data-testid=theme]').selectOption(pinned);
      await expect.poll(() => page.evaluate<string>('getComputedStyle(document.documentElement).colorScheme'), T).toBe(pinned);
      for (const viewport of [LOOKS[0].viewport, LOOKS[2].viewport]) {
        await page.setViewportSize(viewport);
        await ready(page);
        for (const v of await seriousViolations(page)) found.push(`${pinned} pinned (system ${system}), ${viewport.width}px: ${v}`);
      }
    }
    expect(found).toEqual([]);
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  it('a chat with an open form: no serious violation, and every question is named and described', async () => {
    const { setup, session } = await hub.scriptedSession(TOKENS.alice, 'Open form', [{ ask: FORM }, { say: 'Thanks.' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    const page = await openChat(TOKENS.alice, session);
    const form = page.locator('.input-request:not(.resolved)[data-request=a11y-form]');
    await expectNoSeriousViolations(page, 'open form', () => form.waitFor(T));
    // The README's dark-mode form (refreshed on request only, see app.test.ts).
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.setViewportSize({ width: 1100, height: 900 });
    await form.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTIFACTS, 'form-dark.png') });
    if (process.env['UPDATE_SCREENSHOTS'] === '1' || !existsSync('docs/screenshots/form-dark.png')) copyFileSync(join(ARTIFACTS, 'form-dark.png'), 'docs/screenshots/form-dark.png');

    // The label reads "Project name, required" (Playwright computes accessible names as browsers
    // do); the question text and the hint describe the field.
    await expect(page.getByRole('textbox', { name: 'Project name, required', exact: true }).count()).resolves.toBe(1);
    const name = form.locator('[data-testid=text-name]');
    const describedBy = async (selector: string): Promise<string> =>
      page.evaluate<string>(`(document.querySelector(${JSON.stringify(selector)}).getAttribute('aria-describedby') ?? '').split(/\\s+/).filter(Boolean).map((id) => document.getElementById(id)?.textContent?.trim()).join(' ')`);
    const description = await describedBy('[data-testid=text-name]');
    expect(description).toContain('What is the project called?');
    expect(description).toContain('at most 40 characters');
    await expect(name.getAttribute('aria-required')).resolves.toBe('true');
    // Every choice group is named by its question's title and described by its text.
    for (const [q, title, text] of [
      ['runtime', 'Runtime', 'Which runtime?'],
      ['targets', 'Targets', 'Where should it run?'],
      ['ship', 'Ship now, required', 'Ship it today?'],
    ] as const) {
      const role = q === 'targets' ? 'group' : 'radiogroup';
      await expect(form.getByRole(role, { name: title, exact: true }).count()).resolves.toBe(1);
      await expect(describedBy(`[data-question=${q}] [role=${role}]`)).resolves.toContain(text);
    }
    // After a refused submit the error joins the description rather than replacing it.
    await form.locator('[data-response=accept]').click();
    await form.locator('[data-question=name] [data-testid=field-error]:not([hidden])').waitFor(T);
    const withError = await describedBy('[data-testid=text-name]');
    expect(withError).toContain('What is the project called?');
    expect(withError).toContain(await form.locator('[data-question=name] [data-testid=field-error]').textContent());
    // The open question is announced politely to screen readers.
    await expect(page.locator('[data-testid=announcer]').getAttribute('aria-live')).resolves.toBe('polite');
    await expect(page.locator('[data-testid=announcer]').textContent()).resolves.toContain('The agent asks: Three questions before the release.');
    // Headings below the page title: each request has its own.
    await expect(page.getByRole('heading', { level: 2, name: 'The agent needs your input' }).count()).resolves.toBe(1);
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);

  it("Submit's question while a teammate types, and the typist's kept text: no serious violation", async () => {
    const request = { id: 'a11y-shared', message: 'Incident', questions: [{ id: 'summary', kind: 'text', title: 'Summary', message: 'What happened?' }] };
    const { setup, session } = await hub.scriptedSession(TOKENS.alice, 'Shared form', [{ ask: request }, { sleep: 60_000 }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    const [alice, bob] = [await openChat(TOKENS.alice, session), await openChat(TOKENS.bob, session)];
    const form = (p: Page) => p.locator('.input-request:not(.resolved)[data-request=a11y-shared]');
    await form(bob).locator('textarea').click();
    await bob.keyboard.type('DB failover');
    await expect.poll(() => form(alice).locator('textarea').inputValue(), T).toBe('DB failover');
    await form(alice).locator('[data-response=accept]').click();
    const guard = form(alice).locator('[data-testid=submit-guard]');
    await expectNoSeriousViolations(alice, "Submit's question", () => guard.waitFor(T));
    // A real button, named in words and described by the question it answers.
    await expect(alice.getByRole('button', { name: 'Submit anyway', exact: true }).getAttribute('aria-describedby')).resolves.toBeTruthy();
    await guard.locator('[data-testid=submit-anyway]').click();
    const kept = bob.locator('[data-testid=kept-text]');
    await expectNoSeriousViolations(bob, 'kept text', () => kept.waitFor(T));
    await expect(bob.getByRole('region', { name: 'Your unsent text' }).count()).resolves.toBe(1);
    await expect(bob.getByRole('textbox', { name: 'Your text for “Summary”' }).inputValue()).resolves.toBe('DB failover');
    // A message being written in the composer is not sent behind the person's back: the kept
    // text is appended to it, and the status line says so.
    await bob.locator('[data-testid=composer]').fill('Context first');
    await kept.locator('[data-testid=send-kept]').click();
    await expect.poll(() => kept.locator('[data-testid=kept-status]').textContent(), T).toContain('Added to the message you are writing');
    await expect(bob.locator('[data-testid=composer]').inputValue()).resolves.toBe('Context first\n\nSummary: DB failover');
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);
});
