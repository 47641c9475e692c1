/**
 * The agents file (`--agents FILE` / `HUB_AGENTS`): named providers the hub can run next to the
 * built-in `demo` and `remote` ones, and the caps on their processes (docs/limits.md#agents).
 *
 * ```json
 * {"agents": {"qwen": {"kind": "acp", "command": "qwen", "args": ["--acp"], "env": {"OPENAI_MODEL": "m"},
 *   "passEnv": ["OPENAI_API_KEY"], "confinement": "tenant"}},
 *  "limits": {"maxProcesses": 64, "maxProcessesPerTenant": 32, "maxProcessesPerUser": 8, "idleTimeoutMs": 600000}}
 * ```
 *
 * An agent inherits nothing from the hub's environment but `PATH`: it gets `HOME` (its session's
 * working directory unless `env` names another), the variables `passEnv` names, and `env`.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { DEFAULT_AGENT_LIMITS, type AgentLimits } from '../agent-budget.js';
import { DEFAULT_TENANT_UIDS, type UidRange } from '../agent-confinement.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,255}$/;

const RESERVED = new Set(['demo', 'remote']);
const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const acpAgentConfigSchema = z
  .object({
    kind: z.literal('acp'),
    command: z.string().min(1).max(4096),
    args: z.array(z.string().max(4096)).max(256).default([]),
    /** Variables set for the agent (over `PATH`, `HOME` and `passEnv`). */
    env: z.record(z.string().max(256), z.string().max(32_768)).default({}),
    /** Names of the hub's own environment variables copied to the agent (absent ones are skipped). */
    passEnv: z.array(z.string().regex(ENV_NAME, 'environment variable names are letters, digits and underscores')).max(256).default([]),
    /**
     * Names of variables set to a fresh random secret for each agent process (OpenCode's
     * `OPENCODE_SERVER_PASSWORD`: the HTTP server it opens on 127.0.0.1 then refuses other users).
     */
    secretEnv: z.array(z.string().regex(ENV_NAME, 'environment variable names are letters, digits and underscores')).max(16).optional(),
    /**
     * Root of the agents' working directories (absolute after loading): each session runs in
     * `<cwd>/<tenant>/<session-hash>/`. Absent: `<data>/agents/<tenant>/<session-hash>/`.
     */
    cwd: z.string().min(1).max(4096).optional(),
    /** OS user (name or uid) to run the agent as; the hub must be root to switch (see docs/limits.md#agents). */
    user: z.union([z.string().min(1).max(256), z.number().int().min(0)]).optional(),
    /** OS group (name or gid); defaults to the user's primary group. */
    group: z.union([z.string().min(1).max(256), z.number().int().min(0)]).optional(),
    /**
     * `tenant` (the default): each tenant's agents run as a uid of its own (or as `user`), in their
     * own PID and mount namespaces where the hub can make them (agent-confinement.ts). `none`: as
     * the hub's own user, which can read everything the hub can — an explicit opt-in.
     */
    confinement: z.enum(['tenant', 'none']).default('tenant'),
    /** A `user` on a hub with several tenants puts their agents under one uid: only when this says so. */
    shareUserAcrossTenants: z.boolean().default(false),
    displayName: z.string().min(1).max(256).optional(),
    description: z.string().max(4096).optional(),
    /** Milliseconds the agent gets to answer `initialize` and `session/new`. */
    startupTimeoutMs: z.number().int().min(1_000).max(600_000).default(60_000),
  })
  .strict();
export type AcpAgentConfig = z.infer<typeof acpAgentConfigSchema>;

const agentLimitsSchema = z
  .object({
    maxProcesses: z.number().int().min(1).max(100_000).default(DEFAULT_AGENT_LIMITS.maxProcesses),
    maxProcessesPerTenant: z.number().int().min(1).max(100_000).default(DEFAULT_AGENT_LIMITS.maxProcessesPerTenant),
    maxProcessesPerUser: z.number().int().min(1).max(100_000).default(DEFAULT_AGENT_LIMITS.maxProcessesPerUser),
    idleTimeoutMs: z
      .number()
      .int()
      .min(1_000)
      .max(7 * 24 * 3_600_000)
      .default(DEFAULT_AGENT_LIMITS.idleTimeoutMs),
  })
  .strict();

const uidRangeSchema = z
  .object({
    first: z.number().int().min(1_000).max(2_147_483_647),
    count: z.number().int().min(1).max(10_000_000),
  })
  .strict()
  .refine((r) => r.first + r.count - 1 <= 2_147_483_647, 'the range must end at 2147483647 or below');

const agentsFileSchema = z
  .object({
    agents: z.record(z.string(), acpAgentConfigSchema).refine((agents) => Object.keys(agents).length <= 64, 'at most 64 agents'),
    limits: agentLimitsSchema.default(DEFAULT_AGENT_LIMITS),
    /** The uids the hub gives tenants' agents under `"confinement": "tenant"` (no account may use them). */
    tenantUids: uidRangeSchema.default(DEFAULT_TENANT_UIDS),
  })
  .strict();

/** An agent as loaded: `cwd` absolute, `user`/`group` resolved to ids. */
export interface NamedAcpAgent {
  readonly provider: string;
  readonly config: ResolvedAcpAgentConfig;
}
export type ResolvedAcpAgentConfig = Omit<AcpAgentConfig, 'user' | 'group' | 'shareUserAcrossTenants'> & {
  readonly uid?: number | undefined;
  readonly gid?: number | undefined;
  readonly shareUserAcrossTenants?: boolean | undefined;
};

export interface AgentsFile {
  readonly agents: NamedAcpAgent[];
  readonly limits: AgentLimits;
  readonly tenantUids: UidRange;
}

export class AgentsConfigError extends Error {}

/** Parses the agents file's JSON text; relative `cwd`s resolve against `baseDir`. */
export function parseAgentsFile(text: string, baseDir: string, accounts: Accounts = systemAccounts()): AgentsFile {
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
  const agents = Object.entries(parsed.data.agents).map(([provider, config]): NamedAcpAgent => {
    if (!PROVIDER_NAME.test(provider)) {
      throw new AgentsConfigError(`agents file: agents.${provider}: provider names are 1-64 letters, digits, dots, dashes and underscores`);
    }
    if (RESERVED.has(provider)) throw new AgentsConfigError(`agents file: "${provider}" is built in and cannot be redefined`);
    for (const name of Object.keys(config.env)) {
      if (!ENV_NAME.test(name)) throw new AgentsConfigError(`agents file: agents.${provider}.env: "${name}" is not an environment variable name`);
    }
    const { user, group, cwd, ...rest } = config;
    if (config.confinement === 'none' && (user !== undefined || group !== undefined)) {
      throw new AgentsConfigError(`agents file: agents.${provider}: "confinement": "none" runs the agent as the hub's own user; drop "user"/"group" or the "confinement"`);
    }
    const ids = resolveAccount(provider, user, group, accounts);
    return { provider, config: { ...rest, ...ids, ...(cwd === undefined ? {} : { cwd: isAbsolute(cwd) ? cwd : resolve(baseDir, cwd) }) } };
  });
  return { agents, limits: parsed.data.limits, tenantUids: parsed.data.tenantUids };
}

/** The agents of an agents file (see `parseAgentsFile`). */
export function parseAgentsConfig(text: string, baseDir: string, accounts?: Accounts): NamedAcpAgent[] {
  return parseAgentsFile(text, baseDir, accounts).agents;
}

export function loadAgentsConfig(file: string): AgentsFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new AgentsConfigError(`cannot read agents file ${file}: ${(err as Error).message}`);
  }
  return parseAgentsFile(text, resolve(file, '..'));
}

/** User and group names → ids (`/etc/passwd`, `/etc/group`; a container has them too). */
export interface Accounts {
  user(name: string): { uid: number; gid: number } | undefined;
  /** The primary group of a numeric uid, when the system knows the uid. */
  primaryGroup(uid: number): number | undefined;
  group(name: string): number | undefined;
}

export function systemAccounts(passwd = readOr('/etc/passwd'), groups = readOr('/etc/group')): Accounts {
  const users = passwd
    .split('\n')
    .map((line) => line.split(':'))
    .filter((f) => f.length >= 4);
  const byGroup = groups
    .split('\n')
    .map((line) => line.split(':'))
    .filter((f) => f.length >= 3);
  return {
    user: (name) => {
      const f = users.find((u) => u[0] === name);
      return f ? { uid: Number(f[2]), gid: Number(f[3]) } : undefined;
    },
    primaryGroup: (uid) => {
      const f = users.find((u) => Number(u[2]) === uid);
      return f ? Number(f[3]) : undefined;
    },
    group: (name) => {
      const f = byGroup.find((g) => g[0] === name);
      return f ? Number(f[2]) : undefined;
    },
  };
}

function readOr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function resolveAccount(provider: string, user: string | number | undefined, group: string | number | undefined, accounts: Accounts): { uid?: number; gid?: number } {
  if (user === undefined && group === undefined) return {};
  let uid: number | undefined;
  let gid: number | undefined;
  if (typeof user === 'number') {
    uid = user;
    gid = accounts.primaryGroup(user);
  } else if (user !== undefined) {
    const found = accounts.user(user);
    if (!found) throw new AgentsConfigError(`agents file: agents.${provider}.user: no user "${user}" on this system`);
    ({ uid, gid } = found);
  }
  if (typeof group === 'number') gid = group;
  else if (group !== undefined) {
    gid = accounts.group(group);
    if (gid === undefined) throw new AgentsConfigError(`agents file: agents.${provider}.group: no group "${group}" on this system`);
  }
  if (uid !== undefined && gid === undefined) throw new AgentsConfigError(`agents file: agents.${provider}: uid ${uid} has no primary group here; name a "group"`);
  return { ...(uid === undefined ? {} : { uid }), ...(gid === undefined ? {} : { gid }) };
}
