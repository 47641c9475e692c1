/**
 * The SDK's four input methods (SessionInputs over x-input/*) against a real hub over a real
 * WebSocket, plus WebSocket/HTTP parity of results and codes (seed 003 items 8–11, 16–22, 26).
 */
import WebSocket from 'ws';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AhpClient, AhpRequestError } from '../../shared/client/ahp-client.js';
import { SessionInputs, withInputs, type InputTarget } from '../../shared/client/session-inputs.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { answer, askStep, chatState, SteeringHttp, waitForOpenRequest, waitForTurnEnd } from '../cli/steering-support.js';

describe('SDK SessionInputs over a real hub', () => {
  let server: TestServer;
  let raw: RpcClient;
  let client: AhpClient;
  const extra: AhpClient[] = [];

  beforeEach(async () => {
    server = await startTestServer({ withAuth: true });
    raw = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
    client = new AhpClient({ url: server.wsUrl, token: TOKENS.alice, createSocket: (u) => new WebSocket(u), reconnect: false });
    await client.connect();
  });
  afterEach(async () => {
    client.close();
    for (const c of extra.splice(0)) c.close();
    await raw.close();
    await server.stop();
  });

  async function running(): Promise<{ session: string; chat: string; turnId: string; inputs: SessionInputs; target: InputTarget }> {
    const { session, defaultChat: chat } = await client.createSession();
    await raw.subscribe(chat);
    const turnId = await startScriptTurn(raw, chat, [askStep('ask-1'), { say: 'next' }]);
    await waitForOpenRequest(raw, chat, 'ask-1');
    const inputs = withInputs(client, session);
    const target = (await inputs.getInputTarget())!;
    return { session, chat, turnId, inputs, target };
  }

  it('26/8/9: inputCapabilities reports version 1, text and blocks content, memory ack only, no durable ack and no images; while the session is idle its target and getInputTarget are null', async () => {
    const { session } = await client.createSession();
    const inputs = new SessionInputs(client, session);
    const caps = await inputs.inputCapabilities();
    expect(caps).toMatchObject({ version: 1, durableAck: false, image: false, target: null, ack: ['memory'], content: ['text', 'blocks'] });
    expect(await inputs.getInputTarget()).toBeNull();
  });

  it('10/12/16/18: submitInput accepts with a receipt; an identical retry returns the original receipt', async () => {
    const { session, turnId, inputs, target } = await running();
    const request = { inputId: 'sdk-1', target, content: { text: 'also X' }, ack: 'memory' as const };
    const first = await inputs.submitInput(request);
    expect(first).toMatchObject({ outcome: 'accepted', receipt: { inputId: 'sdk-1', sessionId: SteeringHttp.idOf(session), turnId, ordinal: 1, revision: 1, state: 'accepted', durability: 'log', source: 'ws' } });
    const retry = await inputs.submitInput(request);
    expect(retry).toMatchObject({ outcome: 'accepted', duplicate: true });
    expect(retry.outcome === 'accepted' && first.outcome === 'accepted' && retry.receipt).toEqual(first.outcome === 'accepted' && first.receipt);
  });

  it('10/17/65/7: refusals resolve instead of throwing, with machine-readable codes (input_conflict, empty_content, durable_ack_unsupported, image_unsupported, turn_closed, invalid_request), and a refused input never starts a turn', async () => {
    const { inputs, target } = await running();
    await inputs.submitInput({ inputId: 'c', target, content: { text: 'a' } });
    expect(await inputs.submitInput({ inputId: 'c', target, content: { text: 'b' } })).toMatchObject({ outcome: 'rejected', code: 'input_conflict', status: 409 });
    expect(await inputs.submitInput({ inputId: 'e', target, content: { text: '   ' } })).toMatchObject({ outcome: 'rejected', code: 'empty_content', status: 422 });
    expect(await inputs.submitInput({ inputId: 'e', target, content: { blocks: [] } })).toMatchObject({ outcome: 'rejected', code: 'empty_content', status: 422 });
    expect(await inputs.submitInput({ inputId: 'd', target, content: { text: 'x' }, ack: 'durable' as unknown as 'memory' })).toMatchObject({ outcome: 'rejected', code: 'durable_ack_unsupported', status: 422 });
    expect(await inputs.submitInput({ inputId: 'i', target, content: { blocks: [{ t: 'image', text: '' }] } as unknown as { text: string } })).toMatchObject({ outcome: 'rejected', code: 'image_unsupported', status: 422 });
    expect(await inputs.submitInput({ inputId: 's', target: { ...target, turnId: 'stale' }, content: { text: 'x' } })).toMatchObject({ outcome: 'closed', code: 'turn_closed', status: 409 });
    expect(await inputs.submitInput({ inputId: '', target, content: { text: 'x' } })).toMatchObject({ outcome: 'rejected', code: 'invalid_request', status: 400 });
    // 3: a refused supplement never falls back to starting a turn.
    const chat = (await client.subscribe(inputs.session as `ahp-session:/${string}`)).state.defaultChat!;
    const s = await chatState(raw, chat);
    expect(s.turns).toHaveLength(0);
    expect(s.activeTurn).toBeDefined();
  });

  it('24: a reconnected client finds the same target of the still-running turn and the receipt it submitted before reconnecting', async () => {
    const { inputs, target } = await running();
    await inputs.submitInput({ inputId: 'before-reconnect', target, content: { text: 'x' } });
    client.close();
    client = new AhpClient({ url: server.wsUrl, token: TOKENS.alice, createSocket: (u) => new WebSocket(u), reconnect: false });
    await client.connect();
    const again = withInputs(client, inputs.session);
    expect(await again.getInputTarget()).toEqual(target);
    expect(await again.getInputStatus('before-reconnect', target)).toMatchObject({ state: 'accepted', source: 'ws' });
  });

  it('11/21: getInputStatus returns the receipt or null, and never re-runs anything', async () => {
    const { chat, turnId, inputs, target } = await running();
    expect(await inputs.getInputStatus('nope', target)).toBeNull();
    await inputs.submitInput({ inputId: 'st', target, content: { text: 'status me' } });
    const before = await chatState(raw, chat);
    expect(await inputs.getInputStatus('st', target)).toMatchObject({ state: 'accepted', revision: 1 });
    expect(await chatState(raw, chat)).toEqual(before);
    await answer(raw, chat, 'ask-1');
    await waitForTurnEnd(raw, chat, turnId);
    expect(await inputs.getInputStatus('st', target)).toMatchObject({ state: 'consumed', revision: 2 });
  });

  it('22/66: session and auth errors are thrown as themselves, never as input outcomes', async () => {
    const { session, target } = await running();
    const mallory = new AhpClient({ url: server.wsUrl, token: TOKENS.mallory, createSocket: (u) => new WebSocket(u), reconnect: false });
    extra.push(mallory);
    await mallory.connect();
    const foreign = new SessionInputs(mallory, session);
    for (const call of [() => foreign.inputCapabilities(), () => foreign.submitInput({ inputId: 'm', target, content: { text: 'x' } }), () => foreign.getInputStatus('m', target)]) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AhpRequestError);
      expect(err).toMatchObject({ code: -32001, data: { code: 'session_not_found', status: 404 } });
    }
    const viewer = new AhpClient({ url: server.wsUrl, token: TOKENS.viewer, createSocket: (u) => new WebSocket(u), reconnect: false });
    extra.push(viewer);
    await viewer.connect();
    const err = await new SessionInputs(viewer, session).submitInput({ inputId: 'v', target, content: { text: 'x' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: -32009, data: { code: 'permission_denied', status: 403 } });
  });

  it('19: after an unknown outcome the documented recovery (query, then resend identically) adds the text once', async () => {
    const { chat, turnId, inputs, target } = await running();
    const request = { inputId: 'net-1', target, content: { text: 'exactly once' } };
    // The first send "may or may not have arrived": simulate by sending it on another socket and never reading the answer.
    void raw.request('x-input/submit', { channel: inputs.session, ...request }).catch(() => undefined);
    await waitFor(async () => (await inputs.getInputStatus('net-1', target)) ?? undefined, { what: 'query finds the receipt' });
    const resend = await inputs.submitInput(request);
    expect(resend).toMatchObject({ outcome: 'accepted', duplicate: true });
    await answer(raw, chat, 'ask-1');
    const done = await waitForTurnEnd(raw, chat, turnId);
    expect(done.responseParts.filter((p) => p.kind === 'userMessage')).toHaveLength(1);
  });
});

describe('WebSocket JSON-RPC parity with HTTP', () => {
  let server: TestServer;
  let ws: RpcClient;
  afterEach(async () => {
    await ws.close();
    await server.stop();
  });

  it('4/37/38: x-input/* give the same results and the same codes as the HTTP routes', async () => {
    server = await startTestServer();
    ws = await RpcClient.open(server.wsUrl);
    const http = new SteeringHttp(server.url);
    const { session, chat } = await ws.createSession();
    await ws.subscribe(chat);
    await startScriptTurn(ws, chat, [askStep('ask-1')]);
    await waitForOpenRequest(ws, chat, 'ask-1');
    const capsWs = await ws.request<Record<string, unknown>>('x-input/capabilities', { channel: session });
    expect(capsWs).toEqual((await http.capabilities(session)).body);
    const target = capsWs['target'] as InputTarget;

    const acc = await ws.request<Record<string, unknown>>('x-input/submit', { channel: session, inputId: 'w1', target, content: { text: 'ws' } });
    expect(acc).toMatchObject({ outcome: 'accepted', receipt: { inputId: 'w1', source: 'ws', ordinal: 1 } });
    expect((await http.status(session, 'w1', target)).body).toEqual({ receipt: acc['receipt'] });
    expect(await ws.request('x-input/status', { channel: session, inputId: 'w1', target })).toEqual({ receipt: acc['receipt'] });
    expect(await ws.request('x-input/status', { channel: session, inputId: 'zz', target })).toMatchObject({ receipt: null, outcome: 'rejected', code: 'input_not_found' });

    const cases: Array<[Record<string, unknown>, number, string, number]> = [
      [{ inputId: 'w1', target, content: { text: 'other' } }, 409, 'input_conflict', -32030],
      [{ inputId: 'w2', target: { ...target, turnId: 'old' }, content: { text: 'x' } }, 409, 'turn_closed', -32030],
      [{ inputId: 'w3', target, content: { text: ' ' } }, 422, 'empty_content', -32030],
      [{ inputId: 'w4', target, content: { text: 'x' }, ack: 'durable' }, 422, 'durable_ack_unsupported', -32030],
      [{ inputId: 'w5', target, content: { blocks: [{ t: 'image' }] } }, 422, 'image_unsupported', -32030],
      [{ inputId: 'w6', target }, 400, 'invalid_request', -32602],
    ];
    for (const [body, status, code, rpcCode] of cases) {
      const h = await http.submit(session, body);
      expect({ code, status: h.status, body: h.body['code'] }).toEqual({ code, status, body: code });
      const err = await ws.request('x-input/submit', { channel: session, ...body }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RpcError);
      expect(err).toMatchObject({ code: rpcCode, data: { code, status, outcome: h.body['outcome'] } });
    }
    const notFound = await ws.request('x-input/capabilities', { channel: 'ahp-session:/missing' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(notFound).toMatchObject({ code: -32001, data: { code: 'session_not_found' } });
  });
});
