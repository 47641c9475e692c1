/**
 * Seeded random bodies against every HTTP route a client can write to: each answer must be JSON
 * with a stable code and a readable message (or the DataWorks envelope), never a 500, never a
 * stack trace, and the hub must keep serving.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prng } from '../helpers/prng.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';

describe('HTTP routes under random input', () => {
  let server: TestServer;
  let tab: RpcClient;
  beforeEach(async () => {
    server = await startTestServer({ withAuth: true });
    tab = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
  });
  afterEach(async () => {
    await tab.close();
    await server.stop();
  });

  it('answers every random body with a clear JSON error or success, never 500', async () => {
    const { session, chat } = await tab.createSession('fuzz');
    await tab.subscribe(chat);
    await startScriptTurn(tab, chat, [{ ask: TWO_QUESTION_REQUEST }, { tool: { id: 'tool-f', name: 'deploy', confirm: true } }]);
    await tab.waitForEnvelope((e) => e.action.type === 'chat/inputRequested');
    const sid = encodeURIComponent(session.slice('ahp-session:/'.length));
    const random = prng(424242);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const value = (depth: number): unknown => {
      const r = random();
      if (depth > 3 || r < 0.25) return pick([null, true, 0, -1, 1.5, '', '.', '..', 'req-1', 'selected', 'cancelled', 'proceed_once', '01', 'memory', 'durable', '😀']);
      if (r < 0.45) return Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1));
      const o: Record<string, unknown> = {};
      for (const k of [
        'Id',
        'Jsonrpc',
        'Params',
        'SessionId',
        'PermissionRequestId',
        'Answers',
        'Outcome',
        'OptionId',
        'outcome',
        'optionId',
        'answers',
        'inputId',
        'target',
        'historyEpoch',
        'turnId',
        'content',
        'text',
        'blocks',
        't',
        'ack',
        'prompt',
        'type',
        '0',
        '1',
      ]) {
        if (random() < 0.25) o[k] = value(depth + 1);
      }
      return o;
    };
    const routes = [
      `/v2/sessions/${sid}/inputs`,
      `/v2/agent-sessions/reply`,
      `/session/${sid}/permission/req-1`,
      `/session/${sid}/permission/%2E%2E`,
      `/v2/sessions/${sid}/prompt`,
      `/v2/sessions/nope/inputs`,
      `/api/push/subscriptions`,
      `/api/push/actions`,
    ];
    const statuses = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const route = pick(routes);
      const raw = random() < 0.08 ? '{broken' : JSON.stringify(value(0));
      const res = await fetch(server.url + route, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.alice}`, 'content-type': 'application/json' },
        body: raw,
      });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      expect(res.status, `${route} ${raw.slice(0, 200)}`).toBeLessThan(500);
      const type = res.headers.get('content-type') ?? '';
      if (type.startsWith('text/event-stream')) {
        await res.body?.cancel();
        continue;
      }
      const text = await res.text();
      expect(text).not.toMatch(/\bat .+\.(ts|js):\d+/);
      const body = JSON.parse(text) as Record<string, unknown>;
      if (route === '/v2/agent-sessions/reply') {
        const rpc = body['JsonRpcResponse'] as Record<string, unknown>;
        expect('Result' in rpc !== 'Error' in rpc, text).toBe(true);
      } else if (res.status >= 400) {
        expect(typeof body['code'], text).toBe('string');
        expect(typeof body['message'], text).toBe('string');
      }
    }
    // Errors of several kinds were actually exercised, and the hub still answers.
    expect([...statuses.keys()].filter((s) => s >= 400).length).toBeGreaterThanOrEqual(2);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    await expect(tab.request('ping', {})).resolves.toEqual({});
  });
});
