/**
 * The approval scenario of the real-agent tests as steps (codex.test.ts, opencode.test.ts): a hub
 * with one real agent from the agents example file behind a loopback mock model, client A that
 * prompts and client B that answers; the tool confirmation both see; the transcript export; and
 * a stock AHP client's replica of the chat to compare with the hub's snapshot.
 */
import { existsSync, statSync } from 'node:fs';
import { expect } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import type { ChatState, ToolCallState } from '../../shared/protocol/state.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import type { AcpAgentProvider } from '../../server/agents/acp/acp-provider.js';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import type { ScriptedModel } from './model-script.js';
import { type RealAgent, type RealAgentSetup, realAgentConfig } from './real-agents.js';
import { TOOL_PREAMBLE } from './model-script.js';
import { capturingLogger, chatState, createSessionWith, markdownOf, startAcpHub, startTurn, toolOf, turnParts, waitForEnd } from './support.js';

/** Agent start-up on a loaded 2-core machine takes seconds; every wait allows for it. */
export const SLOW = 90_000;

export interface Hosted {
  readonly agent: RealAgent;
  readonly model: ScriptedModel;
  readonly setup: RealAgentSetup;
  readonly server: TestServer;
  readonly provider: AcpAgentProvider;
  readonly logger: ReturnType<typeof capturingLogger>;
  /** The client that prompts. */
  readonly a: RpcClient;
  /** The client that answers. */
  readonly b: RpcClient;
  close(): Promise<void>;
}

export async function hostAgent(agent: RealAgent): Promise<Hosted> {
  const model = await agent.startModel();
  const setup = realAgentConfig(agent, model, SLOW);
  if (setup.unconfinedBecause) console.warn(`${agent.displayName} runs unconfined here: no tenant uid can reach ${setup.unconfinedBecause}`);
  const logger = capturingLogger();
  const { server, providers } = await startAcpHub([{ provider: agent.provider, config: setup.config }], logger);
  const a = await RpcClient.open(server.wsUrl);
  const b = await RpcClient.open(server.wsUrl);
  return {
    agent,
    model,
    setup,
    server,
    provider: providers.get(agent.provider)!,
    logger,
    a,
    b,
    async close() {
      await a.close();
      await b.close();
      await server.stop();
      await model.close();
      setup.remove();
    },
  };
}

export interface Asked {
  readonly session: string;
  readonly chat: string;
  readonly baselineA: { state: ChatState; fromSeq: number };
  readonly baselineB: { state: ChatState; fromSeq: number };
  readonly turnId: string;
  readonly toolCallId: string;
  readonly pending: ToolCallState;
  /** The confirmation request as B received it, with the agent's own options. */
  readonly options: ReadonlyArray<{ id: string; kind: string; _meta?: Record<string, unknown> }>;
}

/**
 * A fresh session (or `reuse`, whose agent process then serves the turn without a new start);
 * A prompts; the agent's tool waits for a confirmation that B has received.
 */
export async function promptUntilAsked(h: Hosted, text: string, reuse?: { session: string; chat: string }): Promise<Asked> {
  const { session, chat } = reuse ?? (await createSessionWith(h.a, h.agent.provider));
  const baselineA = await h.a.subscribe<ChatState>(chat);
  const baselineB = await h.b.subscribe<ChatState>(chat);
  const turnId = await startTurn(h.a, chat, text);
  const toolCallId = await waitFor(
    () => {
      for (const p of turnParts(chatState(h.server, chat), turnId)) if (isPartOfKind(p, 'toolCall')) return p.toolCall.toolCallId;
      return undefined;
    },
    { what: 'the tool call', timeoutMs: SLOW },
  );
  // Waiting for a confirmation, or already past it (an agent set to run tools without asking, or
  // a hub that answered the agent by itself, fails here at once).
  const pending = await waitFor(
    () => {
      const tc = toolOf(chatState(h.server, chat), turnId, toolCallId);
      return tc && (tc.status === 'pending-confirmation' || tc.status === 'completed' || tc.status === 'cancelled') ? tc : undefined;
    },
    { what: 'the tool to wait for a confirmation', timeoutMs: SLOW },
  );
  if (pending.status !== 'pending-confirmation') throw new Error(`the tool before anyone answered: ${JSON.stringify(pending)}`);
  const ready = await h.b.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/toolCallReady' && e.action['toolCallId'] === toolCallId && e.action['confirmed'] === undefined, 'B sees the confirmation request');
  const options = (ready.action['options'] as Asked['options'] | undefined) ?? [];
  return { session, chat, baselineA, baselineB, turnId, toolCallId, pending, options };
}

/** The option of the agent's own kind (`allow_once`, `reject_once`…), as B was offered it. */
export function optionOfKind(asked: Asked, kind: string): { id: string } {
  const option = asked.options.find((o) => o._meta?.['acp/optionKind'] === kind);
  if (!option) throw new Error(`no ${kind} option among ${JSON.stringify(asked.options)}`);
  return option;
}

/** The tool actions of `toolCallId` as `client` received them, in order. */
export function toolActionsSeenBy(client: RpcClient, chat: string, toolCallId: string): Array<Record<string, unknown>> {
  return (client.envelopes as ActionEnvelope[]).filter((e) => e.channel === chat && e.action['toolCallId'] === toolCallId).map((e) => e.action as Record<string, unknown>);
}

/** The Markdown transcript of the session's default chat (`GET /v2/sessions/{id}/export`). */
export async function transcript(h: Hosted, session: string): Promise<string> {
  const id = session.replace(/^ahp-session:\//, '');
  const res = await fetch(`${h.server.url}/v2/sessions/${encodeURIComponent(id)}/export?format=markdown`);
  if (res.status !== 200) throw new Error(`export answered ${res.status}: ${await res.text()}`);
  return res.text();
}

/** A stock AHP client's replica of a chat: its baseline snapshot, then every accepted envelope of that chat. */
function replicaOf(client: RpcClient, chat: string, baseline: { state: ChatState; fromSeq: number }, toSeq: number): ChatState {
  let state = baseline.state;
  for (const e of client.envelopes as ActionEnvelope[]) {
    if (e.channel !== chat || e.rejectionReason !== undefined || e.serverSeq <= baseline.fromSeq || e.serverSeq > toSeq) continue;
    if (!e.action.type.startsWith('x-')) state = chatReducer(state, e.action as Parameters<typeof chatReducer>[1]);
  }
  return state;
}

/** Both clients' replicas, each against a snapshot taken on its own connection. */
export async function replicasAndSnapshots(h: Hosted, asked: Asked): Promise<Array<{ replica: ChatState; snapshot: ChatState }>> {
  const out: Array<{ replica: ChatState; snapshot: ChatState }> = [];
  for (const [client, baseline] of [
    [h.a, asked.baselineA],
    [h.b, asked.baselineB],
  ] as const) {
    const snapshot = await client.subscribe<ChatState>(asked.chat);
    out.push({ replica: replicaOf(client, asked.chat, baseline, snapshot.fromSeq), snapshot: snapshot.state });
  }
  return out;
}

/**
 * B approves the one tool of `asked` once; then the whole turn is checked as every real agent's
 * approved turn must end: complete, the marker file made (by the tenant's uid when confined), the
 * tool completed, the text streamed to A, B's confirmation on the tool, the transcript naming the
 * tool (`transcriptTool`) as Done, and both replicas equal to the hub's snapshots.
 */
export async function approveOnceAndCheckTurn(h: Hosted, asked: Asked, marker: string, transcriptTool: RegExp): Promise<void> {
  const { chat, turnId, toolCallId } = asked;
  const echo = await h.b.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId, approved: true, confirmed: 'user-action', selectedOptionId: optionOfKind(asked, 'allow_once').id });
  expect(echo.rejectionReason).toBeUndefined();
  const turn = await waitForEnd(h.server, chat, turnId, SLOW);
  expect(turn.state, `the turn as it ended: ${JSON.stringify(turn.error ?? null)}`).toBe('complete');
  expect(existsSync(marker)).toBe(true);
  if (h.setup.unconfinedBecause === undefined) {
    expect(h.setup.config.confinement).toBe('tenant');
    expect(statSync(marker).uid).not.toBe(process.getuid?.());
    expect(statSync(marker).uid).toBe(statSync(h.provider.workspaceOf(asked.session)).uid);
  }
  expect(toolOf(chatState(h.server, chat), turnId, toolCallId)).toMatchObject({ status: 'completed', success: true });
  const text = markdownOf(chatState(h.server, chat), turnId);
  expect(text).toContain(TOOL_PREAMBLE.trim());
  expect(text).toContain(h.model.answer);
  await h.a.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/turnComplete' && e.action['turnId'] === turnId, 'A sees the turn complete');
  const streamed = h.a.envelopes
    .filter((e) => e.channel === chat && e.action.type === 'chat/delta' && e.action['turnId'] === turnId)
    .map((e) => String(e.action['content']))
    .join('');
  expect(streamed).toContain('All done.');
  // B's approval is the one the tool carries, and the transcript says what happened.
  expect(toolActionsSeenBy(h.a, chat, toolCallId).map((a) => a['type'])).toContain('chat/toolCallConfirmed');
  const md = await transcript(h, asked.session);
  expect(md).toContain('Please create the marker file.');
  expect(md).toMatch(transcriptTool);
  expect(md).toContain(h.model.answer);
  for (const { replica, snapshot } of await replicasAndSnapshots(h, asked)) expect(replica).toEqual(snapshot);
}
