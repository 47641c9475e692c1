/**
 * Throws thousands of malformed and half-valid frames at the JSON-RPC layer of a real hub (fake
 * connections, memory log) and checks that every answer is well-formed, nothing throws, no stack
 * trace leaks, and the hub still works afterwards. Deterministic: a seeded generator.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../helpers/prng.js';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { registerAhpMethods } from '../../server/ahp/ahp-methods.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { Hub } from '../../server/hub/hub.js';
import { RpcRouter } from '../../server/ahp/rpc.js';
import { silentLogger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { jsonRpcOutboundSchema } from '../../shared/protocol/messages.js';

const METHODS = ['initialize', 'ping', 'subscribe', 'unsubscribe', 'dispatchAction', 'reconnect', 'listSessions', 'createSession', 'disposeSession', 'createChat', 'disposeChat', 'x-input/submit', 'nope', ''];
const ACTION_TYPES = ['chat/turnStarted', 'chat/inputAnswerChanged', 'chat/inputCompleted', 'chat/toolCallConfirmed', 'chat/truncated', 'chat/delta', 'session/defaultChatChanged', 'x-unknown', ''];

describe('JSON-RPC layer under random input', () => {
  it('answers every frame with a well-formed message, never throws or leaks a stack, and keeps working', async () => {
    const random = prng(20261130);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    let n = 0;
    const hub = await Hub.open({ log: new MemoryActionLog(), logger: silentLogger, now: () => 1_000, newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'R' }], defaultProvider: 'remote' });
    // Any error-level log means a handler failed in a way it should have answered with a clear error.
    const failures: string[] = [];
    const watchful = { ...silentLogger, error: (msg: string, fields?: Record<string, unknown>) => failures.push(`${msg} ${JSON.stringify(fields)}`), child: () => watchful };
    const router = new RpcRouter(
      watchful,
      () => 0,
      { perSecond: 1e9, burst: 1e9 },
      undefined,
      (conn, text) => hub.sendInOrder(conn, text),
    );
    registerAhpMethods(router, hub);
    const conn = new FakeConnection('fuzz');
    const ctx = { conn, principal: DEV_PRINCIPAL, state: router.newConnectionState() };
    await router.handleFrame(ctx, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: 'fuzz' } }));
    const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/fuzz' });
    const channels = ['ahp-root://', 'ahp-session:/fuzz', chat, 'ahp-chat:/nope', 'ahp-session:/', 'x', '', 'ahp-session:/' + 'a'.repeat(600)];

    const value = (depth: number): unknown => {
      const r = random();
      if (depth > 3 || r < 0.2) return pick([null, true, false, 0, -1, 1.5, 1e308, '', 'x', '\u0000', '😀', 'ahp-chat:/nope']);
      if (r < 0.4) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      const obj: Record<string, unknown> = {};
      for (const key of ['type', 'turnId', 'requestId', 'questionId', 'answer', 'message', 'startedAt', 'response', 'channel', 'clientSeq', 'action', '__proto__', 'constructor']) {
        if (random() < 0.3) obj[key] = key === 'type' ? pick(ACTION_TYPES) : key === 'channel' ? pick(channels) : value(depth + 1);
      }
      return obj;
    };
    const frame = (i: number): string => {
      const r = random();
      if (r < 0.05) return '{not json';
      if (r < 0.1) return JSON.stringify(value(0));
      if (r < 0.12) return JSON.stringify([{ jsonrpc: '2.0', id: i, method: 'ping' }]);
      const msg: Record<string, unknown> = { jsonrpc: random() < 0.95 ? '2.0' : '1.0', method: pick(METHODS) };
      if (random() < 0.6) msg['id'] = random() < 0.9 ? i : pick([null, {}, 'x'.repeat(300)]);
      const params = value(1) as Record<string, unknown> | unknown;
      if (params && typeof params === 'object' && !Array.isArray(params) && random() < 0.8) {
        (params as Record<string, unknown>)['channel'] = pick(channels);
        if (random() < 0.5) (params as Record<string, unknown>)['action'] = value(1);
      }
      msg['params'] = params;
      return JSON.stringify(msg);
    };

    for (let i = 1; i <= 3_000; i++) {
      await expect(router.handleFrame(ctx, frame(i))).resolves.toBeUndefined();
    }
    await hub.drain();
    expect(failures).toEqual([]);
    for (const text of conn.frames) {
      expect(() => JSON.parse(text)).not.toThrow();
      const parsed = jsonRpcOutboundSchema.safeParse(JSON.parse(text));
      expect(parsed.success, text.slice(0, 300)).toBe(true);
      expect(text).not.toMatch(/\bat .+\.(ts|js):\d+/); // no stack frames
    }
    // Still healthy (the fuzz may well have disposed the session): a new session works end to end.
    const before = conn.frames.length;
    await router.handleFrame(ctx, JSON.stringify({ jsonrpc: '2.0', id: 'new', method: 'createSession', params: { channel: 'ahp-session:/after-fuzz' } }));
    await hub.drain();
    const created = JSON.parse(conn.frames.slice(before).find((t) => t.includes('"id":"new"'))!) as { result: { defaultChat: string } };
    await router.handleFrame(ctx, JSON.stringify({ jsonrpc: '2.0', id: 'last', method: 'subscribe', params: { channel: created.result.defaultChat } }));
    await hub.drain();
    const answer = JSON.parse(conn.frames.slice(before).find((t) => t.includes('"id":"last"'))!) as { result: { snapshot: { resource: string } } };
    expect(answer.result.snapshot.resource).toBe(created.result.defaultChat);
  });
});
