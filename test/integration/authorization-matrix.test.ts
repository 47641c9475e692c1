/**
 * The authorization matrix: every AHP method, every client-dispatchable and agent-only action and
 * every HTTP route, tried by each role (no token, viewer, user, agent, admin) against a resource of
 * its own tenant and of another tenant. Each cell is classified from what the caller observes:
 *
 * - `unauthenticated`: the upgrade or request was refused with 401;
 * - `denied`: refused for who the caller is: a role error (403, -32009, a "read-only" or "not
 *   client-dispatchable" rejection), or the resource behaved as if it did not exist (404, -32001,
 *   -32008, a dispatch ignored without an echo, a channel reported missing);
 * - `allowed`: the call got past authorization: it succeeded, or failed only on the resource's state
 *   or the request's shape (e.g. 409 "no open turn"), which any permitted caller would also see.
 *
 * The expected outcome of each cell comes from the rules in `expected()`, written from the README's
 * role table, not from observed results.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenAuthenticator, type AuthFile } from '../../server/auth/auth.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST, userMessage } from '../helpers/turns.js';

type Role = 'none' | 'viewer' | 'user' | 'agent' | 'admin';
type Tenant = 'own' | 'other';
type Outcome = 'unauthenticated' | 'denied' | 'allowed';
type Kind = 'method' | 'action' | 'agent-action' | 'route';
/** What an operation needs of the caller, per the README's role table. */
type Need = 'read' | 'write' | 'agent' | 'admin' | 'public';

const ROLES: readonly Role[] = ['none', 'viewer', 'user', 'agent', 'admin'];
const TENANTS: readonly Tenant[] = ['own', 'other'];

const FILE: AuthFile = {
  tokens: (['viewer', 'user', 'agent', 'admin'] as const).flatMap((role) => (['acme', 'evil'] as const).map((tenant) => ({ token: `${role}-${tenant}-token-0123456789`, user: `${role}-${tenant}`, tenant, role }))),
};
const OWNER_TOKEN = 'owner-acme-token-0123456789';
FILE.tokens.push({ token: OWNER_TOKEN, user: 'owner', tenant: 'acme', role: 'user' });

const tokenOf = (role: Role, tenant: Tenant): string | undefined => (role === 'none' ? undefined : `${role}-${tenant === 'own' ? 'acme' : 'evil'}-token-0123456789`);

/** A fresh session of tenant acme, created by its owner for one cell. */
interface Target {
  session: string;
  sessionId: string;
  chat: string;
}

interface Actor {
  role: Role;
  tenant: Tenant;
  token: string | undefined;
  /** An initialized connection (undefined for `none`). */
  client: RpcClient | undefined;
}

interface Op {
  kind: Kind;
  name: string;
  need: Need;
  /** True when the operation names no tenant's resource: the other-tenant cell expects what the own one does. */
  tenantFree?: boolean;
  run(actor: Actor, target: Target): Promise<Outcome>;
}

const DENIED_CODES = new Set([-32001, -32003, -32007, -32008, -32009, -32010]);
const ROLE_REJECTION = /read-only|not client-dispatchable|agents? only|only agents/i;

function expected(op: Op, role: Role, tenant: Tenant): Outcome {
  if (op.need === 'public') return 'allowed';
  if (role === 'none') return 'unauthenticated';
  if (tenant === 'other' && !op.tenantFree) return 'denied';
  switch (op.need) {
    case 'read':
      return 'allowed';
    case 'write':
      return role === 'viewer' ? 'denied' : 'allowed';
    case 'agent':
      return role === 'agent' || role === 'admin' ? 'allowed' : 'denied';
    case 'admin':
      return role === 'admin' ? 'allowed' : 'denied';
  }
}

let server: TestServer;
let owner: RpcClient;
const clients: RpcClient[] = [];

async function rpc(actor: Actor, method: string, params: unknown): Promise<{ ok: true; result: any } | { ok: false; code: number; message: string }> {
  // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    return { ok: true, result: await actor.client!.request(method, params) };
  } catch (err) {
    if (err instanceof RpcError) return { ok: false, code: err.code, message: err.message };
    throw err;
  }
}

function classifyRpc(r: { ok: true } | { ok: false; code: number }): Outcome {
  return r.ok ? 'allowed' : DENIED_CODES.has(r.code) ? 'denied' : 'allowed';
}

function method(name: string, need: Need, call: (actor: Actor, target: Target) => Promise<Outcome>, tenantFree = false): Op {
  return {
    kind: 'method',
    name,
    need,
    tenantFree,
    run: async (actor, target) => {
      if (!actor.client) return (await tryConnect(undefined)) ? 'allowed' : 'unauthenticated';
      return call(actor, target);
    },
  };
}

async function tryConnect(token: string | undefined): Promise<boolean> {
  try {
    const c = await RpcClient.connect(server.wsUrl, token ? { token } : {});
    await c.close();
    return true;
  } catch (err) {
    if (/HTTP 401/.test(String(err))) return false;
    throw err;
  }
}

/** Dispatches and classifies by the echo: none (ignored as invisible), a role rejection, or anything else. */
async function dispatchOutcome(actor: Actor, channel: string, action: Record<string, unknown>): Promise<Outcome> {
  if (!actor.client) return (await tryConnect(undefined)) ? 'allowed' : 'unauthenticated';
  const client = actor.client;
  const clientSeq = client.dispatch(channel, action);
  // The echo (or its absence) is settled once a later request on the same connection is answered.
  await client.request('ping', { channel: 'ahp-root://' });
  const echo = client.envelopes.find((e) => e.origin?.clientId === client.clientId && e.origin.clientSeq === clientSeq);
  if (!echo) return 'denied';
  return echo.rejectionReason && ROLE_REJECTION.test(echo.rejectionReason) ? 'denied' : 'allowed';
}

function action(kind: 'action' | 'agent-action', type: string, on: 'chat' | 'session', body: Record<string, unknown>): Op {
  return {
    kind,
    name: type,
    need: kind === 'action' ? 'write' : 'agent',
    run: (actor, target) => dispatchOutcome(actor, on === 'chat' ? target.chat : target.session, { type, ...body }),
  };
}

async function http(actor: Actor, path: string, init: { method?: string; body?: unknown; stream?: boolean } = {}): Promise<number> {
  const headers: Record<string, string> = {};
  if (actor.token) headers['authorization'] = `Bearer ${actor.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const abort = new AbortController();
  const res = await fetch(server.url + path, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), signal: abort.signal });
  // Event streams stay open: the status line is the answer.
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) abort.abort();
  else await res.text();
  return res.status;
}

function classifyHttp(status: number): Outcome {
  if (status === 401) return 'unauthenticated';
  if (status === 403 || status === 404) return 'denied';
  return 'allowed';
}

function route(name: string, need: Need, call: (actor: Actor, target: Target) => Promise<number>, tenantFree = false): Op {
  return { kind: 'route', name, need, tenantFree, run: async (actor, target) => classifyHttp(await call(actor, target)) };
}

/** The owner starts a turn whose agent asks a question; resolves with the request id to answer. */
async function openQuestion(target: Target): Promise<string> {
  await owner.subscribe(target.chat);
  await startScriptTurn(owner, target.chat, [{ ask: TWO_QUESTION_REQUEST }, { say: 'done' }]);
  await owner.waitForEnvelope((e) => e.channel === target.chat && e.action.type === 'chat/inputRequested', 'the question');
  return TWO_QUESTION_REQUEST.id;
}

const now = (): string => new Date().toISOString();

const OPS: readonly Op[] = [
  // ─── AHP methods ────────────────────────────────────────────────────────────
  method('initialize', 'read', async (actor, target) => {
    const c = await RpcClient.connect(server.wsUrl, { token: actor.token! });
    try {
      const init = await c.request<{ snapshots: Array<{ resource: string }> }>('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: randomUUID(), initialSubscriptions: [target.chat] });
      return init.snapshots.some((s) => s.resource === target.chat) ? 'allowed' : 'denied';
    } finally {
      await c.close();
    }
  }),
  method('ping', 'read', async (actor) => classifyRpc(await rpc(actor, 'ping', { channel: 'ahp-root://' })), true),
  method('subscribe', 'read', async (actor, t) => classifyRpc(await rpc(actor, 'subscribe', { channel: t.chat }))),
  method('reconnect', 'read', async (actor, t) => {
    const r = await rpc(actor, 'reconnect', { channel: 'ahp-root://', clientId: actor.client!.clientId, lastSeenServerSeq: 0, subscriptions: [t.session] });
    if (!r.ok) return classifyRpc(r);
    return (r.result.missing as string[]).includes(t.session) ? 'denied' : 'allowed';
  }),
  method('listSessions', 'read', async (actor, t) => {
    const r = await rpc(actor, 'listSessions', { channel: 'ahp-root://' });
    if (!r.ok) return classifyRpc(r);
    return (r.result.items as Array<{ resource: string }>).some((s) => s.resource === t.session) ? 'allowed' : 'denied';
  }),
  // Own tenant: a new session. Other tenant: the victim's id (squatting / existence probing). Ids
  // are per tenant, so that names no resource of the victim's (tenant-free): a writer of the other
  // tenant gets a session of its own under that id, and the victim's must come out untouched.
  method(
    'createSession',
    'write',
    async (actor, t) => {
      const before = (await owner.subscribe(t.session)).state;
      const outcome = classifyRpc(await rpc(actor, 'createSession', { channel: actor.tenant === 'own' ? `ahp-session:/${randomUUID()}` : t.session }));
      const after = (await owner.subscribe(t.session)).state;
      if (JSON.stringify(after) !== JSON.stringify(before)) throw new Error(`createSession by ${actor.role} of the ${actor.tenant} tenant changed the victim's session`);
      return outcome;
    },
    true,
  ),
  // Deleting needs the session's owner or an admin; no actor here owns the target (the owner
  // deleting their own session is in session-manage.test.ts), so only admins get through.
  method('disposeSession', 'admin', async (actor, t) => classifyRpc(await rpc(actor, 'disposeSession', { channel: t.session }))),
  method('createChat', 'write', async (actor, t) => classifyRpc(await rpc(actor, 'createChat', { channel: t.session }))),
  method('disposeChat', 'write', async (actor, t) => {
    // A second chat, so disposing it is about who asks, not about the session's default chat.
    const { chat } = await owner.request<{ chat: string }>('createChat', { channel: t.session });
    return classifyRpc(await rpc(actor, 'disposeChat', { channel: chat }));
  }),
  method('x-input/capabilities', 'read', async (actor, t) => classifyRpc(await rpc(actor, 'x-input/capabilities', { channel: t.session }))),
  method('x-input/submit', 'write', async (actor, t) => classifyRpc(await rpc(actor, 'x-input/submit', { channel: t.session, content: 'steer' }))),
  method('x-collab/join', 'read', async (actor, t) => classifyRpc(await rpc(actor, 'x-collab/join', { channel: t.chat, doc: '~chat' }))),

  // ─── Client-dispatchable actions ─────────────────────────────────────────────
  action('action', 'chat/turnStarted', 'chat', { turnId: 'm-turn', startedAt: now(), message: userMessage('hi') }),
  action('action', 'chat/turnCancelled', 'chat', { turnId: 'm-turn', duration: 1 }),
  action('action', 'chat/turnResume', 'chat', { turnId: 'm-turn' }),
  action('action', 'chat/truncated', 'chat', { turnId: 'm-turn' }),
  action('action', 'chat/draftChanged', 'chat', { draft: { text: 'd' } }),
  action('action', 'chat/inputAnswerChanged', 'chat', { requestId: 'r', questionId: 'q', answer: { state: 'draft', value: { kind: 'text', value: 'x' } } }),
  action('action', 'chat/inputCompleted', 'chat', { requestId: 'r', response: 'cancel' }),
  action('action', 'chat/pendingMessageSet', 'chat', { kind: 'queued', id: 'q-1', message: userMessage('next') }),
  action('action', 'chat/pendingMessageRemoved', 'chat', { kind: 'queued', id: 'q-1' }),
  action('action', 'chat/queuedMessagesReordered', 'chat', { order: ['q-1'] }),
  action('action', 'chat/steeringMessageSet', 'chat', { steeringMessage: { id: 's-1', message: userMessage('steer') } }),
  action('action', 'chat/steeringMessageRemoved', 'chat', { id: 's-1' }),
  action('action', 'chat/toolCallConfirmed', 'chat', { turnId: 'm-turn', toolCallId: 'tc', approved: true, confirmed: 'user-action' }),
  action('action', 'chat/toolCallResultConfirmed', 'chat', { turnId: 'm-turn', toolCallId: 'tc', approved: true }),
  action('action', 'chat/toolCallComplete', 'chat', { turnId: 'm-turn', toolCallId: 'tc', result: { success: true } }),
  action('action', 'chat/toolCallContentChanged', 'chat', { turnId: 'm-turn', toolCallId: 'tc', content: [{ type: 'text', text: 'out' }] }),
  action('action', 'session/isReadChanged', 'session', { isRead: true }),
  action('action', 'session/isArchivedChanged', 'session', { isArchived: false }),
  action('action', 'session/defaultChatChanged', 'session', { defaultChat: 'ahp-chat:/elsewhere' }),
  action('action', 'session/titleChanged', 'session', { title: 'renamed' }),
  // ─── Agent-only actions (valid shapes, so a refusal is about the role) ─────
  action('agent-action', 'chat/responsePart', 'chat', { turnId: 'm-turn', part: { kind: 'markdown', id: 'p1', content: '' } }),
  action('agent-action', 'chat/delta', 'chat', { turnId: 'm-turn', partId: 'p1', content: 'x' }),
  action('agent-action', 'chat/turnComplete', 'chat', { turnId: 'm-turn', duration: 5 }),

  // ─── HTTP routes ─────────────────────────────────────────────────────────────
  route('GET /healthz', 'public', (a) => http(a, '/healthz'), true),
  route('GET /metrics', 'admin', (a) => http(a, '/metrics'), true),
  route('GET /v2/sessions/{id}/events', 'read', (a, t) => http(a, `/v2/sessions/${t.sessionId}/events`)),
  route('GET /v2/sessions/{id}/input-capabilities', 'read', (a, t) => http(a, `/v2/sessions/${t.sessionId}/input-capabilities`)),
  route('POST /v2/sessions/{id}/inputs', 'write', (a, t) => http(a, `/v2/sessions/${t.sessionId}/inputs`, { method: 'POST', body: { content: 'steer' } })),
  // qwen's close deletes the session: the owner's or an admin's call, as disposeSession.
  route('DELETE /session/{id}', 'admin', (a, t) => http(a, `/session/${t.sessionId}`, { method: 'DELETE' })),
  route('GET /v2/search', 'read', async (a, t) => {
    // Allowed only when the target's title is found: another tenant's session never is.
    const headers: Record<string, string> = a.token ? { authorization: `Bearer ${a.token}` } : {};
    const res = await fetch(`${server.url}/v2/search?q=${encodeURIComponent('matrix GET /v2/search')}&limit=100`, { headers });
    if (res.status !== 200) return res.status;
    const body = (await res.json()) as { results: Array<{ session: string }> };
    return body.results.some((r) => r.session === t.session) ? 200 : 404;
  }),
  route('GET /v2/sessions/{id}/export', 'read', (a, t) => http(a, `/v2/sessions/${t.sessionId}/export`)),
  route('POST /v2/sessions/{id}/prompt', 'write', (a, t) => http(a, `/v2/sessions/${t.sessionId}/prompt`, { method: 'POST', body: { prompt: [{ type: 'text', text: JSON.stringify({ script: [{ say: 'hi' }] }) }] } })),
  // DataWorks answers 200 with Accepted: false for a request it cannot take (unknown, or invisible
  // to the caller), so this route is classified by its envelope rather than its status.
  {
    kind: 'route',
    name: 'POST /v2/agent-sessions/reply',
    need: 'write',
    run: async (a, t) => {
      const requestId = a.role === 'none' ? 'req-1' : await openQuestion(t);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (a.token) headers['authorization'] = `Bearer ${a.token}`;
      const body = { Jsonrpc: '2.0', Id: 'm', Params: { SessionId: t.sessionId, PermissionRequestId: requestId, Outcome: { Outcome: 'cancelled' } } };
      const res = await fetch(`${server.url}/v2/agent-sessions/reply`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (res.status === 401) return 'unauthenticated';
      const reply = ((await res.json()) as { JsonRpcResponse: { Result?: { Accepted: boolean }; Error?: { ErrorCode: string } } }).JsonRpcResponse;
      return reply.Result?.Accepted === true ? 'allowed' : 'denied';
    },
  },
  route('POST /session/{id}/permission/{requestId}', 'write', async (a, t) => {
    const requestId = a.role === 'none' ? 'req-1' : await openQuestion(t);
    return http(a, `/session/${t.sessionId}/permission/${requestId}`, { method: 'POST', body: { outcome: { outcome: 'cancelled' } } });
  }),
];

describe('authorization matrix: operation × role × tenant', () => {
  beforeAll(async () => {
    server = await startTestServer({ auth: tokenAuthenticator(FILE), maxConnectionsPerPrincipal: 100 });
    owner = await RpcClient.open(server.wsUrl, { token: OWNER_TOKEN });
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await owner.close();
    await server.stop();
  });

  const cells = OPS.length * (1 + (ROLES.length - 1) * TENANTS.length);
  it(`holds in all ${cells} cells (${OPS.length} operations × (no token + 4 roles × 2 tenants))`, async () => {
    const actors = new Map<string, Actor>();
    for (const role of ROLES) {
      for (const tenant of TENANTS) {
        const token = tokenOf(role, tenant);
        const client = token ? await RpcClient.open(server.wsUrl, { token }) : undefined;
        if (client) clients.push(client);
        actors.set(`${role}/${tenant}`, { role, tenant, token, client });
      }
    }
    const mismatches: string[] = [];
    const counts = { cells: 0, allowed: 0, denied: 0, unauthenticated: 0 };
    const byKind = new Map<Kind, number>();
    for (const op of OPS) {
      for (const role of ROLES) {
        for (const tenant of role === 'none' ? (['own'] as const) : TENANTS) {
          const { session, chat } = await owner.createSession(`matrix ${op.name}`);
          const target: Target = { session, chat, sessionId: encodeURIComponent(session.slice('ahp-session:/'.length)) };
          const got = await op.run(actors.get(`${role}/${tenant}`)!, target);
          const want = expected(op, role, tenant);
          counts.cells++;
          counts[got]++;
          byKind.set(op.kind, (byKind.get(op.kind) ?? 0) + 1);
          if (got !== want) mismatches.push(`${op.kind} ${op.name} × ${role} × ${tenant}: expected ${want}, got ${got}`);
        }
      }
    }
    process.stdout.write(
      `authorization matrix: ${counts.cells} cells (${[...byKind].map(([k, n]) => `${k} ${n}`).join(', ')}); ` +
        `allowed ${counts.allowed}, denied ${counts.denied}, unauthenticated ${counts.unauthenticated}; mismatches ${mismatches.length}\n`,
    );
    expect(mismatches).toEqual([]);
    expect(counts.cells).toBe(cells);
  }, 180_000);
});
