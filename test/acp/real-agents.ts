/**
 * The three real ACP agents from npm that the scenario test drives (Qwen Code, Claude Code
 * through `@agentclientprotocol/claude-agent-acp`, Gemini CLI), each configured from the entry of
 * the agents example file (`examples/agents.json`, read by the hub's own loader) and a copy of its
 * settings directory (`examples/agents/<provider>/`). The test changes only what points the agent
 * at this machine: the executable's path in `node_modules/.bin`, the sessions' root, the settings
 * directory's path, the API base URL (a loopback mock model) and a dummy key, and proxy variables
 * that make anything else fail at once. Everything else — the settings that make the agent ask
 * before a tool, the switches for telemetry and updates — is the example's.
 */
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadAgentsConfig, type ResolvedAcpAgentConfig } from '../../server/agents/acp/agents-config.js';
import { agentReachability, DEFAULT_TENANT_UIDS } from '../../server/agents/agent-confinement.js';
import { startMockAnthropic } from './mock-anthropic.js';
import { startMockGemini } from './mock-gemini.js';
import { startMockModel } from './mock-model.js';
import type { ScriptedModel } from './model-script.js';

/**
 * Where this project installs an example's command: `node_modules/.bin`, except OpenCode, which
 * comes as its Linux binary package (`opencode-linux-x64`, or `-baseline` for CPUs without AVX2,
 * the choice `opencode-ai`'s own installer makes). The `opencode-ai` wrapper lists a binary
 * package for every platform, and `npm ci` refuses a lockfile without them all, yet the registry
 * these machines use has only the Linux ones.
 */
function installedCommand(command: string): string {
  if (command !== 'opencode') return resolve('node_modules/.bin', command);
  const avx2 = /\bavx2\b/.test(readFileSync('/proc/cpuinfo', 'utf8'));
  return resolve('node_modules', avx2 ? 'opencode-linux-x64' : 'opencode-linux-x64-baseline', 'bin', 'opencode');
}

export const AGENTS_EXAMPLE = resolve('examples/agents.json');

export interface RealAgent {
  /** The provider name in the agents example file. */
  readonly provider: 'qwen' | 'claude' | 'gemini' | 'codex' | 'opencode';
  readonly displayName: string;
  /** The variable naming the agent's settings directory (a copy of `examples/agents/<provider>/`), or a file in it. */
  readonly settingsDirVariable: string;
  /** The file in the settings directory that variable names, when it names a file (OpenCode's `OPENCODE_CONFIG`). */
  readonly settingsFile?: string;
  startModel(): Promise<ScriptedModel>;
  /** Variables that point the agent at the mock model. */
  modelEnv(model: ScriptedModel): Record<string, string>;
  /** Points the copied settings at the mock model, for agents that read the base URL from their settings file. */
  pointSettingsAt?(settingsDir: string, model: ScriptedModel): void;
}

export const REAL_AGENTS: readonly RealAgent[] = [
  {
    provider: 'qwen',
    displayName: 'Qwen Code',
    settingsDirVariable: 'QWEN_HOME',
    startModel: () => startMockModel(),
    modelEnv: (model) => ({ OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: 'test-key-loopback-only' }),
  },
  {
    provider: 'claude',
    displayName: 'Claude Code',
    settingsDirVariable: 'CLAUDE_CONFIG_DIR',
    startModel: () => startMockAnthropic(),
    modelEnv: (model) => ({ ANTHROPIC_BASE_URL: model.baseUrl, ANTHROPIC_API_KEY: 'test-key-loopback-only' }),
  },
  {
    provider: 'gemini',
    displayName: 'Gemini CLI',
    settingsDirVariable: 'GEMINI_CLI_HOME',
    startModel: () => startMockGemini(),
    modelEnv: (model) => ({ GOOGLE_GEMINI_BASE_URL: model.baseUrl, GEMINI_API_KEY: 'test-key-loopback-only' }),
  },
];

export interface RealAgentSetup {
  readonly config: ResolvedAcpAgentConfig;
  /** The entry as the example file has it (resolved by the hub's loader). */
  readonly example: ResolvedAcpAgentConfig;
  /**
   * Why the installed agent cannot run confined here, if it cannot: a clone in a directory other
   * users cannot enter (a 0700 `mktemp -d`) holds `node_modules` where no tenant uid may reach
   * it. The hub then refuses it (`agentUnreachable`, agent-confinement.test.ts); this scenario
   * runs the entry with `"confinement": "none"` instead, and says so.
   */
  readonly unconfinedBecause: string | undefined;
  remove(): void;
}

/** Read and write for every user below `dir` (directories also searchable). */
function allowEveryone(dir: string): void {
  chmodSync(dir, 0o777);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) allowEveryone(path);
    else chmodSync(path, 0o666);
  }
}

/** The example file's entry for `agent`, pointed at `model`, with its settings in a temp dir. */
export function realAgentConfig(agent: RealAgent, model: ScriptedModel, startupTimeoutMs: number): RealAgentSetup {
  const example = loadAgentsConfig(AGENTS_EXAMPLE).agents.find((a) => a.provider === agent.provider)?.config;
  if (!example) throw new Error(`${AGENTS_EXAMPLE} has no "${agent.provider}" agent`);
  const root = mkdtempSync(join(tmpdir(), `${agent.provider}-agent-`));
  const settingsDir = join(root, 'settings');
  cpSync(resolve('examples/agents', agent.provider), settingsDir, { recursive: true });
  agent.pointSettingsAt?.(settingsDir, model);
  const workDir = join(root, 'work');
  mkdirSync(workDir);
  // The example runs confined, as by default (a uid of the tenant's own, not the hub's): that uid
  // passes through the temp root to its sessions' directories, and reads and writes the settings
  // (the agents keep state there). One tenant here; docs/agents.md says how to share them.
  chmodSync(root, 0o711);
  allowEveryone(settingsDir);
  const command = installedCommand(example.command);
  const stranger = { uid: DEFAULT_TENANT_UIDS.first + DEFAULT_TENANT_UIDS.count - 1, gid: DEFAULT_TENANT_UIDS.first + DEFAULT_TENANT_UIDS.count - 1 };
  const unconfinedBecause = agentReachability(command, [], undefined, stranger, process.env['PATH'] ?? '');
  const config: ResolvedAcpAgentConfig = {
    ...example,
    ...(unconfinedBecause === undefined ? {} : { confinement: 'none' as const }),
    command,
    cwd: workDir,
    startupTimeoutMs,
    env: {
      ...example.env,
      [agent.settingsDirVariable]: agent.settingsFile === undefined ? settingsDir : join(settingsDir, agent.settingsFile),
      ...agent.modelEnv(model),
      // Anything that still tried to leave the machine through a proxy would fail at once.
      HTTP_PROXY: 'http://127.0.0.1:9',
      HTTPS_PROXY: 'http://127.0.0.1:9',
      NO_PROXY: '127.0.0.1,localhost',
      NO_COLOR: '1',
    },
  };
  return { config, example, unconfinedBecause, remove: () => rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }) };
}
