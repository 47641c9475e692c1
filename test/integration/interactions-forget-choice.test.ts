/**
 * Clearing a remembered "always" choice (`x-session/toolChoiceForgotten`) and the record of who
 * answered (`_meta["hub/answeredBy"]`), over real WebSocket, HTTP and SSE: a person (not a
 * viewer) forgets an "always allow"; the hub then asks again for that tool; the forgetting is in
 * the log and survives a restart. Approvals over the Qwen route and from a WebSocket client carry
 * the signed-in user, the surface and the time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { openWatchedSession, replyQwen, restartWatchedSession, type SseClient } from '../helpers/sse.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

const TOOL = { id: 'tool-1', name: 'write_file', input: { path: 'README.md' }, confirm: true };
const optionOf = (data: any, kind: string): string => data.options.find((o: any) => o.kind === kind).optionId;

function toolPart(state: any, toolCallId: string): any {
  const parts = [...(state.activeTurn?.responseParts ?? []), ...state.turns.flatMap((t: any) => t.responseParts)];
  return parts.find((p: any) => p.kind === 'toolCall' && p.toolCall.toolCallId === toolCallId)?.toolCall;
}

describe('forgetting a remembered tool choice', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  async function turnEnded(tab: RpcClient, chat: string): Promise<any> {
    return waitFor(
      async () => {
        const state = (await tab.subscribe<any>(chat)).state;
        return state.activeTurn ? undefined : state;
      },
      { what: `turn of ${chat} to end` },
    );
  }

  it('records who approved over the Qwen route; forgetting an "always allow" makes the hub ask again, also after a restart', async () => {
    const server: TestServer = await startTestServer({ persistent: true });
    closers.push(() => server.stop());
    const first: { server: TestServer; tab: RpcClient; sse: SseClient; session: string; sessionId: string; chat: string } = { server, ...(await openWatchedSession(server, 'forget', closers)) };
    const { tab, session, sessionId, chat, sse } = first;
    await startScriptTurn(tab, chat, [{ tool: TOOL }]);
    const ask = await sse.waitForPermissionRequest();
    expect((await replyQwen(server.url, sessionId, ask.requestId, { outcome: { outcome: 'selected', optionId: optionOf(ask, 'allow_always') } })).status).toBe(200);
    const done = await turnEnded(tab, chat);
    // Who approved, from which surface, when: recorded by the hub on the tool call.
    const answeredBy = toolPart(done, 'tool-1')._meta['hub/answeredBy'];
    expect(answeredBy).toMatchObject({ user: 'dev', surface: 'Qwen route' });
    expect(Date.now() - Date.parse(answeredBy.at)).toBeLessThan(60_000);
    await waitFor(async () => ((await tab.subscribe<any>(session)).state._meta?.['hub/approvedTools']?.includes('write_file') ? true : undefined), { what: 'remembered approval' });

    // A choice the session does not remember cannot be forgotten.
    const unknown = await tab.dispatchAndWait(session, { type: 'x-session/toolChoiceForgotten', toolName: 'delete_file' });
    expect(unknown.rejectionReason).toBe('no remembered always-allow or always-deny choice for tool delete_file in this session');
    const forgot = await tab.dispatchAndWait(session, { type: 'x-session/toolChoiceForgotten', toolName: 'write_file' });
    expect(forgot.rejectionReason).toBeUndefined();
    expect((await tab.subscribe<any>(session)).state._meta?.['hub/approvedTools']).toBeUndefined();

    // After a restart the choice is still forgotten: the same tool asks again.
    const second = await restartWatchedSession(first, closers);
    expect((await second.tab.subscribe<any>(session)).state._meta?.['hub/approvedTools']).toBeUndefined();
    await startScriptTurn(second.tab, chat, [{ tool: { ...TOOL, id: 'tool-2' } }]);
    const again = await second.sse.waitForPermissionRequest();
    expect(again.toolCall.toolName).toBe('write_file');
    expect(toolPart((await second.tab.subscribe<any>(chat)).state, 'tool-2').status).toBe('pending-confirmation');
    // Answered from a WebSocket client this time: the surface is the client's own name, and the
    // user and time are the hub's, whatever the client claims.
    const confirmed = await second.tab.dispatchAndWait(chat, {
      type: 'chat/toolCallConfirmed',
      turnId: (await second.tab.subscribe<any>(chat)).state.activeTurn.id,
      toolCallId: 'tool-2',
      approved: true,
      confirmed: 'user-action',
      _meta: { 'hub/client': 'app', 'hub/answeredBy': { user: 'mallory', surface: 'forged', at: '2000-01-01T00:00:00.000Z' } },
    });
    expect(confirmed.rejectionReason).toBeUndefined();
    expect((confirmed.action as any)._meta['hub/answeredBy']).toMatchObject({ user: 'dev', surface: 'app' });
    expect((confirmed.action as any)._meta['hub/answeredBy'].at).not.toBe('2000-01-01T00:00:00.000Z');
    await turnEnded(second.tab, chat);
  });

  it('refuses a viewer who tries to forget a choice', async () => {
    const server = await startTestServer({ withAuth: true });
    closers.push(() => server.stop());
    const alice = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
    const viewer = await RpcClient.open(server.wsUrl, { token: TOKENS.viewer });
    closers.push(
      () => alice.close(),
      () => viewer.close(),
    );
    const { session } = await alice.createSession('viewer');
    await viewer.subscribe(session);
    const refused = await viewer.dispatchAndWait(session, { type: 'x-session/toolChoiceForgotten', toolName: 'write_file' });
    expect(refused.rejectionReason).toMatch(/read-only/);
  });
});
