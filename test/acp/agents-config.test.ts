import { describe, expect, it } from 'vitest';
import { AgentsConfigError, parseAgentsConfig, parseAgentsFile, systemAccounts } from '../../server/agents/acp/agents-config.js';
import { DEFAULT_AGENT_LIMITS } from '../../server/agents/agent-budget.js';
import { agentEnvironment } from '../../server/agents/agent-workspace.js';
import { parseArgs } from '../../server/config.js';

describe('agents file', () => {
  it("reads named ACP agents with defaults; a relative cwd is resolved against the file's directory", () => {
    const agents = parseAgentsConfig(
      JSON.stringify({ agents: { qwen: { kind: 'acp', command: 'qwen', args: ['--acp'], env: { OPENAI_MODEL: 'm' }, cwd: 'work' }, gemini: { kind: 'acp', command: 'gemini', args: ['--experimental-acp'] } } }),
      '/srv/hub',
    );
    expect(agents.map((a) => a.provider)).toEqual(['qwen', 'gemini']);
    expect(agents[0]!.config).toMatchObject({ command: 'qwen', args: ['--acp'], env: { OPENAI_MODEL: 'm' }, cwd: '/srv/hub/work', startupTimeoutMs: 60_000 });
    expect(agents[1]!.config.env).toEqual({});
    expect(agents[1]!.config.passEnv).toEqual([]);
    // No cwd: the hub gives each session a directory under <data>/agents/<tenant>/.
    expect(agents[1]!.config.cwd).toBeUndefined();
  });

  it('reads the process caps (defaults when absent), passEnv, and resolves user and group to ids', () => {
    const accounts = systemAccounts('root:x:0:0::/root:/bin/sh\nagent:x:1500:1600::/home/agent:/bin/sh\n', 'root:x:0:\nagents:x:1700:\n');
    const file = parseAgentsFile(
      JSON.stringify({
        agents: { q: { kind: 'acp', command: 'q', passEnv: ['OPENAI_API_KEY'], user: 'agent' }, r: { kind: 'acp', command: 'r', user: 1500, group: 'agents' } },
        limits: { maxProcessesPerUser: 2 },
      }),
      '/',
      accounts,
    );
    expect(file.limits).toEqual({ ...DEFAULT_AGENT_LIMITS, maxProcessesPerUser: 2 });
    expect(file.agents[0]!.config).toMatchObject({ passEnv: ['OPENAI_API_KEY'], uid: 1500, gid: 1600 });
    expect(file.agents[1]!.config).toMatchObject({ uid: 1500, gid: 1700 });
    expect(parseAgentsFile(JSON.stringify({ agents: {} }), '/').limits).toEqual(DEFAULT_AGENT_LIMITS);
    expect(() => parseAgentsFile(JSON.stringify({ agents: { q: { kind: 'acp', command: 'q', user: 'ghost' } } }), '/', accounts)).toThrow(/no user "ghost"/);
    expect(() => parseAgentsFile(JSON.stringify({ agents: { q: { kind: 'acp', command: 'q', passEnv: ['A=B'] } } }), '/', accounts)).toThrow(/passEnv/);
    expect(() => parseAgentsFile(JSON.stringify({ agents: {}, limits: { maxProcesses: 0 } }), '/', accounts)).toThrow(/limits\.maxProcesses/);
  });

  it('secretEnv: each agent process gets a fresh random value for each name, over env; a bad name is refused', () => {
    const [agent] = parseAgentsConfig(JSON.stringify({ agents: { oc: { kind: 'acp', command: 'opencode', env: { OPENCODE_SERVER_PASSWORD: 'fixed' }, secretEnv: ['OPENCODE_SERVER_PASSWORD'] } } }), '/');
    expect(agent!.config.secretEnv).toEqual(['OPENCODE_SERVER_PASSWORD']);
    const one = agentEnvironment(agent!.config, '/w', {})['OPENCODE_SERVER_PASSWORD'];
    const two = agentEnvironment(agent!.config, '/w', {})['OPENCODE_SERVER_PASSWORD'];
    expect(one).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(two).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(one).not.toBe(two);
    expect(() => parseAgentsConfig(JSON.stringify({ agents: { oc: { kind: 'acp', command: 'opencode', secretEnv: ['NOT-A-NAME'] } } }), '/')).toThrow(/agents\.oc\.secretEnv\.0: environment variable names/);
  });

  it('refuses broken files with a message that names the problem', () => {
    const refuse = (text: string): string => {
      try {
        parseAgentsConfig(text, '/');
      } catch (err) {
        expect(err).toBeInstanceOf(AgentsConfigError);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refuse('{')).toMatch(/not JSON/);
    expect(refuse(JSON.stringify({ agents: { demo: { kind: 'acp', command: 'x' } } }))).toMatch(/"demo" is built in/);
    expect(refuse(JSON.stringify({ agents: { q: { kind: 'stdio', command: 'x' } } }))).toMatch(/agents\.q\.kind/);
    expect(refuse(JSON.stringify({ agents: { q: { kind: 'acp' } } }))).toMatch(/agents\.q\.command/);
    expect(refuse(JSON.stringify({ agents: { 'bad name': { kind: 'acp', command: 'x' } } }))).toMatch(/agents\.bad name: .*provider names/);
    expect(refuse(JSON.stringify({ agents: { q: { kind: 'acp', command: 'x', shell: true } } }))).toMatch(/shell/);
  });

  it('comes from --agents or HUB_AGENTS', () => {
    expect(parseArgs(['--agents', 'agents.json'], {}).agentsFile).toBe('agents.json');
    expect(parseArgs([], { HUB_AGENTS: '/etc/hub/agents.json' }).agentsFile).toBe('/etc/hub/agents.json');
    expect(parseArgs([], {}).agentsFile).toBeUndefined();
  });
});
