/**
 * Answer paths of the browser app beyond "fill in and accept" (see app.test.ts for that): declining
 * and cancelling an input request, free-form "Other" answers, a steering addition whose turn is
 * stopped before the agent takes it, and the form's client-side checks. Same set-up as app.test.ts:
 * real headless Chromium against a hub started in this process on port 0 (test/e2e/support.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { TOKENS } from '../helpers/start-server.js';
import { BrowserHub, sessionPath } from './support.js';

/** Expect timeouts: generous for a loaded CI box, far below the test timeouts. */
const T = { timeout: 10_000 };

describe('browser app: answers', () => {
  const hub = BrowserHub.perFile();

  const chatStatus = (p: Page) => p.locator('[data-testid=chat-status]');

  for (const [response, outcome, said] of [
    ['decline', 'Declined', 'Input declined.'],
    ['cancel', 'Cancelled', 'Input cancelled.'],
  ] as const) {
    it(`${outcome.toLowerCase()}: one tab ${response}s the request, both tabs show the ${outcome} record and leave "Needs input"`, async () => {
      const request = {
        id: `req-${response}`,
        message: 'Shall I **rewrite** the history?',
        questions: [{ id: 'why', kind: 'text', title: 'Reason', message: 'Why?', required: true }],
      };
      const { setup, session } = await hub.scriptedSession(TOKENS.alice, `Please ${response}`, [{ ask: request }, { say: 'Moving on.' }]);
      await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
      const [a, b] = await Promise.all([hub.open(TOKENS.alice, sessionPath(session)), hub.open(TOKENS.bob, sessionPath(session))]);
      const form = (p: Page) => p.locator(`.input-request:not(.resolved)[data-request="${request.id}"]`);
      for (const p of [a, b]) {
        await form(p).locator('[data-question=why] textarea').waitFor();
        await expect.poll(() => chatStatus(p).textContent(), T).toBe('Needs input');
      }

      // A required question is left empty: declining and cancelling never run the form's checks.
      await form(a).locator(`[data-response=${response}]`).click();
      // Ending a shared form asks first; until confirmed it stays open for everyone.
      await form(a).locator('[data-testid=confirm-end]').waitFor(T);
      await expect(form(a).locator('[data-testid=confirm-end-bar]').textContent()).resolves.toContain('ends this request for everyone in this chat');
      await form(a).locator('[data-testid=keep-form]').click();
      await expect(form(a).locator('[data-testid=confirm-end-bar]').isHidden()).resolves.toBe(true);
      await expect(form(b).count()).resolves.toBe(1);
      await form(a).locator(`[data-response=${response}]`).click();
      await form(a).locator('[data-testid=confirm-end]').click();

      for (const p of [a, b]) {
        const record = p.locator(`.input-request.resolved[data-request="${request.id}"]`);
        await record.waitFor(T);
        await expect(record.getAttribute('data-response')).resolves.toBe(response);
        await expect(record.locator('[data-testid=outcome]').textContent()).resolves.toBe(outcome);
        await expect(record.locator('[data-answer=why]').textContent()).resolves.toBe('—');
        // No form (and no answer button) is left behind in either tab.
        await expect(form(p).count()).resolves.toBe(0);
        await expect(p.locator('.input-request button[data-response]').count()).resolves.toBe(0);
        // The agent was told the outcome, carried on and finished the turn.
        await p.locator('.part.md', { hasText: said }).waitFor(T);
        await p.locator('.part.md', { hasText: 'Moving on.' }).waitFor(T);
        await p.locator('.turn-footer', { hasText: 'Completed' }).waitFor(T);
        await expect.poll(() => chatStatus(p).textContent(), T).toBe('Idle');
      }
      await expect(a.locator('.part.md', { hasText: 'Final answers' }).count()).resolves.toBe(0);
      expect(hub.pageErrors).toEqual([]);
    }, 30_000);
  }

  it('free-form "Other" answers: single-select text instead of an option, multi-select text in addition', async () => {
    const request = {
      id: 'req-other',
      message: 'Where and on what?',
      questions: [
        {
          id: 'runtime',
          kind: 'single-select',
          title: 'Runtime',
          message: 'Which runtime?',
          required: true,
          allowFreeformInput: true,
          options: [
            { id: 'node', label: 'Node.js', recommended: true },
            { id: 'deno', label: 'Deno' },
          ],
        },
        {
          id: 'targets',
          kind: 'multi-select',
          title: 'Targets',
          message: 'Where will it run?',
          allowFreeformInput: true,
          min: 1,
          max: 3,
          options: [
            { id: 'linux', label: 'Linux' },
            { id: 'mac', label: 'macOS' },
            { id: 'windows', label: 'Windows' },
          ],
        },
      ],
    };
    const { setup, session } = await hub.scriptedSession(TOKENS.alice, 'Other answers', [{ ask: request }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    const form = page.locator('.input-request:not(.resolved)[data-request="req-other"]');
    const runtime = form.locator('[data-question=runtime]');
    const targets = form.locator('[data-question=targets]');
    await runtime.locator('input[aria-label=Other]').waitFor(T);

    // The recommended option starts checked; typing "Other" replaces the choice.
    await expect(runtime.locator('input[value=node]').isChecked()).resolves.toBe(true);
    await runtime.locator('input[value=deno]').check();
    await runtime.locator('input[aria-label=Other]').fill('Zig 0.13');
    await expect(runtime.locator('input[type=radio]:checked').count()).resolves.toBe(0);
    // In a multi-select the free text comes in addition to the ticked options.
    await targets.locator('input[value=linux]').check();
    await targets.locator('input[aria-label=Other]').fill('Plan 9');
    await expect(targets.locator('input[value=linux]').isChecked()).resolves.toBe(true);
    await form.locator('[data-response=accept]').click();

    const record = page.locator('.input-request.resolved[data-request="req-other"][data-response=accept]');
    await record.waitFor(T);
    await expect(record.locator('[data-answer=runtime]').textContent()).resolves.toBe('Zig 0.13');
    await expect(record.locator('[data-answer=targets]').textContent()).resolves.toBe('Linux, Plan 9');
    // The agent got exactly these answers and repeats them.
    const reply = page.locator('.part.md', { hasText: 'Final answers' });
    await reply.waitFor(T);
    const said = await reply.textContent();
    expect(said).toContain('Input accepted.');
    expect(said).toContain('Runtime: Zig 0.13 (other: Zig 0.13)');
    expect(said).toContain('Targets: Linux (other: Plan 9)');
    // By question title, in the order of the form.
    expect(said!.indexOf('Runtime:')).toBeLessThan(said!.indexOf('Targets:'));
    await expect.poll(() => chatStatus(page).textContent(), T).toBe('Idle');
    // So did the hub: the submitted answers carry the free text as free-form values.
    const done = await setup.waitForEnvelope((e) => e.action.type === 'chat/inputCompleted', 'completion');
    expect(done.rejectionReason).toBeUndefined();
    expect((done.action as { answers?: unknown }).answers).toEqual({
      runtime: { state: 'submitted', value: { kind: 'selected', value: 'Zig 0.13', freeformValues: ['Zig 0.13'] } },
      targets: { state: 'submitted', value: { kind: 'selected-many', value: ['linux'], freeformValues: ['Plan 9'] } },
    });
    expect(hub.pageErrors).toEqual([]);
  }, 30_000);

  it('an addition to a turn that is stopped before its next barrier ends "cancelled", never "consumed"', async () => {
    // The demo agent takes additions only at barriers between steps: once "Sleeping." is shown,
    // the barrier before the sleep has passed and the next one comes after a minute.
    const { session } = await hub.scriptedSession(TOKENS.alice, 'Stopped with an addition', [{ say: 'Sleeping.' }, { sleep: 60_000 }, { say: 'Woke up.' }]);
    const [a, b] = await Promise.all([hub.open(TOKENS.alice, sessionPath(session)), hub.open(TOKENS.bob, sessionPath(session))]);
    for (const p of [a, b]) await p.locator('.part.md', { hasText: 'Sleeping.' }).waitFor(T);
    await expect(a.locator('[data-testid=send]').textContent()).resolves.toBe('Add to turn');
    await a.locator('[data-testid=composer]').fill('also update the changelog');
    await a.locator('[data-testid=send]').click();
    const receipt = a.locator('.receipt[data-input]', { hasText: 'also update the changelog' });
    await a.locator('.receipt[data-input][data-state=accepted]', { hasText: 'also update the changelog' }).waitFor(T);
    // The other tab sees the addition as pending.
    await b.locator('.receipt', { hasText: 'pending (another tab)' }).filter({ hasText: 'also update the changelog' }).waitFor(T);

    await a.locator('[data-testid=stop]').click();
    for (const p of [a, b]) await p.locator('.turn-footer', { hasText: 'Stopped' }).waitFor(T);
    await a.locator('.receipt[data-input][data-state=cancelled]', { hasText: 'also update the changelog' }).waitFor(T);
    // In words, never the receipt's reason code (issue 20).
    await expect(receipt.locator('.badge').textContent()).resolves.toBe('not used');
    await expect(receipt.textContent()).resolves.toContain('the turn was stopped before the agent read it');
    await expect(receipt.textContent()).resolves.not.toContain('turn_cancelled');
    // The tab that stopped it says "you"; the other names who did (the hub stamps the stop).
    await expect(a.locator('.turn-footer').last().textContent()).resolves.toMatch(/^Stopped by you after \d+\.\d s · /);
    await expect.poll(() => b.locator('.turn-footer').last().textContent(), T).toMatch(/^Stopped by alice after \d+\.\d s · /);
    await expect(a.locator('.receipt[data-state=consumed]').count()).resolves.toBe(0);
    // The agent never saw it, and the other tab no longer lists it as pending.
    await expect(a.locator('.part.md', { hasText: 'Taking your addition into account' }).count()).resolves.toBe(0);
    await expect.poll(() => b.locator('.receipt', { hasText: 'also update the changelog' }).count(), T).toBe(0);
    for (const p of [a, b]) await expect.poll(() => chatStatus(p).textContent(), T).toBe('Idle');
    expect(hub.pageErrors).toEqual([]);
  }, 30_000);

  it('shows every missing or out-of-range answer at its field at once, sending nothing until all fit', async () => {
    const request = {
      id: 'req-checks',
      message: 'Sizing',
      questions: [
        { id: 'summary', kind: 'text', title: 'Summary', message: 'What changes?', required: true },
        { id: 'replicas', kind: 'integer', title: 'Replicas', message: 'How many replicas?', required: true, min: 1, max: 10 },
        { id: 'ratio', kind: 'number', title: 'Ratio', message: 'Canary share', min: 0, max: 1 },
      ],
    };
    const { setup, session } = await hub.scriptedSession(TOKENS.alice, 'Form checks', [{ ask: request }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    const form = page.locator('.input-request:not(.resolved)[data-request="req-checks"]');
    const status = form.locator('.form-status');
    const submit = form.locator('[data-response=accept]');
    await form.locator('[data-question=summary] textarea').waitFor(T);
    await expect(submit.textContent()).resolves.toBe('Submit answers');
    await expect(form.locator('[data-question=replicas] .q-hint').textContent()).resolves.toBe('1–10 whole number');

    // Nothing filled in: every required question says so at its own field, all at once.
    const fieldError = (id: string) => form.locator(`[data-question=${id}] [data-testid=field-error]`);
    await submit.click();
    await expect.poll(() => status.textContent(), T).toBe('2 answers need attention (see the highlighted questions).');
    await expect(status.getAttribute('class')).resolves.toContain('error');
    await expect(fieldError('summary').textContent()).resolves.toBe('This question needs an answer.');
    await expect(fieldError('replicas').textContent()).resolves.toBe('This question needs an answer.');
    await expect(fieldError('ratio').isVisible()).resolves.toBe(false);
    await expect(form.locator('[data-question=summary] textarea').getAttribute('aria-invalid')).resolves.toBe('true');
    // Fixing a field clears its message at once, without another submit.
    await form.locator('[data-question=summary] textarea').fill('Scale out the workers');
    await expect.poll(() => fieldError('summary').isVisible(), T).toBe(false);
    await expect(fieldError('replicas').textContent()).resolves.toBe('This question needs an answer.');
    // Above the maximum, below the minimum, not a whole number: the hub's own rules, in words.
    const replicas = form.locator('[data-question=replicas] input');
    for (const [value, message] of [
      ['42', 'Enter 10 or less.'],
      ['0', 'Enter 1 or more.'],
      ['2.5', 'Enter a whole number.'],
    ] as const) {
      await replicas.fill(value);
      await submit.click();
      await expect.poll(() => fieldError('replicas').textContent(), T).toBe(message);
    }
    // An optional number is checked as well once it has a value.
    await replicas.fill('3');
    await form.locator('[data-question=ratio] input').fill('1.5');
    await submit.click();
    await expect.poll(() => fieldError('ratio').textContent(), T).toBe('Enter 1 or less.');
    await expect.poll(() => status.textContent(), T).toBe('One answer needs attention (see the highlighted question).');

    // Nothing was sent: the request is still open in the browser and at the hub.
    await expect(chatStatus(page).textContent()).resolves.toBe('Needs input');
    await expect(form.isVisible()).resolves.toBe(true);
    await expect(submit.isDisabled()).resolves.toBe(false);
    expect(setup.envelopes.filter((e) => e.action.type === 'chat/inputCompleted')).toEqual([]);

    // Once every answer fits, the same button sends them; the completion is the first one the hub saw.
    await form.locator('[data-question=ratio] input').fill('0.25');
    await submit.click();
    const record = page.locator('.input-request.resolved[data-request="req-checks"][data-response=accept]');
    await record.waitFor(T);
    await expect(record.locator('[data-answer=replicas]').textContent()).resolves.toBe('3');
    await expect(record.locator('[data-answer=ratio]').textContent()).resolves.toBe('0.25');
    await page.locator('.part.md', { hasText: 'Replicas: 3' }).waitFor(T);
    const completions = setup.envelopes.filter((e) => e.action.type === 'chat/inputCompleted');
    expect(completions).toHaveLength(1);
    expect(completions[0]!.rejectionReason).toBeUndefined();
    expect(hub.pageErrors).toEqual([]);
  }, 30_000);
});
