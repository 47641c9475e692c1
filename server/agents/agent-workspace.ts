/**
 * Where an agent process runs and what it is given (docs/limits.md#agents): a working directory
 * of its own per session, `<root>/<session-hash>/`, under a per-tenant root, and an environment
 * built from an allow-list rather than inherited from the hub.
 *
 * The session hash is an HMAC of the session URI with a key kept in the root (readable by the hub
 * only), so a directory name tells nothing about the session and cannot be guessed by another
 * agent. Roots are 0711 (enter, but not list), each session directory 0700 and owned by the user
 * the agent runs as. The hub's own data (`<data>/tenants`, the token file) stays 0700 / 0600.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

/** What an agent gets when its config names nothing else; `PATH` if the hub has none. */
const FALLBACK_PATH = '/usr/local/bin:/usr/bin:/bin';
const KEY_FILE = '.session-key';

export interface WorkspaceConfig {
  readonly uid?: number | undefined;
  readonly gid?: number | undefined;
}

export interface EnvironmentConfig {
  readonly env: Readonly<Record<string, string>>;
  readonly passEnv: readonly string[];
  readonly secretEnv?: readonly string[] | undefined;
}

/**
 * The agent's whole environment: the hub's `PATH`, `HOME` = its working directory, the hub
 * variables `passEnv` names, then `env` (which may override both), then a fresh random secret
 * (32 URL-safe characters) for each name in `secretEnv`. Nothing else of the hub's.
 */
export function agentEnvironment(config: EnvironmentConfig, cwd: string, hubEnv: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: hubEnv['PATH'] || FALLBACK_PATH, HOME: cwd };
  for (const name of config.passEnv) {
    const value = hubEnv[name];
    if (value !== undefined) env[name] = value;
  }
  const secrets: NodeJS.ProcessEnv = {};
  for (const name of config.secretEnv ?? []) secrets[name] = randomBytes(24).toString('base64url');
  return { ...env, ...config.env, ...secrets };
}

/** A tenant's name as a path segment (readable names as they are, others hashed). */
export function tenantSegment(tenant: string): string {
  return /^[a-z0-9_-][a-z0-9._-]{0,63}$/.test(tenant) ? tenant : `~${createHash('sha256').update(tenant, 'utf8').digest('hex').slice(0, 32)}`;
}

export class AgentWorkspaces {
  readonly #root: string;
  #key: Buffer | undefined;

  /** `root` undefined: a fresh temporary directory (an in-memory hub). */
  constructor(
    root: string | undefined,
    private readonly config: WorkspaceConfig,
  ) {
    this.#root = root ?? mkdtempSync(join(tmpdir(), 'ahp-hub-agents-'));
  }

  /** The session's directory (not created). */
  pathOf(session: string): string {
    return join(this.#root, createHmac('sha256', this.#keyOf()).update(session, 'utf8').digest('hex').slice(0, 32));
  }

  /** Creates the session's directory (0700, owned by the agent's user) and returns it. */
  prepare(session: string): string {
    ensureTraversable(this.#root);
    const dir = this.pathOf(session);
    if (!existsSync(dir)) mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o700);
    if (this.config.uid !== undefined || this.config.gid !== undefined) {
      const st = statSync(dir);
      chownSync(dir, this.config.uid ?? st.uid, this.config.gid ?? st.gid);
    }
    return dir;
  }

  #keyOf(): Buffer {
    if (this.#key) return this.#key;
    ensureTraversable(this.#root);
    const file = join(this.#root, KEY_FILE);
    try {
      writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    this.#key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
    return this.#key;
  }
}

/** Creates `dir` and its missing parents as 0711: agents of other users may pass, not list. */
function ensureTraversable(dir: string): void {
  if (existsSync(dir)) return;
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  chmodSync(dir, 0o711);
}

/**
 * Modes of the hub's data directory: the root 0711 (agents run as another user reach their
 * working directories under `agents/`, nothing else), `tenants/` (every log, snapshot and ACP
 * session file) 0700.
 */
export function secureDataDir(dataDir: string): void {
  const tenants = join(dataDir, 'tenants');
  mkdirSync(tenants, { recursive: true, mode: 0o700 });
  try {
    chmodSync(dataDir, 0o711);
    chmodSync(tenants, 0o700);
  } catch (err) {
    // A directory the hub's user does not own keeps the modes its owner gave it.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  }
}

/** Group or world permission bits of a file (the token file must have none). */
export function openPermissions(file: string): number {
  return statSync(file).mode & 0o077;
}
