/**
 * What an agent started by the hub can reach (issue 18, item 5): it prints its whole environment
 * and tries to read the token file, the hub's logs (its own tenant's and another's), the data
 * directory's listings and another tenant's agent root. Run as `nobody`: nothing secret in its
 * environment, nothing of the hub's readable; it runs in a directory of its own per session.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { tenantLogFile } from '../../server/storage/tenant-logs.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { AUTH_FILE, TOKENS, tempDir, type TestServer } from '../helpers/start-server.js';
import { acpConfig, capturingLogger, chatState, createSessionWith, reports, script, startAcpHub, startTurn, waitForEnd } from './support.js';

const NOBODY = { uid: Number(execFileSync('id', ['-u', 'nobody']).toString()), gid: Number(execFileSync('id', ['-g', 'nobody']).toString()) };
const SECRET_NAME = 'HUB_TEST_DATABASE_PASSWORD';
const SECRET = 'pg-password-that-must-stay-in-the-hub';

let server: TestServer | undefined;
let clients: RpcClient[] = [];
const dirs: Array<{ remove(): void }> = [];

beforeAll(() => {
  // The test only means something when the hub runs as root and `nobody` is another user.
  expect(process.getuid?.()).toBe(0);
  expect(NOBODY.uid).not.toBe(0);
});

afterEach(async () => {
  for (const c of clients) await c.close();
  clients = [];
  await server?.close();
  server = undefined;
  delete process.env[SECRET_NAME];
  delete process.env['HUB_TEST_PASSED'];
  for (const d of dirs.splice(0)) d.remove();
});

it("an agent run as nobody sees only its allow-listed environment and cannot read the tokens, the logs or other tenants' directories", async () => {
  const dir = tempDir('agent-confinement-');
  dirs.push(dir);
  // mkdtemp makes 0700 directories: an operator gives the agents' user passage to the data dir.
  chmodSync(dir.dir, 0o711);
  const tokenFile = join(dir.dir, 'tokens.json');
  writeFileSync(tokenFile, JSON.stringify(AUTH_FILE), { mode: 0o600 });
  const dataDir = join(dir.dir, 'data');
  process.env[SECRET_NAME] = SECRET;
  process.env['HUB_TEST_PASSED'] = 'allowed-value';
  const config = acpConfig({ passEnv: ['HUB_TEST_PASSED'], env: { AGENT_MODE: 'probe' }, ...NOBODY });
  const started = await startAcpHub([{ provider: 'scripted', config }], capturingLogger(), { dataDir, withAuth: true });
  server = started.server;

  // Another tenant's agent has run, so its directories exist.
  const mallory = await RpcClient.open(server.wsUrl, { token: TOKENS.mallory });
  clients.push(mallory);
  const theirs = await createSessionWith(mallory, 'scripted');
  const theirTurn = await startTurn(mallory, theirs.chat, 'hello');
  const evilHub = server.hubOf('evil')!;
  await waitFor(() => evilHub.chatEntry(theirs.chat)?.state.turns.find((t) => t.id === theirTurn), { what: "the other tenant's turn to end" });

  const alice = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
  clients.push(alice);
  const mine = await createSessionWith(alice, 'scripted');
  const paths = {
    tokenFile,
    ownLog: tenantLogFile(dataDir, 'acme'),
    otherLog: tenantLogFile(dataDir, 'evil'),
    otherTenantDir: join(dataDir, 'tenants', 'evil'),
    tenants: join(dataDir, 'tenants'),
    dataDir,
    otherAgentRoot: join(dataDir, 'agents', 'evil'),
    ownAgentRoot: join(dataDir, 'agents', 'acme'),
  };
  const turnId = await startTurn(alice, mine.chat, script({ probe: { paths: Object.values(paths) } }));
  await waitForEnd(server, mine.chat, turnId);
  const probe = reports(chatState(server, mine.chat), turnId).find((r) => r['probe'])!['probe'] as {
    env: Record<string, string>;
    uid: number;
    gid: number;
    cwd: string;
    reads: Record<string, string>;
  };

  expect({ uid: probe.uid, gid: probe.gid }).toEqual(NOBODY);
  // The whole environment: PATH, HOME (its own directory), what passEnv and env name. Nothing else.
  expect(Object.keys(probe.env).sort()).toEqual(['AGENT_MODE', 'HOME', 'HUB_TEST_PASSED', 'PATH']);
  expect(probe.env['HOME']).toBe(probe.cwd);
  const envText = JSON.stringify(probe.env);
  expect(envText).not.toContain(SECRET);
  for (const token of Object.values(TOKENS)) expect(envText).not.toContain(token);
  // Its working directory is its session's own, under its tenant's root, and reported as such.
  const workspace = started.providersOf('acme')!.get('scripted')!.workspaceOf(mine.session);
  expect(probe.cwd).toBe(workspace);
  expect(workspace.startsWith(paths.ownAgentRoot + '/')).toBe(true);
  expect(statSync(workspace).uid).toBe(NOBODY.uid);
  expect(statSync(workspace).mode & 0o777).toBe(0o700);
  // Nothing of the hub's is readable, nor can it list where other sessions live.
  expect(probe.reads).toEqual(Object.fromEntries(Object.values(paths).map((p) => [p, 'EACCES'])));
});
