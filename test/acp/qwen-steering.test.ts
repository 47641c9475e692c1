/**
 * Steering real Qwen Code (`@qwen-code/qwen-code`, pinned, loopback mock model): an input sent
 * while Qwen waits for a tool permission reaches the model with the tool result, because Qwen
 * drains the hub's queue (`craft/drainMidTurnQueue`) after the tool batch; the hub receipt is
 * `consumed` and the input is in the transcript.
 */
import { afterEach, expect, it } from 'vitest';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { startMockModel, type MockModel } from './mock-model.js';
import { makeQwenHome, type QwenHome } from './qwen-home.js';
import { capturingLogger, chatState, createSessionWith, endedTurn, startAcpHub, startTurn, turnParts } from './support.js';

const SLOW = 90_000;
const STEER = 'Also mention the licence file.';

let model: MockModel | undefined;
let home: QwenHome | undefined;
let server: TestServer | undefined;
let client: RpcClient | undefined;

afterEach(async () => {
  await client?.close();
  await server?.stop();
  await model?.close();
  home?.remove();
  client = undefined;
  server = undefined;
  model = undefined;
  home = undefined;
});

it('an input sent while Qwen waits for a permission reaches the model after the tool runs, and its receipt is consumed', async () => {
  model = await startMockModel();
  home = makeQwenHome(model.baseUrl);
  ({ server } = await startAcpHub(
    [{ provider: 'qwen', config: { kind: 'acp', command: home.command, args: home.args, env: home.env, passEnv: [], cwd: home.workDir, startupTimeoutMs: SLOW, confinement: 'none' as const } }],
    capturingLogger(),
  ));
  client = await RpcClient.open(server.wsUrl);
  const { session, chat } = await createSessionWith(client, 'qwen');
  await client.subscribe(chat);
  const turnId = await startTurn(client, chat, 'Please create the marker file.');
  const pendingTool = () => {
    for (const p of turnParts(chatState(server!, chat), turnId)) if (isPartOfKind(p, 'toolCall') && p.toolCall.status === 'pending-confirmation') return p.toolCall;
    return undefined;
  };
  await waitFor(pendingTool, { what: 'the permission request', timeoutMs: SLOW });

  const caps = await client.request<{ target: unknown; targetUnavailable?: unknown }>('x-input/capabilities', { channel: session });
  expect(caps.targetUnavailable).toBeUndefined();
  const submitted = await client.request<{ outcome: string }>('x-input/submit', { channel: session, inputId: 'steer-1', target: caps.target, content: { text: STEER } });
  expect(submitted.outcome).toBe('accepted');
  // The mock model asks for the command again when the last message is user text, which the
  // drained input is: approve every request until the turn ends.
  const approved: string[] = [];
  const turn = await waitFor(
    async () => {
      const ended = endedTurn(server!, chat, turnId);
      if (ended) return ended;
      const tool = pendingTool();
      if (tool && !approved.includes(tool.toolCallId)) {
        approved.push(tool.toolCallId);
        const allowOnce = ((tool as { options?: Array<{ id: string; _meta?: Record<string, unknown> }> }).options ?? []).find((o) => o._meta?.['acp/optionKind'] === 'allow_once')!;
        await client!.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: tool.toolCallId, approved: true, confirmed: 'user-action', selectedOptionId: allowOnce.id });
      }
      return undefined;
    },
    { what: 'the turn to end', timeoutMs: SLOW },
  );
  expect(turn.state).toBe('complete');
  const status = await client.request<{ receipt: { state: string } | null }>('x-input/status', { channel: session, inputId: 'steer-1', target: caps.target });
  expect(status.receipt?.state).toBe('consumed');
  // The model saw it: some request after the tool result carries the text.
  expect(model.requests.some((r) => JSON.stringify(r).includes(STEER))).toBe(true);
  const userPart = turnParts(chatState(server, chat), turnId).find((p) => (p as { kind: string }).kind === 'userMessage') as unknown as { message: { text: string } } | undefined;
  expect(userPart?.message.text).toBe(STEER);
}, 180_000);
