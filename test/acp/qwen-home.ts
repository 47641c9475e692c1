/**
 * A throwaway home for Qwen Code: settings that pick the OpenAI-compatible auth against the
 * loopback mock model, ask before every tool (`approvalMode: default`), and switch off the memory agent, usage
 * statistics, telemetry and update checks, so the agent never reaches beyond 127.0.0.1.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface QwenHome {
  readonly home: string;
  readonly workDir: string;
  /** The agent entry for `--agents` / `startHubServer({providers})`. */
  readonly command: string;
  readonly args: string[];
  readonly env: Record<string, string>;
  remove(): void;
}

export const QWEN_BIN = resolve('node_modules/.bin/qwen');

export function makeQwenHome(modelBaseUrl: string): QwenHome {
  const home = mkdtempSync(join(tmpdir(), 'qwen-home-'));
  const workDir = join(home, 'work');
  mkdirSync(join(home, '.qwen'), { recursive: true });
  mkdirSync(workDir, { recursive: true });
  const settings = {
    security: { auth: { selectedType: 'openai' }, folderTrust: { enabled: false } },
    model: { name: 'mock-model' },
    tools: { approvalMode: 'default' },
    // No background memory agent after each turn (it asks the mock model for more requests and delays the prompt's answer).
    memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false },
    general: { enableAutoUpdate: false, checkpointing: { enabled: false } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
  };
  writeFileSync(join(home, '.qwen', 'settings.json'), JSON.stringify(settings, null, 2));
  const env: Record<string, string> = {
    HOME: home,
    USERPROFILE: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    OPENAI_BASE_URL: modelBaseUrl,
    OPENAI_API_KEY: 'test-key-loopback-only',
    OPENAI_MODEL: 'mock-model',
    // Anything that still tried to leave the machine through a proxy would fail at once.
    HTTP_PROXY: 'http://127.0.0.1:9',
    HTTPS_PROXY: 'http://127.0.0.1:9',
    NO_PROXY: '127.0.0.1,localhost',
    // Qwen Code re-executes itself in a child node process by default; once is enough here (half the start-up).
    QWEN_CODE_NO_RELAUNCH: 'true',
    NO_COLOR: '1',
    CI: '1',
  };
  return {
    home,
    workDir,
    command: QWEN_BIN,
    args: ['--acp'],
    env,
    remove: () => rmSync(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }),
  };
}
