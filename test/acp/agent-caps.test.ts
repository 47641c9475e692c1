/**
 * Agent process caps (docs/limits.md#agents): at the per-user cap an idle agent makes room (it
 * starts again on its session's next turn), a start while all are busy is refused with
 * `agentLimitReached`, and an agent idle past `idleTimeoutMs` is stopped.
 */
import { afterEach, expect, it } from 'vitest';
import { AgentProcessBudget } from '../../server/agents/agent-budget.js';
import type { AcpAgentProvider } from '../../server/agents/acp/acp-provider.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { acpConfig, capturingLogger, createSessionWith, script, startAcpHub, startTurn, waitForEnd } from './support.js';

let server: TestServer | undefined;
let client: RpcClient | undefined;
const work = tempDir('agent-caps-');

afterEach(async () => {
  await client?.close();
  await server?.close();
  work.remove();
});

async function start(
  idleTimeoutMs: number,
  env: Record<string, string> = {},
  maxProcessesPerUser = 2,
): Promise<{ provider: AcpAgentProvider; logger: ReturnType<typeof capturingLogger>; sessions: Array<{ session: string; chat: string }> }> {
  const budget = new AgentProcessBudget({ maxProcessesPerUser, idleTimeoutMs });
  const logger = capturingLogger();
  const started = await startAcpHub([{ provider: 'scripted', config: acpConfig({ cwd: work.dir, env }) }], logger, { budget });
  server = started.server;
  const provider = started.providers.get('scripted')!;
  client = await RpcClient.open(server.wsUrl);
  const sessions = [await createSessionWith(client, 'scripted'), await createSessionWith(client, 'scripted'), await createSessionWith(client, 'scripted')];
  return { provider, logger, sessions };
}

it('at the per-user cap idle agents make room, and a start while all are busy is refused by name', async () => {
  const { provider, logger, sessions } = await start(600_000);
  if (!server || !client) throw new Error('not started');

  // Three sessions, one after the other: the third start stops the least recently idle agent.
  for (const s of sessions) {
    const turn = await waitForEnd(server, s.chat, await startTurn(client, s.chat, 'hello'));
    expect(turn.state).toBe('complete');
    expect(provider.processes).toBeLessThanOrEqual(2);
  }
  expect(logger.lines.some((l) => l.fields['reason'] === 'making room for another agent (process cap)')).toBe(true);

  // Two busy agents hold the user's two slots: a third start is refused, named.
  const [a, b, c] = sessions as [(typeof sessions)[0], (typeof sessions)[0], (typeof sessions)[0]];
  await startTurn(client, a.chat, script({ waitCancel: true }));
  await startTurn(client, b.chat, script({ waitCancel: true }));
  await waitFor(() => (provider.processOf(a.session)?.acpSessionId && provider.processOf(b.session)?.acpSessionId ? true : undefined), { what: 'both agents to run' });
  const refused = await waitForEnd(server, c.chat, await startTurn(client, c.chat, 'hello'));
  expect(refused.state).toBe('error');
  expect(refused.error).toMatchObject({ errorType: 'agentLimitReached' });
  expect(refused.error?.message).toMatch(/this user already runs 2 agent processes/);
  expect(provider.stats()).toMatchObject({ processes: 2, refusals: 1 });
});

it("an agent idle past idleTimeoutMs is stopped, and its session's next turn starts one again", async () => {
  const { provider, logger, sessions } = await start(1_000);
  if (!server || !client) throw new Error('not started');
  const [a, b, c] = sessions as [(typeof sessions)[0], (typeof sessions)[0], (typeof sessions)[0]];
  const busyA = await startTurn(client, a.chat, script({ waitCancel: true }));
  const busyB = await startTurn(client, b.chat, script({ waitCancel: true }));
  await waitFor(() => (provider.processOf(a.session)?.acpSessionId && provider.processOf(b.session)?.acpSessionId ? true : undefined), { what: 'both agents to run' });

  // Once their turns end, both agents stop after a second of idleness; the next turn starts one again.
  for (const [s, turnId] of [
    [a, busyA],
    [b, busyB],
  ] as const) {
    client.dispatch(s.chat, { type: 'chat/turnCancelled', turnId, duration: 1 });
    await waitForEnd(server, s.chat, turnId);
  }
  await waitFor(() => (provider.processes === 0 ? true : undefined), { what: 'idle agents to be stopped', timeoutMs: 10_000 });
  expect(logger.lines.filter((l) => l.fields['reason'] === 'idle').length).toBeGreaterThanOrEqual(2);
  const again = await waitForEnd(server, c.chat, await startTurn(client, c.chat, 'hello again'));
  expect(again.state).toBe('complete');
  expect(provider.processes).toBe(1);
});

it('a session whose agent was evicted and is still exiting gets a new agent for its next turn, not the dying one', async () => {
  // One slot per user, and agents that take until SIGKILL (3 s) to exit once stopped.
  const { provider, sessions } = await start(600_000, { SCRIPTED_AGENT_SLOW_EXIT: '1' }, 1);
  if (!server || !client) throw new Error('not started');
  const [a, b] = sessions as [(typeof sessions)[0], (typeof sessions)[0]];
  expect((await waitForEnd(server, a.chat, await startTurn(client, a.chat, 'first'))).state).toBe('complete');
  // b's start evicts a's idle agent, which keeps running for a while after it was told to stop.
  expect((await waitForEnd(server, b.chat, await startTurn(client, b.chat, 'second'))).state).toBe('complete');
  // a's next turn, at once: it must not be handed to the agent that is on its way out.
  const again = await waitForEnd(server, a.chat, await startTurn(client, a.chat, 'third'));
  expect(again.state, JSON.stringify(again.error ?? null)).toBe('complete');
  expect(provider.processOf(a.session)).toBeDefined();
});
