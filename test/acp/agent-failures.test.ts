/**
 * Agent failures say why (issue 28, item 6). A hosted ACP agent that fails tells the hub the cause
 * (an error's `data`, its stderr before it died); the turn's error must carry it, with the model
 * endpoint the agent was configured to reach when the cause is a connection it could not make. A
 * turn whose agent cannot start (binary missing, exits at once, `initialize` refused) ends within
 * seconds, never after a long "Working…". The scripted agent (a real process over stdio) plays
 * each failure; test/acp/qwen-failures.test.ts does the model-unreachable case with real Qwen Code.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ResolvedAcpAgentConfig } from '../../server/agents/acp/agents-config.js';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { acpConfig, capturingLogger, createSessionWith, script, startAcpHub, startTurn, waitForEnd } from './support.js';

/** A start failure is told in a few seconds on a loaded machine; a hung start would take the 60 s startup timeout. */
const START_FAILURE_DEADLINE_MS = 15_000;

let server: TestServer | undefined;
let client: RpcClient | undefined;

afterEach(async () => {
  await client?.close();
  await server?.stop();
  server = undefined;
  client = undefined;
});

/** Runs one turn of `prompt` on an agent with `config`; the ended turn and how long it took. */
async function failedTurn(config: ResolvedAcpAgentConfig, prompt: string, deadlineMs: number) {
  server = (await startAcpHub([{ provider: 'scripted', config }], capturingLogger())).server;
  client = await RpcClient.open(server.wsUrl);
  const { chat } = await createSessionWith(client, 'scripted');
  await client.subscribe(chat);
  const started = Date.now();
  const turnId = await startTurn(client, chat, prompt);
  const ended = await waitForEnd(server, chat, turnId, deadlineMs);
  return { ended, tookMs: Date.now() - started };
}

describe('agent failures say why', () => {
  it("a prompt the agent fails with JSON-RPC data shows the agent's own message and the model endpoint it could not reach", async () => {
    const config = acpConfig({ env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'not-a-secret-in-the-error' } });
    const { ended } = await failedTurn(config, script({ error: { code: -32603, message: 'Internal error', data: { details: 'Connection error.' } } }), 30_000);
    expect(ended.state).toBe('error');
    expect(ended.error?.errorType).toBe('modelUnreachable');
    expect(ended.error?.message).toContain('Connection error.');
    expect(ended.error?.message).toContain('http://127.0.0.1:9/v1');
    expect(ended.error?.message).not.toContain('not-a-secret-in-the-error');
  });

  it("an agent error that is not about the network shows the agent's message, without guessing an endpoint", async () => {
    const config = acpConfig({ env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' } });
    const { ended } = await failedTurn(config, script({ error: { code: -32603, message: 'Internal error', data: { details: 'Model mock-model does not exist.' } } }), 30_000);
    expect(ended.error?.errorType).toBe('agentError');
    expect(ended.error?.message).toContain('Model mock-model does not exist.');
    expect(ended.error?.message).not.toContain('127.0.0.1:9');
  });

  it('an agent binary that does not exist ends the turn within seconds, naming the command', async () => {
    const { ended, tookMs } = await failedTurn(acpConfig({ command: '/nonexistent/agent-binary', args: [] }), 'hello', START_FAILURE_DEADLINE_MS);
    expect(ended.error?.errorType).toBe('agentStartFailed');
    expect(ended.error?.message).toContain('/nonexistent/agent-binary');
    expect(ended.error?.message).toContain('ENOENT');
    expect(tookMs).toBeLessThan(START_FAILURE_DEADLINE_MS);
  });

  it('an agent that exits at start ends the turn within seconds with its exit code and the last thing it said on stderr', async () => {
    const { ended, tookMs } = await failedTurn(acpConfig({ env: { SCRIPTED_AGENT_START: 'exit' } }), 'hello', START_FAILURE_DEADLINE_MS);
    expect(ended.error?.errorType).toBe('agentStartFailed');
    expect(ended.error?.message).toContain('exited with code 3');
    expect(ended.error?.message).toContain('cannot read settings.json: unexpected token');
    expect(tookMs).toBeLessThan(START_FAILURE_DEADLINE_MS);
  });

  it("an agent that refuses initialize ends the turn within seconds with the agent's reason", async () => {
    const { ended, tookMs } = await failedTurn(acpConfig({ env: { SCRIPTED_AGENT_START: 'initError' } }), 'hello', START_FAILURE_DEADLINE_MS);
    expect(ended.error?.errorType).toBe('agentStartFailed');
    expect(ended.error?.message).toContain('No model is configured: set OPENAI_MODEL.');
    expect(tookMs).toBeLessThan(START_FAILURE_DEADLINE_MS);
  });
});
