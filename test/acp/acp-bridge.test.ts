/**
 * The editor bridge (`npm run acp`) driven by the ACP SDK's client side, next to plain AHP clients
 * on the same hub chat (the demo agent produces the tool confirmations and questions).
 */
import { randomUUID } from 'node:crypto';
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { startAcpBridge, STEERING_EXTENSION, type Bridge } from '../../cli/acp-bridge/bridge.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { chatState, toolOf, turnParts } from './support.js';

let server: TestServer | undefined;
let bridge: Bridge | undefined;
let connection: acp.ClientConnection | undefined;
const clients: RpcClient[] = [];

afterEach(async () => {
  connection?.close();
  bridge?.close();
  for (const c of clients.splice(0)) await c.close();
  await server?.stop();
  server = bridge = connection = undefined;
});

/** A byte pipe pair: what one side writes, the other reads (as over stdio). */
function pipePair(): { agent: acp.Stream; client: acp.Stream } {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const toClient = new TransformStream<Uint8Array, Uint8Array>();
  return { agent: acp.ndJsonStream(toClient.writable, toAgent.readable), client: acp.ndJsonStream(toAgent.writable, toClient.readable) };
}

interface Editor {
  readonly agent: acp.ClientContext;
  readonly updates: acp.SessionUpdate[];
  readonly permissions: Array<{ params: acp.RequestPermissionRequest; signal: AbortSignal; answer(outcome: acp.RequestPermissionOutcome): void }>;
  readonly elicitations: Array<{ params: acp.CreateElicitationRequest; answer(r: acp.CreateElicitationResponse): void }>;
  readonly init: acp.InitializeResponse;
  readonly sessionId: string;
}

/** A hub, an AHP client on a fresh session, and an ACP editor attached to it through the bridge. */
async function setup(): Promise<{ ahp: RpcClient; session: string; chat: string; editor: Editor }> {
  server = await startTestServer();
  const ahp = await RpcClient.open(server.wsUrl);
  clients.push(ahp);
  const { session, chat } = await ahp.createSession('bridge test');
  await ahp.subscribe(chat);
  const pipes = pipePair();
  bridge = await startAcpBridge({ url: server.wsUrl, session, stream: pipes.agent });
  const updates: acp.SessionUpdate[] = [];
  const permissions: Editor['permissions'] = [];
  const elicitations: Editor['elicitations'] = [];
  const app = acp
    .client({ name: 'test-editor' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params.update);
    })
    .onRequest(
      acp.methods.client.session.requestPermission,
      ({ params, signal }) =>
        new Promise<acp.RequestPermissionResponse>((resolve, reject) => {
          permissions.push({ params, signal, answer: (outcome) => resolve({ outcome }) });
          signal.addEventListener('abort', () => reject(new Error('withdrawn')), { once: true });
        }),
    )
    .onRequest(
      acp.methods.client.elicitation.create,
      ({ params }) =>
        new Promise<acp.CreateElicitationResponse>((resolve) => {
          elicitations.push({ params, answer: resolve });
        }),
    );
  connection = app.connect(pipes.client);
  const agent = connection.agent;
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, elicitation: { form: {}, url: {} } },
  });
  const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd: '/tmp', mcpServers: [] });
  return { ahp, session, chat, editor: { agent, updates, permissions, elicitations, init, sessionId } };
}

const toolScript = (id: string): string => JSON.stringify({ script: [{ say: 'Preparing the file.' }, { tool: { id, name: 'write_file', input: { path: 'README.md' }, confirm: true } }, { say: 'Finished.' }] });

function outcomeTexts(updates: readonly acp.SessionUpdate[]): string[] {
  return updates.map((u) => (u._meta as Record<string, unknown> | null | undefined)?.['hub/outcome']).filter((t): t is string => typeof t === 'string');
}

describe('ACP editor bridge', () => {
  it('an ACP client and an AHP client race for one permission: exactly one answer is applied and both see the outcome', async () => {
    const { ahp, session, chat, editor } = await setup();
    expect(editor.sessionId).toBe(session.slice('ahp-session:/'.length));
    const prompt = editor.agent.request(acp.methods.agent.session.prompt, { sessionId: editor.sessionId, prompt: [{ type: 'text', text: toolScript('race-1') }] });
    await waitFor(() => editor.permissions.length > 0 || undefined, { what: 'the editor to be asked' });
    const asked = editor.permissions[0]!;
    expect(asked.params.toolCall.toolCallId).toBe('race-1');
    const turnId = chatState(server!, chat).activeTurn!.id;
    expect(toolOf(chatState(server!, chat), turnId, 'race-1')?.status).toBe('pending-confirmation');

    // Both answer at the same moment: the editor approves, the AHP tab denies.
    const allow = asked.params.options.find((o) => o.kind === 'allow_once')!;
    asked.answer({ outcome: 'selected', optionId: allow.optionId });
    const ahpEcho = await ahp.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'race-1', approved: false, reason: 'denied' });

    const response = await prompt;
    expect(response.stopReason).toBe('end_turn');
    const tool = turnParts(chatState(server!, chat), turnId).find((p) => isPartOfKind(p, 'toolCall')) as { toolCall: { status: string; reason?: string } };
    const ahpWon = ahpEcho.rejectionReason === undefined;
    // Exactly one decision is in the chat, and it is the winner's.
    expect(tool.toolCall.status).toBe(ahpWon ? 'cancelled' : 'completed');
    if (ahpWon) {
      expect(tool.toolCall.reason).toBe('denied');
      // The editor is told its answer was not applied (or was withdrawn before it arrived).
      await waitFor(() => outcomeTexts(editor.updates).find((t) => /another client answered first|Answered in another client first/.test(t)), { what: 'the editor to see it lost' });
    } else {
      expect(ahpEcho.rejectionReason).toMatch(/not awaiting confirmation/);
      expect(editor.updates.some((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'race-1' && u.status === 'completed')).toBe(true);
    }
  });

  it("the AHP client answers first while the editor is asked: the editor's request is withdrawn and it is told who won", async () => {
    const { ahp, chat, editor } = await setup();
    const prompt = editor.agent.request(acp.methods.agent.session.prompt, { sessionId: editor.sessionId, prompt: [{ type: 'text', text: toolScript('t-ahp') }] });
    await waitFor(() => editor.permissions.length > 0 || undefined, { what: 'the editor to be asked' });
    const turnId = chatState(server!, chat).activeTurn!.id;
    const echo = await ahp.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 't-ahp', approved: true, confirmed: 'user-action' });
    expect(echo.rejectionReason).toBeUndefined();
    await waitFor(() => editor.permissions[0]!.signal.aborted || undefined, { what: 'the editor request to be withdrawn' });
    expect(outcomeTexts(editor.updates)).toContain('Answered in another client first: approved. Your request was withdrawn.');
    expect((await prompt).stopReason).toBe('end_turn');
    const text = editor.updates
      .filter((u) => u.sessionUpdate === 'agent_message_chunk')
      .map((u) => (u as { content: { text?: string } }).content.text ?? '')
      .join('');
    expect(text).toContain('Preparing the file.');
    expect(text).toContain('Finished.');
  });

  it("the editor answers first: the AHP client's later answer is refused as already answered", async () => {
    const { ahp, chat, editor } = await setup();
    const script = JSON.stringify({ script: [{ tool: { id: 't-ed', name: 'write_file', confirm: true } }, { sleep: 60_000 }] });
    const prompt = editor.agent.request(acp.methods.agent.session.prompt, { sessionId: editor.sessionId, prompt: [{ type: 'text', text: script }] });
    await waitFor(() => editor.permissions.length > 0 || undefined, { what: 'the editor to be asked' });
    const turnId = chatState(server!, chat).activeTurn!.id;
    const reject = editor.permissions[0]!.params.options.find((o) => o.kind === 'reject_once')!;
    editor.permissions[0]!.answer({ outcome: 'selected', optionId: reject.optionId });
    await waitFor(() => toolOf(chatState(server!, chat), turnId, 't-ed')?.status === 'cancelled' || undefined, { what: 'the denial to apply' });
    const late = await ahp.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 't-ed', approved: true, confirmed: 'user-action' });
    expect(late.rejectionReason).toMatch(/not awaiting confirmation \(it is cancelled\)/);
    await editor.agent.notify(acp.methods.agent.session.cancel, { sessionId: editor.sessionId });
    expect((await prompt).stopReason).toBe('cancelled');
    expect(editor.updates.some((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 't-ed' && u.status === 'failed')).toBe(true);
  });

  it('a hub question reaches the editor as a form elicitation; its answers complete the input request', async () => {
    const { chat, editor } = await setup();
    const ask = {
      id: 'q-1',
      message: 'Details please',
      questions: [
        { id: 'name', kind: 'text', title: 'Name', message: 'Project name', required: true, max: 40 },
        { id: 'size', kind: 'integer', message: 'Team size', min: 1, max: 9 },
        {
          id: 'runtime',
          kind: 'single-select',
          message: 'Runtime',
          options: [
            { id: 'node', label: 'Node.js' },
            { id: 'deno', label: 'Deno' },
          ],
        },
      ],
    };
    const prompt = editor.agent.request(acp.methods.agent.session.prompt, { sessionId: editor.sessionId, prompt: [{ type: 'text', text: JSON.stringify({ script: [{ ask }] }) }] });
    await waitFor(() => editor.elicitations.length > 0 || undefined, { what: 'the elicitation' });
    const e = editor.elicitations[0]!;
    expect(e.params).toMatchObject({
      mode: 'form',
      message: 'Details please',
      requestedSchema: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', title: 'Name', description: 'Project name', maxLength: 40 },
          size: { type: 'integer', minimum: 1, maximum: 9 },
          runtime: {
            type: 'string',
            oneOf: [
              { const: 'node', title: 'Node.js' },
              { const: 'deno', title: 'Deno' },
            ],
          },
        },
      },
    });
    e.answer({ action: 'accept', content: { name: 'hub', size: 3, runtime: 'deno' } });
    expect((await prompt).stopReason).toBe('end_turn');
    const turn = chatState(server!, chat).turns.at(-1)!;
    const part = turn.responseParts.find((p) => isPartOfKind(p, 'inputRequest')) as { response?: string; request: { answers?: Record<string, unknown> } };
    expect(part.response).toBe('accept');
    expect(part.request.answers).toMatchObject({ name: { state: 'submitted', value: { kind: 'text', value: 'hub' } }, size: { value: { kind: 'number', value: 3 } }, runtime: { value: { kind: 'selected', value: 'deno' } } });
  });

  it('steering through the seed-003 extension: advertised in initialize, steer gets a real receipt (accepted, then cancelled with its turn); a prompt while busy is refused', async () => {
    const { editor } = await setup();
    expect(editor.init.agentCapabilities?._meta?.[STEERING_EXTENSION.metaKey]).toEqual({ midTurnInput: 1 });
    const prompt = editor.agent.request(acp.methods.agent.session.prompt, {
      sessionId: editor.sessionId,
      prompt: [{ type: 'text', text: JSON.stringify({ script: [{ say: 'Working.' }, { sleep: 60_000 }, { say: 'Done.' }] }) }],
    });
    const caps = await waitFor(
      async () => {
        const c = await editor.agent.request<{ target: { historyEpoch: string; turnId: string } | null }>(STEERING_EXTENSION.capabilities, { sessionId: editor.sessionId });
        return c.target ? c : undefined;
      },
      { what: 'a steering target' },
    );
    const busy = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId: editor.sessionId, prompt: [{ type: 'text', text: 'second prompt' }] }).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(acp.RequestError);
    expect((busy as Error).message).toMatch(/already running/);

    const inputId = `in-${randomUUID()}`;
    const steer = await editor.agent.request<{ outcome: string; receipt: { state: string; ordinal: number } }>(STEERING_EXTENSION.steer, {
      sessionId: editor.sessionId,
      inputId,
      target: caps.target,
      content: { text: 'also check the licence' },
    });
    expect(steer).toMatchObject({ outcome: 'accepted', receipt: { state: 'accepted', ordinal: 1 } });
    const status = await editor.agent.request<{ receipt: { state: string } | null }>(STEERING_EXTENSION.status, { sessionId: editor.sessionId, inputId, target: caps.target });
    expect(status.receipt?.state).toBe('accepted');
    await editor.agent.notify(acp.methods.agent.session.cancel, { sessionId: editor.sessionId });
    expect((await prompt).stopReason).toBe('cancelled');
    const closed = await editor.agent.request<{ receipt: { state: string } | null }>(STEERING_EXTENSION.status, { sessionId: editor.sessionId, inputId, target: caps.target });
    expect(closed.receipt?.state).toBe('cancelled');
  });
});
