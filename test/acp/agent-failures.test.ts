/**
 * Agent failures say why (issue 28, item 6). A hosted ACP agent that fails tells the hub the cause
 * (an error's `data`, its stderr before it died); the turn's error must carry it, with the model
 * endpoint the agent was configured to reach when the cause is a connection it could not make. A
 * turn whose agent cannot start (binary missing, exits at once, `initialize` refused) ends within
 * seconds, never after a long "Working…". The scripted agent (a real process over stdio) plays
 * each failure; test/acp/qwen-failures.test.ts does the model-unreachable case with real Qwen Code.
 */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isPartOfKind } from '../../shared/protocol/state.js';
import type { ResolvedAcpAgentConfig } from '../../server/agents/acp/agents-config.js';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { acpConfig, capturingLogger, chatState, createSessionWith, script, startAcpHub, startTurn, text, turnParts, waitForEnd } from './support.js';

/** A start failure is told in a few seconds on a loaded machine; a hung start would take the 60 s startup timeout. */
const START_FAILURE_DEADLINE_MS = 15_000;

let server: TestServer | undefined;
let client: RpcClient | undefined;
let listener: Server | undefined;

afterEach(async () => {
  await client?.close();
  await server?.stop();
  await new Promise((resolve) => (listener ? listener.close(resolve) : resolve(undefined)));
  server = undefined;
  client = undefined;
  listener = undefined;
});

/** A loopback port: listening (`open`) or bound once and closed again (refuses connections). */
async function loopbackPort(open: boolean): Promise<number> {
  const probe = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  if (open) listener = probe;
  else await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

function notices(chat: string, turnId: string): string[] {
  return turnParts(chatState(server!, chat), turnId).flatMap((p) => (isPartOfKind(p, 'systemNotification') && typeof p.content === 'string' ? [p.content] : []));
}

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

  it('while the agent retries an unreachable model, the turn says so within seconds (the agent still decides the turn)', async () => {
    const endpoint = `http://127.0.0.1:${await loopbackPort(false)}/v1`;
    server = (await startAcpHub([{ provider: 'scripted', config: acpConfig({ env: { OPENAI_BASE_URL: endpoint } }) }], capturingLogger())).server;
    client = await RpcClient.open(server.wsUrl);
    const { chat } = await createSessionWith(client, 'scripted');
    await client.subscribe(chat);
    const turnId = await startTurn(client, chat, script({ waitCancel: true }));
    const [notice] = await waitFor(() => (notices(chat, turnId).length > 0 ? notices(chat, turnId) : undefined), { what: 'the unreachable-model notice', timeoutMs: START_FAILURE_DEADLINE_MS });
    expect(notice).toContain(`cannot connect to this agent's model at ${endpoint} (connection refused)`);
    expect(chatState(server, chat).activeTurn?.id).toBe(turnId);
    const cancelled = await client.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId, duration: 1 });
    expect(cancelled.rejectionReason).toBeUndefined();
  });

  it('no notice when the model endpoint answers, or when the agent reaches it through a proxy', async () => {
    const cases: Array<{ env: Record<string, string>; probed: string }> = [
      { env: { OPENAI_BASE_URL: `http://127.0.0.1:${await loopbackPort(true)}/v1` }, probed: 'reachable' },
      { env: { OPENAI_BASE_URL: 'http://model.invalid/v1', HTTP_PROXY: 'http://127.0.0.1:9' }, probed: 'skipped' },
    ];
    for (const { env, probed } of cases) {
      const logger = capturingLogger();
      server = (await startAcpHub([{ provider: 'scripted', config: acpConfig({ env }) }], logger)).server;
      client = await RpcClient.open(server.wsUrl);
      const { chat } = await createSessionWith(client, 'scripted');
      await client.subscribe(chat);
      // The agent holds the turn until cancelled; it is cancelled once the probe has decided.
      const turnId = await startTurn(client, chat, script(text('working'), { waitCancel: true }));
      const line = await waitFor(() => logger.lines.find((l) => l.msg === 'agent model endpoint probed'), { what: 'the probe to decide', timeoutMs: START_FAILURE_DEADLINE_MS });
      expect(line.fields['kind']).toBe(probed);
      await client.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId, duration: 1 });
      expect(notices(chat, turnId), JSON.stringify(env)).toEqual([]);
      await client.close();
      await server.stop();
    }
  });

  it("an agent that refuses initialize ends the turn within seconds with the agent's reason", async () => {
    const { ended, tookMs } = await failedTurn(acpConfig({ env: { SCRIPTED_AGENT_START: 'initError' } }), 'hello', START_FAILURE_DEADLINE_MS);
    expect(ended.error?.errorType).toBe('agentStartFailed');
    expect(ended.error?.message).toContain('No model is configured: set OPENAI_MODEL.');
    expect(tookMs).toBeLessThan(START_FAILURE_DEADLINE_MS);
  });
});
