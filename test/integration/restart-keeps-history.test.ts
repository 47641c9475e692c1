/**
 * A restart never rewrites history (issue 28, item 4). The demo agent's turn has run an approved
 * tool to completion and said what it did; it waits on the next question when the real hub
 * process is stopped (SIGTERM, then SIGKILL) and started again on the same data dir. The runner
 * replays the script against the log: the finished tool step must stay finished — no
 * "Tool … was not run (completed)", no line said twice — and the only parts the turn gains are
 * those of the steps after the restart.
 */
import { describe, expect, it } from 'vitest';
import type { ChatState, ResponsePart, Turn } from '../../shared/protocol/state.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { RestartRig } from '../helpers/restart-rig.js';
import type { RpcClient } from '../helpers/rpc-client.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const rig = RestartRig.perTest();

const SCRIPT = [
  { say: 'Deploying to production.' },
  { tool: { id: 'deploy', name: 'deploy_prod', input: { env: 'prod' }, confirm: true } },
  { say: 'Deployed.' },
  { ask: { id: 'verify', message: 'Check the site', questions: [{ id: 'ok', kind: 'boolean', message: 'Does it work?', required: true }] } },
  { say: 'All done.' },
];

async function chatState(c: RpcClient, chat: string): Promise<ChatState> {
  return (await c.subscribe<ChatState>(chat)).state;
}

function markdownOf(parts: readonly ResponsePart[]): string[] {
  return parts.flatMap((p) => (isPartOfKind(p, 'markdown') ? [p.content] : []));
}

/** The turn's parts up to (not including) the open question: what the restart must leave alone. */
function partsBefore(parts: readonly ResponsePart[], requestId: string): ResponsePart[] {
  const at = parts.findIndex((p) => isPartOfKind(p, 'inputRequest') && p.request.id === requestId);
  return at < 0 ? [...parts] : parts.slice(0, at);
}

describe('a restart never rewrites history', () => {
  it('demo agent: an approved, completed tool stays completed across SIGTERM and SIGKILL; nothing is said twice', async () => {
    const args = ['--data', rig.dataDir('restart-history-')];
    let hub = await rig.start(args);
    let alice = await rig.open(hub);
    const { chat } = await alice.createSession('deploy');
    await alice.subscribe(chat);
    const turnId = await startScriptTurn(alice, chat, SCRIPT);
    await waitFor(async () => (await chatState(alice, chat)).activeTurn?.responseParts.some((p) => isPartOfKind(p, 'toolCall') && p.toolCall.status === 'pending-confirmation') || undefined, {
      what: 'the tool confirmation',
    });
    const approved = await alice.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'deploy', approved: true, confirmed: 'user-action' });
    expect(approved.rejectionReason).toBeUndefined();
    // The tool completed, the agent said so and now waits on the question.
    const waiting = await waitFor(
      async () => {
        const turn = (await chatState(alice, chat)).activeTurn;
        return turn?.responseParts.some((p) => isPartOfKind(p, 'inputRequest') && p.request.id === 'verify') ? turn : undefined;
      },
      { what: 'the question after the tool' },
    );
    const history = partsBefore(waiting.responseParts, 'verify');
    expect(markdownOf(history)).toEqual(['Deploying to production.', 'Deployed.']);
    const tool = history.find((p) => isPartOfKind(p, 'toolCall'));
    expect(tool && isPartOfKind(tool, 'toolCall') ? tool.toolCall.status : undefined).toBe('completed');

    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      hub = await rig.restart(hub, signal, args);
      alice = await rig.open(hub);
      // The question is open again (the replay reached it); everything before it is as it was.
      const again = await waitFor(
        async () => {
          const turn = (await chatState(alice, chat)).activeTurn;
          return turn?.responseParts.some((p) => isPartOfKind(p, 'inputRequest') && p.request.id === 'verify' && !p.response) ? turn : undefined;
        },
        { what: `the open question after ${signal}` },
      );
      expect(partsBefore(again.responseParts, 'verify'), `history after ${signal}`).toEqual(history);
      expect(markdownOf(again.responseParts), `nothing said again after ${signal}`).toEqual(['Deploying to production.', 'Deployed.']);
    }

    const answered = await alice.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'verify', response: 'accept', answers: { ok: { state: 'submitted', value: { kind: 'boolean', value: true } } } });
    expect(answered.rejectionReason).toBeUndefined();
    const ended = await waitFor(async (): Promise<Turn | undefined> => (await chatState(alice, chat)).turns.find((t) => t.id === turnId), { what: 'the turn to end' });
    expect(ended.state).toBe('complete');
    // What the restarts appended is only the steps that came after them.
    expect(partsBefore(ended.responseParts, 'verify')).toEqual(history);
    expect(markdownOf(ended.responseParts)).toEqual(['Deploying to production.', 'Deployed.', expect.stringMatching(/^Input accepted\./), 'All done.']);
    expect(markdownOf(ended.responseParts).join('\n')).not.toMatch(/was not run/);
  }, 120_000);
});
