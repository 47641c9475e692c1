/**
 * The ACP provider against a scripted ACP agent (the official SDK's agent side, a real child
 * process over stdio): every update kind, permissions, elicitation form and URL, every stop
 * reason, cancel, and a process that dies mid-turn. One agent process serves all turns of a session.
 */
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionStatus, isPartOfKind, type ChatInputRequest } from '../../shared/protocol/state.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { replyDataWorks, replyQwen, SseClient } from '../helpers/sse.js';
import type { TestServer } from '../helpers/start-server.js';
import type { AcpAgentProvider } from '../../server/agents/acp/acp-provider.js';
import { acpConfig, capturingLogger, chatState, createSessionWith, markdownOf, reports, script, startAcpHub, startTurn, text, toolOf, turnParts, waitForEnd, waitForTool } from './support.js';

let server: TestServer;
let provider: AcpAgentProvider;
let client: RpcClient;
let session: string;
let chat: string;
let work: string;
let answersLog: string;
const logger = capturingLogger();

const answers = (): Array<Record<string, unknown>> =>
  existsSync(answersLog)
    ? readFileSync(answersLog, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];

const PERMISSION_OPTIONS = [
  { optionId: 'yes-always', name: 'Always allow touch', kind: 'allow_always' },
  { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
  { optionId: 'no', name: 'Reject', kind: 'reject_once' },
  { optionId: 'never', name: 'Never', kind: 'reject_always' },
];

function permissionStep(toolCallId: string, kind = 'edit'): unknown {
  return { permission: { toolCall: { toolCallId, title: `touch ${toolCallId}`, kind, status: 'pending', rawInput: { command: 'touch x' } }, options: PERMISSION_OPTIONS } };
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'acp-work-'));
  answersLog = join(work, 'answers.jsonl');
  const started = await startAcpHub([{ provider: 'scripted', config: acpConfig({ cwd: work, env: { SCRIPTED_AGENT_LOG: answersLog } }) }], logger);
  server = started.server;
  provider = started.providers.get('scripted')!;
  client = await RpcClient.open(server.wsUrl);
  ({ session, chat } = await createSessionWith(client, 'scripted'));
  await client.subscribe(chat);
});

afterAll(async () => {
  await client?.close();
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('ACP provider with a scripted agent', () => {
  it('lists the configured agent in the root state and refuses an unknown provider with -32002', async () => {
    const root = await client.subscribe<{ agents: Array<{ provider: string; displayName: string }> }>('ahp-root://');
    expect(root.state.agents.map((a) => a.provider)).toEqual(['demo', 'remote', 'scripted']);
    const err = await client.request('createSession', { channel: 'ahp-session:/nope-provider', provider: 'no-such-agent' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).code).toBe(-32002);
  });

  it('maps every update kind: text, thoughts, tool calls by their status with content, diffs and locations, plan, usage; no fs or terminal granted', async () => {
    const turnId = await startTurn(
      client,
      chat,
      script(
        { reportInit: true },
        text('Hello '),
        text('world.'),
        { update: { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'Thinking about it' } } },
        { update: { sessionUpdate: 'tool_call', toolCallId: 'read-1', title: 'Read notes.md', kind: 'read', status: 'pending', locations: [{ path: '/work/notes.md', line: 3 }], rawInput: { path: 'notes.md' } } },
        { update: { sessionUpdate: 'tool_call_update', toolCallId: 'read-1', status: 'in_progress' } },
        { update: { sessionUpdate: 'tool_call_update', toolCallId: 'read-1', content: [{ type: 'content', content: { type: 'text', text: 'partial' } }] } },
        {
          update: {
            sessionUpdate: 'tool_call_update',
            toolCallId: 'read-1',
            status: 'completed',
            content: [
              { type: 'content', content: { type: 'text', text: 'line one' } },
              { type: 'diff', path: '/work/notes.md', oldText: 'old', newText: 'new' },
            ],
          },
        },
        { update: { sessionUpdate: 'tool_call', toolCallId: 'fail-1', title: 'Run tests', kind: 'execute', status: 'failed', content: [{ type: 'content', content: { type: 'text', text: '2 tests failed' } }] } },
        {
          update: {
            sessionUpdate: 'plan',
            entries: [
              { content: 'Read the notes', priority: 'high', status: 'completed' },
              { content: 'Fix the tests', priority: 'medium', status: 'in_progress' },
              { content: 'Write docs', priority: 'low', status: 'pending' },
            ],
          },
        },
        { update: { sessionUpdate: 'usage_update', used: 1234, size: 200000 } },
        text('After the tools.'),
      ),
    );
    const turn = await waitForEnd(server, chat, turnId);
    expect(turn.state).toBe('complete');
    const state = chatState(server, chat);
    const parts = turnParts(state, turnId);

    const init = reports(state, turnId)[0]!['clientCapabilities'] as Record<string, unknown>;
    expect(init['fs']).toEqual({ readTextFile: false, writeTextFile: false });
    expect(init['terminal']).toBe(false);
    expect(init['elicitation']).toEqual({ form: {}, url: {} });

    const markdown = parts.filter((p) => isPartOfKind(p, 'markdown')).map((p) => (p as { content: string }).content);
    expect(markdown[0]).toContain('Hello world.');
    expect(markdown).toContain('After the tools.');
    const reasoning = parts.find((p) => isPartOfKind(p, 'reasoning')) as { content: string } | undefined;
    expect(reasoning?.content).toBe('Thinking about it');

    const read = parts.find((p) => isPartOfKind(p, 'toolCall') && p.toolCall.toolCallId === 'read-1') as { toolCall: Record<string, unknown> };
    expect(read.toolCall['status']).toBe('completed');
    expect(read.toolCall['displayName']).toBe('Read notes.md');
    expect(read.toolCall['success']).toBe(true);
    expect(read.toolCall['toolInput']).toBe('{"path":"notes.md"}');
    expect((read.toolCall['_meta'] as Record<string, unknown>)['acp/kind']).toBe('read');
    expect((read.toolCall['_meta'] as Record<string, unknown>)['acp/locations']).toEqual([{ path: '/work/notes.md', line: 3 }]);
    const content = read.toolCall['content'] as Array<{ type: string; text: string; _meta?: Record<string, unknown> }>;
    expect(content[0]!.text).toBe('line one');
    expect(content[1]!.text).toContain('--- /work/notes.md');
    expect(content[1]!.text).toContain('-old');
    expect(content[1]!.text).toContain('+new');
    expect(content[1]!._meta?.['acp/diff']).toEqual({ path: '/work/notes.md', oldText: 'old', newText: 'new' });

    const failed = parts.find((p) => isPartOfKind(p, 'toolCall') && p.toolCall.toolCallId === 'fail-1') as { toolCall: Record<string, unknown> };
    expect(failed.toolCall['status']).toBe('completed');
    expect(failed.toolCall['success']).toBe(false);
    expect((failed.toolCall['error'] as { message: string }).message).toBe('2 tests failed');

    const plan = markdown.find((m) => m.startsWith('**Plan**'));
    expect(plan).toContain('- [x] Read the notes *(high priority)*');
    expect(plan).toContain('- [~] Fix the tests');
    expect(plan).toContain('- [ ] Write docs');

    expect(turn.usage).toMatchObject({ inputTokens: 1234, contextWindow: 200000 });
  });

  it('turns every stop reason into the matching turn end, with the reason visible', async () => {
    const cases: Array<[string, 'complete' | 'error' | 'cancelled', string | undefined]> = [
      ['end_turn', 'complete', undefined],
      ['max_tokens', 'error', 'max_tokens'],
      ['max_turn_requests', 'error', 'max_turn_requests'],
      ['refusal', 'error', 'refusal'],
      ['cancelled', 'cancelled', undefined],
    ];
    for (const [stopReason, outcome, errorType] of cases) {
      const turnId = await startTurn(client, chat, script(text(`stopping with ${stopReason}`), { stop: stopReason }));
      const turn = (await waitForEnd(server, chat, turnId)) as { state: string; error?: { errorType: string; message: string } };
      expect(turn.state, stopReason).toBe(outcome);
      if (errorType) {
        expect(turn.error?.errorType).toBe(errorType);
        expect(turn.error?.message).toContain(`(${errorType})`);
      }
    }
  });

  it("a permission request waits in pending-confirmation with the agent's own options; the chosen option answers the agent", async () => {
    const turnId = await startTurn(client, chat, script(permissionStep('perm-1'), permissionStep('perm-2')));
    const pending = await waitForTool(server, chat, turnId, 'perm-1', 'pending-confirmation');
    const options = (pending as { options?: Array<{ id: string; label: string; kind: string; _meta?: Record<string, unknown> }> }).options!;
    expect(options.map((o) => [o.id, o.label, o.kind, o._meta?.['acp/optionKind']])).toEqual([
      ['yes-always', 'Always allow touch', 'approve', 'allow_always'],
      ['yes', 'Allow', 'approve', 'allow_once'],
      ['no', 'Reject', 'deny', 'reject_once'],
      ['never', 'Never', 'deny', 'reject_always'],
    ]);
    expect(chatState(server, chat).status).toBe(SessionStatus.InputNeeded);
    await client.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'perm-1', approved: true, confirmed: 'user-action', selectedOptionId: 'yes' });
    await waitForTool(server, chat, turnId, 'perm-2', 'pending-confirmation');
    // A plain denial without an option id answers with the agent's reject_once option.
    await client.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'perm-2', approved: false, reason: 'denied' });
    await waitForEnd(server, chat, turnId);
    const got = reports(chatState(server, chat), turnId);
    expect(got).toEqual([{ permission: { outcome: 'selected', optionId: 'yes' } }, { permission: { outcome: 'selected', optionId: 'no' } }]);
  });

  it('the Qwen and DataWorks reply routes answer the agent with its own options; an allow_always of the agent stays kept by the agent (the hub approves nothing by itself); a late reply is not accepted', async () => {
    // A session of its own: the remembered choice must not leak into the other tests.
    const own = await createSessionWith(client, 'scripted');
    const chat = own.chat;
    await client.subscribe(chat);
    const sessionId = own.session.replace(/^ahp-session:\//, '');
    const sse = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`);
    try {
      const turnId = await startTurn(client, chat, script(permissionStep('route-1'), permissionStep('route-2'), permissionStep('route-3', 'execute')));
      const first = await sse.waitForPermissionRequest(1);
      // The SSE permission_request offers exactly the agent's options (no hub-made extras).
      expect(first.options).toEqual(PERMISSION_OPTIONS);
      expect((await replyQwen(server.url, sessionId, first.requestId, { outcome: { outcome: 'selected', optionId: 'yes-always' } })).status).toBe(200);
      // The agent keeps its own "always" rule; the hub does not turn it into a rule of its own for
      // the tool kind ("edit"), so when the agent asks again a person answers again.
      const second = await sse.waitForPermissionRequest(2);
      await waitForTool(server, chat, turnId, 'route-2', 'pending-confirmation');
      expect((await replyQwen(server.url, sessionId, second.requestId, { outcome: { outcome: 'selected', optionId: 'yes' } })).status).toBe(200);
      const answered = await waitFor(
        () => {
          const r = reports(chatState(server, chat), turnId);
          return r.length >= 2 ? r : undefined;
        },
        { what: 'two permission answers' },
      );
      expect(answered).toEqual([{ permission: { outcome: 'selected', optionId: 'yes-always' } }, { permission: { outcome: 'selected', optionId: 'yes' } }]);
      expect(toolOf(chatState(server, chat), turnId, 'route-2')).toMatchObject({ confirmed: 'user-action' });
      // The third one (another tool) is answered over the DataWorks route with a reject option.
      const third = await sse.waitForPermissionRequest(3);
      const dw = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: third.requestId, Outcome: { Outcome: 'selected', OptionId: 'no' } });
      expect(dw.body.JsonRpcResponse.Result).toEqual({ Accepted: true });
      const late = await replyDataWorks(server.url, { SessionId: sessionId, PermissionRequestId: third.requestId, Outcome: { Outcome: 'selected', OptionId: 'yes' } });
      expect(late.body.JsonRpcResponse.Result).toEqual({ Accepted: false });
      await waitForEnd(server, chat, turnId);
      expect(reports(chatState(server, chat), turnId)[2]).toEqual({ permission: { outcome: 'selected', optionId: 'no' } });
    } finally {
      await sse.close();
      await client.request('disposeSession', { channel: own.session });
    }
  });

  it('cancelling the turn answers a pending permission request "cancelled" and sends session/cancel', async () => {
    const before = answers().length;
    const turnId = await startTurn(client, chat, script(permissionStep('perm-c'), { waitCancel: true }));
    await waitForTool(server, chat, turnId, 'perm-c', 'pending-confirmation');
    await client.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId, duration: 1 });
    await waitFor(() => answers().length > before || undefined, { what: 'the agent to record the permission answer' });
    expect(answers()[before]).toEqual({ permission: { outcome: 'cancelled' } });
    const turn = (await waitForEnd(server, chat, turnId)) as { state: string };
    expect(turn.state).toBe('cancelled');
    // The agent returned from its prompt (it got session/cancel): the next turn is served at once.
    const next = await startTurn(client, chat, script(text('still here')));
    expect(((await waitForEnd(server, chat, next)) as { state: string }).state).toBe('complete');
  });

  it('a form elicitation becomes an input request with mapped questions; accepted answers go back as content, a decline as decline', async () => {
    const requestedSchema = {
      type: 'object',
      properties: {
        email: { type: 'string', title: 'Email', description: 'Where to reach you', format: 'email', minLength: 3, maxLength: 80, default: 'a@b.c' },
        budget: { type: 'number', title: 'Budget', minimum: 0, maximum: 1000, default: 10 },
        people: { type: 'integer', title: 'People', minimum: 1, maximum: 9 },
        public: { type: 'boolean', title: 'Public', default: true },
        runtime: { type: 'string', title: 'Runtime', enum: ['node', 'deno'] },
        region: {
          type: 'string',
          title: 'Region',
          oneOf: [
            { const: 'eu', title: 'Europe' },
            { const: 'us', title: 'United States' },
          ],
          default: 'eu',
        },
        targets: {
          type: 'array',
          title: 'Targets',
          minItems: 1,
          maxItems: 2,
          items: {
            anyOf: [
              { const: 'linux', title: 'Linux' },
              { const: 'mac', title: 'macOS' },
            ],
          },
        },
      },
      required: ['email', 'runtime'],
    };
    const turnId = await startTurn(
      client,
      chat,
      script({ elicit: { mode: 'form', message: 'Tell me about it', requestedSchema } }, { elicit: { mode: 'form', message: 'Second', requestedSchema: { type: 'object', properties: { x: { type: 'string' } } } } }),
    );
    const request = await waitFor(
      () => {
        for (const p of turnParts(chatState(server, chat), turnId)) if (isPartOfKind(p, 'inputRequest') && !p.response) return p.request;
        return undefined;
      },
      { what: 'the input request' },
    );
    expect(request.message).toBe('Tell me about it');
    const q = Object.fromEntries((request.questions ?? []).map((x) => [x.id, x as Record<string, unknown>]));
    expect(q['email']).toMatchObject({ kind: 'text', title: 'Email', message: 'Where to reach you', format: 'email', min: 3, max: 80, defaultValue: 'a@b.c', required: true });
    expect(q['budget']).toMatchObject({ kind: 'number', min: 0, max: 1000, defaultValue: 10 });
    expect(q['people']).toMatchObject({ kind: 'integer', min: 1, max: 9 });
    expect(q['public']).toMatchObject({ kind: 'boolean', defaultValue: true });
    expect(q['runtime']).toMatchObject({
      kind: 'single-select',
      required: true,
      options: [
        { id: 'node', label: 'node' },
        { id: 'deno', label: 'deno' },
      ],
    });
    expect(q['region']).toMatchObject({
      kind: 'single-select',
      options: [
        { id: 'eu', label: 'Europe', recommended: true },
        { id: 'us', label: 'United States' },
      ],
    });
    expect(q['targets']).toMatchObject({
      kind: 'multi-select',
      min: 1,
      max: 2,
      options: [
        { id: 'linux', label: 'Linux' },
        { id: 'mac', label: 'macOS' },
      ],
    });
    expect(q['budget']!['required']).toBeUndefined();

    const submitted = (value: unknown): unknown => ({ state: 'submitted', value });
    const echo = await client.dispatchAndWait(chat, {
      type: 'chat/inputCompleted',
      requestId: request.id,
      response: 'accept',
      answers: {
        email: submitted({ kind: 'text', value: 'me@example.com' }),
        budget: submitted({ kind: 'number', value: 12.5 }),
        people: submitted({ kind: 'number', value: 3 }),
        public: submitted({ kind: 'boolean', value: false }),
        runtime: submitted({ kind: 'selected', value: 'deno' }),
        targets: submitted({ kind: 'selected-many', value: ['linux', 'mac'] }),
      },
    });
    expect(echo.rejectionReason).toBeUndefined();
    const second = await waitFor(
      () => {
        for (const p of turnParts(chatState(server, chat), turnId)) if (isPartOfKind(p, 'inputRequest') && !p.response && p.request.message === 'Second') return p.request;
        return undefined;
      },
      { what: 'the second input request' },
    );
    await client.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: second.id, response: 'decline' });
    await waitForEnd(server, chat, turnId);
    expect(reports(chatState(server, chat), turnId)).toEqual([
      { elicitation: { action: 'accept', content: { email: 'me@example.com', budget: 12.5, people: 3, public: false, runtime: 'deno', targets: ['linux', 'mac'] } } },
      { elicitation: { action: 'decline' } },
    ]);
  });

  it("a URL elicitation shows the URL; the agent's elicitation/complete resolves it as accepted", async () => {
    const turnId = await startTurn(
      client,
      chat,
      script({ elicit: { mode: 'url', message: 'Sign in to continue', url: 'https://example.com/login', elicitationId: 'el-1' }, background: true }, { elicitComplete: 'el-1' }, { awaitElicitation: true }),
    );
    await waitForEnd(server, chat, turnId);
    const part = turnParts(chatState(server, chat), turnId).find((p) => isPartOfKind(p, 'inputRequest')) as { request: ChatInputRequest; response?: string };
    expect(part.request).toMatchObject({ message: 'Sign in to continue', url: 'https://example.com/login' });
    expect(part.response).toBe('accept');
    expect(reports(chatState(server, chat), turnId)).toEqual([{ elicitation: { action: 'accept' } }]);
  });

  it('an agent process that dies mid-turn ends the turn with chat/error and takes its children with it; the next turn starts a fresh process; stderr goes to the hub log only', async () => {
    const firstPid = provider.processOf(session)!.pid;
    const turnId = await startTurn(client, chat, script(text('about to crash'), { spawnChild: true }, { exit: 3 }));
    const turn = (await waitForEnd(server, chat, turnId)) as { state: string; error?: { errorType: string; message: string } };
    expect(turn.state).toBe('error');
    expect(turn.error?.errorType).toBe('agentExited');
    expect(turn.error?.message).toContain('exited with code 3');
    expect(markdownOf(chatState(server, chat), turnId)).toContain('about to crash');
    // What the agent left running in its process group is stopped with it.
    const childPid = reports(chatState(server, chat), turnId).find((r) => 'childPid' in r)!['childPid'] as number;
    const alive = (pid: number): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor(() => !alive(childPid) || undefined, { what: "the agent's child process to be stopped" });

    const next = await startTurn(client, chat, script(text('back again')));
    expect(((await waitForEnd(server, chat, next)) as { state: string }).state).toBe('complete');
    const secondPid = provider.processOf(session)!.pid;
    expect(secondPid).not.toBe(firstPid);

    const stderr = logger.lines.filter((l) => l.msg === 'agent stderr').map((l) => String(l.fields['line']));
    expect(stderr).toContain('scripted agent: exiting on request');
    expect(stderr.some((l) => l.startsWith(`scripted agent: new session in ${work}`))).toBe(true);
    const everyFrame = client.envelopes.map((e) => JSON.stringify(e)).join('\n');
    expect(everyFrame).not.toContain('scripted agent:');
  });

  it('steering: input-capabilities offers no target while the agent runs and says why; a submit is refused, nothing is accepted', async () => {
    const turnId = await startTurn(client, chat, script(text('working'), { waitCancel: true }));
    await waitFor(() => markdownOf(chatState(server, chat), turnId).includes('working') || undefined, { what: 'the turn to run' });
    const caps = await client.request<{ target: unknown; targetUnavailable?: { code: string; message: string }; retention: { current: { turnId: string } | null } }>('x-input/capabilities', { channel: session });
    expect(caps.target).toBeNull();
    expect(caps.targetUnavailable?.code).toBe('agent_has_no_input_channel');
    expect(caps.targetUnavailable?.message).toMatch(/without a mid-turn input channel/);
    const target = { historyEpoch: 'whatever', turnId };
    const err = await client.request('x-input/submit', { channel: session, inputId: 'in-1', target, content: { text: 'also do X' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).data).toMatchObject({ code: 'steering_unavailable', status: 422 });
    expect(chatState(server, chat).steeringMessages ?? []).toEqual([]);
    await client.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId, duration: 1 });
    await waitForEnd(server, chat, turnId);
  });

  it('disposing the session stops its agent process', async () => {
    expect(provider.processOf(session)).toBeDefined();
    await client.request('disposeSession', { channel: session });
    await waitFor(() => provider.processes === 0 || undefined, { what: 'the agent process to stop' });
  });
});
