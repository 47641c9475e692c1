/**
 * The start-up checks of the agents' confinement (docs/agents.md#confinement): what the hub
 * refuses to start with, and what it starts with but warns about. `npm start` exits 2 on the first.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from '../log.js';
import type { NamedAcpAgent } from './acp/agents-config.js';
import { AGENT_UNREACHABLE_ERROR, agentReachability, type AgentIdentity, namespaceLauncher, type TenantUids } from './agent-confinement.js';
import { tenantSegment } from './agent-workspace.js';

export interface ConfinementCheck {
  readonly agents: readonly NamedAcpAgent[];
  readonly tenants: readonly string[];
  readonly tenantUids: TenantUids;
  readonly dataDir: string;
  /** The hub's uid (`process.getuid()`). */
  readonly hubUid: number | undefined;
  readonly pathVariable: string;
}

/** The reasons the hub must not start (empty: it may); warnings go to `logger`. */
export function confinementProblems(check: ConfinementCheck, logger: Logger): string[] {
  const problems: string[] = [];
  let namespacesWarned = false;
  for (const { provider, config } of check.agents) {
    if (config.confinement === 'none') {
      logger.warn(`agent "${provider}" runs unconfined ("confinement": "none"): as the hub's own user it can read the hub's data, its token file and /proc/<hub>/environ`, { provider });
      continue;
    }
    const named: AgentIdentity | undefined = config.uid === undefined ? undefined : { uid: config.uid, gid: config.gid ?? config.uid };
    if (named && check.tenants.length > 1 && config.shareUserAcrossTenants !== true) {
      problems.push(
        `agents.${provider}: "user" puts the agents of all ${check.tenants.length} tenants under uid ${named.uid}, where they can reach each other's sessions; ` +
          `drop "user" (each tenant then gets a uid of its own) or say "shareUserAcrossTenants": true`,
      );
      continue;
    }
    if (check.hubUid !== 0 && named?.uid !== check.hubUid) {
      problems.push(
        `agents.${provider}: "confinement": "tenant" (the default) runs agents as ${named ? `uid ${named.uid}` : 'a uid of each tenant'}, and only a hub running as root can switch to it; ` +
          `run the hub as root, or set "confinement": "none" to run the agent as the hub's own user (it can then read all the hub's data)`,
      );
      continue;
    }
    const tenant = check.tenants[0] ?? '';
    const own = check.tenantUids.of(tenant);
    const identity = named ?? { uid: own.uid, gid: config.gid ?? own.gid };
    const root = config.cwd !== undefined ? join(config.cwd, tenantSegment(tenant)) : join(check.dataDir, 'agents', tenantSegment(tenant));
    const unreachable = agentReachability(config.command, config.args, nearestExisting(root), identity, check.pathVariable);
    if (unreachable) {
      problems.push(`agents.${provider}: its user (uid ${identity.uid}) cannot reach ${unreachable}; install the agent where that user can read it, or give that user passage (${AGENT_UNREACHABLE_ERROR})`);
      continue;
    }
    if (!namespacesWarned && namespaceLauncher() === undefined) {
      namespacesWarned = true;
      logger.warn('agents run without PID and mount namespaces (util-linux unshare missing, or not permitted here): they cannot read /proc/<hub>/environ or signal other uids, but they see the process list and every command line', {
        provider,
      });
    }
  }
  return problems;
}

/** `dir`, or its nearest ancestor that exists (the agents' roots are made on first use). */
function nearestExisting(dir: string): string {
  let d = dir;
  while (!existsSync(d) && dirname(d) !== d) d = dirname(d);
  return d;
}
