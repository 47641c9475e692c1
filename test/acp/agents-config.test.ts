import { describe, expect, it } from 'vitest';
import { AgentsConfigError, parseAgentsConfig } from '../../server/agents/acp/agents-config.js';
import { parseArgs } from '../../server/config.js';

describe('agents file', () => {
  it('reads named ACP agents with defaults; a relative cwd is resolved against the file\'s directory', () => {
    const agents = parseAgentsConfig(
      JSON.stringify({ agents: { qwen: { kind: 'acp', command: 'qwen', args: ['--acp'], env: { OPENAI_MODEL: 'm' }, cwd: 'work' }, gemini: { kind: 'acp', command: 'gemini', args: ['--experimental-acp'] } } }),
      '/srv/hub',
    );
    expect(agents.map((a) => a.provider)).toEqual(['qwen', 'gemini']);
    expect(agents[0]!.config).toMatchObject({ command: 'qwen', args: ['--acp'], env: { OPENAI_MODEL: 'm' }, cwd: '/srv/hub/work', startupTimeoutMs: 60_000 });
    expect(agents[1]!.config.env).toEqual({});
    expect(agents[1]!.config.cwd).toBe(process.cwd());
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
