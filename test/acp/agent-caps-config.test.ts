/**
 * The agent process caps from the command line and the environment (`--max-agents`,
 * `--max-agents-per-tenant`, `--max-agents-per-user`, `HUB_MAX_AGENTS*`; docs/limits.md#agents):
 * each overrides the agents file's `limits`, a bad value stops the start with a message naming
 * the flag, and a lowered per-user cap refuses the next agent with `agentLimitReached`.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentProcessBudget, DEFAULT_AGENT_LIMITS } from '../../server/agents/agent-budget.js';
import { agentLimitsWith, ConfigError, parseArgs } from '../../server/config.js';
import { ensureBuilt } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { acpConfig, capturingLogger, createSessionWith, script, startAcpHub, startTurn, waitForEnd } from './support.js';

describe('agent cap options', () => {
  it('reads each cap from its flag, else its variable, over the agents file; absent ones keep the file', () => {
    expect(parseArgs([], {}).agentCaps).toEqual({});
    const caps = parseArgs(['--max-agents', '10', '--max-agents-per-user', '2'], { HUB_MAX_AGENTS: '99', HUB_MAX_AGENTS_PER_TENANT: '5' }).agentCaps;
    expect(caps).toEqual({ maxProcesses: 10, maxProcessesPerTenant: 5, maxProcessesPerUser: 2 });
    const fromFile = { ...DEFAULT_AGENT_LIMITS, maxProcesses: 40, maxProcessesPerUser: 3 };
    expect(agentLimitsWith(fromFile, { maxProcessesPerUser: 1 })).toEqual({ ...fromFile, maxProcessesPerUser: 1 });
    expect(agentLimitsWith(fromFile, {})).toEqual(fromFile);
  });

  it('refuses a value that is not a whole number from 1 to 100,000, naming where it came from', () => {
    for (const bad of ['0', '-1', '2.5', 'eight', '1e3', '100001']) {
      expect(() => parseArgs([`--max-agents-per-user=${bad}`], {}), bad).toThrow(ConfigError);
      expect(() => parseArgs([`--max-agents-per-user=${bad}`], {}), bad).toThrow(`--max-agents-per-user must be a whole number of agent processes from 1 to 100000, got ${JSON.stringify(bad)}`);
    }
    expect(() => parseArgs([], { HUB_MAX_AGENTS_PER_TENANT: 'lots' })).toThrow(/^HUB_MAX_AGENTS_PER_TENANT must be a whole number/);
    expect(() => parseArgs(['--max-agents', ''], {})).toThrow(/--max-agents needs a value/);
  });

  it('a bad value stops `npm start` with exit code 2 and the message, before anything is opened', () => {
    ensureBuilt();
    const data = tempDir('agent-caps-bad-');
    try {
      const run = spawnSync(process.execPath, ['dist/server/main.js', '--port', '0', '--data', data.dir, '--max-agents', '0'], { encoding: 'utf8', timeout: 30_000 });
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(/--max-agents must be a whole number of agent processes from 1 to 100000, got "0"/);
      expect(run.stdout).not.toMatch(/listening on/);
    } finally {
      data.remove();
    }
  });
});

describe('a lowered per-user cap', () => {
  let server: TestServer | undefined;
  let client: RpcClient | undefined;
  const work = tempDir('agent-caps-config-');

  afterEach(async () => {
    await client?.close();
    await server?.close();
    work.remove();
  });

  it('--max-agents-per-user 1: while one agent of the user is busy, the next start is refused as agentLimitReached', async () => {
    const config = parseArgs(['--max-agents-per-user', '1'], {});
    const budget = new AgentProcessBudget(agentLimitsWith(DEFAULT_AGENT_LIMITS, config.agentCaps));
    const started = await startAcpHub([{ provider: 'scripted', config: acpConfig({ cwd: work.dir }) }], capturingLogger(), { budget });
    server = started.server;
    const provider = started.providers.get('scripted')!;
    client = await RpcClient.open(server.wsUrl);
    const busy = await createSessionWith(client, 'scripted');
    const next = await createSessionWith(client, 'scripted');

    await startTurn(client, busy.chat, script({ waitCancel: true }));
    await waitFor(() => (provider.processOf(busy.session)?.acpSessionId ? true : undefined), { what: 'the first agent to run' });
    const refused = await waitForEnd(server, next.chat, await startTurn(client, next.chat, 'hello'));
    expect(refused.state).toBe('error');
    expect(refused.error).toMatchObject({ errorType: 'agentLimitReached' });
    expect(refused.error?.message).toMatch(/this user already runs 1 agent process/);
    expect(provider.stats()).toMatchObject({ processes: 1, refusals: 1 });
  });
});
