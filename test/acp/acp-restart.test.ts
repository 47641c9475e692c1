/**
 * A hub restart on the same data directory: the agent list is the one configured now, and a
 * session's next turn resumes the agent's own conversation with `session/load` (when the agent
 * supports it) instead of starting a new one. A turn the restart interrupted ends (the agent
 * process died with the hub) and its Resume carries the answers given (docs/continuity.md).
 */
import { afterEach, expect, it } from 'vitest';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { tempDir, type TestServer } from '../helpers/start-server.js';
import { acpConfig, capturingLogger, chatState, createSessionWith, markdownOf, script, startAcpHub, startTurn, text, waitForEnd, waitForTool } from './support.js';

let server: TestServer | undefined;
let client: RpcClient | undefined;
const data = tempDir('acp-restart-');

afterEach(async () => {
  await client?.close();
  await server?.close();
  data.remove();
});

it("after a restart the root state lists the agents configured now, and the next turn loads the agent's earlier session", async () => {
  const config = acpConfig({ cwd: data.dir, env: { SCRIPTED_AGENT_LOAD: '1' } });
  const firstLog = capturingLogger();
  let started = await startAcpHub([{ provider: 'scripted', config }], firstLog, { dataDir: data.dir });
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  const { session, chat } = await createSessionWith(client, 'scripted');
  await client.subscribe(chat);
  const first = await startTurn(client, chat, script(text('first turn')));
  expect((await waitForEnd(server, chat, first)).state).toBe('complete');
  const acpSessionId = started.providers.get('scripted')!.processOf(session)!.acpSessionId!;
  await client.close();
  await server.close();

  const secondLog = capturingLogger();
  started = await startAcpHub(
    [
      { provider: 'scripted', config },
      { provider: 'another', config },
    ],
    secondLog,
    { dataDir: data.dir },
  );
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  const root = await client.subscribe<{ agents: Array<{ provider: string }> }>('ahp-root://');
  expect(root.state.agents.map((a) => a.provider)).toEqual(['demo', 'remote', 'scripted', 'another']);
  await client.subscribe(chat);
  const second = await startTurn(client, chat, script(text('second turn')));
  expect((await waitForEnd(server, chat, second)).state).toBe('complete');
  expect(started.providers.get('scripted')!.processOf(session)!.acpSessionId).toBe(acpSessionId);
  expect(secondLog.lines.some((l) => l.msg === 'agent session loaded' && l.fields['acpSessionId'] === acpSessionId)).toBe(true);
  expect(secondLog.lines.some((l) => l.msg === 'agent stderr' && l.fields['line'] === `scripted agent: load session ${acpSessionId}`)).toBe(true);
});

it("a hub restart in the middle of an ACP agent's question ends that turn saying why; Resume starts a new turn whose question starts with the answers given", async () => {
  const config = acpConfig({ cwd: data.dir, env: { SCRIPTED_AGENT_LOAD: '1' } });
  let started = await startAcpHub([{ provider: 'scripted', config }], capturingLogger(), { dataDir: data.dir });
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  const { chat } = await createSessionWith(client, 'scripted');
  await client.subscribe(chat);
  const requestedSchema = {
    type: 'object',
    properties: { email: { type: 'string', title: 'Email' }, runtime: { type: 'string', title: 'Runtime', enum: ['node', 'deno'] }, note: { type: 'string', title: 'Note' } },
    required: ['email'],
  };
  const steps = script({ elicit: { mode: 'form', message: 'Tell me about it', requestedSchema } });
  const first = await startTurn(client, chat, steps);
  const openRequest = () =>
    waitFor(
      () => {
        const s = server!.hub.chatEntry(chat)!.state;
        for (const p of s.activeTurn?.responseParts ?? []) if (isPartOfKind(p, 'inputRequest') && !p.response) return p.request;
        return undefined;
      },
      { what: 'the open question' },
    );
  const asked = await openRequest();
  const draft = (value: unknown) => ({ state: 'draft', value });
  await client.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: asked.id, questionId: 'email', answer: draft({ kind: 'text', value: 'ada@example.com' }) });
  await client.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: asked.id, questionId: 'runtime', answer: draft({ kind: 'selected', value: 'deno' }) });
  await client.close();
  await server.close();

  started = await startAcpHub([{ provider: 'scripted', config }], capturingLogger(), { dataDir: data.dir });
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  // The agent process died with the hub: the turn ends, and says what happened and what to do.
  const ended = await waitForEnd(server, chat, first);
  expect(ended.state).toBe('error');
  expect(ended.error).toMatchObject({ errorType: 'hubRestarted' });
  expect(ended.error?.message).toMatch(/Resume runs it again with the answers already given/);
  await client.subscribe(chat);

  const resumed = `turn-resume-${Date.now()}`;
  const echo = await client.dispatchAndWait(chat, {
    type: 'chat/turnStarted',
    turnId: resumed,
    startedAt: new Date().toISOString(),
    message: { ...userMessage(steps), _meta: { 'hub/resumes': first } },
  });
  expect(echo.rejectionReason).toBeUndefined();
  const again = await openRequest();
  expect(again.id).not.toBe(asked.id);
  // Pre-filled with what people had typed, never an empty form; still a draft until submitted.
  expect(again.answers).toEqual({ email: draft({ kind: 'text', value: 'ada@example.com' }), runtime: draft({ kind: 'selected', value: 'deno' }) });
  const submitted = await client.dispatchAndWait(chat, {
    type: 'chat/inputCompleted',
    requestId: again.id,
    response: 'accept',
    answers: { email: { state: 'submitted', value: { kind: 'text', value: 'ada@example.com' } }, runtime: { state: 'submitted', value: { kind: 'selected', value: 'deno' } } },
  });
  expect(submitted.rejectionReason).toBeUndefined();
  expect((await waitForEnd(server, chat, resumed)).state).toBe('complete');
});

it('a hub restart after an approved, completed ACP tool call ends the turn without rewriting it: the tool stays completed, nothing is said twice, no part changes', async () => {
  const config = acpConfig({ cwd: data.dir, env: { SCRIPTED_AGENT_LOAD: '1' } });
  let started = await startAcpHub([{ provider: 'scripted', config }], capturingLogger(), { dataDir: data.dir });
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  const { chat } = await createSessionWith(client, 'scripted');
  await client.subscribe(chat);
  const options = [{ optionId: 'yes', name: 'Allow', kind: 'allow_once' }];
  const turnId = await startTurn(
    client,
    chat,
    script(
      text('Deploying to production.'),
      { permission: { toolCall: { toolCallId: 'deploy', title: 'deploy_prod', kind: 'execute', status: 'pending', rawInput: { env: 'prod' } }, options } },
      { update: { sessionUpdate: 'tool_call_update', toolCallId: 'deploy', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'deployed v1' } }] } },
      text('Deployed.'),
      { elicit: { mode: 'form', message: 'Does the site work?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean', title: 'Works' } } } } },
    ),
  );
  await waitForTool(server, chat, turnId, 'deploy', 'pending-confirmation');
  await client.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'deploy', approved: true, confirmed: 'user-action', selectedOptionId: 'yes' });
  await waitForTool(server, chat, turnId, 'deploy', 'completed');
  const before = await waitFor(
    () => {
      const parts = chatState(server!, chat).activeTurn?.responseParts ?? [];
      return parts.some((p) => isPartOfKind(p, 'inputRequest')) ? structuredClone(parts) : undefined;
    },
    { what: 'the question after the tool' },
  );
  await client.close();
  await server.close();

  started = await startAcpHub([{ provider: 'scripted', config }], capturingLogger(), { dataDir: data.dir });
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  const ended = await waitForEnd(server, chat, turnId);
  expect(ended.error).toMatchObject({ errorType: 'hubRestarted' });
  const tool = ended.responseParts.find((p) => isPartOfKind(p, 'toolCall'));
  expect(tool && isPartOfKind(tool, 'toolCall') ? tool.toolCall.status : undefined).toBe('completed');
  // Every part is as it was before the restart (the turn's error says why it ended, beside them).
  expect(ended.responseParts).toEqual(before);
  expect(markdownOf(chatState(server, chat), turnId)).not.toMatch(/was not run/);
});
