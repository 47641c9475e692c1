/**
 * Issue 18 item 7: one agent asks 3,000 permissions at once. Before, every commit re-checked
 * every waiting request of the turn (the agent runner's waiters, the interaction registry's
 * reconciliation, the session's input-needed roll-up), so the burst cost roughly n³ and stalled
 * the hub for over a minute. Now a commit that changes one tool call looks at that one only.
 *
 * Complexity is asserted by counting work, not by timing: how often the agent's wait conditions
 * are evaluated, and how many interactions the registry examines, must grow linearly with the
 * burst. The roll-up's shortcut is checked for giving the same session state as the full diff.
 */
import { expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import type { AgentProvider, TurnContext } from '../../server/agents/agent.js';
import { AgentRunner } from '../../server/agents/agent-runner.js';
import { Hub } from '../../server/hub/hub.js';
import { SessionStreams } from '../../server/interactions/event-stream.js';
import { InteractionRegistry } from '../../server/interactions/registry.js';
import { silentLogger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { findDecidedToolCall } from '../../shared/state/selectors.js';
import { sessionInputNeededEntries } from '../../shared/state/status.js';
import { waitFor } from '../helpers/wait-for.js';

const BURST = 3_000;
const SESSION = 'ahp-session:/burst';

it(`a burst of ${BURST} permission requests from one agent is asked and answered with linear bookkeeping`, async () => {
  let n = 0;
  const hub = await Hub.open({
    log: new MemoryActionLog(),
    logger: silentLogger,
    now: () => 1_000,
    newId: () => `id-${++n}`,
    agents: [{ provider: 'burst', displayName: 'Burst' }],
    defaultProvider: 'burst',
  });
  let evaluations = 0;
  let answered = 0;
  // What a hosted ACP agent does per `session/request_permission`: start the tool, ask, wait for the decision.
  const provider: AgentProvider = {
    info: { provider: 'burst', displayName: 'Burst' },
    async runTurn(ctx: TurnContext) {
      await Promise.all(
        Array.from({ length: BURST }, async (_, i) => {
          const toolCallId = `tool-${i}`;
          await ctx.dispatch({ type: 'chat/toolCallStart', turnId: ctx.turnId, toolCallId, toolName: 'touch', displayName: 'touch' });
          await ctx.dispatch({ type: 'chat/toolCallReady', turnId: ctx.turnId, toolCallId, invocationMessage: 'touch', confirmationTitle: 'Allow touch?' });
          await ctx.waitFor((state) => {
            evaluations++;
            return findDecidedToolCall(state, toolCallId);
          }, toolCallId);
          answered++;
        }),
      );
      return 'complete';
    },
  };
  const runner = new AgentRunner(
    hub,
    new Map([['burst', provider]]),
    silentLogger,
    () => 1_000,
    () => `r-${++n}`,
  );
  runner.start();
  const registry = new InteractionRegistry(hub, new SessionStreams(), silentLogger, () => `q-${++n}`);
  registry.start();
  const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: SESSION });

  await hub.submitAs(DEV_PRINCIPAL, chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: '1970-01-01T00:00:00.000Z', message: { text: 'go', origin: { kind: 'user' } } });
  await waitFor(() => registry.pending(SESSION).length === BURST || undefined, { what: 'every request to be pending', timeoutMs: 500_000 });
  // The session lists exactly what the chat is blocked on (the roll-up shortcut agrees with the full diff).
  expect(hub.sessionEntry(SESSION)!.state.inputNeeded).toEqual(sessionInputNeededEntries(chat, hub.chatEntry(chat)!.state));
  expect(hub.sessionEntry(SESSION)!.state.inputNeeded).toHaveLength(BURST);

  for (let i = 0; i < BURST; i++) {
    void hub.submitAs(DEV_PRINCIPAL, chat, { type: 'chat/toolCallConfirmed', turnId: 't1', toolCallId: `tool-${i}`, approved: true, confirmed: 'user-action' });
  }
  await waitFor(() => answered === BURST || undefined, { what: 'every answer to reach the agent', timeoutMs: 500_000 });
  expect(registry.pending(SESSION)).toEqual([]);
  expect(hub.sessionEntry(SESSION)!.state.inputNeeded ?? []).toEqual([]);

  // Linear: a few evaluations and visits per request (start, ready, decision), never one per pending request.
  expect(evaluations).toBeLessThanOrEqual(3 * BURST);
  expect(registry.visits).toBeLessThanOrEqual(5 * BURST);
  registry.stop();
  await runner.stop();
  await hub.close();
}, 600_000);
