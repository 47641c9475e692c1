/**
 * `npm start`: parse flags, start the hub, print `listening on http://HOST:PORT`, drain on SIGTERM.
 */
import { dirname, join } from 'node:path';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { devAuthenticator, loadAuthFile, reloadable, usersWithExampleSecrets } from './auth/auth.js';
import { agentLimitsWith, ConfigError, connectionCapsFor, DEFAULT_MAX_CONNECTIONS, FILES_PER_SQLITE_TENANT, minimumOpenFiles, openFileLimit, parseArgs } from './config.js';
import { createLogger } from './log.js';
import { startHubServer } from './server.js';
import { defaultFeatures } from './features.js';
import { demoAgent, remoteAgent } from './agents/demo-agent.js';
import { AgentsConfigError, loadAgentsConfig, type AgentsFile } from './agents/acp/agents-config.js';
import { createAcpProviders } from './agents/acp/acp-provider.js';
import { AgentProcessBudget } from './agents/agent-budget.js';
import { openPermissions, tenantSegment } from './agents/agent-workspace.js';
import { DEFAULT_PARK_IDLE_MS } from './hub/session-parking.js';
import { DEFAULT_TENANT_UIDS, TenantUids } from './agents/agent-confinement.js';
import { confinementProblems } from './agents/confinement-checks.js';
import { OidcAuth } from './auth/oidc/oidc-auth.js';
import { connectionUrl, resolveStoreSecret, scrubProcessCommandLine, type StoreSecret, StoreSecretError } from './store-secret.js';

async function main(): Promise<void> {
  // Read first, then, before anything can fail or log, no password stays in the command line.
  const argv = process.argv.slice(2);
  scrubProcessCommandLine();
  let config: ReturnType<typeof parseArgs>;
  let storeSecret: StoreSecret | undefined;
  try {
    config = parseArgs(argv);
    // Read (and PGPASSWORD removed from the environment) before any child process is started.
    if (config.store) storeSecret = resolveStoreSecret(config.store, config.storePasswordFile, process.env);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof StoreSecretError) {
      process.stderr.write(err.message + '\n');
      process.exit(2);
    }
    throw err;
  }
  if (process.env['HUB_STORE'] && storeSecret) process.env['HUB_STORE'] = storeSecret.url;
  let agentsFile: AgentsFile = { agents: [], limits: new AgentProcessBudget().limits, tenantUids: DEFAULT_TENANT_UIDS };
  try {
    if (config.agentsFile) agentsFile = loadAgentsConfig(config.agentsFile);
  } catch (err) {
    if (!(err instanceof AgentsConfigError)) throw err;
    process.stderr.write(err.message + '\n');
    process.exit(2);
  }
  const logger = createLogger(config.logLevel);
  const reloadableAuth = config.authFile ? reloadable(loadAuthFile(config.authFile)) : undefined;
  const signIn = config.oidc ? oidcAuthOf(config.oidc, reloadableAuth, logger) : undefined;
  const auth = signIn?.authenticator ?? reloadableAuth ?? devAuthenticator();
  if (config.authFile && openPermissions(config.authFile) !== 0) {
    // Agents run as another user must not read the tokens; refuse rather than hand them over.
    if (agentsFile.agents.some((a) => a.config.confinement !== 'none' || a.config.uid !== undefined)) {
      process.stderr.write(`the token file ${config.authFile} is readable by other users, and agents run as another user: chmod 600 it\n`);
      process.exit(2);
    }
    logger.warn('the token file is readable by other users; chmod 600 it', { file: config.authFile });
  }
  if (!auth.enforced) logger.warn('no --auth given: single-user dev mode, loopback only');
  if (storeSecret?.source === 'url') {
    logger.warn('the store password was given in the --store URL: this process no longer shows it, but the shell or npm that started the hub may (ps, /proc/<pid>/cmdline, shell history); put it in --store-password-file', {
      store: storeSecret.url,
    });
  }
  mkdirSync(config.dataDir, { recursive: true });
  // One uid per tenant for the whole hub (agents of every tenant's providers), kept in the data dir.
  const tenantUids = new TenantUids(join(config.dataDir, 'agent-uids.json'), agentsFile.tenantUids);
  const confinement = confinementProblems({ agents: agentsFile.agents, tenants: auth.tenants, tenantUids, dataDir: config.dataDir, hubUid: process.getuid?.(), pathVariable: process.env['PATH'] ?? '' }, logger);
  if (confinement.length > 0) {
    process.stderr.write(confinement.join('\n') + '\n');
    process.exit(2);
  }
  const exampleUsers = config.authFile ? usersWithExampleSecrets(config.authFile) : [];
  if (exampleUsers.length > 0) {
    logger.warn(`the token file still holds the example secrets (change-me-…) for ${exampleUsers.join(', ')}: fine on your own machine, but replace them with long random ones before anyone else can reach this hub`, {
      authFile: config.authFile,
    });
  }
  const fileLimit = openFileLimit();
  // Each tenant's SQLite log holds descriptors for the life of the process (PostgreSQL: pooled sockets).
  const heldFiles = config.store ? 0 : FILES_PER_SQLITE_TENANT * auth.tenants.length;
  if (fileLimit !== undefined && fileLimit < minimumOpenFiles(heldFiles)) {
    process.stderr.write(
      `the open-file limit (ulimit -n ${fileLimit}) is too low for ${auth.tenants.length} tenants: their logs keep ${heldFiles} files open, ` +
        `and the hub needs room for connections besides; raise it to at least ${minimumOpenFiles(heldFiles)}\n`,
    );
    process.exit(2);
  }
  let caps: ReturnType<typeof connectionCapsFor>;
  try {
    caps = connectionCapsFor(fileLimit, heldFiles, config.maxConnections);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(err.message + '\n');
    process.exit(2);
  }
  if (config.maxConnections === undefined && caps.maxConnections < DEFAULT_MAX_CONNECTIONS) {
    logger.warn('the open-file limit lowers the connection caps; raise it (ulimit -n) for more', { openFileLimit: fileLimit, ...caps });
  }
  // One process budget for the whole hub: every tenant's agents count against it.
  const budget = new AgentProcessBudget(agentLimitsWith(agentsFile.limits, config.agentCaps));
  const appDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'app');
  const server = await startHubServer({
    host: config.host,
    port: config.port,
    dataDir: config.dataDir,
    sqliteSynchronous: config.sync,
    storeUrl: storeSecret && connectionUrl(storeSecret),
    ...(config.agentLeaseTtlMs !== undefined ? { agentLeaseTtlMs: config.agentLeaseTtlMs } : {}),
    ...(config.drainGraceMs !== undefined ? { drainGraceMs: config.drainGraceMs } : {}),
    ...(config.remoteAgentGraceMs !== undefined ? { remoteAgentGraceMs: config.remoteAgentGraceMs } : {}),
    ...(config.compactIntervalMs !== undefined ? { compactIntervalMs: config.compactIntervalMs } : {}),
    limits: {
      ...(config.tenantDiskQuota !== undefined ? { maxTenantDiskBytes: config.tenantDiskQuota } : {}),
      ...(config.replayWindow !== undefined ? { replayBufferSize: config.replayWindow } : {}),
      ...(config.snapshotEvery !== undefined ? { snapshotEvery: config.snapshotEvery } : {}),
      ...(config.maxLoadStateChars !== undefined ? { maxLoadStateChars: config.maxLoadStateChars } : {}),
      parkIdleMs: config.parkIdleMs ?? DEFAULT_PARK_IDLE_MS,
    },
    auth,
    signIn,
    logger,
    staticDir: existsSync(appDir) ? appDir : undefined,
    features: defaultFeatures({ push: { dataDir: config.dataDir, subject: config.pushSubject } }),
    providers: (tenant, stateDir) => [demoAgent, remoteAgent, ...createAcpProviders(agentsFile.agents, logger, { tenant, stateDir, budget, tenantUids, workspaceRoot: join(config.dataDir, 'agents', tenantSegment(tenant)) })],
    ...caps,
  });
  process.stdout.write(`listening on ${server.url}\n`);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('draining', { signal });
    // In a cluster, SIGTERM hands this node's clients and agents to the others (docs/cluster.md).
    (config.store && signal === 'SIGTERM' ? server.drain() : server.close()).then(
      () => process.exit(process.exitCode ?? 0),
      (err: unknown) => {
        logger.error('shutdown failed', { err: String(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // SIGHUP reloads the token file (docs/limits.md#tokens); without --auth there is nothing to reload.
  process.on('SIGHUP', () => {
    const file = config.authFile;
    if (!file || !reloadableAuth) return void logger.warn('SIGHUP ignored: no --auth token file to reload');
    try {
      reloadableAuth.replace(loadAuthFile(file));
    } catch (err) {
      return void logger.error('token file not reloaded; the previous tokens stay in force', { file, err: err instanceof Error ? err.message : String(err) });
    }
    const closed = server.closeRevoked();
    logger.info('token file reloaded', { file, tenants: auth.tenants.length, closedSockets: closed.sockets, endedStreams: closed.streams });
  });
}

/** Sign-in with OpenID Connect beside the token file (docs/sign-in.md); exits 2 on an unreadable secret file. */
function oidcAuthOf(flags: NonNullable<ReturnType<typeof parseArgs>['oidc']>, tokenFile: ReturnType<typeof reloadable> | undefined, logger: ReturnType<typeof createLogger>): OidcAuth {
  let clientSecret: string | undefined;
  if (flags.clientSecretFile !== undefined) {
    try {
      clientSecret = readFileSync(flags.clientSecretFile, 'utf8').trim();
    } catch (err) {
      process.stderr.write(`cannot read --oidc-client-secret-file ${flags.clientSecretFile}: ${(err as Error).message}\n`);
      process.exit(2);
    }
    if (openPermissions(flags.clientSecretFile) !== 0) logger.warn('the OpenID client secret file is readable by other users; chmod 600 it', { file: flags.clientSecretFile });
  }
  const defaultTenant = flags.defaultTenant ?? tokenFile?.tenants[0] ?? 'default';
  return new OidcAuth({ base: tokenFile, logger: logger.child({ component: 'sign-in' }), options: { ...flags, clientSecret, defaultTenant } });
}

main().catch((err: unknown) => {
  process.stderr.write(`hub failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
