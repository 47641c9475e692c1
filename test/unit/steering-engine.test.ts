/**
 * The steering engine against a fake hub port: what it accepts, what it dispatches into the chat,
 * and how the hub's hooks (commits, turn end, disposal) move its receipts. The same behaviour over
 * real sockets is covered by test/shared/session-inputs.test.ts and the ACP steering tests.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Role } from '../../server/auth/auth.js';
import { silentLogger } from '../../server/log.js';
import { SteeringEngine } from '../../server/steering/engine.js';
import { InputError } from '../../server/steering/inputs.js';
import { FakeHubPort } from '../helpers/fake-hub-port.js';

const SESSION = 'ahp-session:/steer';
const NOW = Date.parse('2026-01-01T10:00:00.000Z');

describe('steering engine (unit, fake hub port)', () => {
  let hub: FakeHubPort;
  let engine: SteeringEngine;
  let chat: string;
  let unhook: () => void;

  beforeEach(() => {
    hub = new FakeHubPort();
    chat = hub.addSession(SESSION);
    engine = new SteeringEngine(hub, silentLogger, () => NOW, { quotaPerTurn: 2 });
    unhook = hub.hook('steering', engine.hooks);
  });
  afterEach(() => unhook());

  function startTurn(turnId: string): void {
    hub.commit(chat, { type: 'chat/turnStarted', turnId, startedAt: new Date(NOW).toISOString(), message: { text: 'go', origin: { kind: 'user' } } });
  }

  it('has no target while the session is idle, and the running turn as target once a turn starts', async () => {
    expect(engine.target(SESSION)).toBeNull();
    startTurn('t1');
    expect(engine.target(SESSION)).toMatchObject({ turnId: 't1' });
  });

  it('accepts an input into the running turn with ordinal 1 and shows it in the chat as a steering message', async () => {
    startTurn('t1');
    const target = engine.target(SESSION)!;
    const result = await engine.submit(SESSION, { inputId: 'in-1', target, text: 'also check the tests', ack: 'memory' }, 'http');
    expect(result).toMatchObject({ outcome: 'accepted', duplicate: false, receipt: { inputId: 'in-1', ordinal: 1, state: 'accepted', turnId: 't1' } });
    expect(hub.chatEntry(chat)!.state.steeringMessages?.map((m) => m.message.text)).toEqual(['also check the tests']);
  });

  it('answers a retry of the same input with the original receipt, and refuses the same id with other text', async () => {
    startTurn('t1');
    const target = engine.target(SESSION)!;
    const first = await engine.submit(SESSION, { inputId: 'in-1', target, text: 'a', ack: 'memory' }, 'http');
    const retry = await engine.submit(SESSION, { inputId: 'in-1', target, text: 'a', ack: 'memory' }, 'ws');
    expect(retry).toEqual({ ...first, duplicate: true });
    await expect(engine.submit(SESSION, { inputId: 'in-1', target, text: 'b', ack: 'memory' }, 'http')).rejects.toThrow(InputError);
  });

  it('refuses inputs beyond the per-turn quota with input_quota_exceeded', async () => {
    startTurn('t1');
    const target = engine.target(SESSION)!;
    await engine.submit(SESSION, { inputId: 'a', target, text: 'a', ack: 'memory' }, 'http');
    await engine.submit(SESSION, { inputId: 'b', target, text: 'b', ack: 'memory' }, 'http');
    await expect(engine.submit(SESSION, { inputId: 'c', target, text: 'c', ack: 'memory' }, 'http')).rejects.toThrow(/at most 2 inputs/);
  });

  it('closes accepted inputs as turn_completed when the turn completes, and removes their steering messages', async () => {
    startTurn('t1');
    const target = engine.target(SESSION)!;
    await engine.submit(SESSION, { inputId: 'in-1', target, text: 'late', ack: 'memory' }, 'http');
    hub.commit(chat, { type: 'chat/turnComplete', turnId: 't1', duration: 5 });
    expect(engine.status(SESSION, 'in-1', target)).toMatchObject({ state: 'closed', reason: 'turn_completed', revision: 2 });
    expect(hub.chatEntry(chat)!.state.steeringMessages ?? []).toEqual([]);
    expect(engine.target(SESSION)).toBeNull();
  });

  it('marks accepted inputs cancelled when the turn is cancelled', async () => {
    startTurn('t1');
    const target = engine.target(SESSION)!;
    await engine.submit(SESSION, { inputId: 'in-1', target, text: 'x', ack: 'memory' }, 'ws');
    hub.commit(chat, { type: 'chat/turnCancelled', turnId: 't1', duration: 1 });
    expect(engine.status(SESSION, 'in-1', target)).toMatchObject({ state: 'cancelled', reason: 'turn_cancelled' });
  });

  it('refuses an input whose target turn has ended (turn_closed), never redirecting it to the next turn', async () => {
    startTurn('t1');
    const old = engine.target(SESSION)!;
    hub.commit(chat, { type: 'chat/turnComplete', turnId: 't1', duration: 5 });
    startTurn('t2');
    await expect(engine.submit(SESSION, { inputId: 'in-9', target: old, text: 'x', ack: 'memory' }, 'http')).rejects.toThrow(/not open for input/);
  });

  it('consumes accepted inputs at the agent barrier in ordinal order, as user-message parts of the turn', async () => {
    startTurn('t1');
    const target = engine.target(SESSION)!;
    await engine.submit(SESSION, { inputId: 'first', target, text: 'one', ack: 'memory' }, 'http');
    await engine.submit(SESSION, { inputId: 'second', target, text: 'two', ack: 'memory' }, 'http');
    const taken = await engine.consumeAtBarrier({ session: SESSION, chat, turnId: 't1' });
    expect(taken.map((i) => i.text)).toEqual(['one', 'two']);
    expect(engine.status(SESSION, 'first', target)?.state).toBe('consumed');
    const parts = hub.chatEntry(chat)!.state.activeTurn!.responseParts.filter((p) => p.kind === 'userMessage');
    expect(parts).toHaveLength(2);
  });

  it('forgets a disposed session: its inputs are no longer found', async () => {
    startTurn('t1');
    const target = engine.target(SESSION)!;
    await engine.submit(SESSION, { inputId: 'in-1', target, text: 'x', ack: 'memory' }, 'http');
    void hub.disposeSession({ user: 'alice', tenant: 'default', role: Role.User }, SESSION);
    expect(engine.status(SESSION, 'in-1', target)).toBeUndefined();
  });
});
