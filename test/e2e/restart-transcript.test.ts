/**
 * What the app shows of a turn the hub restarted in the middle of (issue 28, item 4): the demo
 * agent ran an approved tool to completion and said so, then the real hub process is killed and
 * started again on the same port while a tab follows the chat. After the tab reconnects (and the
 * runner replayed the turn) the transcript reads as before: the tool card is completed, each
 * line appears once, and nothing says the tool was not run. The state itself is checked in
 * test/integration/restart-keeps-history.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import type { ChatState } from '../../shared/protocol/state.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { RestartRig } from '../helpers/restart-rig.js';
import { AUTH_FILE, TOKENS } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { CHROMIUM, ensureAppBuilt, sessionPath } from './support.js';

const rig = RestartRig.perTest();
let browser: Browser | undefined;

beforeAll(async () => {
  await ensureAppBuilt();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

it('after a SIGKILL mid-turn the transcript shows the completed tool once, as before, and no "was not run"', async () => {
  const data = rig.dataDir('restart-transcript-');
  const tokens = join(data, 'tokens.json');
  writeFileSync(tokens, JSON.stringify(AUTH_FILE));
  let hub = await rig.start(['--data', data, '--auth', tokens]);
  const args = ['--data', data, '--auth', tokens, '--port', new URL(hub.url).port];
  let setup = await rig.open(hub, TOKENS.alice);
  const { session, chat } = await setup.createSession('Deploy');
  await setup.subscribe(chat);
  const turnId = await startScriptTurn(setup, chat, [
    { say: 'Deploying to production.' },
    { tool: { id: 'deploy', name: 'deploy_prod', confirm: true } },
    { say: 'Deployed.' },
    { ask: { id: 'verify', message: 'Check the site', questions: [{ id: 'ok', kind: 'boolean', message: 'Does it work?', required: true }] } },
  ]);
  const errors: string[] = [];
  const page = await (await browser!.newContext({ viewport: { width: 1000, height: 800 } })).newPage();
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${hub.url}${sessionPath(session)}?token=${encodeURIComponent(TOKENS.alice)}`);
  await page.locator('[data-tool=deploy][data-tool-status=pending-confirmation]').waitFor();
  expect((await setup.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'deploy', approved: true, confirmed: 'user-action' })).rejectionReason).toBeUndefined();
  await page.locator('[data-request=verify]').waitFor();
  const transcript = page.locator('.parts').last();
  const before = (await transcript.textContent()) ?? '';
  expect(before.match(/Deployed\./g)).toHaveLength(1);

  await setup.close();
  hub.child.kill('SIGKILL');
  await hub.exited();
  await page.locator('.banner', { hasText: 'reconnecting' }).waitFor();
  hub = await rig.start(args);
  await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor({ timeout: 20_000 });
  setup = await rig.open(hub, TOKENS.alice);
  // The replay reached the open question again (it waits there): the tab shows the replayed turn.
  await waitFor(
    async () => {
      const s = (await setup.subscribe<ChatState>(chat)).state;
      return s.activeTurn?.responseParts.some((p) => isPartOfKind(p, 'inputRequest') && p.request.id === 'verify') ? true : undefined;
    },
    { what: 'the replayed turn at its question' },
  );
  await page.locator('[data-request=verify] textarea, [data-request=verify] input').first().waitFor();
  await expect(page.locator('[data-tool=deploy]').getAttribute('data-tool-status')).resolves.toBe('completed');
  await expect(page.locator('[data-tool=deploy]').count()).resolves.toBe(1);
  // Answer it: whatever the replay would have added shows up before the turn's next line.
  expect((await setup.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'verify', response: 'accept', answers: { ok: { state: 'submitted', value: { kind: 'boolean', value: true } } } })).rejectionReason).toBeUndefined();
  await page.locator('.part.markdown', { hasText: 'Input accepted.' }).waitFor();
  const after = (await page.locator('.parts').last().textContent()) ?? '';
  expect(after).not.toMatch(/was not run/);
  expect(after.match(/Deployed\./g)).toHaveLength(1);
  expect(after.match(/Deploying to production\./g)).toHaveLength(1);
  expect(errors).toEqual([]);
}, 120_000);
