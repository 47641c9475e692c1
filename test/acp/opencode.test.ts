/**
 * OpenCode (`opencode-ai` 1.18.33, `opencode acp`, its Linux binary from npm) behind the hub, from
 * its entry in the agents example file: `OPENCODE_CONFIG` names a copy of
 * `examples/agents/opencode/opencode.json` (an `@ai-sdk/openai-compatible` provider pointed at the
 * loopback chat-completions mock, `permission.bash: "ask"`), with the `OPENCODE_DISABLE_*`
 * switches that keep it from fetching models, plugins or updates. OpenCode reports its tool as in
 * progress and only then asks permission: the hub moves the running tool back to
 * pending-confirmation and client B answers. Approved: the command runs as the tenant's uid, the
 * answer streams, the transcript shows it, both replicas equal the hub. Denied: OpenCode gets its
 * own reject option and the tool is denied. Nothing leaves 127.0.0.1.
 */
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { OPENCODE } from './more-agents.js';
import { approveOnceAndCheckTurn, hostAgent, type Hosted, optionOfKind, promptUntilAsked, SLOW, toolActionsSeenBy, transcript } from './agent-scenario.js';
import { chatState, toolOf, turnParts, waitForEnd } from './support.js';

let h: Hosted;
/** The first scenario's session: the second one prompts its agent process again (no second start). */
let first: { session: string; chat: string } | undefined;

beforeAll(async () => {
  h = await hostAgent(OPENCODE);
}, SLOW);

afterAll(async () => {
  await h?.close();
});

describe('OpenCode behind the hub (opencode acp from the agents example file, loopback chat-completions mock)', () => {
  it('A prompts, OpenCode starts the tool and then asks, B approves it, the command runs confined, the answer streams, the transcript shows it, both replicas equal the hub', async () => {
    expect(Object.keys(h.setup.example.env)).toContain('OPENCODE_CONFIG');
    const startedAt = Date.now();
    const asked = await promptUntilAsked(h, 'Please create the marker file.');
    const { chat, toolCallId } = asked;
    first = { session: asked.session, chat };
    const firstQuestionMs = Date.now() - startedAt;
    expect(JSON.stringify(asked.pending)).toContain(h.model.command);
    // The tool ran (as OpenCode reported it) before the confirmation request reached B.
    const seen = toolActionsSeenBy(h.b, chat, toolCallId);
    const running = seen.findIndex((a) => a['type'] === 'chat/toolCallReady' && a['confirmed'] === 'not-needed');
    const askedAt = seen.findIndex((a) => a['type'] === 'chat/toolCallReady' && a['confirmed'] === undefined);
    expect(running, JSON.stringify(seen)).toBeGreaterThanOrEqual(0);
    expect(askedAt).toBeGreaterThan(running);
    const marker = join(h.provider.workspaceOf(asked.session), 'hub-acp-test.txt');
    expect(existsSync(marker)).toBe(false);

    await approveOnceAndCheckTurn(h, asked, marker, /\*\*Tool bash:\*\* Done\n\ntouch hub-acp-test\.txt\n/);
    process.stdout.write(`opencode: prompt → permission request ${firstQuestionMs} ms (includes process start), whole turn ${Date.now() - startedAt} ms\n`);
  }, 180_000);

  it("another local user cannot drive OpenCode's own HTTP server on 127.0.0.1: it asks for the per-process password the hub sets (secretEnv)", async () => {
    expect(h.setup.example.secretEnv).toEqual(['OPENCODE_SERVER_PASSWORD']);
    if (!first) throw new Error('needs the first scenario: its agent process is the one probed');
    const uid = statSync(h.provider.workspaceOf(first.session)).uid;
    // Confined, the agent's listening sockets are the only ones of the tenant's uid (the hub
    // shares its network namespace: other users' processes can connect to them).
    if (h.setup.unconfinedBecause !== undefined) return;
    const ports = listeningLoopbackPorts(uid);
    expect(ports.length, 'OpenCode listens on 127.0.0.1').toBeGreaterThan(0);
    for (const port of ports) {
      const res = await fetch(`http://127.0.0.1:${port}/session`);
      expect(res.status, `GET /session on OpenCode's port ${port} without the password`).toBe(401);
    }
  });

  it('B denies the running tool: OpenCode gets its own reject option, the tool is denied (not cancelled by the hub), nothing runs, the transcript says Denied', async () => {
    if (first) rmSync(join(h.provider.workspaceOf(first.session), 'hub-acp-test.txt'), { force: true });
    const asked = await promptUntilAsked(h, 'Please create the marker file.', first);
    const { chat, turnId, toolCallId } = asked;
    const reject = optionOfKind(asked, 'reject_once');
    expect(asked.options.map((o) => [o.id, o.kind, o._meta?.['acp/optionKind']])).toEqual([
      ['once', 'approve', 'allow_once'],
      ['always', 'approve', 'allow_always'],
      ['reject', 'deny', 'reject_once'],
    ]);
    await h.b.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId, approved: false, reason: 'denied', confirmed: 'user-action', selectedOptionId: reject.id });
    const turn = await waitForEnd(h.server, chat, turnId, SLOW);
    expect(toolOf(chatState(h.server, chat), turnId, toolCallId)).toMatchObject({ status: 'cancelled', reason: 'denied', selectedOption: { id: reject.id } });
    expect(existsSync(join(h.provider.workspaceOf(asked.session), 'hub-acp-test.txt'))).toBe(false);
    expect(h.logger.lines.filter((l) => l.msg.startsWith('permission asked for a tool'))).toEqual([]);
    // OpenCode stops its loop after a rejection and ends the prompt itself (end_turn).
    expect(turn.state).toBe('complete');
    expect(turnParts(chatState(h.server, chat), turnId).filter((p) => isPartOfKind(p, 'toolCall'))).toHaveLength(1);
    expect(await transcript(h, asked.session)).toMatch(/\*\*Tool bash:\*\* Denied\n\ntouch hub-acp-test\.txt\n/);
  }, 180_000);
});

/** TCP ports on 127.0.0.1 in LISTEN state whose socket belongs to `uid` (from /proc/net/tcp). */
function listeningLoopbackPorts(uid: number): number[] {
  const ports: number[] = [];
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8 || f[3] !== '0A' || Number(f[7]) !== uid) continue;
    const [addr, port] = f[1]!.split(':');
    if (addr === '0100007F') ports.push(Number.parseInt(port!, 16));
  }
  return ports;
}
