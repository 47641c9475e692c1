import WebSocket from 'ws';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AhpClient } from '../../shared/client/ahp-client.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { TWO_QUESTION_REQUEST, userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

describe('the client SDK against a real hub', () => {
  let server: TestServer;
  const clients: AhpClient[] = [];
  beforeEach(async () => {
    server = await startTestServer();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    await server.stop();
  });
  const connect = async () => {
    const c = new AhpClient({ url: server.wsUrl, createSocket: (url) => new WebSocket(url), reconnect: { initialDelayMs: 10, maxDelayMs: 50 } });
    clients.push(c);
    await c.connect();
    return c;
  };

  it('two clients converge; optimistic answers are confirmed by the echo; rejections roll back', async () => {
    const a = await connect();
    const b = await connect();
    const { defaultChat } = await a.createSession({ title: 'sdk' });
    const va = await a.subscribe(defaultChat);
    const vb = await b.subscribe(defaultChat);
    const started = await va.dispatch({
      type: 'chat/turnStarted',
      turnId: 'sdk-turn',
      startedAt: new Date().toISOString(),
      message: userMessage(JSON.stringify({ script: [{ ask: TWO_QUESTION_REQUEST }] })),
    });
    expect(started.accepted).toBe(true);
    await waitFor(() => (vb.state as ChatState).activeTurn?.responseParts.some((p) => p.kind === 'inputRequest') || undefined);

    const answer = va.dispatch({
      type: 'chat/inputAnswerChanged',
      requestId: 'req-1',
      questionId: 'notes',
      answer: { state: 'draft', value: { kind: 'text', value: 'optimistic' } },
    });
    // Applied locally before the server answered.
    expect(JSON.stringify((va.state as ChatState).activeTurn)).toContain('optimistic');
    expect((await answer).accepted).toBe(true);
    await waitFor(() => (JSON.stringify((vb.state as ChatState).activeTurn).includes('optimistic') ? true : undefined));

    const bad = va.dispatch({ type: 'chat/inputCompleted', requestId: 'nope', response: 'accept' });
    const result = await bad;
    expect(result.accepted).toBe(false);
    expect(va.pendingActions).toHaveLength(0);
    expect(va.state).toEqual(vb.state);
  });

  it('reconnects by itself after the socket drops and replays what it missed', async () => {
    const sockets: WebSocket[] = [];
    const a = new AhpClient({
      url: server.wsUrl,
      createSocket: (url) => {
        const ws = new WebSocket(url);
        sockets.push(ws);
        return ws;
      },
      reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
    });
    clients.push(a);
    await a.connect();
    const b = await connect();
    const { defaultChat } = await a.createSession();
    const va = await a.subscribe(defaultChat);
    const vb = await b.subscribe(defaultChat);
    const states: string[] = [];
    a.onConnectionState((s) => states.push(s));
    sockets[0]!.terminate();
    await waitFor(() => (states.includes('reconnecting') ? true : undefined));
    // While a is away, b starts a turn.
    expect((await vb.dispatch({ type: 'chat/turnStarted', turnId: 'while-away', startedAt: new Date().toISOString(), message: userMessage('{"script":[{"say":"missed"}]}') })).accepted).toBe(true);
    await waitFor(() => (a.connectionState === 'open' ? true : undefined));
    await waitFor(() => ((va.state as ChatState).turns.some((t) => t.id === 'while-away') ? true : undefined));
    expect(va.state).toEqual(vb.state);
    expect(sockets.length).toBe(2);
  });

  it('the session object carries the steering methods: no target while idle, then the running turn', async () => {
    const a = await connect();
    const { session, defaultChat } = await a.createSession();
    const handle = a.sessionInputs(session);
    expect(await handle.getInputTarget()).toBeNull();
    const view = await a.subscribe(defaultChat);
    await view.dispatch({ type: 'chat/turnStarted', turnId: 'steer-me', startedAt: new Date().toISOString(), message: userMessage('{"script":[{"sleep":60000}]}') });
    const target = await waitFor(async () => (await handle.getInputTarget()) ?? undefined);
    expect(target.turnId).toBe('steer-me');
    const result = await handle.submitInput({ inputId: 'sdk-1', target, content: { text: 'also this' } });
    expect(result.outcome).toBe('accepted');
    expect((await handle.getInputStatus('sdk-1', target))?.state).toBe('accepted');
  });
});
