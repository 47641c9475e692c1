/**
 * The agents file (`--agents FILE` / `HUB_AGENTS`): named providers the hub can run next to the
 * built-in `demo` and `remote` ones.
 *
 * ```json
 * {"agents": {"qwen": {"kind": "acp", "command": "qwen", "args": ["--acp"], "env": {}, "cwd": "/srv/work"}}}
 * ```
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';

const RESERVED = new Set(['demo', 'remote']);
const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const acpAgentConfigSchema = z
  .object({
    kind: z.literal('acp'),
    command: z.string().min(1).max(4096),
    args: z.array(z.string().max(4096)).max(256).default([]),
    /** Added to the hub's own environment (which the agent inherits). */
    env: z.record(z.string().max(256), z.string().max(32_768)).default({}),
    /** Working directory of the agent process and of its ACP sessions (absolute after loading). */
    cwd: z.string().min(1).max(4096).optional(),
    displayName: z.string().min(1).max(256).optional(),
    description: z.string().max(4096).optional(),
    /** Milliseconds the agent gets to answer `initialize` and `session/new`. */
    startupTimeoutMs: z.number().int().min(1_000).max(600_000).default(60_000),
  })
  .strict();
export type AcpAgentConfig = z.infer<typeof acpAgentConfigSchema>;

const agentsFileSchema = z
  .object({
    agents: z
      .record(z.string(), acpAgentConfigSchema)
      .refine((agents) => Object.keys(agents).length <= 64, 'at most 64 agents'),
  })
  .strict();

export interface NamedAcpAgent {
  readonly provider: string;
  readonly config: AcpAgentConfig & { cwd: string };
}

export class AgentsConfigError extends Error {}

/** Parses the agents file's JSON text; relative `cwd`s resolve against `baseDir`. */
export function parseAgentsConfig(text: string, baseDir: string): NamedAcpAgent[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new AgentsConfigError(`agents file is not JSON: ${(err as Error).message}`);
  }
  const parsed = agentsFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AgentsConfigError(`agents file: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'bad shape'}`);
  }
  return Object.entries(parsed.data.agents).map(([provider, config]) => {
    if (!PROVIDER_NAME.test(provider)) {
      throw new AgentsConfigError(`agents file: agents.${provider}: provider names are 1-64 letters, digits, dots, dashes and underscores`);
    }
    if (RESERVED.has(provider)) throw new AgentsConfigError(`agents file: "${provider}" is built in and cannot be redefined`);
    const cwd = config.cwd === undefined ? process.cwd() : isAbsolute(config.cwd) ? config.cwd : resolve(baseDir, config.cwd);
    return { provider, config: { ...config, cwd } };
  });
}

export function loadAgentsConfig(file: string): NamedAcpAgent[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new AgentsConfigError(`cannot read agents file ${file}: ${(err as Error).message}`);
  }
  return parseAgentsConfig(text, resolve(file, '..'));
}
