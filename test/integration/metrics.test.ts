/**
 * `GET /metrics`: Prometheus text from prom-client, open in dev mode, admin-only with tokens. The
 * figures move with what clients actually do.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { tokenAuthenticator } from '../../server/auth/auth.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { SseClient, sessionIdOfUri } from '../helpers/sse.js';
import { AUTH_FILE, startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

const ADMIN_TOKEN = 'admin-token-0123456789';
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function scrape(server: TestServer, token?: string): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${server.url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

/** The value of one sample line, e.g. `ahp_hub_connections` or `ahp_hub_dispatches_total{outcome="accepted",reason=""}`. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(series + ' ')) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

describe('Prometheus metrics', () => {
  it('counts connections, subscriptions, dispatches by outcome, log appends, reconnect replays and SSE listeners', async () => {
    const server = await startTestServer({ persistent: true });
    closers.push(() => server.stop());
    const before = await scrape(server);
    expect(before.status).toBe(200);
    expect(before.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sample(before.text, 'ahp_hub_connections')).toBe(0);

    const tab = await RpcClient.open(server.wsUrl);
    closers.push(() => tab.close());
    const { session, chat } = await tab.createSession('metrics');
    await tab.subscribe(chat);
    await tab.subscribe(session);
    const accepted = await tab.dispatchAndWait(session, { type: 'session/isReadChanged', isRead: true });
    expect(accepted.rejectionReason).toBeUndefined();
    const rejected = await tab.dispatchAndWait(session, { type: 'session/isReadChanged', isRead: 'yes' });
    expect(rejected.rejectionReason).toMatch(/^invalid/);
    const sse = await SseClient.open(`${server.url}/v2/sessions/${sessionIdOfUri(session)}/events`);
    closers.push(() => sse.close());
    const again = await RpcClient.open(server.wsUrl);
    closers.push(() => again.close());
    const replay = await again.request<{ type: string }>('reconnect', { channel: 'ahp-root://', clientId: again.clientId, lastSeenServerSeq: accepted.serverSeq - 1, subscriptions: [session] });
    expect(replay.type).toBe('replay');

    const after = await scrape(server);
    expect(sample(after.text, 'ahp_hub_connections')).toBe(2);
    expect(sample(after.text, 'ahp_hub_subscriptions')).toBeGreaterThanOrEqual(2);
    expect(sample(after.text, 'ahp_hub_dispatches_total{outcome="accepted",reason=""}')).toBeGreaterThanOrEqual(1);
    expect(sample(after.text, 'ahp_hub_dispatches_total{outcome="rejected",reason="invalid_params"}')).toBe(1);
    expect(sample(after.text, 'ahp_hub_log_append_seconds_count')).toBeGreaterThan(0);
    expect(sample(after.text, 'ahp_hub_reconnects_total{kind="replay"}')).toBe(1);
    expect(sample(after.text, 'ahp_hub_sse_listeners')).toBe(1);
    expect(sample(after.text, 'ahp_hub_fanout_queue_bytes')).toBeGreaterThanOrEqual(0);
    expect(after.text).toContain('ahp_hub_slow_consumer_closes_total 0');
    expect(after.text).toContain('ahp_hub_process_resident_memory_bytes');

    await again.close();
    await waitFor(async () => (sample((await scrape(server)).text, 'ahp_hub_connections') === 1 ? true : undefined), { what: 'the closed connection to leave the gauge' });
  });

  it('is for admin tokens only when auth is on', async () => {
    const server = await startTestServer({
      auth: tokenAuthenticator({ tokens: [...AUTH_FILE.tokens, { token: ADMIN_TOKEN, user: 'root', tenant: 'ops', role: 'admin' }] }),
    });
    closers.push(() => server.stop());
    expect((await scrape(server)).status).toBe(401);
    for (const token of [TOKENS.alice, TOKENS.viewer, TOKENS.agent]) {
      const res = await scrape(server, token);
      expect(res.status, token).toBe(403);
      expect(JSON.parse(res.text).code).toBe('permission_denied');
    }
    const admin = await scrape(server, ADMIN_TOKEN);
    expect(admin.status).toBe(200);
    expect(admin.text).toContain('# TYPE ahp_hub_dispatches_total counter');
  });
});
