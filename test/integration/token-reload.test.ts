/**
 * Tokens change without a restart (issue 18, items 7 and 8): SIGHUP reloads the token file, a
 * removed token's WebSocket is closed (4401) and it is refused at once, a new one works; a broken
 * file on reload keeps the previous tokens; SIGTERM drains. A file naming one token twice is
 * refused at start. The hub runs as a real process, as `npm start` runs it.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { ensureBuilt, startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const ALICE = 'alice-token-reload-0123456789';
const BOB = 'bob-token-reload-0123456789ab';
const CAROL = 'carol-token-reload-012345678';
const entry = (token: string, user: string): object => ({ token, user, tenant: 'acme', role: 'user' });

let hub: HubProcess | undefined;
const clients: RpcClient[] = [];
const dir = tempDir('token-reload-');

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  if (hub && hub.child.exitCode === null) hub.child.kill('SIGKILL');
  await hub?.exited();
  hub = undefined;
});

async function status(token: string): Promise<number> {
  return (await fetch(`${hub!.url}/v2/sessions/none/events`, { headers: { authorization: `Bearer ${token}` } })).status;
}

it('SIGHUP reloads the token file: a removed token is closed (4401) and refused, a new one works, a broken file keeps the old tokens; SIGTERM drains', async () => {
  const file = join(dir.dir, 'tokens.json');
  writeFileSync(file, JSON.stringify({ tokens: [entry(ALICE, 'alice'), entry(BOB, 'bob')] }), { mode: 0o600 });
  hub = await startHubProcess(['--data', join(dir.dir, 'data'), '--auth', file]);
  const alice = await RpcClient.open(hub.wsUrl, { token: ALICE });
  const bob = await RpcClient.open(hub.wsUrl, { token: BOB });
  clients.push(alice, bob);
  expect(await status(CAROL)).toBe(401);

  writeFileSync(file, JSON.stringify({ tokens: [entry(BOB, 'bob'), entry(CAROL, 'carol')] }));
  hub.child.kill('SIGHUP');
  await waitFor(() => (alice.closed ? true : undefined), { what: "alice's socket to be closed" });
  expect(alice.closeCode).toBe(4401);
  expect(await status(ALICE)).toBe(401);
  expect(await status(CAROL)).toBe(404);
  const carol = await RpcClient.open(hub.wsUrl, { token: CAROL });
  clients.push(carol);
  expect(bob.closed).toBe(false);
  expect((await bob.createSession('still here')).session).toMatch(/^ahp-session:/);

  // A broken file: logged, and the tokens in force stay as they were.
  writeFileSync(file, '{"tokens": [');
  hub.child.kill('SIGHUP');
  await waitFor(() => (/token file not reloaded/.test(hub!.stderr() + hub!.stdout()) ? true : undefined), { what: 'the reload error in the log' });
  expect(hub.child.exitCode).toBeNull();
  expect(await status(CAROL)).toBe(404);
  expect(await status(ALICE)).toBe(401);

  hub.child.kill('SIGTERM');
  expect(await hub.exited()).toEqual({ code: 0, signal: null });
  expect(hub.stderr() + hub.stdout()).toMatch(/draining/);
});

it("a revoked owner's running agent turn is ended with chat/error tokenRevoked (issue 33.5e); another owner's turn goes on", async () => {
  const file = join(dir.dir, 'tokens-turns.json');
  writeFileSync(file, JSON.stringify({ tokens: [entry(ALICE, 'alice'), entry(BOB, 'bob')] }), { mode: 0o600 });
  hub = await startHubProcess(['--data', join(dir.dir, 'data-turns'), '--auth', file]);
  const alice = await RpcClient.open(hub.wsUrl, { token: ALICE });
  const bob = await RpcClient.open(hub.wsUrl, { token: BOB });
  clients.push(alice, bob);
  const alices = await alice.createSession('alice runs an agent');
  const bobs = await bob.createSession('bob runs an agent');
  await alice.subscribe(alices.chat);
  await bob.subscribe(bobs.chat);
  const aliceTurn = await startScriptTurn(alice, alices.chat, [{ sleep: 600_000 }]);
  const bobTurn = await startScriptTurn(bob, bobs.chat, [{ sleep: 600_000 }]);
  // Bob watches alice's chat too (same tenant): the turn's end reaches him after alice is gone.
  await bob.subscribe(alices.chat);

  writeFileSync(file, JSON.stringify({ tokens: [entry(BOB, 'bob')] }));
  hub.child.kill('SIGHUP');
  const ended = await bob.waitForEnvelope((e) => e.channel === alices.chat && e.action.type === 'chat/error' && e.action['turnId'] === aliceTurn, "the end of alice's turn");
  expect(ended.action).toMatchObject({ error: { errorType: 'tokenRevoked' } });
  const bobsChat = (await bob.subscribe<{ activeTurn?: { id: string } }>(bobs.chat)).state;
  expect(bobsChat.activeTurn?.id).toBe(bobTurn);
});

it('a token file that names the same token twice is refused at start, naming both entries', () => {
  ensureBuilt();
  const file = join(dir.dir, 'dup.json');
  writeFileSync(file, JSON.stringify({ tokens: [entry(ALICE, 'alice'), entry(BOB, 'bob'), { ...entry(ALICE, 'mallory'), role: 'admin' }] }), { mode: 0o600 });
  const run = spawnSync(process.execPath, ['dist/server/main.js', '--port', '0', '--data', join(dir.dir, 'dup-data'), '--auth', file], { encoding: 'utf8', timeout: 20_000 });
  expect(run.status).not.toBe(0);
  expect(run.stderr).toMatch(/the same token twice \(tokens\[0\] and tokens\[2\]\)/);
});
