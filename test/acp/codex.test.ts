/**
 * Codex (`@zed-industries/codex-acp` 0.16.0, its Linux binary from npm) behind the hub, from its
 * entry in the agents example file: `CODEX_HOME` is a copy of `examples/agents/codex/` whose
 * `config.toml` (`approval_policy = "untrusted"`, `sandbox_mode = "danger-full-access"` inside the
 * hub's confinement, a `wire_api = "responses"` provider) points at a loopback OpenAI Responses
 * API mock (`mock-responses.ts`). Client A prompts; Codex asks before `touch …`; client B answers.
 * Approved: the command runs as the tenant's uid, the answer streams, the transcript shows it,
 * both replicas equal the hub. Denied: Codex gets its own reject option and the tool is denied.
 * Nothing leaves 127.0.0.1.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { CODEX } from './more-agents.js';
import { approveOnceAndCheckTurn, hostAgent, type Hosted, optionOfKind, promptUntilAsked, SLOW, transcript } from './agent-scenario.js';
import { chatState, toolOf, turnParts, waitForEnd } from './support.js';

let h: Hosted;
/** The first scenario's session: the second one prompts its agent process again (no second start). */
let first: { session: string; chat: string } | undefined;

beforeAll(async () => {
  h = await hostAgent(CODEX);
}, SLOW);

afterAll(async () => {
  await h?.close();
});

describe('Codex behind the hub (codex-acp from the agents example file, loopback Responses API mock)', () => {
  it('A prompts, Codex asks before the command, B approves it, the command runs confined, the answer streams, the transcript shows it, both replicas equal the hub', async () => {
    expect(Object.keys(h.setup.example.env)).toContain('CODEX_HOME');
    const startedAt = Date.now();
    const asked = await promptUntilAsked(h, 'Please create the marker file.');
    const { chat } = asked;
    first = { session: asked.session, chat };
    const firstQuestionMs = Date.now() - startedAt;
    expect(JSON.stringify(asked.pending)).toContain(h.model.command);
    const marker = join(h.provider.workspaceOf(asked.session), 'hub-acp-test.txt');
    expect(existsSync(marker)).toBe(false);

    await approveOnceAndCheckTurn(h, asked, marker, /\*\*Tool touch hub-acp-test\.txt:\*\* Done/);
    process.stdout.write(`codex: prompt → permission request ${firstQuestionMs} ms (includes process start), whole turn ${Date.now() - startedAt} ms\n`);
  }, 180_000);

  it('B denies: Codex gets its own reject option, the tool is denied (not cancelled by the hub), nothing runs, the transcript says Denied', async () => {
    if (first) rmSync(join(h.provider.workspaceOf(first.session), 'hub-acp-test.txt'), { force: true });
    const asked = await promptUntilAsked(h, 'Please create the marker file.', first);
    const { chat, turnId, toolCallId } = asked;
    const reject = optionOfKind(asked, 'reject_once');
    // Codex's own decisions: run it, run it and remember the command prefix, abort.
    expect(asked.options.map((o) => [o.id, o.kind, o._meta?.['acp/optionKind']])).toEqual([
      ['approved', 'approve', 'allow_once'],
      ['approved-execpolicy-amendment', 'approve', 'allow_always'],
      ['abort', 'deny', 'reject_once'],
    ]);
    await h.b.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId, approved: false, reason: 'denied', confirmed: 'user-action', selectedOptionId: reject.id });
    const turn = await waitForEnd(h.server, chat, turnId, SLOW);
    expect(toolOf(chatState(h.server, chat), turnId, toolCallId)).toMatchObject({ status: 'cancelled', reason: 'denied', selectedOption: { id: reject.id } });
    expect(existsSync(join(h.provider.workspaceOf(asked.session), 'hub-acp-test.txt'))).toBe(false);
    expect(h.logger.lines.filter((l) => l.msg.startsWith('permission asked for a tool'))).toEqual([]);
    // Codex's reject option is "abort": Codex itself then ends its prompt with stopReason
    // `cancelled` (the hub did not answer anything by itself: the tool says Denied).
    expect(turn.state).toBe('cancelled');
    expect(turnParts(chatState(h.server, chat), turnId).filter((p) => isPartOfKind(p, 'toolCall'))).toHaveLength(1);
    expect(await transcript(h, asked.session)).toMatch(/\*\*Tool touch hub-acp-test\.txt:\*\* Denied/);
  }, 180_000);
});
