/**
 * How a hosted agent is kept inside its own session (docs/agents.md#confinement). By default
 * (`"confinement": "tenant"`) each tenant's agents run as a uid of that tenant's own, picked by the
 * hub from a range no account on the system uses (or as the `user` the agent names), with their
 * supplementary groups dropped; and, where the hub may create namespaces, in a PID and mount
 * namespace of their own (util-linux `unshare`), whose `/proc` shows only the agent's processes.
 *
 * What that stops: reading `/proc/<hub>/environ` (another uid fails the ptrace access check),
 * `/proc/<hub>/cmdline` and every other `/proc` entry of the hub or of another agent (not in the
 * namespace: ENOENT), signalling another tenant's agent (another uid: EPERM; not in the
 * namespace: ESRCH), and reading the hub's files or another tenant's session directory (modes
 * 0700/0600, owned by the hub or by the other tenant's uid). `"confinement": "none"` runs the
 * agent as the hub's own user, as before, and is an explicit opt-in (the hub warns at start).
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';

/** An OS identity an agent runs as. */
export interface AgentIdentity {
  readonly uid: number;
  readonly gid: number;
}

/** The uids the hub hands to tenants: above systemd's container range, below Node's int32 limit. */
export interface UidRange {
  readonly first: number;
  readonly count: number;
}
export const DEFAULT_TENANT_UIDS: UidRange = { first: 1_900_000_000, count: 65_536 };

/** The turn error when the agent's user cannot reach its program, arguments or directory. */
export const AGENT_UNREACHABLE_ERROR = 'agentUnreachable';

/**
 * One uid (and the gid of the same number) per tenant, from `range`, never one an account of the
 * system has (`taken`), kept in `file` (0600) so a tenant keeps its uid — and so the files its
 * agents wrote — across restarts. Without a file (an in-memory hub) the assignment lasts the process.
 */
export class TenantUids {
  readonly #assigned = new Map<string, number>();

  constructor(
    private readonly file: string | undefined,
    private readonly range: UidRange = DEFAULT_TENANT_UIDS,
    private readonly taken: (uid: number) => boolean = systemUidTaken(),
  ) {
    if (file && existsSync(file)) {
      const data = JSON.parse(readFileSync(file, 'utf8')) as unknown;
      if (typeof data === 'object' && data !== null) {
        for (const [tenant, uid] of Object.entries(data)) if (Number.isSafeInteger(uid)) this.#assigned.set(tenant, uid as number);
      }
    }
  }

  /** The tenant's identity, assigned (and saved) on first use. */
  of(tenant: string): AgentIdentity {
    let uid = this.#assigned.get(tenant);
    if (uid === undefined) {
      const used = new Set(this.#assigned.values());
      for (let candidate = this.range.first; candidate < this.range.first + this.range.count; candidate++) {
        if (!used.has(candidate) && !this.taken(candidate)) {
          uid = candidate;
          break;
        }
      }
      if (uid === undefined) throw new Error(`no free uid left in the tenants' range ${this.range.first}–${this.range.first + this.range.count - 1}`);
      this.#assigned.set(tenant, uid);
      this.#save();
    }
    return { uid, gid: uid };
  }

  #save(): void {
    if (!this.file) return;
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.#assigned)), { mode: 0o600 });
    renameSync(tmp, this.file);
  }
}

/** Whether a uid or gid belongs to an account or group in /etc/passwd or /etc/group. */
function systemUidTaken(): (uid: number) => boolean {
  const ids = new Set<number>();
  for (const file of ['/etc/passwd', '/etc/group']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      const id = Number(line.split(':')[2]);
      if (Number.isSafeInteger(id)) ids.add(id);
    }
  }
  return (uid) => ids.has(uid);
}

let namespaceProbe: { unshare: string | undefined } | undefined;

/**
 * The path of util-linux `unshare` when this process may give an agent its own PID and mount
 * namespaces (root, or CAP_SYS_ADMIN: a default Docker container may not), tried once per process.
 */
export function namespaceLauncher(): string | undefined {
  if (namespaceProbe) return namespaceProbe.unshare;
  const unshare = findExecutable('unshare', process.env['PATH'] ?? '/usr/bin:/bin');
  let usable = false;
  if (unshare && process.getuid?.() === 0) {
    try {
      execFileSync(unshare, ['--pid', '--fork', '--mount-proc', '--kill-child', 'true'], { stdio: 'ignore', timeout: 10_000 });
      usable = true;
    } catch {
      usable = false;
    }
  }
  namespaceProbe = { unshare: usable ? unshare : undefined };
  return namespaceProbe.unshare;
}

function findExecutable(name: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** What `spawn` is given: the agent's own command, or `unshare … -- command` around it. */
export interface LaunchPlan {
  readonly command: string;
  readonly args: string[];
  readonly uid?: number;
  readonly gid?: number;
}

export function launchPlan(command: string, args: readonly string[], identity: AgentIdentity | undefined, unshare: string | undefined): LaunchPlan {
  if (unshare === undefined) return { command, args: [...args], ...(identity ?? {}) };
  // unshare starts as root, makes the namespaces, then drops to the identity (groups cleared) and
  // execs the agent as PID 1 of its namespace; --kill-child takes the agent with it when unshare
  // is signalled (a PID 1 ignores SIGTERM it has no handler for).
  const ids = identity ? ['--setuid', String(identity.uid), '--setgid', String(identity.gid)] : [];
  return { command: unshare, args: ['--pid', '--fork', '--mount-proc', '--kill-child', ...ids, '--', command, ...args] };
}

/** What an agent must be able to do with a path: read it, run it, or only pass through it. */
export type PathNeed = 'read' | 'run' | 'pass';

/**
 * Why `identity` cannot use `path` as `need` says, naming the first directory it may not pass;
 * undefined when it can. Mode bits only (owner, group = its gid, others; ACLs are not read): the
 * agent runs with no supplementary groups.
 */
export function unreachableReason(path: string, identity: AgentIdentity, need: PathNeed = 'read'): string | undefined {
  const why = unreachableAlong(resolve(path), identity, need);
  if (why !== undefined) return why;
  // A symlink (node_modules/.bin/…) is followed: its target's directories must be passable too.
  const real = realpathSync(path);
  return real === resolve(path) ? undefined : unreachableAlong(real, identity, need);
}

function unreachableAlong(full: string, identity: AgentIdentity, need: PathNeed): string | undefined {
  const chain: string[] = [];
  for (let dir = dirname(full); ; dir = dirname(dir)) {
    chain.unshift(dir);
    if (dir === dirname(dir)) break;
  }
  for (const dir of chain) {
    const st = statSync(dir, { throwIfNoEntry: false });
    if (!st) return `${full} does not exist`;
    if (!permits(st, identity, 0o1)) return `no passage through ${dir} (mode ${modeText(st.mode)}, owner uid ${st.uid})`;
  }
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(full);
  } catch {
    return `${full} does not exist`;
  }
  const bits = need === 'read' ? 0o4 : need === 'run' ? 0o4 | 0o1 : 0o1;
  if ((permitted(st, identity) & bits) !== bits) return `${full} is not ${need === 'pass' ? 'passable' : need === 'run' ? 'readable and executable' : 'readable'} (mode ${modeText(st.mode)}, owner uid ${st.uid})`;
  return undefined;
}

/** The rwx bits (0-7) `who` has on a file. */
function permitted(st: { mode: number; uid: number; gid: number }, who: AgentIdentity): number {
  const shift = st.uid === who.uid ? 6 : st.gid === who.gid ? 3 : 0;
  return (st.mode >> shift) & 0o7;
}

function permits(st: { mode: number; uid: number; gid: number }, who: AgentIdentity, bit: number): boolean {
  return (permitted(st, who) & bit) !== 0;
}

function modeText(mode: number): string {
  return `0${(mode & 0o777).toString(8)}`;
}

/**
 * What an agent started as `identity` would fail on: its program (found in `PATH` when it is a
 * bare name), each argument naming an existing absolute path, and the directory it runs in.
 */
export function agentReachability(command: string, args: readonly string[], cwd: string | undefined, identity: AgentIdentity, pathVariable: string): string | undefined {
  const program = command.includes('/') ? command : findExecutable(command, pathVariable);
  if (program !== undefined) {
    const why = unreachableReason(program, identity, 'run');
    if (why) return `its program: ${why}`;
  }
  for (const arg of args) {
    if (!isAbsolute(arg) || !existsSync(arg)) continue;
    const why = unreachableReason(arg, identity, 'read');
    if (why) return `its argument ${arg}: ${why}`;
  }
  if (cwd !== undefined && existsSync(cwd)) {
    const why = unreachableReason(cwd, identity, 'pass');
    if (why) return `its working directory: ${why}`;
  }
  return undefined;
}
