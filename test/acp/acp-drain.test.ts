/**
 * Qwen Code pulls steering input: between tool batches its ACP agent calls the client's
 * `craft/drainMidTurnQueue` and adds the messages it gets to the model's next request. The hub
 * used to answer method-not-found (Qwen then stops asking for good) and refused steering for Qwen
 * sessions; now an agent that names itself `qwen-code` (here the scripted agent under that name)
 * is offered steering, and each drain hands it the inputs accepted since the last one, consumed
 * in the hub before the answer leaves.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { acpConfig, capturingLogger, chatState, createSessionWith, reports, script, startAcpHub, startTurn, turnParts, waitForEnd, waitForTool } from './support.js';

let server: TestServer | undefined;
let client: RpcClient | undefined;
const work = mkdtempSync(join(tmpdir(), 'acp-drain-'));

afterEach(async () => {
  await client?.close();
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

const permission = { permission: { toolCall: { toolCallId: 'tool-1', title: 'touch x', kind: 'edit', status: 'pending', rawInput: { command: 'touch x' } }, options: [{ optionId: 'yes', name: 'Allow', kind: 'allow_once' }] } };

it('craft/drainMidTurnQueue hands a Qwen-style agent the steering inputs accepted during its turn, once, consumed in the hub', async () => {
  ({ server } = await startAcpHub([{ provider: 'qwen-like', config: acpConfig({ cwd: work, env: { SCRIPTED_AGENT_NAME: 'qwen-code' } }) }], capturingLogger()));
  client = await RpcClient.open(server.wsUrl);
  const { session, chat } = await createSessionWith(client, 'qwen-like');
  await client.subscribe(chat);
  // The agent waits on a permission (as Qwen waits on a tool), then drains twice.
  const turnId = await startTurn(client, chat, script(permission, { drain: true }, { drain: true }));
  await waitForTool(server, chat, turnId, 'tool-1', 'pending-confirmation');

  const caps = await client.request<{ target: { historyEpoch: string; turnId: string } | null; targetUnavailable?: unknown }>('x-input/capabilities', { channel: session });
  expect(caps.targetUnavailable).toBeUndefined();
  const submitted = await client.request<{ outcome: string }>('x-input/submit', { channel: session, inputId: 'in-1', target: caps.target, content: { text: 'also check the licence' } });
  expect(submitted.outcome).toBe('accepted');
  await client.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'tool-1', approved: true, confirmed: 'user-action' });

  const turn = await waitForEnd(server, chat, turnId);
  expect(turn.state).toBe('complete');
  const drains = reports(chatState(server, chat), turnId).filter((r) => 'drained' in r || 'drainError' in r);
  expect(drains).toEqual([{ drained: { messages: ['also check the licence'], hasQueuedPrompt: false } }, { drained: { messages: [], hasQueuedPrompt: false } }]);
  const status = await client.request<{ receipt: { state: string } | null }>('x-input/status', { channel: session, inputId: 'in-1', target: caps.target });
  expect(status.receipt?.state).toBe('consumed');
  const userPart = turnParts(chatState(server, chat), turnId).find((p) => (p as { kind: string }).kind === 'userMessage') as { message: { text: string } } | undefined;
  expect(userPart?.message.text).toBe('also check the licence');
});

it('an agent that does not name itself qwen-code is still answered (never method-not-found) and offered steering once it drains', async () => {
  ({ server } = await startAcpHub([{ provider: 'scripted', config: acpConfig({ cwd: work }) }], capturingLogger()));
  client = await RpcClient.open(server.wsUrl);
  const { session, chat } = await createSessionWith(client, 'scripted');
  await client.subscribe(chat);
  const first = await startTurn(client, chat, script({ drain: true }));
  await waitForEnd(server, chat, first);
  expect(reports(chatState(server, chat), first)).toEqual([{ drained: { messages: [], hasQueuedPrompt: false } }]);
  // Its next turn takes steering: the process has shown it pulls input.
  const second = await startTurn(client, chat, script(permission, { drain: true }));
  await waitForTool(server, chat, second, 'tool-1', 'pending-confirmation');
  const caps = await client.request<{ target: unknown; targetUnavailable?: unknown }>('x-input/capabilities', { channel: session });
  expect(caps.targetUnavailable).toBeUndefined();
  await client.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId: second, toolCallId: 'tool-1', approved: true, confirmed: 'user-action' });
  await waitForEnd(server, chat, second);
});
