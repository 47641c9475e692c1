/**
 * Approving from outside the chat (issue 28 item 8): a tool permission answered straight from the
 * dashboard, through the same first-wins `chat/toolCallConfirmed` the chat view sends, seen
 * resolved with its stamp in an open chat tab; and the audit page (`#/audit`): approvals by
 * person and the standing grants, with Forget for users only. Real headless Chromium against a
 * hub with tokens on port 0 (see support.ts).
 */
import { describe, expect, it } from 'vitest';
import { TOKENS } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { BrowserHub, sessionPath } from './support.js';

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
