/**
 * One viewer opening event streams as fast as it can (issue 18, item 3): each stream holds an
 * HTTP connection slot for its lifetime, and the HTTP cap never drops a busy connection, so one
 * token used to hold every slot and `/healthz`, other tenants' requests and their WebSocket
 * upgrades were reset. Now a principal holds at most its share (429 `too_many_streams`, and the
 * refused connection is closed), and the rest stays reachable.
 */
import { request, type IncomingMessage } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

const HTTP_CAP = 100;
let server: TestServer | undefined;
const open: IncomingMessage[] = [];
const clients: RpcClient[] = [];

afterEach(async () => {
  for (const res of open.splice(0)) res.destroy();
  for (const c of clients.splice(0)) await c.close();
  await server?.close();
  server = undefined;
});

/** Opens one event stream on its own connection; resolves with its status once the headers arrive (or 0 when reset). */
function openStream(base: string, path: string, token: string): Promise<{ status: number; body?: string }> {
  return new Promise((resolve) => {
    const req = request(`${base}${path}`, { headers: { authorization: `Bearer ${token}` }, agent: false }, (res) => {
      if (res.statusCode === 200) {
        open.push(res);
        return resolve({ status: 200 });
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve({ status: 0 }));
    req.end();
  });
}

it('one viewer flooding event streams gets its share and named refusals; /healthz, other tenants and WebSocket upgrades still get through', async () => {
  server = await startTestServer({ withAuth: true, maxHttpConnections: HTTP_CAP, httpIdleGraceMs: 60_000 });
  const alice = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
  clients.push(alice);
  const sessions: string[] = [];
  for (let i = 0; i < 10; i++) sessions.push((await alice.createSession(`s${i}`)).session.slice('ahp-session:/'.length));

  // The viewer opens as many streams as the hub has HTTP slots, all at once, across the sessions.
  const results = await Promise.all(Array.from({ length: HTTP_CAP }, (_, i) => openStream(server!.url, `/v2/sessions/${sessions[i % sessions.length]}/events`, TOKENS.viewer)));
  const accepted = results.filter((r) => r.status === 200).length;
  const refused = results.filter((r) => r.status === 429);
  // A tenth of the slots per principal; every other attempt is refused by name, none reset.
  expect(accepted).toBe(HTTP_CAP / 10);
  expect(refused.length).toBe(HTTP_CAP - accepted);
  expect(JSON.parse(refused[0]!.body!)).toMatchObject({ scope: 'principal', code: 'too_many_streams' });

  // Meanwhile: the public health check, another tenant's request and WebSocket upgrade.
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  const other = await fetch(`${server.url}/v2/sessions/nope/events`, { headers: { authorization: `Bearer ${TOKENS.mallory}` } });
  expect(other.status).toBe(404);
  const mallory = await RpcClient.open(server.wsUrl, { token: TOKENS.mallory });
  clients.push(mallory);
  expect((await mallory.createSession('theirs')).session).toMatch(/^ahp-session:/);
  // Another user of the same tenant still gets streams of their own.
  expect((await openStream(server.url, `/v2/sessions/${sessions[0]}/events`, TOKENS.bob)).status).toBe(200);

  // A stream that ends gives its slot back.
  open.shift()!.destroy();
  await waitFor(async () => ((await openStream(server!.url, `/v2/sessions/${sessions[1]}/events`, TOKENS.viewer)).status === 200 ? true : undefined), {
    what: 'the freed slot to take a new stream',
  });
});
