/**
 * One error vocabulary (shared/protocol/error-kinds.ts): a viewer refused on any surface gets the
 * same kind, `permission_denied`, in each surface's own shape — JSON-RPC `error.data.kind` with
 * the table's code, an AHP rejection echo's `rejectionKind`, HTTP's status with the kind as
 * `code`, DataWorks' `Error.ErrorCode`, and the ACP bridge's error `data.kind`. Each surface's
 * code is read from the table, so a surface that drifts from it fails here.
 */
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { startAcpBridge, type Bridge } from '../../cli/acp-bridge/bridge.js';
import { dataWorksCode, ERROR_TABLE, kindOfRpcError, type ErrorKind } from '../../shared/protocol/error-kinds.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';

const VIEWER: ErrorKind = 'permission_denied';

let server: TestServer | undefined;
let bridge: Bridge | undefined;
let editorConnection: acp.ClientConnection | undefined;
const clients: RpcClient[] = [];
afterEach(async () => {
  editorConnection?.close();
  bridge?.close();
  for (const c of clients.splice(0)) await c.close();
  await server?.stop();
  server = bridge = editorConnection = undefined;
});

async function setup(): Promise<{ session: string; sessionId: string; viewer: RpcClient }> {
  server = await startTestServer({ withAuth: true });
  const alice = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
  clients.push(alice);
  const { session } = await alice.createSession('kinds');
  const viewer = await RpcClient.open(server.wsUrl, { token: TOKENS.viewer });
  clients.push(viewer);
  return { session, sessionId: session.slice('ahp-session:/'.length), viewer };
}

async function rpcRefusal(call: Promise<unknown>): Promise<RpcError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RpcError);
  return err as RpcError;
}

async function post(path: string, body: unknown, token: string = TOKENS.viewer): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server!.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** An HTTP refusal of the kind: the table's status, the kind as `code`. */
function expectHttpKind(res: { status: number; body: Record<string, unknown> }, kind: ErrorKind): void {
  expect([res.status, res.body['code']]).toEqual([ERROR_TABLE[kind].http, kind]);
}

/** A JSON-RPC refusal of the kind: the table's code, the kind in `data.kind`. */
function expectRpcKind(err: RpcError, kind: ErrorKind): void {
  expect([err.code, kindOfRpcError(err), (err.data as { kind?: unknown }).kind]).toEqual([ERROR_TABLE[kind].rpc, kind, kind]);
}

describe('a viewer is refused with the same error kind on every surface', () => {
  it('WebSocket methods, dispatch echoes, steering over HTTP and WebSocket, the prompt route, DataWorks, qwen, and the ACP bridge', async () => {
    const { session, sessionId, viewer } = await setup();
    const seen = new Map<string, ErrorKind | undefined>();

    // WebSocket JSON-RPC: a method the viewer may not call.
    const createChat = await rpcRefusal(viewer.request('createChat', { channel: session }));
    expectRpcKind(createChat, VIEWER);
    seen.set('ws createChat', kindOfRpcError(createChat));

    // WebSocket dispatch: the rejection echo names the kind beside its reason.
    const echo = await viewer.dispatchAndWait(session, { type: 'session/isReadChanged', isRead: true });
    expect(echo.rejectionReason).toMatch(/read-only/);
    seen.set('ws dispatch', echo.rejectionKind as ErrorKind | undefined);

    // Steering over the WebSocket.
    const submit = await rpcRefusal(viewer.request('x-input/submit', { channel: session, inputId: 'i-1', target: { turnId: 't' }, content: { text: 'x' } }));
    expectRpcKind(submit, VIEWER);
    seen.set('ws x-input/submit', kindOfRpcError(submit));

    // Steering over HTTP.
    const inputs = await post(`/v2/sessions/${sessionId}/inputs`, { inputId: 'i-1', target: { turnId: 't' }, content: { text: 'x' } });
    expectHttpKind(inputs, VIEWER);
    seen.set('http inputs', inputs.body['code'] as ErrorKind);

    // The prompt route.
    const prompt = await post(`/v2/sessions/${sessionId}/prompt`, { prompt: [{ type: 'text', text: 'hello' }] });
    expectHttpKind(prompt, VIEWER);
    seen.set('http prompt', prompt.body['code'] as ErrorKind);

    // DataWorks reply envelope: the kind in UPPER_SNAKE, the table's JSON-RPC code.
    const dataWorks = await post('/v2/agent-sessions/reply', {
      Id: 'r-1',
      Params: { SessionId: sessionId, PermissionRequestId: 'p-1', Outcome: { Outcome: 'selected', OptionId: 'allow' } },
    });
    const error = (dataWorks.body['JsonRpcResponse'] as { Error: { Code: number; ErrorCode: string } }).Error;
    expect([dataWorks.status, error.Code, error.ErrorCode]).toEqual([ERROR_TABLE[VIEWER].http, ERROR_TABLE[VIEWER].rpc, dataWorksCode(VIEWER)]);
    seen.set('dataworks reply', error.ErrorCode.toLowerCase() as ErrorKind);

    // qwen serve: a prompt and a permission reply.
    const qwenPrompt = await post(`/session/${sessionId}/prompt`, { prompt: [{ type: 'text', text: 'hello' }] });
    expectHttpKind(qwenPrompt, VIEWER);
    seen.set('qwen prompt', qwenPrompt.body['code'] as ErrorKind);
    const qwenReply = await post(`/session/${sessionId}/permission/p-1`, { outcome: { outcome: 'selected', optionId: 'allow' } });
    expectHttpKind(qwenReply, VIEWER);
    seen.set('qwen reply', qwenReply.body['code'] as ErrorKind);

    // The ACP bridge, run with the viewer's token: the editor's prompt is refused with data.kind.
    const toAgent = new TransformStream<Uint8Array, Uint8Array>();
    const toClient = new TransformStream<Uint8Array, Uint8Array>();
    bridge = await startAcpBridge({ url: server!.wsUrl, session, token: TOKENS.viewer, stream: acp.ndJsonStream(toClient.writable, toAgent.readable) });
    editorConnection = acp.client({ name: 'viewer-editor' }).connect(acp.ndJsonStream(toAgent.writable, toClient.readable));
    const agent = editorConnection.agent;
    await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    const { sessionId: acpSession } = await agent.request(acp.methods.agent.session.new, { cwd: '/tmp', mcpServers: [] });
    const acpError = await agent.request(acp.methods.agent.session.prompt, { sessionId: acpSession, prompt: [{ type: 'text', text: 'hello' }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(acpError).toBeInstanceOf(acp.RequestError);
    seen.set('acp bridge prompt', ((acpError as acp.RequestError).data as { kind?: ErrorKind } | undefined)?.kind);

    expect(Object.fromEntries(seen)).toEqual({
      'ws createChat': VIEWER,
      'ws dispatch': VIEWER,
      'ws x-input/submit': VIEWER,
      'http inputs': VIEWER,
      'http prompt': VIEWER,
      'dataworks reply': VIEWER,
      'qwen prompt': VIEWER,
      'qwen reply': VIEWER,
      'acp bridge prompt': VIEWER,
    });
  });

  it('a missing session is session_not_found on the WebSocket and over HTTP alike', async () => {
    const { viewer } = await setup();
    const ghost = 'ahp-session:/no-such-session';
    const subscribe = await rpcRefusal(viewer.request('subscribe', { channel: ghost }));
    expectRpcKind(subscribe, 'session_not_found');
    const submit = await rpcRefusal(viewer.request('x-input/submit', { channel: ghost, inputId: 'i-1', target: { turnId: 't' }, content: { text: 'x' } }));
    expectRpcKind(submit, 'session_not_found');
    expectHttpKind(await post('/v2/sessions/no-such-session/inputs', {}, TOKENS.alice), 'session_not_found');
    expectHttpKind(await post('/v2/sessions/no-such-session/prompt', { prompt: [{ type: 'text', text: 'x' }] }, TOKENS.alice), 'session_not_found');
    expectHttpKind(await post('/session/no-such-session/prompt', { prompt: [{ type: 'text', text: 'x' }] }, TOKENS.alice), 'session_not_found');
  });
});
