/**
 * The PostgreSQL password never shows in the hub's /proc entries (issue 33, item 1). A real hub
 * process (`node dist/server/main.js --store postgres://…`) connects as a role that must give its
 * password (scram-sha-256 in pg_hba.conf, so a missing or wrong one is refused): given with
 * `--store-password-file`, the password is in none of the hub's /proc/<pid> files an agent or
 * another local user might read; given in the URL, it still works, the hub's own command line no
 * longer shows it, and the hub warns; given twice it is refused.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { startHubProcess, ensureBuilt, type HubProcess } from '../helpers/hub-process.js';
import { startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { AUTH_FILE, TOKENS, tempDir } from '../helpers/start-server.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { bundleScriptedAgent, createSessionWith, reports, script, startTurn } from '../acp/support.js';

const ROLE = 'ahp_password_role';
const PASSWORD = 'pw-Only-In-The-File-7f3c9a';
let postgres: RunningPostgres;
let bareUrl: string;
let hub: HubProcess | undefined;
const dir = tempDir('store-password-');
let agent: ReturnType<typeof bundleScriptedAgent>;

beforeAll(async () => {
  agent = bundleScriptedAgent();
  postgres = await startPostgres();
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}'`);
    await admin.query(`CREATE DATABASE ${ROLE} OWNER ${ROLE}`);
    // This role, over TCP, must prove its password (the throwaway server trusts everyone else).
    const hbaFile = (await admin.query<{ hba_file: string }>('SHOW hba_file')).rows[0]!.hba_file;
    writeFileSync(hbaFile, `host all ${ROLE} 127.0.0.1/32 scram-sha-256\n${readFileSync(hbaFile, 'utf8')}`);
    await admin.query('SELECT pg_reload_conf()');
  } finally {
    await admin.end();
  }
  const url = new URL(postgres.url);
  url.username = ROLE;
  url.pathname = `/${ROLE}`;
  bareUrl = url.toString();
  // Without the password the role is refused: the hub's connecting proves it got the password.
  const wrongUrl = new URL(bareUrl);
  wrongUrl.password = 'wrong';
  const noPassword = new pg.Client({ connectionString: wrongUrl.toString() });
  noPassword.on('error', () => undefined);
  await expect(noPassword.connect()).rejects.toThrow(/password authentication failed/);
}, 120_000);

afterEach(async () => {
  hub?.child.kill('SIGTERM');
  await hub?.exited();
  hub = undefined;
});

afterAll(() => {
  agent?.remove();
  postgres?.stop();
  dir.remove();
});

/** Every /proc file of the process (and of each of its threads) that tells about it, as text. */
function procTexts(pid: number): Record<string, string> {
  const files = ['cmdline', 'environ', 'comm', 'status', 'stat', 'sched', 'wchan'];
  const texts: Record<string, string> = {};
  const read = (base: string): void => {
    for (const f of files) {
      try {
        texts[`${base}/${f}`] = readFileSync(`${base}/${f}`, 'latin1');
      } catch {
        // not every entry exists for every process
      }
    }
  };
  read(`/proc/${pid}`);
  for (const task of readdirSync(`/proc/${pid}/task`)) read(`/proc/${pid}/task/${task}`);
  return texts;
}

/** The entries whose text holds the password. */
function leaks(pid: number): string[] {
  return Object.entries(procTexts(pid))
    .filter(([, text]) => text.includes(PASSWORD) || text.includes(encodeURIComponent(PASSWORD)))
    .map(([file]) => file);
}

it('with --store-password-file the hub connects, and the password is in none of its /proc entries', async () => {
  const file = join(dir.dir, 'pg-password');
  writeFileSync(file, `${PASSWORD}\n`, { mode: 0o600 });
  hub = await startHubProcess(['--data', join(dir.dir, 'data-file'), '--store', bareUrl, '--store-password-file', file]);
  expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
  const texts = procTexts(hub.child.pid!);
  expect(texts[`/proc/${hub.child.pid}/cmdline`]).toContain(`--store-password-file\0${file}`);
  expect(leaks(hub.child.pid!)).toEqual([]);
});

it('a password left in the --store URL still works, is gone from the hub’s command line, and is warned about', async () => {
  const withPassword = new URL(bareUrl);
  withPassword.password = PASSWORD;
  hub = await startHubProcess(['--data', join(dir.dir, 'data-url'), '--store', withPassword.toString()]);
  expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
  const cmdline = readFileSync(`/proc/${hub.child.pid}/cmdline`, 'latin1');
  expect(cmdline).toContain(`--store ${bareUrl}`);
  expect(leaks(hub.child.pid!)).toEqual([]);
  expect(hub.stderr()).toContain('the store password was given in the --store URL');
});

it('PGPASSWORD works too, and the hub does not show it on its command line', async () => {
  hub = await startHubProcess(['--data', join(dir.dir, 'data-env'), '--store', bareUrl], { env: { PGPASSWORD: PASSWORD } });
  expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
  expect(readFileSync(`/proc/${hub.child.pid}/cmdline`, 'latin1')).not.toContain(PASSWORD);
});

it("a confined agent of that hub can read neither the hub's /proc entries nor the password file", async () => {
  const root = join(dir.dir, 'with-agent');
  mkdirSync(root, { mode: 0o711 });
  chmodSync(dir.dir, 0o711);
  const file = join(root, 'pg-password');
  writeFileSync(file, `${PASSWORD}\n`, { mode: 0o600 });
  const tokens = join(root, 'tokens.json');
  writeFileSync(tokens, JSON.stringify(AUTH_FILE), { mode: 0o600 });
  const agentsFile = join(root, 'agents.json');
  writeFileSync(agentsFile, JSON.stringify({ agents: { scripted: { kind: 'acp', command: process.execPath, args: [agent.path], env: { AGENT_MODE: 'probe' } } } }));
  hub = await startHubProcess(['--data', join(root, 'data'), '--auth', tokens, '--agents', agentsFile, '--store', bareUrl, '--store-password-file', file]);
  const pid = hub.child.pid!;
  const client = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
  try {
    const { chat } = await createSessionWith(client, 'scripted');
    const paths = [`/proc/${pid}/cmdline`, `/proc/${pid}/environ`, `/proc/${pid}/status`, file];
    await client.subscribe(chat);
    const turnId = await startTurn(client, chat, script({ probe: { paths } }));
    const end = await client.waitForEnvelope((e) => ['chat/turnComplete', 'chat/error'].includes(String(e.action['type'])) && e.action['turnId'] === turnId, 'the probe turn to end');
    expect(end.action['type'], JSON.stringify(end.action)).toBe('chat/turnComplete');
    const { state } = await client.subscribe<ChatState>(chat);
    const probe = reports(state, turnId).find((r) => r['probe'])?.['probe'] as { uid: number; reads: Record<string, string> } | undefined;
    expect(probe?.uid).not.toBe(0);
    for (const path of paths) expect([path, ['EACCES', 'ENOENT'].includes(probe!.reads[path]!) ? 'denied' : probe!.reads[path]]).toEqual([path, 'denied']);
  } finally {
    await client.close();
  }
  expect(leaks(pid)).toEqual([]);
});

it('a wrong password file, or the password given twice, stops the hub with a clear error', async () => {
  ensureBuilt();
  const run = async (args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> => {
    const child = spawn(process.execPath, ['dist/server/main.js', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('listening on')) child.kill('SIGKILL');
    });
    const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
    return { code, stderr };
  };
  const wrong = join(dir.dir, 'wrong-password');
  writeFileSync(wrong, 'not-the-password', { mode: 0o600 });
  const refused = await run(['--data', join(dir.dir, 'data-wrong'), '--store', bareUrl, '--store-password-file', wrong]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain('password authentication failed');
  expect(refused.stderr).not.toContain('not-the-password');
  const twice = await run(['--data', join(dir.dir, 'data-twice'), '--store', bareUrl, '--store-password-file', wrong], { PGPASSWORD: PASSWORD });
  expect(twice.code).toBe(2);
  expect(twice.stderr).toContain('the store password is given twice (--store-password-file and PGPASSWORD)');
});
