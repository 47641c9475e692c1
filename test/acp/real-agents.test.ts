/**
 * One scenario, three real ACP agents from npm behind the hub: Qwen Code, Claude Code (through
 * `@agentclientprotocol/claude-agent-acp`) and Gemini CLI, each configured from the agents example
 * file (`real-agents.ts`) and driven by a loopback mock of its own model API following the same
 * script (`model-script.ts`). Client A prompts; the model asks for a shell command that is not
 * read-only; the agent's permission request reaches every client as a tool confirmation; client B
 * approves it; the command runs in the session's directory; the model's answer streams; the turn
 * completes; and both clients' replicas (their baseline snapshot plus every envelope, through
 * the reducers a stock AHP client has, `x-` actions ignored) equal the hub's snapshot.
 * Nothing leaves 127.0.0.1.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { TOOL_PREAMBLE, type ScriptedModel } from './model-script.js';
import { REAL_AGENTS, realAgentConfig, type RealAgentSetup } from './real-agents.js';
import { capturingLogger, chatState, createSessionWith, markdownOf, startAcpHub, startTurn, toolOf, turnParts, waitForEnd } from './support.js';

/** Agent start-up on a loaded 2-core machine takes seconds; every wait allows for it. */
const SLOW = 90_000;
const IDLE = 1;

let model: ScriptedModel | undefined;
let setup: RealAgentSetup | undefined;
let server: TestServer | undefined;
const clients: RpcClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server?.stop();
  await model?.close();
  setup?.remove();
  server = undefined;
  model = undefined;
  setup = undefined;
});

/** A stock AHP client's replica of a chat: its baseline snapshot, then every accepted envelope of that chat. */
function replicaOf(client: RpcClient, chat: string, baseline: { state: ChatState; fromSeq: number }, toSeq: number): ChatState {
  let state = baseline.state;
  for (const e of client.envelopes as ActionEnvelope[]) {
    if (e.channel !== chat || e.rejectionReason !== undefined || e.serverSeq <= baseline.fromSeq || e.serverSeq > toSeq) continue;
    if (!e.action.type.startsWith('x-')) state = chatReducer(state, e.action as Parameters<typeof chatReducer>[1]);
  }
  return state;
}

describe.each(REAL_AGENTS)('$displayName behind the hub (real ACP agent from the agents example file, loopback mock model)', (agent) => {
  it('A prompts, the permission request reaches both clients as a tool confirmation, B approves it, the command runs, the answer streams, the turn completes, and both replicas equal the hub snapshot', async () => {
    model = await agent.startModel();
    setup = realAgentConfig(agent, model, SLOW);
    if (setup.unconfinedBecause) console.warn(`${agent.displayName} runs unconfined here: no tenant uid can reach ${setup.unconfinedBecause}`);
    // The example entry names the settings directory that makes the agent ask before a tool.
    expect(Object.keys(setup.example.env)).toContain(agent.settingsDirVariable);
    const started = await startAcpHub([{ provider: agent.provider, config: setup.config }], capturingLogger());
    server = started.server;
    const provider = started.providers.get(agent.provider)!;
    const a = await RpcClient.open(server.wsUrl);
    const b = await RpcClient.open(server.wsUrl);
    clients.push(a, b);
    const { session, chat } = await createSessionWith(a, agent.provider);
    const baselineA = await a.subscribe<ChatState>(chat);
    const baselineB = await b.subscribe<ChatState>(chat);

    const startedAt = Date.now();
    const turnId = await startTurn(a, chat, 'Please create the marker file.');
    const toolCallId = await waitFor(
      () => {
        for (const p of turnParts(chatState(server!, chat), turnId)) if (isPartOfKind(p, 'toolCall')) return p.toolCall.toolCallId;
        return undefined;
      },
      { what: 'the tool call', timeoutMs: SLOW },
    );
    // The tool's first state after streaming: waiting for a confirmation, not already running
    // (an agent set to run tools without asking fails here at once).
    const pending = await waitFor(
      () => {
        const tc = toolOf(chatState(server!, chat), turnId, toolCallId);
        return tc && tc.status !== 'streaming' ? tc : undefined;
      },
      { what: 'the tool to leave streaming', timeoutMs: SLOW },
    );
    expect(pending.status, `the tool before anyone answered: ${JSON.stringify(pending)}`).toBe('pending-confirmation');
    const firstQuestionMs = Date.now() - startedAt;
    // B sees the confirmation request as an envelope, with the agent's own options and kinds.
    const ready = await b.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/toolCallReady' && e.action['toolCallId'] === toolCallId && e.action['confirmed'] === undefined, 'B sees the confirmation request');
    const options = (ready.action['options'] as Array<{ id: string; kind: string; _meta?: Record<string, unknown> }> | undefined) ?? [];
    expect(options.map((o) => o._meta?.['acp/optionKind'])).toEqual(expect.arrayContaining(['allow_once', 'reject_once']));
    expect(JSON.stringify(pending)).toContain(model.command);
    // Nothing ran before the answer.
    const marker = join(provider.workspaceOf(session), 'hub-acp-test.txt');
    expect(existsSync(marker)).toBe(false);

    const allowOnce = options.find((o) => o._meta?.['acp/optionKind'] === 'allow_once')!;
    const echo = await b.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId, approved: true, confirmed: 'user-action', selectedOptionId: allowOnce.id });
    expect(echo.rejectionReason).toBeUndefined();

    const turn = await waitForEnd(server, chat, turnId, SLOW);
    const turnMs = Date.now() - startedAt;
    expect(turn.state, `the turn as it ended: ${JSON.stringify(turn.error ?? null)}`).toBe('complete');
    expect(existsSync(marker)).toBe(true);
    // Made by the agent confined as by default: as its tenant's own uid, not the hub's (root) —
    // unless the clone sits where no other uid may reach the agent (then the hub's own user).
    if (setup.unconfinedBecause === undefined) {
      expect(setup.config.confinement).toBe('tenant');
      expect(statSync(marker).uid).not.toBe(process.getuid?.());
      expect(statSync(marker).uid).toBe(statSync(provider.workspaceOf(session)).uid);
    } else {
      expect(setup.unconfinedBecause).toMatch(/^its program: no passage through /);
      expect(statSync(marker).uid).toBe(process.getuid?.());
    }
    const tool = turnParts(chatState(server, chat), turnId).find((p) => isPartOfKind(p, 'toolCall')) as { toolCall: { status: string; success?: boolean } };
    expect(tool.toolCall, `the tool call as the agent reported it: ${JSON.stringify(tool.toolCall)}`).toMatchObject({ status: 'completed', success: true });
    const text = markdownOf(chatState(server, chat), turnId);
    expect(text).toContain(TOOL_PREAMBLE.trim());
    expect(text).toContain(model.answer);
    // The answer reached A as streamed deltas of the turn. The hub's state ends the turn when it
    // decides, A hears of it once it is durable: wait for A's own copy of the end first.
    await a.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/turnComplete' && e.action['turnId'] === turnId, 'A sees the turn complete');
    const streamed = a.envelopes
      .filter((e) => e.channel === chat && e.action.type === 'chat/delta' && e.action['turnId'] === turnId)
      .map((e) => String(e.action['content']))
      .join('');
    expect(streamed).toContain('All done.');
    expect(chatState(server, chat).status & 31).toBe(IDLE);

    // Both replicas equal the hub's snapshot, taken on each client's own connection.
    for (const [client, baseline] of [
      [a, baselineA],
      [b, baselineB],
    ] as const) {
      const snapshot = await client.subscribe<ChatState>(chat);
      expect(replicaOf(client, chat, baseline, snapshot.fromSeq)).toEqual(snapshot.state);
    }
    process.stdout.write(`${agent.provider}: prompt → permission request ${firstQuestionMs} ms (includes process start), whole turn ${turnMs} ms\n`);
  }, 240_000);
});
