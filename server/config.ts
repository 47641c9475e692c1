/**
 * Command-line configuration: the only reader of argv and the environment. Flags:
 * --host (127.0.0.1), --port (8787; 0 = any free port), --data (./data), --auth FILE,
 * --log-level (info), --sync normal|full (SQLite durability level), --agents FILE (agent providers),
 * --store postgres://… (HUB_STORE; a shared PostgreSQL log instead of the SQLite file: the cluster mode),
 * --store-password-file FILE (HUB_STORE_PASSWORD_FILE; its password, kept off the command line: store-secret.ts),
 * --tenant-disk-quota SIZE (HUB_TENANT_DISK_QUOTA; bytes, or with k/m/g: each tenant's SQLite log and snapshots),
 * --max-agents N, --max-agents-per-tenant N, --max-agents-per-user N (HUB_MAX_AGENTS, HUB_MAX_AGENTS_PER_TENANT,
 * HUB_MAX_AGENTS_PER_USER; agent process caps, over the agents file's `limits`),
 * --oidc-issuer URL --oidc-client-id ID [--oidc-client-secret-file FILE] and the claim options
 * (sign-in with OpenID Connect beside the token file: docs/sign-in.md).
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { parseArgs as parseCommandLine } from 'node:util';
import type { LogLevel } from './log.js';
import type { AgentLimits } from './agents/agent-budget.js';

/** The agent process caps a flag or variable may set (docs/limits.md#agents). */
export type AgentCapOverrides = Partial<Pick<AgentLimits, 'maxProcesses' | 'maxProcessesPerTenant' | 'maxProcessesPerUser'>>;

/** Each cap's flag and variable; the same bounds as the agents file's `limits`. */
const AGENT_CAP_OPTIONS = [
  { key: 'maxProcesses', flag: 'max-agents', env: 'HUB_MAX_AGENTS' },
  { key: 'maxProcessesPerTenant', flag: 'max-agents-per-tenant', env: 'HUB_MAX_AGENTS_PER_TENANT' },
  { key: 'maxProcessesPerUser', flag: 'max-agents-per-user', env: 'HUB_MAX_AGENTS_PER_USER' },
] as const;
const MAX_AGENT_CAP = 100_000;

export interface CliConfig {
  host: string;
  port: number;
  dataDir: string;
  authFile: string | undefined;
  logLevel: LogLevel;
  sync: 'normal' | 'full';
  /** Agent providers file (`--agents` / `HUB_AGENTS`), see server/agents/acp/agents-config.ts. */
  agentsFile: string | undefined;
  /** A postgres:// URL: the log lives in PostgreSQL (several hubs may share it). undefined = SQLite in dataDir. */
  store: string | undefined;
  /** A file holding the store's password (`--store-password-file` / HUB_STORE_PASSWORD_FILE). */
  storePasswordFile: string | undefined;
  /** Cluster mode: how long a dead process's agent lease lasts (HUB_AGENT_LEASE_TTL_MS; default 5000). */
  agentLeaseTtlMs: number | undefined;
  /** Cluster drain: /healthz answers 503 at least this long before the node exits (HUB_DRAIN_GRACE_MS; default 2000). */
  drainGraceMs: number | undefined;
  /** How long a remote agent's turn interrupted by a restart waits for the agent (HUB_REMOTE_AGENT_GRACE_MS; default 120000). */
  remoteAgentGraceMs: number | undefined;
  /** Bytes each tenant's log and snapshots may take (`--tenant-disk-quota`); undefined = the hub's default (1 GiB). */
  tenantDiskQuota: number | undefined;
  /** Characters of session and chat state a tenant's start may load (HUB_MAX_LOAD_STATE_CHARS; default: load-guard.ts). */
  maxLoadStateChars: number | undefined;
  /** Agent process caps from `--max-agents*` / `HUB_MAX_AGENTS*`; each overrides the agents file's. */
  agentCaps: AgentCapOverrides;
  /** The VAPID `sub` claim of push messages (`HUB_PUSH_SUBJECT`, docs/notifications.md): a mailto: or https: contact. */
  pushSubject?: string | undefined;
  /** Cluster mode: time between compaction rounds of each tenant's shared log (HUB_COMPACT_INTERVAL_MS; default 60000). */
  compactIntervalMs: number | undefined;
  /** Records a reconnect can be replayed from, and kept behind a snapshot (HUB_REPLAY_WINDOW; default 20000). */
  replayWindow: number | undefined;
  /** Records a hub appends between snapshots (HUB_SNAPSHOT_EVERY; default 5000). */
  snapshotEvery: number | undefined;
  /** Unwatched sessions idle this long leave memory (HUB_PARK_IDLE_MS; default 60000; 0 = never; session-parking.ts). */
  parkIdleMs: number | undefined;
  /** WebSocket connections in all (`--max-connections` / HUB_MAX_CONNECTIONS); undefined = fitted to `ulimit -n`. */
  maxConnections: number | undefined;
  /** Sign-in with OpenID Connect (`--oidc-*`); undefined without `--oidc-issuer`. */
  oidc: OidcFlags | undefined;
}

/** The `--oidc-*` flags as given (main.ts reads the secret file and fills the default tenant). */
export interface OidcFlags {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecretFile: string | undefined;
  readonly audience: string | undefined;
  readonly tenantClaim: string;
  readonly roleClaim: string;
  readonly userClaim: string;
  /** undefined: the token file's first tenant, else `default`. */
  readonly defaultTenant: string | undefined;
  readonly tenants: readonly string[];
  readonly publicUrl: string | undefined;
  readonly resource: string | undefined;
}

const OIDC_FLAGS = ['oidc-issuer', 'oidc-client-id', 'oidc-client-secret-file', 'oidc-audience', 'oidc-tenant-claim', 'oidc-role-claim', 'oidc-user-claim', 'oidc-default-tenant', 'oidc-tenants', 'oidc-resource', 'public-url'] as const;

export class ConfigError extends Error {}

/** A positive integer flag value, undefined when absent; anything else is a ConfigError. */
function positiveInteger(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw new ConfigError(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
}

/** A positive integer from the environment, undefined when unset; anything else is a ConfigError. */
function positiveIntegerEnv(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw new ConfigError(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || (isIP(host) === 4 && host.startsWith('127.'));
}

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): CliConfig {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseCommandLine({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        data: { type: 'string' },
        auth: { type: 'string' },
        'log-level': { type: 'string' },
        sync: { type: 'string' },
        agents: { type: 'string' },
        store: { type: 'string' },
        'store-password-file': { type: 'string' },
        'tenant-disk-quota': { type: 'string' },
        'max-agents': { type: 'string' },
        'max-agents-per-tenant': { type: 'string' },
        'max-agents-per-user': { type: 'string' },
        'max-connections': { type: 'string' },
        help: { type: 'boolean' },
        ...Object.fromEntries(OIDC_FLAGS.map((name) => [name, { type: 'string' as const }])),
      },
    }));
  } catch (err) {
    throw new ConfigError(`${(err as Error).message}\n${USAGE}`);
  }
  if (values['help']) throw new ConfigError(USAGE);
  const flag = (name: string): string | undefined => {
    const v = values[name];
    if (v === '') throw new ConfigError(`--${name} needs a value`);
    return typeof v === 'string' ? v : undefined;
  };
  const port = flag('port') ?? env['HUB_PORT'];
  const config: CliConfig = {
    host: flag('host') ?? env['HUB_HOST'] ?? '127.0.0.1',
    port: port === undefined ? 8787 : Number(port),
    dataDir: flag('data') ?? env['HUB_DATA'] ?? './data',
    authFile: flag('auth') ?? (env['HUB_AUTH'] || undefined),
    logLevel: (flag('log-level') ?? env['HUB_LOG_LEVEL'] ?? 'info') as LogLevel,
    sync: (flag('sync') ?? 'normal') as 'normal' | 'full',
    agentsFile: flag('agents') ?? (env['HUB_AGENTS'] || undefined),
    store: flag('store') ?? (env['HUB_STORE'] || undefined),
    storePasswordFile: flag('store-password-file') ?? (env['HUB_STORE_PASSWORD_FILE'] || undefined),
    agentLeaseTtlMs: env['HUB_AGENT_LEASE_TTL_MS'] ? Number(env['HUB_AGENT_LEASE_TTL_MS']) : undefined,
    drainGraceMs: env['HUB_DRAIN_GRACE_MS'] ? Number(env['HUB_DRAIN_GRACE_MS']) : undefined,
    remoteAgentGraceMs: env['HUB_REMOTE_AGENT_GRACE_MS'] ? Number(env['HUB_REMOTE_AGENT_GRACE_MS']) : undefined,
    tenantDiskQuota: parseSize('tenant-disk-quota', flag('tenant-disk-quota') ?? (env['HUB_TENANT_DISK_QUOTA'] || undefined)),
    compactIntervalMs: positiveIntegerEnv(env, 'HUB_COMPACT_INTERVAL_MS'),
    replayWindow: positiveIntegerEnv(env, 'HUB_REPLAY_WINDOW'),
    snapshotEvery: positiveIntegerEnv(env, 'HUB_SNAPSHOT_EVERY'),
    maxLoadStateChars: positiveIntegerEnv(env, 'HUB_MAX_LOAD_STATE_CHARS'),
    parkIdleMs: env['HUB_PARK_IDLE_MS'] === '0' ? 0 : positiveIntegerEnv(env, 'HUB_PARK_IDLE_MS'),
    agentCaps: agentCapsFrom(flag, env),
    maxConnections: positiveInteger('--max-connections', flag('max-connections')) ?? positiveIntegerEnv(env, 'HUB_MAX_CONNECTIONS'),
    pushSubject: env['HUB_PUSH_SUBJECT'] || undefined,
    oidc: oidcFrom(flag),
  };
  if (config.pushSubject !== undefined && !/^(mailto:[^\s@]+@[^\s@]+|https:\/\/\S+)$/.test(config.pushSubject)) {
    throw new ConfigError('HUB_PUSH_SUBJECT must be a mailto: address or an https:// URL (the contact push services see)');
  }
  if (config.remoteAgentGraceMs !== undefined && (!Number.isInteger(config.remoteAgentGraceMs) || config.remoteAgentGraceMs < 0)) {
    throw new ConfigError('HUB_REMOTE_AGENT_GRACE_MS must be a non-negative integer (milliseconds)');
  }
  if (config.drainGraceMs !== undefined && (!Number.isInteger(config.drainGraceMs) || config.drainGraceMs < 0)) {
    throw new ConfigError('HUB_DRAIN_GRACE_MS must be a non-negative integer (milliseconds)');
  }
  if (config.agentLeaseTtlMs !== undefined && (!Number.isInteger(config.agentLeaseTtlMs) || config.agentLeaseTtlMs < 200)) {
    throw new ConfigError('HUB_AGENT_LEASE_TTL_MS must be an integer of at least 200 (milliseconds)');
  }
  if (!Number.isInteger(config.port) || config.port < 0 || config.port > 65535) throw new ConfigError('--port must be an integer from 0 to 65535');
  if (!['debug', 'info', 'warn', 'error'].includes(config.logLevel)) throw new ConfigError('--log-level must be debug, info, warn or error');
  if (config.sync !== 'normal' && config.sync !== 'full') throw new ConfigError('--sync must be normal or full');
  if (config.store !== undefined && !/^postgres(ql)?:\/\//.test(config.store)) {
    throw new ConfigError('--store must be a postgres://user@host:port/database URL (without it the hub uses SQLite in --data; the password goes in --store-password-file)');
  }
  if (config.storePasswordFile !== undefined && config.store === undefined) throw new ConfigError('--store-password-file needs --store');
  if (!config.authFile && !config.oidc && !isLoopback(config.host)) {
    throw new ConfigError(`refusing to listen on ${config.host} without --auth or --oidc-issuer: dev mode (no tokens) is loopback-only`);
  }
  config.dataDir = resolve(config.dataDir);
  return config;
}

export const USAGE = `usage: npm start -- [--host 127.0.0.1] [--port 8787] [--data ./data] [--auth tokens.json] [--log-level info] [--sync normal|full] [--agents agents.json] [--store postgres://user@host/db] [--store-password-file FILE] [--tenant-disk-quota 1g] [--max-agents 64] [--max-agents-per-tenant 32] [--max-agents-per-user 8] [--max-connections N] [--oidc-issuer URL --oidc-client-id ID [--oidc-client-secret-file FILE] [--oidc-audience AUD] [--oidc-tenant-claim tenant] [--oidc-role-claim role] [--oidc-user-claim sub] [--oidc-default-tenant T] [--oidc-tenants a,b] [--oidc-resource URI] [--public-url https://hub.example]]`;

/** The `--oidc-*` flags, checked; undefined without `--oidc-issuer` (then no other may be given). */
function oidcFrom(flag: (name: string) => string | undefined): OidcFlags | undefined {
  const issuer = flag('oidc-issuer');
  if (issuer === undefined) {
    const stray = OIDC_FLAGS.find((name) => flag(name) !== undefined);
    if (stray) throw new ConfigError(`--${stray} needs --oidc-issuer (sign-in with OpenID Connect: docs/sign-in.md)`);
    return undefined;
  }
  const httpUrl = (name: string, value: string): string => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new ConfigError(`--${name} must be a URL, got ${JSON.stringify(value)}`);
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname.replace(/^\[|\]$/g, '')))) {
      throw new ConfigError(`--${name} must be an https:// URL (plain http only on this machine: 127.0.0.1, localhost)`);
    }
    return value;
  };
  const clientId = flag('oidc-client-id');
  if (clientId === undefined) throw new ConfigError("--oidc-issuer needs --oidc-client-id (the hub's client at the identity provider)");
  const publicUrl = flag('public-url');
  const tenants = (flag('oidc-tenants') ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const claim = (name: string, fallback: string): string => {
    const value = flag(name) ?? fallback;
    if (!/^[\w:./-]{1,128}$/.test(value)) throw new ConfigError(`--${name} must be a claim name (letters, digits, _ : . / -), got ${JSON.stringify(value)}`);
    return value;
  };
  return {
    issuer: httpUrl('oidc-issuer', issuer),
    clientId,
    clientSecretFile: flag('oidc-client-secret-file'),
    audience: flag('oidc-audience'),
    tenantClaim: claim('oidc-tenant-claim', 'tenant'),
    roleClaim: claim('oidc-role-claim', 'role'),
    userClaim: claim('oidc-user-claim', 'sub'),
    defaultTenant: flag('oidc-default-tenant'),
    tenants,
    publicUrl: publicUrl === undefined ? undefined : httpUrl('public-url', publicUrl).replace(/\/+$/, ''),
    resource: flag('oidc-resource'),
  };
}

/** Each agent cap given by its flag, else its variable: a whole number from 1 to MAX_AGENT_CAP. */
function agentCapsFrom(flag: (name: string) => string | undefined, env: NodeJS.ProcessEnv): AgentCapOverrides {
  const caps: { -readonly [K in keyof AgentCapOverrides]: AgentCapOverrides[K] } = {};
  for (const option of AGENT_CAP_OPTIONS) {
    const fromFlag = flag(option.flag);
    const raw = fromFlag ?? (env[option.env] || undefined);
    if (raw === undefined) continue;
    const value = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(value) || value < 1 || value > MAX_AGENT_CAP) {
      const source = fromFlag !== undefined ? `--${option.flag}` : option.env;
      throw new ConfigError(`${source} must be a whole number of agent processes from 1 to ${MAX_AGENT_CAP}, got ${JSON.stringify(raw)}`);
    }
    caps[option.key] = value;
  }
  return caps;
}

/** The agents file's caps (or the defaults) with those the command line or environment set. */
export function agentLimitsWith(fromFile: AgentLimits, caps: AgentCapOverrides): AgentLimits {
  return { ...fromFile, ...caps };
}

/** `123`, `64k`, `512m`, `2g` (binary multiples) → bytes; undefined stays undefined. */
function parseSize(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const m = /^(\d+)([kmg]?)$/i.exec(text.trim());
  const bytes = m ? Number(m[1]) * 1024 ** ' kmg'.indexOf((m[2] || ' ').toLowerCase()) : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new ConfigError(`--${name} must be a positive size in bytes, optionally with k, m or g (e.g. 512m)`);
  return bytes;
}

/** The process's soft limit on open files (`ulimit -n`), from /proc; undefined where unknown. */
export function openFileLimit(limitsText?: string): number | undefined {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(text);
  if (!m || m[1] === 'unlimited') return undefined;
  return Number(m[1]);
}

/** Descriptors one tenant's SQLite log keeps open: the database, its WAL and shared memory, the head marker. */
export const FILES_PER_SQLITE_TENANT = 4;

/** Descriptors kept back from the connection caps for everything else (files, the listening socket). */
const RESERVED_FILES = 64;
/** Neither connection cap goes below this. */
const MIN_CONNECTIONS = 16;

/**
 * The least `ulimit -n` a hub can serve with: the logs' held files, the reserve, and room for the
 * least WebSocket and HTTP connections. Below it the hub would fail opening some tenant's log.
 */
export function minimumOpenFiles(heldFiles: number): number {
  return heldFiles + RESERVED_FILES + 2 * MIN_CONNECTIONS;
}

export interface ConnectionCaps {
  /** WebSocket connections in all. */
  readonly maxConnections: number;
  /** Plain HTTP connections (the oldest idle or half-open one is dropped at the cap). */
  readonly maxHttpConnections: number;
}

/** WebSocket connections when the open-file limit is unknown (no /proc) and no cap was asked for. */
export const DEFAULT_MAX_CONNECTIONS = 10_000;
/** The fitted WebSocket cap stops here unless `--max-connections` asks for more (memory, not descriptors, binds beyond). */
const FITTED_CONNECTIONS_CEILING = 100_000;

/**
 * Caps that fit in the file descriptors the process may open. A cap above `ulimit -n` never
 * engages: the kernel refuses the socket first, the newest connections are the ones dropped, and
 * a flood of half-open requests starves `/healthz`. So a quarter of the descriptors (at most 1,000)
 * go to plain HTTP, the rest but `RESERVED_FILES` and `heldFiles` (what the logs keep open:
 * `FILES_PER_SQLITE_TENANT` per tenant) to WebSockets: the WebSocket cap grows with the limit
 * (`ulimit -n 65536` → 64,472; at most 100,000). `requested` (`--max-connections`) lowers it, or raises it when the
 * limit is unknown; a request the limit cannot hold is a ConfigError naming the limit to set.
 */
export function connectionCapsFor(fileLimit: number | undefined, heldFiles = 0, requested?: number): ConnectionCaps {
  const maxHttp = 1_000;
  if (fileLimit === undefined) return { maxConnections: requested ?? DEFAULT_MAX_CONNECTIONS, maxHttpConnections: maxHttp };
  const usable = Math.max(RESERVED_FILES, fileLimit - RESERVED_FILES - heldFiles);
  const maxHttpConnections = Math.min(maxHttp, Math.max(MIN_CONNECTIONS, Math.floor(usable / 4)));
  const fitsInFiles = Math.max(MIN_CONNECTIONS, usable - maxHttpConnections);
  if (requested !== undefined && requested > fitsInFiles) {
    const needed = requested + maxHttpConnections + RESERVED_FILES + heldFiles;
    throw new ConfigError(`--max-connections ${requested} does not fit the open-file limit (ulimit -n ${fileLimit} holds ${fitsInFiles} WebSockets); raise it to at least ${needed}`);
  }
  return { maxConnections: requested ?? Math.min(FITTED_CONNECTIONS_CEILING, fitsInFiles), maxHttpConnections };
}
