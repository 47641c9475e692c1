/**
 * Turns survive a hub restart (docs/continuity.md, "Turns"). A team of three is mid-form on the
 * real hub process: two questions hold drafts and a third text answer is being typed. The hub
 * is stopped with SIGTERM, later killed with SIGKILL, and started again on the same data dir each
 * time: the same questions are open with the same drafts, the answers can be submitted, a tool
 * confirmation stays answerable, and the turn completes. Once with the demo agent (the hub runs it
 * again from the log), once with a remote agent that reconnects over the WebSocket.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChatState, InputRequestPart } from '../../shared/protocol/state.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import type { HubProcess } from '../helpers/hub-process.js';
import { RestartRig } from '../helpers/restart-rig.js';
import type { RpcClient } from '../helpers/rpc-client.js';
import { startScriptTurn, startTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

/** The two questions every form test asks, and a third one being typed while the hub restarts. */
const FORM = (id: string) => ({
  id,
  message: 'Plan the release',
  questions: [...TWO_QUESTION_REQUEST.questions, { id: 'name', kind: 'text', message: 'Release name', required: true, max: 200 }],
});

const draft = (value: unknown) => ({ state: 'draft', value });
const text = (value: string) => ({ kind: 'text', value });

const rig = RestartRig.perTest();
const open = (hub: HubProcess, token?: string) => rig.open(hub, token);

/** A token file for `users` (role user) and one agent, all in tenant acme. */
function writeTokens(dir: string, users: Record<string, string>, agent: string): string {
  const file = join(dir, 'tokens.json');
  const tokens = [...Object.entries(users).map(([user, token]) => ({ token, user, tenant: 'acme', role: 'user' })), { token: agent, user: 'bot', tenant: 'acme', role: 'agent' }];
  writeFileSync(file, JSON.stringify({ tokens }));
  return file;
}

async function state(c: RpcClient, chat: string): Promise<ChatState> {
  return (await c.subscribe<ChatState>(chat)).state;
}

function request(s: ChatState, id: string): InputRequestPart | undefined {
  return s.activeTurn?.responseParts.find((p): p is InputRequestPart => isPartOfKind(p, 'inputRequest') && p.request.id === id);
}

/**
 * Three people mid-form on request `id`: A and B leave drafts in two questions, C is still typing
 * the third (drafts sent without waiting). Returns the answers as the hub echoed them last.
 */
async function midForm(team: RpcClient[], chat: string, id: string): Promise<Record<string, unknown>> {
  const [a, b, c] = team as [RpcClient, RpcClient, RpcClient];
  await a.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: id, questionId: 'runtime', answer: draft({ kind: 'selected', value: 'deno' }) });
  await b.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: id, questionId: 'notes', answer: draft(text('ship on friday')) });
  const typed = 'Gemini draft offline-edit';
  for (let i = 1; i < typed.length; i++) c.dispatch(chat, { type: 'chat/inputAnswerChanged', requestId: id, questionId: 'name', answer: draft(text(typed.slice(0, i))) });
  await c.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: id, questionId: 'name', answer: draft(text(typed)) });
  const answers = request(await state(a, chat), id)!.request.answers!;
  expect(answers).toMatchObject({ runtime: draft({ kind: 'selected', value: 'deno' }), notes: draft(text('ship on friday')), name: draft(text(typed)) });
  return answers;
}

/** After a restart: everyone sees the request open with exactly the drafts from before. */
async function sameFormFor(team: RpcClient[], chat: string, id: string, answers: Record<string, unknown>): Promise<void> {
  for (const member of team) {
    const s = await state(member, chat);
    const part = request(s, id);
    expect(part, 'the question is still open').toBeDefined();
    expect(part!.response).toBeUndefined();
    expect(part!.request.answers).toEqual(answers);
  }
}

async function submit(c: RpcClient, chat: string, id: string): Promise<void> {
  const echo = await c.dispatchAndWait(chat, {
    type: 'chat/inputCompleted',
    requestId: id,
    response: 'accept',
    answers: {
      runtime: { state: 'submitted', value: { kind: 'selected', value: 'deno' } },
      notes: { state: 'submitted', value: text('ship on friday') },
      name: { state: 'submitted', value: text('Gemini draft offline-edit') },
    },
  });
  expect(echo.rejectionReason).toBeUndefined();
}

describe('turns survive a hub restart', () => {
  it('demo agent: SIGTERM and SIGKILL mid-form keep the questions open with every draft; the answers are taken and the turn completes', async () => {
    const args = ['--data', rig.dataDir('turns-survive-')];
    let hub = await rig.start(args);
    let team = [await open(hub), await open(hub), await open(hub)];
    const { chat } = await team[0]!.createSession('mid-form');
    for (const m of team) await m.subscribe(chat);
    const turnId = await startScriptTurn(team[0]!, chat, [
      { say: 'Let us plan the release together.' },
      { ask: FORM('form-1') },
      { ask: FORM('form-2') },
      { tool: { id: 'publish', name: 'publish_release', input: { tag: 'v1' }, confirm: true } },
      { say: 'Released. Thank you all.' },
    ]);
    await team[0]!.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'the first form');

    // SIGTERM in the middle of the first form.
    let answers = await midForm(team, chat, 'form-1');
    hub = await rig.restart(hub, 'SIGTERM', args);
    team = await Promise.all(team.map(() => open(hub)));
    await sameFormFor(team, chat, 'form-1', answers);
    await submit(team[1]!, chat, 'form-1');
    await waitFor(async () => request(await state(team[0]!, chat), 'form-2'), { what: 'the second form' });

    // SIGKILL in the middle of the second form.
    answers = await midForm(team, chat, 'form-2');
    hub = await rig.restart(hub, 'SIGKILL', args);
    team = await Promise.all(team.map(() => open(hub)));
    await sameFormFor(team, chat, 'form-2', answers);
    await submit(team[2]!, chat, 'form-2');

    // SIGKILL while the tool waits for its confirmation: it is still answerable afterwards.
    const toolPending = async (c: RpcClient) => {
      const s = await state(c, chat);
      return s.activeTurn?.responseParts.some((p) => isPartOfKind(p, 'toolCall') && p.toolCall.status === 'pending-confirmation') || undefined;
    };
    await waitFor(() => toolPending(team[0]!), { what: 'the tool confirmation' });
    hub = await rig.restart(hub, 'SIGKILL', args);
    team = await Promise.all(team.map(() => open(hub)));
    await waitFor(() => toolPending(team[0]!), { what: 'the tool confirmation after the restart' });
    const confirmed = await team[0]!.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'publish', approved: true, confirmed: 'user-action' });
    expect(confirmed.rejectionReason).toBeUndefined();

    const ended = await waitFor(async () => (await state(team[1]!, chat)).turns.find((t) => t.id === turnId), { what: 'the turn to end' });
    expect(ended.state).toBe('complete');
    const said = ended.responseParts.filter((p) => isPartOfKind(p, 'markdown')).map((p) => (p as { content: string }).content);
    // Each step ran once: nothing said twice, nothing asked twice, the final line streamed after the tool.
    expect(said.filter((t) => t === 'Let us plan the release together.')).toHaveLength(1);
    expect(said.filter((t) => t.startsWith('Input accepted.'))).toHaveLength(2);
    expect(said.at(-1)).toBe('Released. Thank you all.');
    expect(ended.responseParts.filter((p) => isPartOfKind(p, 'inputRequest'))).toHaveLength(2);
    // The first form's answers as submitted before the SIGKILL.
    expect(said.find((t) => t.startsWith('Input accepted.'))).toContain('Gemini draft offline-edit');
  }, 120_000);

  it('remote agent: the turn stays open across SIGTERM and SIGKILL while the agent reconnects; the drafts stay and the agent completes the turn', async () => {
    const data = rig.dataDir('turns-survive-remote-');
    const users = ['user-token-alice-000001', 'user-token-bob-00000001', 'user-token-carol-000001'];
    const agentToken = 'agent-token-bot-0000001';
    const tokens = writeTokens(data, { alice: users[0]!, bob: users[1]!, carol: users[2]! }, agentToken);
    const args = ['--data', data, '--auth', tokens];
    let hub = await rig.start(args);
    let team = await Promise.all(users.map((t) => open(hub, t)));
    let agent = await open(hub, agentToken);
    const session = 'ahp-session:/remote-mid-form';
    const { defaultChat: chat } = await team[0]!.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote' });
    for (const m of [...team, agent]) await m.subscribe(chat);
    const turnId = 'turn-remote-1';
    await startTurn(team[0]!, chat, 'Plan the release', turnId);
    expect((await agent.dispatchAndWait(chat, { type: 'chat/inputRequested', request: FORM('form-1') })).rejectionReason).toBeUndefined();

    let answers = await midForm(team, chat, 'form-1');
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      hub = await rig.restart(hub, signal, args);
      team = await Promise.all(users.map((t) => open(hub, t)));
      // The agent comes back and subscribes to its chat again: its turn carries on.
      agent = await open(hub, agentToken);
      await agent.subscribe(chat);
      await sameFormFor(team, chat, 'form-1', answers);
      answers = await midForm(team, chat, 'form-1');
    }
    await submit(team[0]!, chat, 'form-1');
    const answered = await waitFor(async () => (await state(agent, chat)).activeTurn?.responseParts.find((p) => isPartOfKind(p, 'inputRequest') && p.response === 'accept'), { what: 'the agent to see the answers' });
    expect(answered).toBeDefined();
    expect((await agent.dispatchAndWait(chat, { type: 'chat/turnComplete', turnId, duration: 1 })).rejectionReason).toBeUndefined();
    const ended = (await state(team[2]!, chat)).turns.find((t) => t.id === turnId);
    expect(ended?.state).toBe('complete');
  }, 120_000);

  it('remote agent that does not come back: after the grace period its turn ends with hubRestarted, the drafts kept in the transcript', async () => {
    const data = rig.dataDir('turns-survive-grace-');
    const tokens = writeTokens(data, { alice: 'user-token-alice-000001' }, 'agent-token-bot-0000001');
    const args = ['--data', data, '--auth', tokens];
    let hub = await rig.start(args);
    let alice = await open(hub, 'user-token-alice-000001');
    const agent = await open(hub, 'agent-token-bot-0000001');
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: 'ahp-session:/remote-gone', provider: 'remote' });
    await alice.subscribe(chat);
    await startTurn(alice, chat, 'Hello?', 'turn-gone');
    await agent.dispatchAndWait(chat, { type: 'chat/inputRequested', request: FORM('form-1') });
    await alice.dispatchAndWait(chat, { type: 'chat/inputAnswerChanged', requestId: 'form-1', questionId: 'notes', answer: draft(text('kept')) });
    await agent.close();
    hub = await rig.restart(hub, 'SIGKILL', args, { HUB_REMOTE_AGENT_GRACE_MS: '300' });
    alice = await open(hub, 'user-token-alice-000001');
    const ended = await waitFor(async () => (await state(alice, chat)).turns.find((t) => t.id === 'turn-gone'), { what: 'the orphaned turn to end' });
    expect(ended.state).toBe('error');
    expect(ended.error).toMatchObject({ errorType: 'hubRestarted' });
    expect(ended.error?.message).toMatch(/remote agent did not come back/);
    const form = ended.responseParts.find((p): p is InputRequestPart => isPartOfKind(p, 'inputRequest'));
    expect(form?.request.answers?.['notes']).toEqual(draft(text('kept')));
  }, 60_000);
});
