/**
 * A real ACP agent from npm behind the hub: Qwen Code (`@qwen-code/qwen-code`, pinned, `qwen --acp`)
 * with its home and settings in a temp dir, driven by a loopback OpenAI-compatible mock model.
 * The model first asks for a shell command (`touch hub-acp-test.txt`), Qwen asks permission, and
 * after the tool result the model answers in text. Nothing leaves 127.0.0.1.
 *
 * Each scenario uses one Qwen process (the kill scenario a second one, by design).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import type { AcpAgentProvider } from '../../server/agents/acp/acp-provider.js';
import { startMockModel, type MockModel } from './mock-model.js';
import { makeQwenHome, type QwenHome } from './qwen-home.js';
import { capturingLogger, chatState, createSessionWith, markdownOf, startAcpHub, startTurn, turnParts, waitForEnd, waitForTool } from './support.js';

const IDLE = 1;
const INPUT_NEEDED = 24;
const activity = (status: number): number => status & 31;
/** Qwen's startup on a loaded 2-core machine takes seconds; every wait allows for it. */
const SLOW = 90_000;

let model: MockModel | undefined;
let home: QwenHome | undefined;
let server: TestServer | undefined;
const clients: RpcClient[] = [];

async function setup(): Promise<{ server: TestServer; provider: AcpAgentProvider; home: QwenHome; model: MockModel; logger: ReturnType<typeof capturingLogger> }> {
  model = await startMockModel();
  home = makeQwenHome(model.baseUrl);
  const logger = capturingLogger();
  const started = await startAcpHub([{ provider: 'qwen', config: { kind: 'acp', command: home.command, args: home.args, env: home.env, passEnv: [], cwd: home.workDir, startupTimeoutMs: SLOW, confinement: 'none' as const } }], logger);
  server = started.server;
  return { server, provider: started.providers.get('qwen')!, home, model, logger };
}

async function open(subscribe: string[] = []): Promise<RpcClient> {
  const c = await RpcClient.open(server!.wsUrl, { subscribe });
  clients.push(c);
  return c;
}

/** The id of the one tool call of a turn, once it exists. */
async function toolCallIdOf(chat: string, turnId: string): Promise<string> {
  return waitFor(
    () => {
      for (const p of turnParts(chatState(server!, chat), turnId)) if (isPartOfKind(p, 'toolCall')) return p.toolCall.toolCallId;
      return undefined;
    },
    { what: 'the tool call', timeoutMs: SLOW },
  );
}

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server?.stop();
  await model?.close();
  home?.remove();
  server = undefined;
  model = undefined;
  home = undefined;
});

describe('Qwen Code behind the hub (real ACP agent, loopback mock model)', () => {
  it("two clients on one chat: B approves, A's approval arrives second and is refused as already answered; the turn ends Idle; the dashboard saw InputNeeded and back", async () => {
    const { server, provider, logger } = await setup();
    const dashboard = await open(['ahp-root://']);
    const a = await open();
    const b = await open();
    const { session, chat } = await createSessionWith(a, 'qwen');
    await a.subscribe(chat);
    await b.subscribe(chat);

    const startedAt = Date.now();
    const turnId = await startTurn(a, chat, 'Please create the marker file.');
    const toolCallId = await toolCallIdOf(chat, turnId);
    const pending = await waitForTool(server, chat, turnId, toolCallId, 'pending-confirmation', SLOW);
    const firstQuestionMs = Date.now() - startedAt;
    const options = (pending as { options?: Array<{ id: string; kind: string; _meta?: Record<string, unknown> }> }).options ?? [];
    // Qwen's own options, passed through with their ACP kinds.
    expect(options.map((o) => o._meta?.['acp/optionKind'])).toEqual(expect.arrayContaining(['allow_once', 'allow_always', 'reject_once']));
    const allowOnce = options.find((o) => o._meta?.['acp/optionKind'] === 'allow_once')!;
    expect(markdownOf(chatState(server, chat), turnId)).toContain('Let me run a command first.');

    await dashboard.waitForNotification(
      (n) => n.method === 'root/sessionSummaryChanged' && n.params['session'] === session && activity((n.params['changes'] as { status?: number }).status ?? 0) === INPUT_NEEDED,
      'dashboard sees InputNeeded',
    );

    const confirm = { type: 'chat/toolCallConfirmed', turnId, toolCallId, approved: true, confirmed: 'user-action', selectedOptionId: allowOnce.id };
    const bEcho = await b.dispatchAndWait(chat, confirm);
    const aEcho = await a.dispatchAndWait(chat, confirm);
    expect(bEcho.rejectionReason).toBeUndefined();
    expect(aEcho.rejectionReason).toMatch(/is not awaiting confirmation/);

    const turn = await waitForEnd(server, chat, turnId, SLOW);
    expect(turn.state).toBe('complete');
    expect(activity(chatState(server, chat).status)).toBe(IDLE);
    // The tool ran in the session's own working directory (under the configured root).
    expect(existsSync(join(provider.workspaceOf(session), 'hub-acp-test.txt'))).toBe(true);
    const tool = turnParts(chatState(server, chat), turnId).find((p) => isPartOfKind(p, 'toolCall')) as { toolCall: { status: string; success?: boolean } };
    expect(tool.toolCall, `the tool call as the agent reported it: ${JSON.stringify(tool.toolCall)}`).toMatchObject({ status: 'completed', success: true });
    expect(markdownOf(chatState(server, chat), turnId)).toContain('All done.');
    expect(turn.usage).toMatchObject({ inputTokens: 120, outputTokens: 24 });
    await dashboard.waitForNotification(
      (n) =>
        n.method === 'root/sessionSummaryChanged' &&
        n.params['session'] === session &&
        activity((n.params['changes'] as { status?: number }).status ?? 0) === IDLE &&
        dashboard.notifications.indexOf(n) > dashboard.notifications.findIndex((m) => m.method === 'root/sessionSummaryChanged' && activity((m.params['changes'] as { status?: number }).status ?? 0) === INPUT_NEEDED),
      'dashboard sees Idle again',
    );
    // Qwen's stderr stays in the hub log; clients never see it.
    expect(a.envelopes.some((e) => JSON.stringify(e).includes('agent stderr'))).toBe(false);
    logger.info('qwen timing', { firstQuestionMs });
    process.stdout.write(`qwen: prompt → permission request in ${firstQuestionMs} ms (includes process start)\n`);
  }, 180_000);

  it('a rejection denies the tool (nothing runs) and the turn ends; a cancel mid-stream ends the next turn cancelled and the one after works', async () => {
    const { server, provider, model } = await setup();
    const a = await open();
    const { session, chat } = await createSessionWith(a, 'qwen');
    await a.subscribe(chat);

    const turnId = await startTurn(a, chat, 'Please create the marker file.');
    const toolCallId = await toolCallIdOf(chat, turnId);
    const pending = await waitForTool(server, chat, turnId, toolCallId, 'pending-confirmation', SLOW);
    const reject = ((pending as { options?: Array<{ id: string; _meta?: Record<string, unknown> }> }).options ?? []).find((o) => o._meta?.['acp/optionKind'] === 'reject_once')!;
    const echo = await a.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId, approved: false, reason: 'denied', selectedOptionId: reject.id });
    expect(echo.rejectionReason).toBeUndefined();
    const turn = await waitForEnd(server, chat, turnId, SLOW);
    // Qwen stops the turn after a rejected tool (end_turn): complete, with the denial recorded.
    expect(turn.state).toBe('complete');
    const tool = turnParts(chatState(server, chat), turnId).find((p) => isPartOfKind(p, 'toolCall')) as { toolCall: { status: string; reason?: string } };
    expect(tool.toolCall).toMatchObject({ status: 'cancelled', reason: 'denied' });
    expect(existsSync(join(provider.workspaceOf(session), 'hub-acp-test.txt'))).toBe(false);

    // Cancel while the model is streaming text.
    model.holdText = true;
    const streaming = await startTurn(a, chat, '[no-tools] Tell me a story.');
    await waitFor(() => markdownOf(chatState(server, chat), streaming).length > 0 || undefined, { what: 'the first streamed words', timeoutMs: SLOW });
    await a.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId: streaming, duration: 1 });
    expect((await waitForEnd(server, chat, streaming, SLOW)).state).toBe('cancelled');
    model.holdText = false;
    model.release();
    // The agent took the cancel: the next turn is served normally.
    const after = await startTurn(a, chat, '[no-tools] Are you still there?');
    expect((await waitForEnd(server, chat, after, SLOW)).state).toBe('complete');
  }, 180_000);

  it('the agent process killed mid-turn: that turn ends with chat/error naming the reason; the next turn starts a fresh process and works', async () => {
    const { server, provider, model } = await setup();
    const a = await open();
    const { session, chat } = await createSessionWith(a, 'qwen');
    await a.subscribe(chat);

    model.holdText = true;
    model.holdAfterWords = 9;
    model.answer = 'Slow answer, part 0. part 1. part 2. part 3. part 4. part 5.';
    const turnId = await startTurn(a, chat, '[no-tools] Tell me a story.');
    await waitFor(() => (markdownOf(chatState(server, chat), turnId).includes('part 2.') ? true : undefined), { what: 'several streamed words', timeoutMs: SLOW });
    const first = provider.processOf(session)!;
    process.kill(first.pid!, 'SIGKILL');
    const failed = await waitForEnd(server, chat, turnId, SLOW);
    expect(failed.state).toBe('error');
    expect(failed.error).toMatchObject({ errorType: 'agentExited' });
    expect(failed.error?.message).toContain('killed by SIGKILL');

    model.holdText = false;
    model.answer = 'The command ran and printed hello-from-shell. All done.';
    model.release();
    const next = await startTurn(a, chat, '[no-tools] Are you still there?');
    expect((await waitForEnd(server, chat, next, SLOW)).state).toBe('complete');
    // Only the new turn's own answer: nothing the earlier (killed) turn streamed is folded in.
    expect(markdownOf(chatState(server, chat), next)).toBe('The command ran and printed hello-from-shell. All done.');
    expect(provider.processOf(session)!.pid).not.toBe(first.pid);
  }, 180_000);
});
