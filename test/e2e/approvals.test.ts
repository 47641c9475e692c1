/**
 * Approving from outside the chat (issue 28 item 8): a tool permission answered straight from the
 * dashboard, through the same first-wins `chat/toolCallConfirmed` the chat view sends, seen
 * resolved with its stamp in an open chat tab; and the audit page (`#/audit`): approvals by
 * person and the standing grants, with Forget for users only. Real headless Chromium against a
 * hub with tokens on port 0 (see support.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acpConfig, capturingLogger, chatState, createSessionWith, reports, script, startAcpHub, startTurn, waitForEnd } from '../acp/support.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { replyQwen, SseClient } from '../helpers/sse.js';
import { TOKENS } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { BrowserHub, CHROMIUM, CHROMIUM_ARGS, ensureAppBuilt, sessionPath } from './support.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

const T = { timeout: 15_000 };

function toolIn(state: any, toolCallId: string): any {
  const parts = [...(state.activeTurn?.responseParts ?? []), ...state.turns.flatMap((t: any) => t.responseParts)];
  return parts.find((p: any) => p.kind === 'toolCall' && p.toolCall.toolCallId === toolCallId)?.toolCall;
}

describe('browser app: approvals outside the chat', () => {
  const hub = BrowserHub.perFile();

  it('the dashboard approves a waiting tool; the open chat tab shows it resolved with who approved it', async () => {
    const { setup, session, chat } = await hub.scriptedSession(TOKENS.alice, 'Approve from the dashboard', [{ tool: { id: 'deploy-1', name: 'deploy', confirm: true } }, { say: 'Deployed.' }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/toolCallReady', 'tool waiting for confirmation');
    const chatTab = await hub.open(TOKENS.alice, sessionPath(session));
    await chatTab.locator('.tool[data-tool=deploy-1] [data-action=Approve]').waitFor(T);

    // A viewer's dashboard shows what waits but offers no answer.
    const viewer = await hub.open(TOKENS.viewer, '/');
    await viewer.locator(`[data-session="${session}"] [data-testid=brief]`).waitFor(T);
    await expect(viewer.locator(`[data-session="${session}"] [data-testid=dashboard-approve]`).count()).resolves.toBe(0);

    const dashboard = await hub.open(TOKENS.bob, '/');
    const card = dashboard.locator(`[data-session="${session}"]`);
    await card.locator('[data-testid=dashboard-approve]').click(T);
    const by = chatTab.locator('.tool[data-tool=deploy-1] [data-testid=answered-by]');
    await expect.poll(() => by.textContent(), T).toMatch(/^Approved by bob · in the app · \d\d:\d\d/);
    // The brief is gone from the dashboard once the hub took the answer.
    await card.locator('[data-testid=brief]').waitFor({ state: 'detached', ...T });
    const state = await waitFor(
      async () => {
        const s = (await setup.subscribe<any>(chat)).state;
        return s.activeTurn ? undefined : s;
      },
      { what: 'the turn to end after the approval' },
    );
    expect(toolIn(state, 'deploy-1')).toMatchObject({ status: 'completed', confirmed: 'user-action', _meta: { 'hub/answeredBy': { user: 'bob', surface: 'app' } } });
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);
});

describe('browser app: the audit page', () => {
  const hub = BrowserHub.perFile();

  it('lists approvals by person and the standing grants; a user forgets a grant there, a viewer only reads', async () => {
    // bob approves deploy in the app; alice grants write_file "always" over the Qwen route.
    const { setup, session, chat } = await hub.scriptedSession(TOKENS.alice, 'Audited session', [
      { tool: { id: 'deploy-a', name: 'deploy', confirm: true } },
      { tool: { id: 'write-a', name: 'write_file', confirm: true } },
      { say: 'Done.' },
    ]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/toolCallReady' && e.action['toolCallId'] === 'deploy-a', 'deploy waiting');
    const bob = await hub.rpc(TOKENS.bob);
    await bob.subscribe(chat);
    const turnId = (await bob.subscribe<any>(chat)).state.activeTurn.id as string;
    const approved = await bob.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'deploy-a', approved: true, confirmed: 'user-action', _meta: { 'hub/client': 'app' } });
    expect(approved.rejectionReason).toBeUndefined();
    const sessionId = session.replace('ahp-session:/', '');
    const sse = await SseClient.open(`${hub.server.url}/v2/sessions/${sessionId}/events`, { token: TOKENS.alice });
    try {
      const ask = await sse.waitForPermissionRequest(1, (d: any) => d.toolCall.toolCallId === 'write-a');
      expect((await replyQwen(hub.server.url, sessionId, ask.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_always' } }, TOKENS.alice)).status).toBe(200);
    } finally {
      await sse.close();
    }

    const page = await hub.open(TOKENS.alice, '/');
    await page.locator('[data-testid=audit-link]').click();
    await page.locator('[data-testid=audit-page]').waitFor(T);
    const bobs = page.locator('[data-testid=audit-approvals] [data-person=bob] [data-testid=audit-approval][data-tool=deploy-a]');
    await expect.poll(() => bobs.textContent(), T).toMatch(/^Approved deploy.*Audited session · bob · in the app · \d\d:\d\d/);
    const alices = page.locator('[data-testid=audit-approvals] [data-person=alice] [data-testid=audit-approval][data-tool=write-a]');
    await expect.poll(() => alices.textContent(), T).toMatch(/^Approved write_file.*Audited session · alice · via Qwen route/);
    const grant = page.locator(`[data-testid=audit-grants] [data-session="${session}"] [data-tool-choice=write_file]`);
    await expect.poll(() => grant.textContent(), T).toMatch(/always allowed.*chosen by alice · via Qwen route · \d\d:\d\d/);

    // A viewer reads the same page without Forget.
    // (opened by its address: the app keeps the token, so a reload lands on the audit page again)
    const viewer = await hub.open(TOKENS.viewer, '/');
    await viewer.goto(`${hub.server.url}/#/audit`);
    await viewer.locator(`[data-testid=audit-grants] [data-session="${session}"] [data-tool-choice=write_file]`).waitFor(T);
    await viewer.locator('[data-testid=audit-approvals] [data-person=bob]').waitFor(T);
    await expect(viewer.locator('[data-testid=forget-choice]').count()).resolves.toBe(0);

    // Forget revokes it: gone from the page and from the session state.
    await grant.locator('[data-testid=forget-choice]').click();
    await grant.waitFor({ state: 'detached', ...T });
    await viewer.locator(`[data-testid=audit-grants] [data-tool-choice=write_file]`).waitFor({ state: 'detached', ...T });
    const meta = (await setup.subscribe<any>(session)).state._meta ?? {};
    expect([meta['hub/approvedTools'], meta['hub/toolChoiceBy']]).toEqual([undefined, undefined]);
    expect(hub.pageErrors).toEqual([]);
  }, 60_000);
});

describe('browser app: a real (ACP) agent asks with standing-grant options', () => {
  let work: string;
  let server: Awaited<ReturnType<typeof startAcpHub>>['server'] | undefined;
  let browser: Browser | undefined;
  let tab: RpcClient | undefined;
  const errors: string[] = [];
  beforeAll(async () => {
    await ensureAppBuilt();
    work = mkdtempSync(join(tmpdir(), 'approvals-e2e-'));
    server = (await startAcpHub([{ provider: 'scripted', config: acpConfig({ cwd: work }) }], capturingLogger(), { staticDir: 'dist/app' })).server;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    tab = await RpcClient.open(server.wsUrl);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await tab?.close();
    await server?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const QWEN_LIKE = [
    { optionId: 'proceed_always_project', name: 'Always Allow in project: touch', kind: 'allow_always' },
    { optionId: 'proceed_always_user', name: 'Always Allow for user: touch', kind: 'allow_always' },
    { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
    { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
  ];
  const ask = (toolCallId: string, command: string): unknown => ({ permission: { toolCall: { toolCallId, title: command, kind: 'execute', status: 'pending', rawInput: { command } }, options: QWEN_LIKE } });
  const done = (toolCallId: string): unknown => ({ update: { sessionUpdate: 'tool_call_update', toolCallId, status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'ok' } }] } });

  it('shows once-options first and the agent\u2019s "always" apart with its scope; the grant it picks is listed as kept by the agent; the stamp stays after the tool ran', async () => {
    const { session, chat } = await createSessionWith(tab!, 'scripted');
    const turnId = await startTurn(tab!, chat, script(ask('g-1', 'touch a.txt'), done('g-1'), ask('g-2', 'rm -rf build'), done('g-2')));
    const page = await (await browser!.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${server!.url}${sessionPath(session)}`);
    const first = page.locator('.tool[data-tool=g-1]');
    await first.locator('[data-testid=once-options] button').first().waitFor(T);
    // Qwen lists its standing grants first; the app puts "Allow" first and primary, the grants apart.
    expect(await first.locator('[data-testid=once-options] button').allTextContents()).toEqual(['Allow', 'Reject']);
    expect(await first.locator('[data-testid=once-options] button').first().getAttribute('class')).toContain('primary');
    expect(await first.locator('[data-testid=standing-options] button').allTextContents()).toEqual(['Always allow in this project: touch', 'Always allow for this user: touch']);

    await first.locator('[data-testid=standing-options] button', { hasText: 'in this project' }).click();
    const grant = page.locator('[data-testid=remembered-choices] [data-kept-by=agent]');
    await expect.poll(() => grant.textContent(), T).toMatch(/^execute: touch a\.txt — always allowed \(“Always Allow in project: touch”\) · chosen by you · in the app · \d\d:\d\d.*kept by the agent: only the agent can forget it/);
    await expect(grant.locator('[data-testid=forget-choice]').count()).resolves.toBe(0);

    // The different command is asked again; once approved and run, it still says who approved it.
    const second = page.locator('.tool[data-tool=g-2]');
    await second.locator('[data-testid=once-options] button', { hasText: 'Allow' }).click(T);
    await second.locator('[data-testid=answered-by]').waitFor(T);
    await waitForEnd(server!, chat, turnId);
    await page.locator('.tool[data-tool=g-2][data-tool-status=completed]').waitFor(T);
    await expect.poll(() => second.locator('[data-testid=answered-by]').textContent(), T).toMatch(/^Approved by you · in the app · \d\d:\d\d/);
    await expect.poll(() => first.locator('[data-testid=answered-by]').textContent(), T).toMatch(/^Approved by you · in the app · \d\d:\d\d/);
    expect(reports(chatState(server!, chat), turnId)).toEqual([{ permission: { outcome: 'selected', optionId: 'proceed_always_project' } }, { permission: { outcome: 'selected', optionId: 'proceed_once' } }]);
    expect(errors).toEqual([]);
  }, 60_000);
});
