/**
 * Steering a hosted ACP agent that offers the seed-003 mid-turn input extension: the hub's input
 * goes to the agent through `_tansr.com/session/steer`, and the hub receipt becomes `consumed`
 * only when the agent's own receipt says so.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { acpConfig, capturingLogger, chatState, createSessionWith, markdownOf, reports, script, startAcpHub, startTurn, text, turnParts, waitForEnd } from './support.js';

let server: TestServer | undefined;
let client: RpcClient | undefined;
const work = mkdtempSync(join(tmpdir(), 'acp-steer-'));

afterEach(async () => {
  await client?.close();
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

it('an agent with the mid-turn input extension takes steering inputs: forwarded, consumed by the agent, then consumed in the hub with its real receipt', async () => {
  ({ server } = await startAcpHub([{ provider: 'steerable', config: acpConfig({ cwd: work, env: { SCRIPTED_AGENT_STEERING: '1' } }) }], capturingLogger()));
  client = await RpcClient.open(server.wsUrl);
  const { session, chat } = await createSessionWith(client, 'steerable');
  await client.subscribe(chat);
  const turnId = await startTurn(client, chat, script(text('working'), { awaitSteering: 1 }, text('done')));
  await waitFor(() => markdownOf(chatState(server!, chat), turnId).includes('working') || undefined, { what: 'the turn to run' });

  const caps = await client.request<{ target: { historyEpoch: string; turnId: string } | null; targetUnavailable?: unknown }>('x-input/capabilities', { channel: session });
  expect(caps.targetUnavailable).toBeUndefined();
  expect(caps.target?.turnId).toBe(turnId);
  const submitted = await client.request<{ outcome: string; receipt: { state: string } }>('x-input/submit', { channel: session, inputId: 'in-1', target: caps.target, content: { text: 'also check the licence' } });
  expect(submitted).toMatchObject({ outcome: 'accepted', receipt: { state: 'accepted' } });

  const turn = await waitForEnd(server, chat, turnId);
  expect(turn.state).toBe('complete');
  // The agent consumed it (its own report), and so does the hub receipt and transcript.
  expect(reports(chatState(server, chat), turnId)).toEqual([{ steered: ['also check the licence'] }]);
  const status = await client.request<{ receipt: { state: string } | null }>('x-input/status', { channel: session, inputId: 'in-1', target: caps.target });
  expect(status.receipt?.state).toBe('consumed');
  const userPart = turnParts(chatState(server, chat), turnId).find((p) => !isPartOfKind(p, 'markdown') && (p as { kind: string }).kind === 'userMessage') as { message: { text: string } } | undefined;
  expect(userPart?.message.text).toBe('also check the licence');
});
