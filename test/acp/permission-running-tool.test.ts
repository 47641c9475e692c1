/**
 * An agent that reports a tool as running and only then asks permission for it (OpenCode does
 * this for every tool): the hub moves the running tool back to pending-confirmation (as upstream
 * AHP's reducer allows, fixtures 026–028), the people are asked, and the answer goes back to the
 * agent — approved, the tool runs and completes; denied, the agent gets its own reject option and
 * the tool is denied, not cancelled by the hub. Against the scripted ACP agent (a real child
 * process over stdio); a second client answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatState } from '../../shared/protocol/state.js';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { acpConfig, capturingLogger, chatState, createSessionWith, markdownOf, reports, script, startAcpHub, startTurn, text, toolOf, waitForEnd, waitForTool } from './support.js';

let server: TestServer;
let a: RpcClient;
let b: RpcClient;
let chat: string;
const logger = capturingLogger();

const OPTIONS = [
  { optionId: 'once', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'always', name: 'Always allow', kind: 'allow_always' },
  { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
];

/** As OpenCode does: the tool is announced as in progress, then permission is asked for it. */
function runningThenAsk(toolCallId: string): unknown[] {
  const toolCall = { toolCallId, title: 'bash', kind: 'execute', rawInput: { command: `touch ${toolCallId}` } };
  return [
    { update: { sessionUpdate: 'tool_call', ...toolCall, status: 'pending' } },
    { update: { sessionUpdate: 'tool_call_update', toolCallId, status: 'in_progress' } },
    { permission: { toolCall: { ...toolCall, status: 'pending' }, options: OPTIONS } },
  ];
}

beforeAll(async () => {
  ({ server } = await startAcpHub([{ provider: 'scripted', config: acpConfig() }], logger));
  a = await RpcClient.open(server.wsUrl);
  b = await RpcClient.open(server.wsUrl);
  ({ chat } = await createSessionWith(a, 'scripted'));
  await a.subscribe(chat);
  await b.subscribe<ChatState>(chat);
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await server?.stop();
});

describe('permission asked for a tool that already runs', () => {
  it('the running tool goes back to pending-confirmation, B approves it, the agent gets the chosen option, the tool completes', async () => {
    const turnId = await startTurn(
      a,
      chat,
      script(...runningThenAsk('run-ok'), { update: { sessionUpdate: 'tool_call_update', toolCallId: 'run-ok', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'ran' } }] } }, text('finished')),
    );
    const pending = await waitForTool(server, chat, turnId, 'run-ok', 'pending-confirmation', 15_000);
    expect(pending).toMatchObject({ confirmationTitle: 'Allow bash?' });
    const ready = await b.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/toolCallReady' && e.action['toolCallId'] === 'run-ok' && e.action['confirmed'] === undefined, 'B sees the confirmation request');
    expect((ready.action['options'] as Array<{ id: string }>).map((o) => o.id)).toEqual(['once', 'always', 'reject']);
    const echo = await b.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'run-ok', approved: true, confirmed: 'user-action', selectedOptionId: 'once' });
    expect(echo.rejectionReason).toBeUndefined();
    const turn = (await waitForEnd(server, chat, turnId)) as { state: string };
    expect(turn.state).toBe('complete');
    expect(reports(chatState(server, chat), turnId)).toEqual([{ permission: { outcome: 'selected', optionId: 'once' } }]);
    const tool = turn as unknown as { responseParts: Array<{ kind: string; toolCall?: { toolCallId: string; status: string; success?: boolean } }> };
    expect(tool.responseParts.find((p) => p.toolCall?.toolCallId === 'run-ok')?.toolCall).toMatchObject({ status: 'completed', success: true });
    expect(markdownOf(chatState(server, chat), turnId)).toContain('finished');
    expect(logger.lines.filter((l) => l.msg.startsWith('permission asked for a tool'))).toEqual([]);
  });

  it('a denial of the running tool reaches the agent as its reject option and the tool is denied, not cancelled by the hub', async () => {
    const turnId = await startTurn(a, chat, script(...runningThenAsk('run-no'), { update: { sessionUpdate: 'tool_call_update', toolCallId: 'run-no', status: 'failed' } }, text('not run')));
    await waitForTool(server, chat, turnId, 'run-no', 'pending-confirmation', 15_000);
    await b.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'run-no', approved: false, reason: 'denied', confirmed: 'user-action', selectedOptionId: 'reject' });
    await waitForEnd(server, chat, turnId);
    expect(reports(chatState(server, chat), turnId)).toEqual([{ permission: { outcome: 'selected', optionId: 'reject' } }]);
    expect(toolOf(chatState(server, chat), turnId, 'run-no')).toMatchObject({ status: 'cancelled', reason: 'denied' });
  });
});
