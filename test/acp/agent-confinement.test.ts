/**
 * What an agent started by the hub can reach (issue 18 item 5; issue 33 items 2, 3 and 7). Two
 * agents of tenant acme — one configured the default way (`"confinement": "tenant"`: a uid of the
 * tenant's own), one with a `user` (an OS user this file creates and removes) — each print their
 * environment, try to read the hub's /proc entries, the token file, the logs, the data directory's
 * listings and tenant evil's directories, and try to SIGSTOP tenant evil's agent and the hub:
 * every attempt fails. The agent is bundled into a directory every user may read, so the test
 * holds wherever the clone lives; an agent its user cannot reach gets a clear error at start-up
 * and at the turn.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { ResolvedAcpAgentConfig } from '../../server/agents/acp/agents-config.js';
import { tenantLogFile } from '../../server/storage/tenant-logs.js';
import { ensureBuilt } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { AUTH_FILE, TOKENS, tempDir, type TestServer } from '../helpers/start-server.js';
import { bundleScriptedAgent, capturingLogger, chatState, createSessionWith, reports, script, startAcpHub, startTurn, waitForEnd } from './support.js';

const SECRET_NAME = 'HUB_TEST_DATABASE_PASSWORD';
const SECRET = 'pg-password-that-must-stay-in-the-hub';
/** An OS user of this run only (removed in afterAll, and first if a killed run left it). */
const TEST_USER = `ahpconf${process.pid}`;

let server: TestServer | undefined;
let clients: RpcClient[] = [];
const dirs: Array<{ remove(): void }> = [];
let agentBin: { path: string; remove(): void } | undefined;
let bundledAgent: string;
let testUser: { uid: number; gid: number };

beforeAll(() => {
  // The test only means something when the hub runs as root and can switch to other users.
  expect(process.getuid?.()).toBe(0);
  removeTestUser();
  execFileSync('useradd', ['--system', '--no-create-home', '--user-group', '--shell', '/usr/sbin/nologin', TEST_USER]);
  testUser = { uid: Number(execFileSync('id', ['-u', TEST_USER]).toString()), gid: Number(execFileSync('id', ['-g', TEST_USER]).toString()) };
  // The scripted agent and its ACP library in one file every user may read.
  agentBin = bundleScriptedAgent();
  bundledAgent = agentBin.path;
});

afterAll(() => {
  removeTestUser();
  agentBin?.remove();
});

function removeTestUser(): void {
  try {
    execFileSync('userdel', [TEST_USER], { stdio: 'ignore' });
  } catch {
    // not there
  }
}

afterEach(async () => {
  for (const c of clients) await c.close();
  clients = [];
  await server?.close();
  server = undefined;
  delete process.env[SECRET_NAME];
  delete process.env['HUB_TEST_PASSED'];
  for (const d of dirs.splice(0)) d.remove();
});

function agentConfig(overrides: Partial<ResolvedAcpAgentConfig> = {}): ResolvedAcpAgentConfig {
  return { kind: 'acp', command: process.execPath, args: [bundledAgent], env: { AGENT_MODE: 'probe' }, passEnv: ['HUB_TEST_PASSED'], startupTimeoutMs: 60_000, confinement: 'tenant', ...overrides };
}

interface Probe {
  env: Record<string, string>;
  uid: number;
  gid: number;
  groups: number[];
  cwd: string;
  reads: Record<string, string>;
  signals: Record<string, string>;
}

/** The pid of a process and of every process below it (an agent under `unshare` is its child). */
function processTree(pid: number): number[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return [pid, ...children.flatMap(processTree)];
}

/** A process's state letter (T: stopped) from /proc/<pid>/stat. */
function processState(pid: number): string {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0]!;
}

it("agents confined by default and run as a configured user cannot read the hub's /proc entries, the tokens, the logs or another tenant's directories, nor signal another tenant's agent", async () => {
  const dir = tempDir('agent-confinement-');
  dirs.push(dir);
  // mkdtemp makes 0700 directories: an operator gives the agents passage to the data dir.
  chmodSync(dir.dir, 0o711);
  const tokenFile = join(dir.dir, 'tokens.json');
  writeFileSync(tokenFile, JSON.stringify(AUTH_FILE), { mode: 0o600 });
  const dataDir = join(dir.dir, 'data');
  process.env[SECRET_NAME] = SECRET;
  process.env['HUB_TEST_PASSED'] = 'allowed-value';
  const agents = [
    { provider: 'confined', config: agentConfig() },
    { provider: 'as-user', config: agentConfig({ uid: testUser.uid, gid: testUser.gid, shareUserAcrossTenants: true }) },
  ];
  const started = await startAcpHub(agents, capturingLogger(), { dataDir, withAuth: true });
  server = started.server;

  // Another tenant's agent has run and still lives (an idle agent stays for its session).
  const mallory = await RpcClient.open(server.wsUrl, { token: TOKENS.mallory });
  clients.push(mallory);
  const theirs = await createSessionWith(mallory, 'confined');
  const theirTurn = await startTurn(mallory, theirs.chat, 'hello');
  const evilHub = server.hubOf('evil')!;
  await waitFor(() => evilHub.chatEntry(theirs.chat)?.state.turns.find((t) => t.id === theirTurn), { what: "the other tenant's turn to end" });
  const evilProvider = started.providersOf('evil')!.get('confined')!;
  // And one of its agents under the shared user (the same uid as acme's as-user agent).
  const theirShared = await createSessionWith(mallory, 'as-user');
  const theirSharedTurn = await startTurn(mallory, theirShared.chat, 'hello');
  await waitFor(() => evilHub.chatEntry(theirShared.chat)?.state.turns.find((t) => t.id === theirSharedTurn), { what: "the other tenant's shared-user turn to end" });
  const evilShared = started.providersOf('evil')!.get('as-user')!;
  const evilPids = [...processTree(evilProvider.processOf(theirs.session)!.pid!), ...processTree(evilShared.processOf(theirShared.session)!.pid!)];
  const evilUid = statSync(evilProvider.workspaceOf(theirs.session)).uid;

  const alice = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
  clients.push(alice);
  const hubPid = process.pid;
  const paths = [
    `/proc/${hubPid}/cmdline`,
    `/proc/${hubPid}/environ`,
    `/proc/${hubPid}/cwd`,
    ...evilPids.flatMap((pid) => [`/proc/${pid}/environ`, `/proc/${pid}/cwd`]),
    tokenFile,
    tenantLogFile(dataDir, 'acme'),
    tenantLogFile(dataDir, 'evil'),
    join(dataDir, 'tenants', 'evil'),
    join(dataDir, 'tenants'),
    dataDir,
    join(dataDir, 'agents', 'evil'),
    evilProvider.workspaceOf(theirs.session),
    join(dataDir, 'agents', 'acme'),
  ];
  const probes: Record<string, Probe> = {};
  for (const provider of ['confined', 'as-user']) {
    const mine = await createSessionWith(alice, provider);
    const turnId = await startTurn(alice, mine.chat, script({ probe: { paths, signal: [...evilPids, hubPid] } }));
    await waitForEnd(server, mine.chat, turnId);
    const probe = reports(chatState(server, mine.chat), turnId).find((r) => r['probe'])?.['probe'] as Probe | undefined;
    expect(probe, `${provider}: the probe's report`).toBeDefined();
    probes[provider] = probe!;
    // Its working directory is its session's own, under its tenant's root, owned by it, 0700.
    const workspace = started.providersOf('acme')!.get(provider)!.workspaceOf(mine.session);
    expect(probe!.cwd).toBe(workspace);
    expect(workspace.startsWith(join(dataDir, 'agents', 'acme') + '/')).toBe(true);
    expect(statSync(workspace).uid).toBe(probe!.uid);
    expect(statSync(workspace).mode & 0o777).toBe(0o700);
  }
  const confined = probes['confined']!;
  const asUser = probes['as-user']!;

  // Who they run as: acme's own uid (not root, not evil's), and the configured user; no other groups.
  expect(confined.uid).not.toBe(0);
  expect(confined.uid).not.toBe(evilUid);
  expect(confined.groups).toEqual([confined.gid]);
  expect({ uid: asUser.uid, gid: asUser.gid, groups: asUser.groups }).toEqual({ ...testUser, groups: [testUser.gid] });
  for (const [provider, probe] of Object.entries(probes)) {
    // The whole environment: PATH, HOME (its own directory), what passEnv and env name. Nothing else.
    expect(Object.keys(probe.env).sort(), provider).toEqual(['AGENT_MODE', 'HOME', 'HUB_TEST_PASSED', 'PATH']);
    expect(probe.env['HOME']).toBe(probe.cwd);
    const envText = JSON.stringify(probe.env);
    expect(envText).not.toContain(SECRET);
    for (const token of Object.values(TOKENS)) expect(envText).not.toContain(token);
    // Nothing of the hub's or of the other tenant's is readable: denied, or not there at all
    // (the agent's own PID namespace has no /proc entry for the hub or other agents).
    for (const path of paths) expect([provider, path, ['EACCES', 'ENOENT'].includes(probe.reads[path]!) ? 'denied' : probe.reads[path]]).toEqual([provider, path, 'denied']);
    // Neither the other tenant's agent nor the hub can be stopped (another uid, another namespace).
    for (const pid of [...evilPids, hubPid]) expect([provider, pid, ['EPERM', 'ESRCH'].includes(probe.signals[pid]!) ? 'refused' : probe.signals[pid]]).toEqual([provider, pid, 'refused']);
  }
  for (const pid of evilPids) expect(processState(pid)).not.toBe('T');
  // The cost of "shareUserAcrossTenants": a session directory of the other tenant's shared-user
  // agent is its own uid's, so it is readable — by a name the namespace and the HMAC keep hidden.
  expect(statSync(evilShared.workspaceOf(theirShared.session)).uid).toBe(testUser.uid);
});

it('an agent its user cannot reach ends the turn with agentUnreachable, naming the directory it may not pass', async () => {
  const hidden = mkdtempSync(join(tmpdir(), 'ahp-hidden-agent-'));
  dirs.push({ remove: () => rmSync(hidden, { recursive: true, force: true }) });
  // As `git clone` into `mktemp -d` leaves a clone: 0700, only its owner may enter.
  const script_ = join(hidden, 'scripted-agent.mjs');
  writeFileSync(script_, readFileSync(bundledAgent));
  const dir = tempDir('agent-unreachable-');
  dirs.push(dir);
  chmodSync(dir.dir, 0o711);
  const started = await startAcpHub([{ provider: 'hidden', config: agentConfig({ args: [script_] }) }], capturingLogger(), { dataDir: join(dir.dir, 'data') });
  server = started.server;
  const client = await RpcClient.open(server.wsUrl);
  clients.push(client);
  const { chat } = await createSessionWith(client, 'hidden');
  const turnId = await startTurn(client, chat, script({ probe: { paths: [] } }));
  const turn = (await waitForEnd(server, chat, turnId)) as { state: string; error?: { errorType: string; message: string } };
  expect(turn.error?.errorType).toBe('agentUnreachable');
  expect(turn.error?.message).toContain(`no passage through ${hidden} (mode 0700, owner uid 0)`);
  expect(started.providers.get('hidden')!.processes).toBe(0);
});

it('a hub refuses to start with an agent its user cannot reach, or with one user for several tenants unless told so', async () => {
  const dir = tempDir('agent-startup-');
  dirs.push(dir);
  chmodSync(dir.dir, 0o711);
  const hidden = join(dir.dir, 'private');
  mkdirSync(hidden, { mode: 0o700 });
  const script_ = join(hidden, 'scripted-agent.mjs');
  writeFileSync(script_, readFileSync(bundledAgent));
  const agentsFile = join(dir.dir, 'agents.json');
  const tokens = join(dir.dir, 'tokens.json');
  writeFileSync(tokens, JSON.stringify(AUTH_FILE), { mode: 0o600 });
  /** Runs `npm start`'s entry with the agents given; it must exit (2) before listening. */
  const start = async (agents: unknown, withAuth: boolean): Promise<{ code: number | null; stderr: string }> => {
    writeFileSync(agentsFile, JSON.stringify({ agents }));
    ensureBuilt();
    const child = spawn(process.execPath, ['dist/server/main.js', '--port', '0', '--data', join(dir.dir, 'data'), '--agents', agentsFile, ...(withAuth ? ['--auth', tokens] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      // A hub that listened despite the configuration is stopped at once (and the test fails below).
      if (d.toString().includes('listening on')) child.kill('SIGKILL');
    });
    const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
    return { code, stderr };
  };
  const unreachable = await start({ hidden: { kind: 'acp', command: process.execPath, args: [script_] } }, false);
  expect(unreachable.stderr).toContain(`agents.hidden: its user (uid `);
  expect(unreachable.stderr).toContain(`cannot reach its argument ${script_}: no passage through ${hidden} (mode 0700, owner uid 0)`);
  expect(unreachable.stderr).toContain('(agentUnreachable)');
  expect(unreachable.code).toBe(2);
  const shared = await start({ shared: { kind: 'acp', command: process.execPath, args: [bundledAgent], user: TEST_USER } }, true);
  expect(shared.stderr).toContain(`agents.shared: "user" puts the agents of all 2 tenants under uid ${testUser.uid}`);
  expect(shared.stderr).toContain('"shareUserAcrossTenants": true');
  expect(shared.code).toBe(2);
});
