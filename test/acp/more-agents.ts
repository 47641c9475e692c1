/**
 * Codex (`@zed-industries/codex-acp`) and OpenCode (`opencode acp`) as the scenario tests drive
 * them: each from its entry in the agents example file (`examples/agents.json`) and a copy of its
 * settings directory (`examples/agents/<provider>/`), through `realAgentConfig`. Both read the
 * model's base URL from their settings file rather than from a variable, so the copy is pointed
 * at the loopback mock: Codex's `[model_providers.gateway].base_url` in `config.toml` (an OpenAI
 * Responses API mock, `mock-responses.ts`), OpenCode's `provider.gateway.options.baseURL` in
 * `opencode.json` (the chat-completions mock, `mock-model.ts`, whose tool is OpenCode's `bash`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMockModel } from './mock-model.js';
import { startMockResponses } from './mock-responses.js';
import type { RealAgent } from './real-agents.js';

const KEY = 'test-key-loopback-only';

export const CODEX: RealAgent = {
  provider: 'codex',
  displayName: 'Codex',
  settingsDirVariable: 'CODEX_HOME',
  startModel: () => startMockResponses(),
  modelEnv: () => ({ OPENAI_API_KEY: KEY }),
  pointSettingsAt(settingsDir, model) {
    const file = join(settingsDir, 'config.toml');
    const toml = readFileSync(file, 'utf8');
    const pointed = toml.replace(/^base_url = ".*"$/m, `base_url = "${model.baseUrl}"`);
    if (pointed === toml) throw new Error(`${file} has no base_url line`);
    writeFileSync(file, pointed);
  },
};

export const OPENCODE: RealAgent = {
  provider: 'opencode',
  displayName: 'OpenCode',
  settingsDirVariable: 'OPENCODE_CONFIG',
  settingsFile: 'opencode.json',
  startModel: () => startMockModel({ toolName: 'bash' }),
  modelEnv: () => ({ OPENAI_API_KEY: KEY }),
  pointSettingsAt(settingsDir, model) {
    const file = join(settingsDir, 'opencode.json');
    const config = JSON.parse(readFileSync(file, 'utf8')) as { provider: Record<string, { options: { baseURL: string } }> };
    const gateway = config.provider['gateway'];
    if (!gateway) throw new Error(`${file} has no "gateway" provider`);
    gateway.options.baseURL = model.baseUrl;
    writeFileSync(file, JSON.stringify(config, null, 2));
  },
};
