/**
 * ACP multi-client attach (ACP RFD #533) on the editor bridge: real `npm run acp` bridge
 * processes (dist/cli/acp-bridge/main.js), each driven by the ACP SDK's client side over its
 * stdio, on one hub chat with a real Chromium tab of the app (test/e2e/support.ts). The raw ACP
 * lines the bridge writes are read too: the RFD's updates (`permission_resolved`,
 * `client_disconnected`) are not in the SDK's closed `sessionUpdate` union, so the SDK client
 * drops them; an RFD client reads them off the wire as this test does.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { startAcpBridge } from '../../cli/acp-bridge/bridge.js';
import { collabFeature } from '../../server/collab/feature.js';
import { defaultFeatures } from '../../server/features.js';
import { BrowserHub, sessionPath } from '../e2e/support.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { openInteractions } from '../../shared/state/selectors.js';
import { chatState, toolOf } from './support.js';

const BRIDGE = 'dist/cli/acp-bridge/main.js';
const T = { timeout: 15_000 };

interface RawUpdate {
  readonly sessionUpdate?: string;
  readonly type?: string;
  readonly [key: string]: unknown;
}

interface Editor {
  readonly agent: acp.ClientContext;
  readonly init: acp.InitializeResponse;
  /** Every `session/update` the bridge wrote, as on the wire. */
  readonly raw: RawUpdate[];
  readonly permissions: Array<{ params: acp.RequestPermissionRequest; signal: AbortSignal; answer(outcome: acp.RequestPermissionOutcome): void }>;
  readonly elicitations: Array<{ params: acp.CreateElicitationRequest; answer(r: acp.CreateElicitationResponse): void }>;
  stderr(): string;
  /** Ends the bridge (SIGTERM for a process) and waits until it is gone. */
  stop(): Promise<void>;
}

const editors: Editor[] = [];
const connections: acp.ClientConnection[] = [];
let plain: TestServer | undefined;
let proxy: { server: Server; sockets: Set<Socket> } | undefined;

afterEach(async () => {
  for (const c of connections.splice(0)) c.close();
  for (const e of editors.splice(0)) await e.stop();
  for (const socket of proxy?.sockets ?? []) socket.destroy();
  proxy?.server.close();
  proxy = undefined;
  await plain?.stop();
  plain = undefined;
});

/** A loopback TCP proxy to `port` whose connections the test can cut (the hub sees them close). */
async function tcpProxy(port: number): Promise<{ url: string; cut(): void }> {
  const sockets = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = createConnection({ host: '127.0.0.1', port });
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy = { server, sockets };
  const address = server.address() as { port: number };
  return {
    url: `ws://127.0.0.1:${address.port}/ahp`,
    cut: () => {
      for (const s of [...sockets]) s.destroy();
    },
  };
}

/** A bridge process on `session` with `token`, and an ACP editor named `name` on its stdio, initialized. */
async function editorProcess(wsUrl: string, session: string, token: string | undefined, name: string): Promise<Editor> {
  if (!existsSync(BRIDGE)) execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  const child: ChildProcess = spawn(process.execPath, [BRIDGE, '--url', wsUrl, '--session', session.slice('ahp-session:/'.length), ...(token ? ['--token', token] : [])], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM');
    await gone;
  };
  return connectEditor(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>, name, { stderr: () => err, stop });
}

/** An in-process bridge (startAcpBridge) on `session` and an ACP editor on a byte pipe to it; `elicitation` as the editor advertises it. */
async function editorInProcess(wsUrl: string, session: string, name: string): Promise<Editor> {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const toClient = new TransformStream<Uint8Array, Uint8Array>();
  const lines: string[] = [];
  const bridge = await startAcpBridge({ url: wsUrl, session, stream: acp.ndJsonStream(toClient.writable, toAgent.readable), log: (l) => lines.push(l) });
  const stop = async (): Promise<void> => {
    bridge.close();
    await bridge.closed;
  };
  return connectEditor(toAgent.writable, toClient.readable, name, { stderr: () => lines.join('\n'), stop }, { form: {}, url: {} });
}

/** The ACP SDK's client side on a bridge's byte streams (raw lines read too), initialized as `name` 1.0.0. */
async function connectEditor(toBridge: WritableStream<Uint8Array>, fromBridge: ReadableStream<Uint8Array>, name: string, control: Pick<Editor, 'stderr' | 'stop'>, elicitation?: acp.ClientCapabilities['elicitation']): Promise<Editor> {
  const [forSdk, forRaw] = fromBridge.tee();
  const raw: RawUpdate[] = [];
  void readLines(forRaw, (line) => {
    const msg = JSON.parse(line) as { method?: string; params?: { update?: RawUpdate } };
    if (msg.method === 'session/update' && msg.params?.update) raw.push(msg.params.update);
  });
  const permissions: Editor['permissions'] = [];
  const elicitations: Editor['elicitations'] = [];
  const connection = acp
    .client({ name })
    .onRequest(
      acp.methods.client.session.requestPermission,
      ({ params, signal }) =>
        new Promise<acp.RequestPermissionResponse>((resolve, reject) => {
          permissions.push({ params, signal, answer: (outcome) => resolve({ outcome }) });
          signal.addEventListener('abort', () => reject(new Error('withdrawn')), { once: true });
        }),
    )
    .onRequest(acp.methods.client.elicitation.create, ({ params }) => new Promise<acp.CreateElicitationResponse>((resolve) => elicitations.push({ params, answer: resolve })))
    .connect(acp.ndJsonStream(toBridge, forSdk));
  connections.push(connection);
  const init = await connection.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientInfo: { name, version: '1.0.0' },
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, ...(elicitation && { elicitation }) },
  });
  const editor: Editor = { agent: connection.agent, init, raw, permissions, elicitations, ...control };
  editors.push(editor);
  return editor;
}

async function readLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line) onLine(line);
    }
  }
}

const errorOf = (p: Promise<unknown>): Promise<{ code: number; message: string; data?: any }> =>
  p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e as { code: number; message: string; data?: any },
  );
const idOf = (session: string): string => session.slice('ahp-session:/'.length);
const openInteractionsOf = (chat: any): string[] => openInteractions(chat).map((o) => (o.kind === 'input' ? `input:${o.request.id}` : `tool:${o.toolCall.toolCallId}`));
const ofKind = (e: Editor, kind: string): RawUpdate[] => e.raw.filter((u) => u.sessionUpdate === kind);

describe('ACP multi-client attach (RFD #533) through bridge processes', () => {
  const hub = BrowserHub.perFile();

  it('a controller and an observer attach; a browser tab answers the permission: both get permission_resolved naming its user; the observer is refused; a disconnect is announced', async () => {
    const owner = await hub.rpc(TOKENS.alice);
    const { session, chat } = await owner.createSession('attach: two editors and a tab');
    const sessionId = idOf(session);
    const zed = await editorProcess(hub.server.wsUrl, session, TOKENS.alice, 'zed');
    const watcher = await editorProcess(hub.server.wsUrl, session, TOKENS.viewer, 'watcher');
    // Advertised as the RFD says, with the roles this principal may take (a hub viewer only observes).
    expect(zed.init.agentCapabilities?.sessionCapabilities).toMatchObject({ attach: { roles: ['controller', 'observer'] } });
    expect(watcher.init.agentCapabilities?.sessionCapabilities).toMatchObject({ attach: { roles: ['observer'] } });

    const zedAttached = await zed.agent.request<any>('session/attach', { sessionId, role: 'controller', historyPolicy: 'full', clientInfo: { name: 'zed', version: '1.0.0' } });
    expect(zedAttached).toMatchObject({ sessionId, role: 'controller', history: [] });
    // A viewer asking to control is not authorised (-32002); as an observer it is let in and sees the controller.
    const refused = await errorOf(watcher.agent.request('session/attach', { sessionId, role: 'controller', clientInfo: { name: 'watcher', version: '1.0.0' } }));
    expect(refused).toMatchObject({ code: -32002, data: { kind: 'permission_denied', allowedRoles: ['observer'] } });
    const watcherAttached = await watcher.agent.request<any>('session/attach', { sessionId, role: 'observer', historyPolicy: 'none', clientInfo: { name: 'watcher', version: '2.0.0' } });
    expect(watcherAttached.role).toBe('observer');
    expect(watcherAttached.history).toBeUndefined();
    expect(watcherAttached.connectedClients).toContainEqual({ name: 'zed', version: '1.0.0', role: 'controller', _meta: { 'hub/user': 'alice', 'hub/surface': 'acp' } });

    // The tab (bob, a real Chromium page of the app) is on the chat too.
    const tab = await hub.open(TOKENS.bob, sessionPath(session));
    // It is in the chat's presence room, so attached editors list it (re-attaching answers the roster again).
    const withTab = await waitFor(
      async () => {
        const r = await watcher.agent.request<any>('session/attach', { sessionId, role: 'observer', historyPolicy: 'none', clientInfo: { name: 'watcher', version: '2.0.0' } });
        return r.connectedClients.find((c: any) => c._meta['hub/surface'] === 'app');
      },
      { what: 'the tab listed' },
    );
    expect(withTab).toEqual({ name: 'bob', role: 'controller', _meta: { 'hub/user': 'bob', 'hub/surface': 'app' } });
    const prompt = zed.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: JSON.stringify({ script: [{ say: 'Deploying.' }, { tool: { id: 'ship', name: 'deploy', input: { target: 'prod' }, confirm: true } }, { say: 'Shipped.' }] }) }],
    });
    await waitFor(() => (zed.permissions.length > 0 && watcher.permissions.length > 0) || undefined, { what: 'both editors to see the permission request' });
    expect(watcher.permissions[0]!.params._meta).toMatchObject({ 'hub/role': 'observer' });

    // The observer's answer and prompt are refused with the RFD's not-authorised error; nothing is applied.
    const allowForWatcher = watcher.permissions[0]!.params.options.find((o) => o.kind === 'allow_once')!;
    watcher.permissions[0]!.answer({ outcome: 'selected', optionId: allowForWatcher.optionId });
    const refusedAnswer = await waitFor(() => ofKind(watcher, 'tool_call_update').find((u) => (u['_meta'] as any)?.['hub/refused']), { what: 'the observer told its answer was refused' });
    expect((refusedAnswer['_meta'] as any)['hub/refused']).toMatchObject({ code: -32002, data: { kind: 'permission_denied', role: 'observer' } });
    const turnId = chatState(hub.server, chat).activeTurn!.id;
    expect(toolOf(chatState(hub.server, chat), turnId, 'ship')?.status).toBe('pending-confirmation');
    const refusedPrompt = await errorOf(watcher.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'let me drive' }] }));
    expect(refusedPrompt).toMatchObject({ code: -32002, data: { kind: 'permission_denied' } });
    expect(refusedPrompt.message).toMatch(/observers cannot prompt/);

    // The tab approves first: both editors hear who resolved it (the hub's answered-by stamp), zed's request is withdrawn.
    const approve = tab.locator('[data-tool=ship] [data-action=Approve]');
    await approve.waitFor(T);
    await approve.click();
    for (const e of [zed, watcher]) {
      const resolved = await waitFor(() => e.raw.find((u) => u.sessionUpdate === 'permission_resolved'), { what: 'permission_resolved' });
      expect(resolved).toMatchObject({ type: 'permission_resolved', toolCallId: 'ship', approved: true, resolvedBy: { user: 'bob' } });
      expect(resolved['chosenOptionId']).toBe(e.permissions[0]!.params.options.find((o) => o.kind === 'allow_once')!.optionId);
    }
    await waitFor(() => zed.permissions[0]!.signal.aborted || undefined, { what: "zed's request withdrawn" });
    expect((await prompt).stopReason).toBe('end_turn');

    // zed's bridge goes away: the observer is told who left.
    void zed.stop();
    const left = await waitFor(() => watcher.raw.find((u) => u.sessionUpdate === 'client_disconnected'), { what: 'client_disconnected' });
    expect(left).toMatchObject({ type: 'client_disconnected', client: { name: 'zed', version: '1.0.0', role: 'controller', _meta: { 'hub/user': 'alice' } } });
    expect(typeof left['timestamp']).toBe('string');
    expect(hub.pageErrors).toEqual([]);
  }, 90_000);

  it('history policies: full replays the chat, pending_only only the open permission, none nothing; session/resume replays nothing; session/detach is announced', async () => {
    const owner = await hub.rpc(TOKENS.alice);
    const { session, chat } = await owner.createSession('attach: history policies');
    await owner.subscribe(chat);
    const sessionId = idOf(session);
    const first = await startScriptTurn(owner, chat, [{ say: 'First answer.' }]);
    await waitFor(() => chatState(hub.server, chat).turns.some((t: any) => t.id === first) || undefined, { what: 'the first turn to end' });
    const second = await startScriptTurn(owner, chat, [{ tool: { id: 'open-tool', name: 'write_file', input: { path: 'a.md' }, confirm: true } }, { say: 'Second answer.' }]);
    await waitFor(() => toolOf(chatState(hub.server, chat), second, 'open-tool')?.status === 'pending-confirmation' || undefined, { what: 'the open permission' });

    const full = await editorProcess(hub.server.wsUrl, session, TOKENS.alice, 'full');
    const pending = await editorProcess(hub.server.wsUrl, session, TOKENS.alice, 'pending');
    const none = await editorProcess(hub.server.wsUrl, session, TOKENS.viewer, 'none');
    const resumer = await editorProcess(hub.server.wsUrl, session, TOKENS.alice, 'resumer');

    const fullResult = await full.agent.request<any>('session/attach', { sessionId, role: 'controller', historyPolicy: 'full', clientInfo: { name: 'full' } });
    const fullSeen = full.raw.length;
    expect(fullResult.history).toEqual([
      { type: 'prompt', content: JSON.stringify({ script: [{ say: 'First answer.' }] }), timestamp: expect.any(String) },
      { type: 'prompt', content: expect.stringContaining('open-tool'), timestamp: expect.any(String) },
      { type: 'permission_request', toolCallId: 'open-tool', status: 'pending' },
    ]);
    // Replayed before the answer, as session/load does: both prompts, the finished answer and the pending tool.
    const replayed = full.raw.slice(0, fullSeen).map((u) => `${u.sessionUpdate}${u['toolCallId'] ? ` ${u['toolCallId']} ${u['status']}` : ''}`);
    expect(replayed.filter((l) => l === 'user_message_chunk')).toHaveLength(2);
    expect(replayed).toContain('agent_message_chunk');
    expect(replayed).toContain('tool_call open-tool pending');

    // pending_only (here an observer): only the pending tool, no turns.
    const pendingResult = await pending.agent.request<any>('session/attach', { sessionId, role: 'observer', historyPolicy: 'pending_only', clientInfo: { name: 'pending' } });
    expect(pendingResult.history).toEqual([{ type: 'permission_request', toolCallId: 'open-tool', status: 'pending' }]);
    expect(pending.raw.map((u) => u.sessionUpdate)).toEqual(['tool_call']);
    expect(pending.raw[0]).toMatchObject({ toolCallId: 'open-tool', status: 'pending' });
    // Roles are fixed at attach: an observer (here a user who could control) stays one through ACP v1's session/new.
    await pending.agent.request(acp.methods.agent.session.new, { cwd: '/tmp', mcpServers: [] });
    expect(await errorOf(pending.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'now me' }] }))).toMatchObject({ code: -32002 });

    const noneResult = await none.agent.request<any>('session/attach', { sessionId, role: 'observer', historyPolicy: 'none', clientInfo: { name: 'none' } });
    expect(noneResult.history).toBeUndefined();
    expect(
      noneResult.connectedClients
        .filter((c: any) => c._meta['hub/surface'] === 'acp')
        .map((c: any) => c.name)
        .sort(),
    ).toEqual(['full', 'pending']);
    expect(none.raw).toEqual([]);

    // ACP v1's session/resume: no replay before the answer (it is still asked the open permission).
    await resumer.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: '/tmp' });
    expect(resumer.raw).toEqual([]);

    // The open permission reaches full, pending and resumer, but not none (it predates none's attach).
    await waitFor(() => (full.permissions.length && pending.permissions.length && resumer.permissions.length) || undefined, { what: 'the open permission asked' });
    const allow = full.permissions[0]!.params.options.find((o) => o.kind === 'allow_once')!;
    full.permissions[0]!.answer({ outcome: 'selected', optionId: allow.optionId });
    await waitFor(() => chatState(hub.server, chat).turns.some((t: any) => t.id === second) || undefined, { what: 'the second turn to end' });
    // none saw what came after it attached (the resolution and the answer), never the older request.
    const resolved = await waitFor(() => none.raw.find((u) => u.sessionUpdate === 'permission_resolved'), { what: 'none to hear the resolution' });
    expect(resolved).toMatchObject({ toolCallId: 'open-tool', chosenOptionId: allow.optionId, resolvedBy: { name: 'full', user: 'alice' } });
    await waitFor(() => ofKind(none, 'agent_message_chunk').find((u) => (u['content'] as any)?.text === 'Second answer.'), { what: 'none to see the rest of the turn' });
    expect(none.permissions).toEqual([]);
    expect(ofKind(none, 'user_message_chunk')).toEqual([]);

    // session/detach: confirmed, and announced to the others.
    await expect(full.agent.request('session/detach', { sessionId })).resolves.toEqual({ sessionId, status: 'detached' });
    const left = await waitFor(() => none.raw.find((u) => u.sessionUpdate === 'client_disconnected'), { what: 'the detach announced' });
    expect(left).toMatchObject({ client: { name: 'full', role: 'controller' } });
  }, 90_000);

  it('errors: an unknown session is -32001 with its id, bad params are -32602, and list / close work as in ACP v1', async () => {
    const owner = await hub.rpc(TOKENS.alice);
    const { session } = await owner.createSession('attach: errors');
    const sessionId = idOf(session);
    const e = await editorProcess(hub.server.wsUrl, session, TOKENS.alice, 'errs');
    expect(await errorOf(e.agent.request('session/attach', { sessionId: 'no-such-session', role: 'observer' }))).toMatchObject({
      code: -32001,
      message: 'Session not found',
      data: { sessionId: 'no-such-session', kind: 'session_not_found' },
    });
    const bad = await errorOf(e.agent.request('session/attach', { sessionId, role: 'boss' }));
    expect(bad.code).toBe(-32602);
    expect(bad.message).toMatch(/session\/attach: role/);
    expect(await errorOf(e.agent.request('session/detach', { sessionId: 'other' }))).toMatchObject({ code: -32001 });
    const listed = await e.agent.request(acp.methods.agent.session.list, {});
    expect(listed.sessions.map((s) => s.sessionId)).toEqual([sessionId]);
    await expect(e.agent.request<any>('session/attach', { sessionId, role: 'controller', historyPolicy: 'none' })).resolves.toMatchObject({ role: 'controller' });
    await expect(e.agent.request(acp.methods.agent.session.close, { sessionId })).resolves.toEqual({});
  }, 60_000);
});

describe('ACP attach, bridges in this process', () => {
  it("an observer's form answer is refused, the controller's applies; permission_resolved names the editor that answered; a detach is announced", async () => {
    plain = await startTestServer();
    const { RpcClient } = await import('../helpers/rpc-client.js');
    const owner = await RpcClient.open(plain.wsUrl);
    try {
      const { session, chat } = await owner.createSession('in-process attach');
      const sessionId = idOf(session);
      const ctl = await editorInProcess(plain.wsUrl, session, 'ctl');
      const obs = await editorInProcess(plain.wsUrl, session, 'obs');
      expect(ctl.init.agentCapabilities?.sessionCapabilities).toMatchObject({ attach: { roles: ['controller', 'observer'] } });
      await ctl.agent.request('session/attach', { sessionId, role: 'controller', clientInfo: { name: 'ctl', version: '1.0.0' } });
      // Presence is relayed by the hub: a client that attached a moment ago shows once its state arrived.
      const seen = await waitFor(
        async () => {
          const r = await obs.agent.request<any>('session/attach', { sessionId, role: 'observer', historyPolicy: 'pending_only', clientInfo: { name: 'obs', version: '3.1.0' } });
          return r.connectedClients.length > 0 ? r : undefined;
        },
        { what: 'ctl listed' },
      );
      expect(seen.connectedClients).toEqual([{ name: 'ctl', version: '1.0.0', role: 'controller', _meta: { 'hub/user': 'dev', 'hub/surface': 'acp' } }]);
      const ask = { id: 'q-name', message: 'Name?', questions: [{ id: 'name', kind: 'text', message: 'Project name', required: true }] };
      const prompt = ctl.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: JSON.stringify({ script: [{ ask }, { tool: { id: 'after-ask', name: 'write_file', confirm: true } }, { say: 'All done.' }] }) }],
      });
      await waitFor(() => (ctl.elicitations.length > 0 && obs.elicitations.length > 0) || undefined, { what: 'both asked the question' });
      expect(obs.elicitations[0]!.params._meta).toMatchObject({ 'hub/role': 'observer' });
      expect(ctl.elicitations[0]!.params._meta?.['hub/role']).toBeUndefined();
      obs.elicitations[0]!.answer({ action: 'accept', content: { name: 'from the observer' } });
      const refused = await waitFor(() => obs.raw.find((u) => (u['_meta'] as any)?.['hub/refused']), { what: 'the observer refused' });
      expect((refused['_meta'] as any)['hub/refused']).toMatchObject({ code: -32002, message: 'Not authorised: observers cannot answer questions' });
      expect(openInteractionsOf(chatState(plain, chat))).toEqual(['input:q-name']);
      ctl.elicitations[0]!.answer({ action: 'accept', content: { name: 'from the controller' } });
      await waitFor(() => (ctl.permissions.length > 0 && obs.permissions.length > 0) || undefined, { what: 'both asked the permission' });
      const reject = ctl.permissions[0]!.params.options.find((o) => o.kind === 'reject_once')!;
      ctl.permissions[0]!.answer({ outcome: 'selected', optionId: reject.optionId });
      for (const e of [ctl, obs]) {
        const resolved = await waitFor(() => e.raw.find((u) => u.sessionUpdate === 'permission_resolved'), { what: 'permission_resolved' });
        expect(resolved).toMatchObject({ toolCallId: 'after-ask', approved: false, chosenOptionId: reject.optionId, resolvedBy: { name: 'ctl', version: '1.0.0', user: 'dev', surface: 'ctl' } });
      }
      expect((await prompt).stopReason).toBe('end_turn');
      const part = chatState(plain, chat)
        .turns.at(-1)!
        .responseParts.find((p: any) => p.kind === 'inputRequest') as any;
      expect(part.request.answers.name.value).toEqual({ kind: 'text', value: 'from the controller' });
      // The observer's cancel is ignored (it cannot act); its detach is announced to the controller.
      await obs.agent.notify(acp.methods.agent.session.cancel, { sessionId });
      await expect(obs.agent.request('session/detach', { sessionId })).resolves.toEqual({ sessionId, status: 'detached' });
      const left = await waitFor(() => ctl.raw.find((u) => u.sessionUpdate === 'client_disconnected'), { what: 'the detach announced' });
      expect(left).toMatchObject({ client: { name: 'obs', version: '3.1.0', role: 'observer' } });
      expect(obs.stderr()).toContain('session/cancel from an observer ignored');
    } finally {
      await owner.close();
    }
  });
});

describe('ACP attach across a dropped hub connection', () => {
  it('the bridge whose connection dropped re-joins: it announces nobody, it is listed again, and the others heard it leave', async () => {
    plain = await startTestServer();
    const { RpcClient } = await import('../helpers/rpc-client.js');
    const owner = await RpcClient.open(plain.wsUrl);
    try {
      const { session } = await owner.createSession('reconnect');
      const sessionId = idOf(session);
      const link = await tcpProxy(plain.port);
      const flaky = await editorProcess(link.url, session, undefined, 'flaky');
      const steady = await editorProcess(plain.wsUrl, session, undefined, 'steady');
      await flaky.agent.request('session/attach', { sessionId, role: 'controller', historyPolicy: 'none', clientInfo: { name: 'flaky', version: '1.0.0' } });
      await steady.agent.request('session/attach', { sessionId, role: 'observer', historyPolicy: 'none', clientInfo: { name: 'steady', version: '1.0.0' } });
      link.cut();
      // The hub saw flaky's connection close: steady is told.
      await waitFor(() => steady.raw.find((u) => u.sessionUpdate === 'client_disconnected' && (u['client'] as any)?.name === 'flaky'), { what: 'steady to hear flaky leave' });
      // flaky reconnects by itself and is present again (a newcomer lists it next to steady).
      const late = await editorProcess(plain.wsUrl, session, undefined, 'late');
      const listed = await waitFor(
        async () => {
          const r = await late.agent.request<any>('session/attach', { sessionId, role: 'observer', historyPolicy: 'none', clientInfo: { name: 'late' } });
          const names = r.connectedClients.map((c: any) => c.name).sort();
          return names.includes('flaky') ? names : undefined;
        },
        { what: 'flaky listed again', timeoutMs: 20_000 },
      );
      expect(listed).toEqual(['flaky', 'steady']);
      // Its own reconnect announced nothing to its editor (steady was there all along), also once
      // the grace for others to re-join has passed (the bridge logs when it has).
      await waitFor(() => /presence re-joined: \d+ other client\(s\) present, 0 gone/.test(flaky.stderr()) || undefined, { what: 'the re-join to settle', timeoutMs: 20_000 });
      expect(flaky.raw.filter((u) => u.sessionUpdate === 'client_disconnected')).toEqual([]);
    } finally {
      await owner.close();
    }
  }, 60_000);
});

describe('ACP attach on a hub without a presence room', () => {
  it('is not advertised, and session/attach answers -32003', async () => {
    plain = await startTestServer({ features: defaultFeatures().filter((f) => f !== collabFeature) });
    const { RpcClient } = await import('../helpers/rpc-client.js');
    const owner = await RpcClient.open(plain.wsUrl);
    try {
      const { session } = await owner.createSession('no presence');
      const e = await editorProcess(plain.wsUrl, session, undefined, 'lonely');
      expect(e.init.agentCapabilities?.sessionCapabilities?.['attach' as 'list']).toBeUndefined();
      expect(await errorOf(e.agent.request('session/attach', { sessionId: idOf(session), role: 'controller' }))).toMatchObject({ code: -32003, message: expect.stringMatching(/does not support multi-client attach/) });
      // ACP v1 still works there.
      await expect(e.agent.request(acp.methods.agent.session.new, { cwd: '/tmp', mcpServers: [] })).resolves.toEqual({ sessionId: idOf(session) });
    } finally {
      await owner.close();
    }
  }, 60_000);
});
