/**
 * Offline edits are never silent (issue 28, item 2). Alice and Bob have one request open in
 * Chromium; Alice writes the release note, Bob has never typed in it. The real hub process is
 * stopped (SIGTERM or SIGKILL) and, while it is down, Bob appends to Alice's text. When the hub
 * is back on the same port both tabs re-join the shared text: Bob's words must reach the hub and
 * both tabs (merged with Alice's), or Bob's tab must say "Not delivered" with a Resend button —
 * never a silent loss. Five restarts, each with a new request.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { ChatState, InputRequestPart } from '../../shared/protocol/state.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { RestartRig } from '../helpers/restart-rig.js';
import type { HubProcess } from '../helpers/hub-process.js';
import type { RpcClient } from '../helpers/rpc-client.js';
import { AUTH_FILE, TOKENS } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { CHROMIUM, ensureAppBuilt, sessionPath } from './support.js';

const RUNS = 5;

const request = (id: string) => ({
  id,
  message: 'Release notes, please.',
  questions: [{ id: 'notes', kind: 'text', title: 'Release notes', message: 'What changed?', required: true, max: 500 }],
});

const rig = RestartRig.perTest();
let browser: Browser | undefined;

beforeAll(async () => {
  await ensureAppBuilt();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

async function draftOf(c: RpcClient, chat: string, requestId: string): Promise<string | undefined> {
  const s = (await c.subscribe<ChatState>(chat)).state;
  const part = s.activeTurn?.responseParts.find((p): p is InputRequestPart => isPartOfKind(p, 'inputRequest') && p.request.id === requestId);
  const answer = part?.request.answers?.['notes'];
  return answer && answer.state !== 'skipped' && answer.value.kind === 'text' ? (answer.value as { value: string }).value : undefined;
}

/** `mayConnect`: while it says false, the page's WebSocket connections are refused (it stays offline). */
async function openAs(hub: HubProcess, token: string, path: string, errors: string[], mayConnect?: () => boolean): Promise<Page> {
  const context = await browser!.newContext({ viewport: { width: 1000, height: 800 } });
  const page = await context.newPage();
  if (mayConnect) await page.routeWebSocket(/\/ahp/, (ws) => (mayConnect() ? void ws.connectToServer() : ws.close()));
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${hub.url}${path}?token=${encodeURIComponent(token)}`);
  await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor();
  return page;
}

describe('offline edits across a hub restart', () => {
  it(`an edit typed offline by someone who never touched the field is delivered and merged (or marked Not delivered), ${RUNS} of ${RUNS}`, async () => {
    const data = rig.dataDir('offline-edit-');
    const tokens = join(data, 'tokens.json');
    writeFileSync(tokens, JSON.stringify(AUTH_FILE));
    let hub = await rig.start(['--data', data, '--auth', tokens]);
    const port = new URL(hub.url).port;
    const args = ['--data', data, '--auth', tokens, '--port', port];
    const errors: string[] = [];
    let setup = await rig.open(hub, TOKENS.alice);
    const { session, chat } = await setup.createSession('Release notes');
    await setup.subscribe(chat);
    const alice = await openAs(hub, TOKENS.alice, sessionPath(session), errors);
    const bob = await openAs(hub, TOKENS.bob, sessionPath(session), errors);
    const outcomes: string[] = [];

    for (let run = 1; run <= RUNS; run++) {
      const id = `notes-${run}`;
      await startScriptTurn(setup, chat, [{ ask: request(id) }, { say: `Noted ${run}.` }]);
      const aliceNotes = alice.locator(`[data-request="${id}"] [data-question=notes] textarea`);
      const bobNotes = bob.locator(`[data-request="${id}"] [data-question=notes] textarea`);
      await aliceNotes.waitFor();
      await bobNotes.waitFor();
      // Alice writes; Bob sees it (he has not typed in this answer).
      await aliceNotes.click();
      await aliceNotes.pressSequentially(`Fixes login ${run}`);
      await waitFor(async () => ((await draftOf(setup, chat, id)) === `Fixes login ${run}` ? true : undefined), { what: `alice's draft ${run}` });
      await waitFor(async () => ((await bobNotes.inputValue()) === `Fixes login ${run}` ? true : undefined), { what: `alice's text in bob's tab ${run}` });

      const signal = run % 2 === 1 ? 'SIGTERM' : 'SIGKILL';
      await setup.close();
      hub.child.kill(signal);
      await hub.exited();
      await bob.locator('.banner', { hasText: 'reconnecting' }).waitFor();
      await alice.locator('.banner', { hasText: 'reconnecting' }).waitFor();
      // Bob, offline, appends to the text he never touched.
      await bobNotes.click();
      await bobNotes.press('End');
      await bobNotes.pressSequentially(' and logout');
      await expect(bobNotes.inputValue()).resolves.toBe(`Fixes login ${run} and logout`);

      hub = await rig.start(args);
      for (const page of [alice, bob]) await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor({ timeout: 20_000 });
      setup = await rig.open(hub, TOKENS.alice);
      const expected = `Fixes login ${run} and logout`;
      const outcome = await waitFor(
        async () => {
          const notDelivered = await bob.locator('[data-testid=resend-draft]').count();
          if (notDelivered > 0 && (await bob.locator('.form-status', { hasText: 'Not delivered' }).count()) > 0) return 'marked Not delivered';
          const [hubText, aliceText, bobText] = [await draftOf(setup, chat, id), await aliceNotes.inputValue(), await bobNotes.inputValue()];
          return hubText === expected && aliceText === expected && bobText === expected ? 'delivered' : undefined;
        },
        { what: `bob's offline edit to be delivered or marked (run ${run}, ${signal})`, timeoutMs: 20_000 },
      ).catch(async (err: unknown) => {
        throw new Error(`${(err as Error).message}: hub has ${JSON.stringify(await draftOf(setup, chat, id))}, alice shows ${JSON.stringify(await aliceNotes.inputValue())}, bob shows ${JSON.stringify(await bobNotes.inputValue())}`);
      });
      outcomes.push(`${run} ${signal}: ${outcome}`);
      // The next run needs the turn over: answer as the hub has it.
      const done = await setup.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: id, response: 'accept', answers: { notes: { state: 'submitted', value: { kind: 'text', value: (await draftOf(setup, chat, id)) ?? '' } } } });
      expect(done.rejectionReason).toBeUndefined();
      await waitFor(async () => ((await setup.subscribe<ChatState>(chat)).state.activeTurn ? undefined : true), { what: `turn ${run} to end` });
    }
    expect(outcomes).toEqual(Array.from({ length: RUNS }, (_, i) => `${i + 1} ${i % 2 === 0 ? 'SIGTERM' : 'SIGKILL'}: delivered`));
    expect(errors).toEqual([]);
  }, 300_000);

  it('an offline edit of the same words someone else changed is marked Not delivered with Resend, and Resend delivers it', async () => {
    const data = rig.dataDir('offline-conflict-');
    const tokens = join(data, 'tokens.json');
    writeFileSync(tokens, JSON.stringify(AUTH_FILE));
    let hub = await rig.start(['--data', data, '--auth', tokens]);
    const args = ['--data', data, '--auth', tokens, '--port', new URL(hub.url).port];
    const errors: string[] = [];
    let setup = await rig.open(hub, TOKENS.alice);
    const { session, chat } = await setup.createSession('Conflicting notes');
    await setup.subscribe(chat);
    await startScriptTurn(setup, chat, [{ ask: request('notes-c') }]);
    let bobMayConnect = true;
    const alice = await openAs(hub, TOKENS.alice, sessionPath(session), errors);
    const bob = await openAs(hub, TOKENS.bob, sessionPath(session), errors, () => bobMayConnect);
    const aliceNotes = alice.locator('[data-request="notes-c"] [data-question=notes] textarea');
    const bobNotes = bob.locator('[data-request="notes-c"] [data-question=notes] textarea');
    await aliceNotes.click();
    await aliceNotes.pressSequentially('Fixes login');
    await waitFor(async () => ((await bobNotes.inputValue()) === 'Fixes login' ? true : undefined), { what: "alice's text in bob's tab" });
    await waitFor(async () => ((await draftOf(setup, chat, 'notes-c')) === 'Fixes login' ? true : undefined), { what: "alice's draft" });

    await setup.close();
    hub.child.kill('SIGTERM');
    await hub.exited();
    for (const page of [alice, bob]) await page.locator('.banner', { hasText: 'reconnecting' }).waitFor();
    // Both change the same word while the hub is down.
    for (const [notes, word] of [
      [aliceNotes, 'log-in'],
      [bobNotes, 'sign-in'],
    ] as const) {
      await notes.click();
      await notes.press('End');
      for (let i = 0; i < 'login'.length; i++) await notes.press('Backspace');
      await notes.pressSequentially(word);
    }
    bobMayConnect = false;
    hub = await rig.start(args);
    setup = await rig.open(hub, TOKENS.alice);
    // Alice is back first: her edit is the hub's text.
    await waitFor(async () => ((await draftOf(setup, chat, 'notes-c')) === 'Fixes log-in' ? true : undefined), { what: "alice's offline edit in the hub", timeoutMs: 20_000 });
    bobMayConnect = true;
    const status = bob.locator('[data-request="notes-c"] .form-status', { hasText: 'Not delivered' });
    await status.waitFor({ timeout: 20_000 });
    await expect(status.textContent()).resolves.toContain('“Fixes sign-in”');
    await expect(bobNotes.inputValue()).resolves.toBe('Fixes log-in');
    await expect(draftOf(setup, chat, 'notes-c')).resolves.toBe('Fixes log-in');
    await bob.locator('[data-request="notes-c"] [data-testid=resend-draft]').click();
    await waitFor(async () => ((await draftOf(setup, chat, 'notes-c')) === 'Fixes sign-in' && (await aliceNotes.inputValue()) === 'Fixes sign-in' ? true : undefined), { what: "bob's resent text everywhere" });
    await expect(bob.locator('[data-request="notes-c"] [data-testid=resend-draft]').count()).resolves.toBe(0);
    expect(errors).toEqual([]);
  }, 120_000);
});
