/**
 * Editors that attach to a hub chat later (`npm run acp` bridge, driven by the ACP SDK's client
 * side): `session/load` replays the chat before it answers, every question and permission open
 * at that moment reaches the newcomer, and its answers say which editor gave them.
 */
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { startAcpBridge, type Bridge } from '../../cli/acp-bridge/bridge.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openInteractions } from '../../shared/state/selectors.js';
import { acpConfig, capturingLogger, chatState, createSessionWith, reports, script, startAcpHub, startTurn, text, waitForEnd } from './support.js';

let server: TestServer | undefined;
const bridges: Bridge[] = [];
const connections: acp.ClientConnection[] = [];
const clients: RpcClient[] = [];

afterEach(async () => {
  for (const c of connections.splice(0)) c.close();
  for (const b of bridges.splice(0)) b.close();
  for (const c of clients.splice(0)) await c.close();
  await server?.stop();
  server = undefined;
});

function pipePair(): { agent: acp.Stream; client: acp.Stream } {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const toClient = new TransformStream<Uint8Array, Uint8Array>();
  return { agent: acp.ndJsonStream(toClient.writable, toAgent.readable), client: acp.ndJsonStream(toAgent.writable, toClient.readable) };
}

interface Editor {
  readonly agent: acp.ClientContext;
  readonly updates: acp.SessionUpdate[];
  readonly permissions: Array<{ params: acp.RequestPermissionRequest; answer(outcome: acp.RequestPermissionOutcome): void }>;
  readonly elicitations: Array<{ params: acp.CreateElicitationRequest; answer(r: acp.CreateElicitationResponse): void }>;
  readonly init: acp.InitializeResponse;
}

/** An editor (named `title`) connected through its own bridge to `session`, initialized, not yet attached. */
async function editorOn(session: string, title: string): Promise<Editor> {
  const pipes = pipePair();
  bridges.push(await startAcpBridge({ url: server!.wsUrl, session, stream: pipes.agent }));
  const updates: acp.SessionUpdate[] = [];
  const permissions: Editor['permissions'] = [];
  const elicitations: Editor['elicitations'] = [];
  const connection = acp
    .client({ name: title })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params.update);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => new Promise<acp.RequestPermissionResponse>((resolve) => permissions.push({ params, answer: (outcome) => resolve({ outcome }) })))
    .onRequest(acp.methods.client.elicitation.create, ({ params }) => new Promise<acp.CreateElicitationResponse>((resolve) => elicitations.push({ params, answer: resolve })))
    .connect(pipes.client);
  connections.push(connection);
  const init = await connection.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientInfo: { name: title.toLowerCase(), title, version: '1.0.0' },
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, elicitation: { form: {}, url: {} } },
  });
  return { agent: connection.agent, updates, permissions, elicitations, init };
}

const toolTurn = (id: string, say: string) => JSON.stringify({ script: [{ say: `${say} starts.` }, { tool: { id, name: 'write_file', input: { path: `${id}.md` }, confirm: true } }, { say: `${say} done.` }] });

describe('editors attaching to a running hub chat', () => {
  it('session/load replays both finished turns (messages and tool calls with their final status, in order) before it answers; answers say which editor gave them', async () => {
    server = await startTestServer();
    const ahp = await RpcClient.open(server.wsUrl);
    clients.push(ahp);
    const { session, chat } = await ahp.createSession('load test');
    const sessionId = session.slice('ahp-session:/'.length);
    const zed = await editorOn(session, 'Zed');
    expect(zed.init.agentCapabilities?.loadSession).toBe(true);
    await zed.agent.request(acp.methods.agent.session.new, { cwd: '/tmp', mcpServers: [] });
    for (const [i, name] of ['one', 'two'].entries()) {
      const prompt = zed.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: toolTurn(`tool-${name}`, `Turn ${name}`) }] });
      await waitFor(() => zed.permissions[i] ?? undefined, { what: `permission ${name}` });
      const p = zed.permissions[i]!;
      const option = p.params.options.find((o) => o.kind === (i === 0 ? 'allow_once' : 'reject_once'))!;
      p.answer({ outcome: 'selected', optionId: option.optionId });
      expect((await prompt).stopReason).toBe('end_turn');
    }
    const first = chatState(server, chat).turns[0]!.responseParts.find((p: any) => p.kind === 'toolCall') as any;
    expect(first.toolCall._meta['hub/answeredBy']).toMatchObject({ surface: 'Zed' });

    // A second editor opens the chat: everything arrives before session/load answers.
    const vim = await editorOn(session, 'Neovim');
    const seenAtAnswer = await vim.agent.request(acp.methods.agent.session.load, { sessionId, cwd: '/tmp', mcpServers: [] }).then(() => vim.updates.length);
    const replay = vim.updates.slice(0, seenAtAnswer).map((u: any) => (u.sessionUpdate === 'tool_call' ? `tool ${u.toolCallId} ${u.status}` : `${u.sessionUpdate.replace('_chunk', '')}: ${u.content.text}`));
    // In the chat's order: each turn's message, its text parts and its tool call with the final status.
    expect(replay).toEqual(replayShapeOf(chatState(server, chat)));
    expect(replay.slice(0, 2)).toEqual([`user_message: ${toolTurn('tool-one', 'Turn one')}`, 'agent_message: Turn one starts.']);
    expect(replay).toContain('agent_message: Turn two done.');
    expect(replay.filter((l) => l.startsWith('tool '))).toEqual(['tool tool-one completed', 'tool tool-two failed']);
    expect(replay.filter((l) => l.startsWith('user_message'))).toHaveLength(2);

    // list / resume / close, as ACP v1 has them.
    const listed = await vim.agent.request(acp.methods.agent.session.list, {});
    expect(listed.sessions.map((s) => s.sessionId)).toEqual([sessionId]);
    await expect(vim.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: '/tmp' })).resolves.toEqual({});
    await expect(vim.agent.request(acp.methods.agent.session.close, { sessionId })).resolves.toEqual({});
  });
});

/** The replay expected from the hub's own chat state (turn message, then each part in order). */
function replayShapeOf(state: any): string[] {
  const out: string[] = [];
  for (const turn of state.turns) {
    out.push(`user_message: ${turn.message.text}`);
    for (const p of turn.responseParts) {
      if (p.kind === 'markdown') out.push(`agent_message: ${p.content}`);
      else if (p.kind === 'toolCall') out.push(`tool ${p.toolCall.toolCallId} ${p.toolCall.status === 'completed' ? 'completed' : 'failed'}`);
    }
  }
  return out;
}

describe('an editor attaching while many prompts are open', () => {
  it('receives all five tool permissions and the form open in parallel, answers them, and the agent continues', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'attach-agent-'));
    try {
      ({ server } = await startAcpHub([{ provider: 'scripted', config: acpConfig({ cwd }) }], capturingLogger()));
      const ahp = await RpcClient.open(server.wsUrl);
      clients.push(ahp);
      const { session, chat } = await createSessionWith(ahp, 'scripted');
      const tools = [1, 2, 3, 4, 5].map((n) => `tool-${n}`);
      const steps = [
        ...tools.map((id) => ({ update: { sessionUpdate: 'tool_call', toolCallId: id, title: `Write ${id}`, kind: 'edit', status: 'pending' } })),
        ...tools.map((id) => ({
          permission: {
            toolCall: { toolCallId: id, title: `Write ${id}` },
            options: [
              { optionId: 'ok', name: 'Allow', kind: 'allow_once' },
              { optionId: 'no', name: 'Reject', kind: 'reject_once' },
            ],
          },
          background: true,
        })),
        { elicit: { mode: 'form', message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string', title: 'Name' } }, required: ['name'] } }, background: true },
        { awaitPermissions: true },
        { awaitElicitation: true },
        text('all answered'),
      ];
      const turnId = await startTurn(ahp, chat, script(...steps));
      await waitFor(
        () => {
          const open = openInteractions(chatState(server!, chat));
          return open.length === 6 ? open : undefined;
        },
        { what: 'five permissions and a form open' },
      );

      // The editor attaches only now.
      const late = await editorOn(session, 'Zed');
      await late.agent.request(acp.methods.agent.session.new, { cwd: '/tmp', mcpServers: [] });
      await waitFor(() => (late.permissions.length === 5 && late.elicitations.length === 1 ? true : undefined), { what: 'all six asked' });
      expect(late.permissions.map((p) => p.params.toolCall.toolCallId).sort()).toEqual(tools);
      for (const p of late.permissions) p.answer({ outcome: 'selected', optionId: p.params.options.find((o) => o.kind === 'allow_once')!.optionId });
      late.elicitations[0]!.answer({ action: 'accept', content: { name: 'Ada' } });
      const ended = await waitForEnd(server, chat, turnId);
      expect(ended.state).toBe('complete');
      const reported = reports(chatState(server, chat), turnId);
      expect(reported[0]).toMatchObject({ permissions: tools.map(() => ({ outcome: 'selected', optionId: 'ok' })) });
      expect(reported[1]).toMatchObject({ elicitation: { action: 'accept', content: { name: 'Ada' } } });
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 60_000);
});
