/**
 * Standing grants of a hosted ACP agent (the scripted agent, a real child process), answered over
 * the qwen reply route and an AHP tab: "always" is remembered only for a precise tool identity,
 * the hub offers no `proceed_always` where the agent offered only once-choices for a tool known
 * by its kind (`execute`, as Gemini CLI, Codex and OpenCode send shell commands), an agent's own
 * `allow_always` is recorded as an agent-kept grant with who chose it (never as a hub rule), and
 * every real-agent approval keeps its "approved by" stamp after the tool ran.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { replyQwen, sessionIdOfUri, SseClient } from '../helpers/sse.js';
import type { TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { acpConfig, capturingLogger, chatState, createSessionWith, reports, script, startAcpHub, startTurn, toolOf, waitForEnd, waitForTool } from './support.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

let server: TestServer;
let tab: RpcClient;
let work: string;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'acp-grants-'));
  server = (await startAcpHub([{ provider: 'scripted', config: acpConfig({ cwd: work }) }], capturingLogger())).server;
  tab = await RpcClient.open(server.wsUrl);
});

afterAll(async () => {
  for (const c of closers.splice(0).reverse()) await c();
  await tab?.close();
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** A session of the scripted agent with an SSE listener (the qwen / DataWorks surface). */
async function agentSession(): Promise<{ session: string; sessionId: string; chat: string; sse: SseClient }> {
  const { session, chat } = await createSessionWith(tab, 'scripted');
  await tab.subscribe(chat);
  const sessionId = sessionIdOfUri(session);
  const sse = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`);
  closers.push(() => sse.close());
  return { session, sessionId, chat, sse };
}

/** A shell command as agents without tool names ask for it: kind `execute`, the command as raw input. */
function shellPermission(toolCallId: string, command: string, options: unknown[]): unknown {
  return { permission: { toolCall: { toolCallId, title: command, kind: 'execute', status: 'pending', rawInput: { command } }, options } };
}

const ONCE_ONLY = [
  { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
  { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
];
const QWEN_LIKE = [
  { optionId: 'proceed_always_project', name: 'Always Allow in project: touch', kind: 'allow_always' },
  { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
  { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
];

const sessionMeta = async (session: string): Promise<Record<string, unknown>> => (await tab.subscribe<any>(session)).state._meta ?? {};

describe('standing grants of a real (ACP) agent', () => {
  it('offers no proceed_always when the agent offered only once-choices for an `execute` tool, so one command never approves a different one', async () => {
    const { session, sessionId, chat, sse } = await agentSession();
    const turnId = await startTurn(tab, chat, script(shellPermission('sh-1', 'touch a.txt', ONCE_ONLY), shellPermission('sh-2', 'rm -rf build', ONCE_ONLY)));
    const first = await sse.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === 'sh-1');
    expect(first.toolCall.toolName).toBe('execute');
    expect(first.options.map((o: any) => o.kind)).toEqual(['allow_once', 'reject_once']);
    // Neither the hub's id nor qwen's scoped aliases grant anything the agent did not offer.
    for (const optionId of ['proceed_always', 'proceed_always_project', 'proceed_always_user']) {
      const refused = await replyQwen(server.url, sessionId, first.requestId, { outcome: { outcome: 'selected', optionId } });
      expect({ optionId, status: refused.status, code: refused.body.code }).toEqual({ optionId, status: 400, code: 'invalid_option_id' });
    }
    expect((await replyQwen(server.url, sessionId, first.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } })).status).toBe(200);

    // The different command is asked again: pending, nobody answered it for us.
    const second = await sse.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === 'sh-2');
    await waitForTool(server, chat, turnId, 'sh-2', 'pending-confirmation');
    expect(sse.events.some((e) => e.data?.params?.kind === 'permission_resolved' && e.data.params.data.requestId === second.requestId)).toBe(false);
    expect((await replyQwen(server.url, sessionId, second.requestId, { outcome: { outcome: 'selected', optionId: 'cancel' } })).status).toBe(200);
    await waitForEnd(server, chat, turnId);
    expect(reports(chatState(server, chat), turnId)).toEqual([{ permission: { outcome: 'selected', optionId: 'proceed_once' } }, { permission: { outcome: 'selected', optionId: 'cancel' } }]);
    const meta = await sessionMeta(session);
    expect(meta['hub/approvedTools']).toBeUndefined();
  });

  it('adds no hub "Allow" beside an agent that offered only its "always" to approve: that reply would reach the agent as its allow_always', async () => {
    const { sessionId, chat, sse } = await agentSession();
    const STANDING_ONLY = [
      { optionId: 'trust', name: 'Always allow', kind: 'allow_always' },
      { optionId: 'no', name: 'No', kind: 'reject_once' },
    ];
    const turnId = await startTurn(tab, chat, script(shellPermission('so-1', 'touch c.txt', STANDING_ONLY)));
    const ask = await sse.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === 'so-1');
    expect(ask.options).toEqual(STANDING_ONLY);
    const refused = await replyQwen(server.url, sessionId, ask.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_once' } });
    expect([refused.status, refused.body.code]).toEqual([400, 'invalid_option_id']);
    expect((await replyQwen(server.url, sessionId, ask.requestId, { outcome: { outcome: 'selected', optionId: 'no' } })).status).toBe(200);
    await waitForEnd(server, chat, turnId);
    expect(reports(chatState(server, chat), turnId)).toEqual([{ permission: { outcome: 'selected', optionId: 'no' } }]);
  });

  it("an agent's own allow_always chosen over the qwen route is agent-kept: recorded with who chose it, never a hub rule for every `execute`", async () => {
    const { session, sessionId, chat, sse } = await agentSession();
    const turnId = await startTurn(tab, chat, script(shellPermission('q-1', 'touch a.txt', QWEN_LIKE), shellPermission('q-2', 'rm -rf build', QWEN_LIKE)));
    const first = await sse.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === 'q-1');
    // The agent's own "always" option is offered as is; the hub adds no always of its own beside it.
    expect(first.options.filter((o: any) => o.kind === 'allow_always').map((o: any) => o.optionId)).toEqual(['proceed_always_project']);
    expect((await replyQwen(server.url, sessionId, first.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_always_project' } })).status).toBe(200);

    // A different command later is asked again (old code remembered "execute" and approved it).
    const second = await sse.waitForPermissionRequest(1, (d) => d.toolCall.toolCallId === 'q-2');
    await waitForTool(server, chat, turnId, 'q-2', 'pending-confirmation');
    expect((await replyQwen(server.url, sessionId, second.requestId, { outcome: { outcome: 'selected', optionId: 'cancel' } })).status).toBe(200);
    await waitForEnd(server, chat, turnId);
    expect(reports(chatState(server, chat), turnId)).toEqual([{ permission: { outcome: 'selected', optionId: 'proceed_always_project' } }, { permission: { outcome: 'selected', optionId: 'cancel' } }]);

    const approved = toolOf(chatState(server, chat), turnId, 'q-1') as any;
    const by = approved._meta['hub/answeredBy'];
    expect(by).toMatchObject({ surface: 'Qwen route', user: expect.any(String) });
    const meta = await waitFor(
      async () => {
        const m = await sessionMeta(session);
        return Array.isArray(m['hub/agentGrants']) ? m : undefined;
      },
      { what: 'the agent-kept grant to be recorded' },
    );
    expect(meta['hub/agentGrants']).toEqual([{ toolName: 'execute: touch a.txt', optionId: 'proceed_always_project', label: 'Always Allow in project: touch', by }]);
    expect(meta['hub/approvedTools']).toBeUndefined();
    // Only the agent keeps it: the hub has nothing to forget.
    const forget = await tab.dispatchAndWait(session, { type: 'x-session/toolChoiceForgotten', toolName: 'execute: touch a.txt' });
    expect(forget.rejectionReason).toMatch(/no remembered always-allow/);
  });

  it('a hub-kept proceed_always chosen over the qwen route is in the remembered list with who chose it', async () => {
    const { session: demoSession, chat: demoChat } = await tab.createSession('grants-demo');
    await tab.subscribe(demoChat);
    const sessionId = sessionIdOfUri(demoSession);
    const sse = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`);
    closers.push(() => sse.close());
    await startScriptTurn(tab, demoChat, [{ tool: { id: 'w-1', name: 'write_file', confirm: true } }]);
    const ask = await sse.waitForPermissionRequest();
    expect((await replyQwen(server.url, sessionId, ask.requestId, { outcome: { outcome: 'selected', optionId: 'proceed_always' } })).status).toBe(200);
    const meta = await waitFor(
      async () => {
        const m = await sessionMeta(demoSession);
        return m['hub/toolChoiceBy'] ? m : undefined;
      },
      { what: 'the remembered choice to carry who chose it' },
    );
    expect(meta['hub/approvedTools']).toEqual(['write_file']);
    expect((meta['hub/toolChoiceBy'] as any).write_file).toMatchObject({ user: expect.any(String), surface: 'Qwen route', at: expect.any(String) });
    // Forget clears the choice and who chose it.
    const forgot = await tab.dispatchAndWait(demoSession, { type: 'x-session/toolChoiceForgotten', toolName: 'write_file' });
    expect(forgot.rejectionReason).toBeUndefined();
    const after = await sessionMeta(demoSession);
    expect([after['hub/approvedTools'], after['hub/toolChoiceBy']]).toEqual([undefined, undefined]);
  });

  it("stamps a real agent's tool approved in the app with who, where and when, and keeps the stamp once the tool completed", async () => {
    const { chat } = await agentSession();
    const turnId = await startTurn(
      tab,
      chat,
      script(shellPermission('st-1', 'touch stamped.txt', ONCE_ONLY), {
        update: { sessionUpdate: 'tool_call_update', toolCallId: 'st-1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'done' } }] },
      }),
    );
    await waitForTool(server, chat, turnId, 'st-1', 'pending-confirmation');
    const echo = await tab.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'st-1', approved: true, confirmed: 'user-action', selectedOptionId: 'proceed_once', _meta: { 'hub/client': 'app' } });
    expect(echo.rejectionReason).toBeUndefined();
    const stamp = (echo.action._meta as any)['hub/answeredBy'];
    expect(stamp).toMatchObject({ surface: 'app', user: expect.any(String), at: expect.any(String) });
    await waitForEnd(server, chat, turnId);
    const tool = toolOf(chatState(server, chat), turnId, 'st-1') as any;
    expect(tool.status).toBe('completed');
    expect(tool._meta['hub/answeredBy']).toEqual(stamp);
    expect(tool._meta['acp/kind']).toBe('execute');
  });
});
