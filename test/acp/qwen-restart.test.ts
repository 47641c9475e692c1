/**
 * Real Qwen Code behind the hub across a hub restart (docs/continuity.md, "Turns"): the next prompt
 * on the same session reaches the agent with the earlier conversation. The hub is stopped and
 * started again on the same data dir; the new Qwen process is given its session back with
 * `session/load`, and the loopback mock model sees the earlier messages in the new request.
 */
import { afterEach, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir, type TestServer } from '../helpers/start-server.js';
import { startMockModel, type MockModel } from './mock-model.js';
import { makeQwenHome, type QwenHome } from './qwen-home.js';
import { capturingLogger, chatState, createSessionWith, markdownOf, startAcpHub, startTurn, waitForEnd } from './support.js';

const SLOW = 90_000;
let model: MockModel | undefined;
let home: QwenHome | undefined;
let server: TestServer | undefined;
let client: RpcClient | undefined;
const data = tempDir('qwen-restart-');

afterEach(async () => {
  await client?.close();
  await server?.stop();
  await model?.close();
  home?.remove();
  data.remove();
});

/** The text of every message of a chat-completion request, by role. */
function messagesOf(request: Record<string, unknown>): Array<{ role: string; text: string }> {
  return ((request['messages'] as Array<{ role?: string; content?: unknown }> | undefined) ?? []).map((m) => ({ role: m.role ?? '', text: JSON.stringify(m.content ?? '') }));
}

it('after a hub restart the next prompt reaches Qwen with the earlier conversation (the model sees the earlier messages)', async () => {
  model = await startMockModel({ answer: 'Noted: the word is PELICAN-7. ' });
  home = makeQwenHome(model.baseUrl);
  const agents = [{ provider: 'qwen', config: { kind: 'acp' as const, command: home.command, args: home.args, env: home.env, passEnv: [], cwd: home.workDir, startupTimeoutMs: SLOW, confinement: 'none' as const } }];
  let started = await startAcpHub(agents, capturingLogger(), { dataDir: data.dir });
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  const { session, chat } = await createSessionWith(client, 'qwen');
  await client.subscribe(chat);
  const first = await startTurn(client, chat, '[no-tools] Please remember the word PELICAN-7.');
  expect((await waitForEnd(server, chat, first, SLOW)).state).toBe('complete');
  const acpSessionId = started.providers.get('qwen')!.processOf(session)!.acpSessionId;
  await client.close();
  await server.close();
  server = undefined;

  const requestsBefore = model.requests.length;
  model.answer = 'You asked me to remember PELICAN-7.';
  const logger = capturingLogger();
  started = await startAcpHub(agents, logger, { dataDir: data.dir });
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  await client.subscribe(chat);
  const second = await startTurn(client, chat, '[no-tools] Which word did I ask you to remember?');
  expect((await waitForEnd(server, chat, second, SLOW)).state).toBe('complete');
  expect(markdownOf(chatState(server, chat), second)).toBe('You asked me to remember PELICAN-7.');
  expect(logger.lines.some((l) => l.msg === 'agent session loaded' && l.fields['acpSessionId'] === acpSessionId)).toBe(true);

  // The streamed request of the new turn carries the conversation from before the restart.
  const streamed = model.requests.slice(requestsBefore).filter((r) => r['stream'] === true);
  const last = messagesOf(streamed.at(-1)!);
  const earlierUser = last.findIndex((m) => m.role === 'user' && m.text.includes('Please remember the word PELICAN-7.'));
  const earlierAnswer = last.findIndex((m) => m.role === 'assistant' && m.text.includes('Noted: the word is PELICAN-7.'));
  const newUser = last.findIndex((m) => m.role === 'user' && m.text.includes('Which word did I ask you to remember?'));
  expect(earlierUser, JSON.stringify(last)).toBeGreaterThanOrEqual(0);
  expect(earlierAnswer).toBeGreaterThan(earlierUser);
  expect(newUser).toBeGreaterThan(earlierAnswer);
}, 240_000);
