/**
 * Real Qwen Code (`qwen --acp`, pinned in devDependencies) whose model cannot be reached: its
 * OpenAI-compatible base URL points at a loopback port nothing listens on. Qwen retries on its own
 * and then fails the prompt with a bare "Internal error" whose data says "Connection error.";
 * the turn's error must say that, with the endpoint, by a deadline; long before, the turn shows the
 * hub's notice that the endpoint refuses connections. Nothing leaves 127.0.0.1.
 */
import { createServer } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import type { TestServer } from '../helpers/start-server.js';
import { makeQwenHome, type QwenHome } from './qwen-home.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { waitFor } from '../helpers/wait-for.js';
import { capturingLogger, chatState, createSessionWith, endedTurn, startAcpHub, startTurn, turnParts, waitForEnd } from './support.js';

/** Qwen Code retries an unreachable model for about 95 s (measured) before it gives up. */
const DEADLINE_MS = 200_000;
/** Qwen's start-up (seconds, more on a loaded machine) plus the hub's probe (at most 3 s). */
const NOTICE_DEADLINE_MS = 60_000;

let home: QwenHome | undefined;
let server: TestServer | undefined;
let client: RpcClient | undefined;

afterEach(async () => {
  await client?.close();
  await server?.stop();
  home?.remove();
  server = undefined;
  client = undefined;
  home = undefined;
});

/** A loopback port that refuses connections: bound once to get a free number, then closed. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

it(
  "Qwen Code with an unreachable model: the turn's error quotes Qwen's cause and names the endpoint, within the deadline",
  async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}/v1`;
    home = makeQwenHome(endpoint);
    const config = { kind: 'acp' as const, command: home.command, args: home.args, env: home.env, passEnv: [], cwd: home.workDir, startupTimeoutMs: 90_000, confinement: 'none' as const };
    server = (await startAcpHub([{ provider: 'qwen', config }], capturingLogger())).server;
    client = await RpcClient.open(server.wsUrl);
    const { chat } = await createSessionWith(client, 'qwen');
    await client.subscribe(chat);
    const started = Date.now();
    const turnId = await startTurn(client, chat, 'Say hello.');
    // Long before Qwen gives up, the turn says the model does not answer (model-probe.ts).
    const notice = await waitFor(() => turnParts(chatState(server!, chat), turnId).find((p) => isPartOfKind(p, 'systemNotification')), { what: 'the unreachable-model notice', timeoutMs: NOTICE_DEADLINE_MS });
    const noticeMs = Date.now() - started;
    expect(JSON.stringify(notice)).toContain(`cannot connect to this agent's model at ${endpoint} (connection refused)`);
    expect(endedTurn(server, chat, turnId)).toBeUndefined();
    const ended = await waitForEnd(server, chat, turnId, DEADLINE_MS);
    const tookMs = Date.now() - started;
    console.log(`qwen unreachable model: notice after ${noticeMs} ms, turn ended after ${tookMs} ms`);
    expect(ended.state).toBe('error');
    expect(ended.error?.errorType).toBe('modelUnreachable');
    expect(ended.error?.message).toContain('Connection error.');
    expect(ended.error?.message).toContain(endpoint);
    expect(ended.error?.message).not.toContain(home.env['OPENAI_API_KEY']!);
    expect(tookMs).toBeLessThan(DEADLINE_MS);
  },
  DEADLINE_MS + 60_000,
);
