/**
 * A tenant whose log holds more state than the hub may load (load-guard.ts) is refused alone at
 * start (issue 18.1): the real hub process starts, the other tenant is served, the refused one's
 * requests and WebSocket upgrades get 503 `tenant_too_large_to_load`, and the process log names
 * the tenant and what to do. Before, the refusal stopped the whole hub start, so one tenant's data
 * kept every tenant down.
 */
import { afterEach, expect, it } from 'vitest';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { rawRequest, tryUpgrade } from '../helpers/raw-http.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { TOKENS, tempDir, writeAuthFile } from '../helpers/start-server.js';

const queued = (id: string, text: string) => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: { text, origin: { kind: 'user' } } });
type Queued = { queuedMessages?: Array<{ id: string }> };

const tmp = tempDir('tenant-refused-');
let hub: HubProcess | undefined;

afterEach(async () => {
  if (hub && hub.child.exitCode === null && hub.child.signalCode === null) {
    hub.child.kill('SIGKILL');
    await hub.exited();
  }
  hub = undefined;
  tmp.remove();
});

/** A session of `token`'s user holding `count` queued messages of `size` characters; returns its chat. */
async function sessionHolding(token: string, count: number, size: number): Promise<string> {
  const client = await RpcClient.open(hub!.wsUrl, { token });
  try {
    const { chat } = await client.createSession('held');
    await client.subscribe(chat);
    for (let i = 0; i < count; i++) expect((await client.dispatchAndWait(chat, queued(`m${i}`, `${i}`.padEnd(size, 'x')))).rejectionReason).toBeUndefined();
    return chat;
  } finally {
    await client.close();
  }
}

it('a tenant holding more state than the hub may load is refused by name while the other tenant starts and serves', async () => {
  const auth = writeAuthFile(tmp.dir);
  const args = ['--data', tmp.dir, '--auth', auth];
  hub = await startHubProcess(args);
  // acme (alice) holds about 300,000 characters, evil (mallory) a few hundred.
  const acmeChat = await sessionHolding(TOKENS.alice, 30, 10_000);
  const evilChat = await sessionHolding(TOKENS.mallory, 1, 10);
  hub.child.kill('SIGTERM');
  expect((await hub.exited()).code).toBe(0);

  // The same data dir with room for 100,000 characters of state per tenant.
  hub = await startHubProcess(args, { env: { HUB_MAX_LOAD_STATE_CHARS: '100000' } });
  const port = Number(new URL(hub.url).port);
  expect(hub.stderr()).toMatch(/tenant \\?"acme\\?" cannot start: the log holds at least \d+ characters/);
  expect(hub.stderr()).toMatch(/max-old-space-size.*tenants\/acme\//);

  // The other tenant is served: its data is there and it takes writes.
  const mallory = await RpcClient.open(hub.wsUrl, { token: TOKENS.mallory });
  try {
    expect(((await mallory.subscribe<Queued>(evilChat)).state.queuedMessages ?? []).map((m) => m.id)).toEqual(['m0']);
    expect((await mallory.dispatchAndWait(evilChat, queued('after', 'after the start'))).rejectionReason).toBeUndefined();
  } finally {
    await mallory.close();
  }
  expect((await rawRequest(port, { path: '/capabilities', headers: { authorization: `Bearer ${TOKENS.mallory}` } })).status).toBe(200);

  // The refused tenant is answered with the named error, on HTTP and on the WebSocket upgrade.
  const http = await rawRequest(port, { path: '/capabilities', headers: { authorization: `Bearer ${TOKENS.alice}` } });
  expect(http.status).toBe(503);
  expect(http.json()).toMatchObject({ code: 'tenant_too_large_to_load', message: expect.stringMatching(/^tenant "acme" is not served: its log holds more/) });
  const upgrade = await tryUpgrade(hub.wsUrl, { headers: { authorization: `Bearer ${TOKENS.alice}` } });
  expect(upgrade.status).toBe(503);
  if (upgrade.ws === undefined) expect(JSON.parse(upgrade.body)).toMatchObject({ code: 'tenant_too_large_to_load' });
  else upgrade.ws.close();

  // The node itself is healthy: a load balancer keeps it (the refusal is in the log, not retried).
  expect((await rawRequest(port, { path: '/healthz' })).status).toBe(200);
  expect(hub.child.exitCode).toBeNull();

  // Nothing of acme's was changed: with the default room it starts with all of it.
  hub.child.kill('SIGTERM');
  expect((await hub.exited()).code).toBe(0);
  hub = await startHubProcess(args);
  const alice = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
  try {
    expect((await alice.subscribe<Queued>(acmeChat)).state.queuedMessages).toHaveLength(30);
  } finally {
    await alice.close();
  }
}, 120_000);
