/**
 * The qwen-serve surface against a fake hub port: its session and prompt routes become port
 * calls (createSession, submitAs of chat/turnStarted or chat/turnCancelled as the caller), the
 * per-session prompt queue is bounded, and invisible sessions do not exist. The routes are
 * called directly (no socket); the real daemon client runs against a real hub in
 * test/integration/qwen-daemon-client.test.ts.
 */
import { UNCOUNTED_SLOT } from '../../server/transport/stream-slots.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { Role, devAuthenticator, type Principal } from '../../server/auth/auth.js';
import { createInteractionsFeature } from '../../server/interactions/feature.js';
import { silentLogger } from '../../server/log.js';
import { createQwenServeFeature } from '../../server/qwen-serve/feature.js';
import type { FeatureContext } from '../../server/feature-contract.js';
import { httpBodyOf, ProtocolError, type HttpHandler, type HttpRegistrar } from '../../server/transport/http-router.js';
import type { RpcRegistrar } from '../../server/ahp/rpc.js';
import { FakeHubPort } from '../helpers/fake-hub-port.js';

const ALICE: Principal = { user: 'alice', tenant: 'default', role: Role.User };
const MALLORY: Principal = { user: 'mallory', tenant: 'other', role: Role.User };

interface Answer {
  status: number;
  body: Record<string, unknown> | undefined;
}

/** The routes a feature added, callable with a JSON body; errors become answers as the router makes them. */
class FakeHttp implements HttpRegistrar {
  readonly routes: Array<{ method: string; segments: string[]; handler: HttpHandler }> = [];
  add(method: string, pattern: string, handler: HttpHandler): void {
    this.routes.push({ method, segments: pattern.split('/').slice(1), handler });
  }
  reserveApiPrefix(): void {}

  async call(method: string, path: string, principal: Principal, body?: unknown): Promise<Answer> {
    const parts = path.split('/').slice(1);
    for (const route of this.routes) {
      if (route.method !== method || route.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      const fits = route.segments.every((s, i) => {
        if (!s.startsWith('{')) return s === parts[i];
        params[s.slice(1, -1)] = parts[i]!;
        return true;
      });
      if (!fits) continue;
      const req = Object.assign(Readable.from(body === undefined ? [] : [Buffer.from(JSON.stringify(body))]), { headers: { 'content-type': 'application/json' }, method });
      const answer: Answer = { status: 0, body: undefined };
      const res = {
        setHeader: () => res,
        writeHead(status: number) {
          answer.status = status;
          return res;
        },
        end(text?: string) {
          if (text) answer.body = JSON.parse(text) as Record<string, unknown>;
          return res;
        },
      };
      try {
        await route.handler(req as unknown as IncomingMessage, res as unknown as ServerResponse, { params, url: new URL(`http://127.0.0.1${path}`), principal, claimStream: () => UNCOUNTED_SLOT });
      } catch (err) {
        if (!(err instanceof ProtocolError)) throw err;
        return { status: err.status, body: httpBodyOf(err) };
      }
      return answer;
    }
    return { status: 404, body: undefined };
  }
}

describe('qwen-serve feature (unit, fake hub port)', () => {
  let hub: FakeHubPort;
  let http: FakeHttp;
  let ids = 0;

  beforeEach(() => {
    hub = new FakeHubPort();
    http = new FakeHttp();
    const rpc: RpcRegistrar = { request: () => {}, notification: () => {} };
    const ctx: FeatureContext = {
      hub,
      rpc,
      http,
      runner: { setSteering: () => {}, steeringUnavailable: () => undefined },
      logger: silentLogger,
      now: () => Date.parse('2026-01-01T00:00:00.000Z'),
      newId: () => `id-${++ids}`,
      auth: devAuthenticator(),
      services: new Map(),
      metrics: { gauge: () => {} },
    };
    createInteractionsFeature().install(ctx);
    createQwenServeFeature({ maxPendingPrompts: 2 }).install(ctx);
  });

  const turnStarts = () => hub.committed.filter((c) => c.action.type === 'chat/turnStarted');
  const prompt = (text: string) => ({ prompt: [{ type: 'text', text }] });

  it('POST /session creates the session through the port, and the same id again attaches to it', async () => {
    const created = await http.call('POST', '/session', ALICE, { sessionId: 'work' });
    expect(created).toMatchObject({ status: 200, body: { sessionId: 'work', attached: false } });
    expect(hub.sessionEntry('ahp-session:/work')?.tenant).toBe('default');
    expect(await http.call('POST', '/session', ALICE, { sessionId: 'work' })).toMatchObject({ status: 200, body: { attached: true } });
  });

  it("a prompt on an idle session starts a turn on the session's default chat, as the caller", async () => {
    await http.call('POST', '/session', ALICE, { sessionId: 'work' });
    const answer = await http.call('POST', '/session/work/prompt', ALICE, prompt('fix the build'));
    expect(answer.status).toBe(202);
    expect(turnStarts()).toHaveLength(1);
    expect(turnStarts()[0]).toMatchObject({ channel: hub.defaultChatOf('ahp-session:/work'), via: 'submitAs', action: { message: { text: 'fix the build' } } });
  });

  it('queues a prompt while a turn runs, and refuses one beyond the bound (running one included) with 503 prompt_queue_full', async () => {
    await http.call('POST', '/session', ALICE, { sessionId: 'work' });
    await http.call('POST', '/session/work/prompt', ALICE, prompt('one'));
    expect(await http.call('POST', '/session/work/prompt', ALICE, prompt('two'))).toMatchObject({ status: 202, body: { queued: true } });
    expect(await http.call('POST', '/session/work/prompt', ALICE, prompt('three'))).toMatchObject({ status: 503, body: { code: 'prompt_queue_full', pendingCount: 2 } });
    expect(turnStarts()).toHaveLength(1);
  });

  it('a turn start the hub refuses starts no turn (the prompt ends with turn_error on the event stream)', async () => {
    await http.call('POST', '/session', ALICE, { sessionId: 'work' });
    hub.refuseNext(ErrorCode.InvalidParams, 'refused for the test');
    expect((await http.call('POST', '/session/work/prompt', ALICE, prompt('one'))).status).toBe(202);
    expect(turnStarts()).toEqual([]);
  });

  it('cancel submits chat/turnCancelled for the running turn as the caller', async () => {
    await http.call('POST', '/session', ALICE, { sessionId: 'work' });
    await http.call('POST', '/session/work/prompt', ALICE, prompt('one'));
    expect((await http.call('POST', '/session/work/cancel', ALICE)).status).toBe(204);
    expect(hub.committed.at(-1)).toMatchObject({ via: 'submitAs', action: { type: 'chat/turnCancelled' } });
    expect(hub.chatEntry(hub.defaultChatOf('ahp-session:/work')!)!.state.activeTurn).toBeUndefined();
  });

  it("another tenant's session does not exist for the caller: 404 session_not_found", async () => {
    await http.call('POST', '/session', ALICE, { sessionId: 'work' });
    expect(await http.call('POST', '/session/work/prompt', MALLORY, prompt('hi'))).toMatchObject({ status: 404, body: { code: 'session_not_found' } });
    expect(await http.call('DELETE', '/session/work', MALLORY)).toMatchObject({ status: 404 });
    expect(hub.sessionEntry('ahp-session:/work')).toBeDefined();
  });
});
