/**
 * A session's `inputNeeded` lists must not keep each other alive. Each list the shared index
 * derives remembers the list it came from (so the root briefs can follow the one changed entry),
 * and that link used to hold every earlier list of the session: this burst (3,000 requests opened,
 * updated, half closed) kept 149.5 MiB; now ~1 MiB. The follower (the root briefs, once per event-loop turn) now cuts the
 * link once it has caught up, and a chain nobody follows (a browser tab applies the same reducer)
 * stops after `MAX_DERIVATION_CHAIN` lists. Measured after full collections (V8's gc, exposed
 * here through its flag), with only the newest state referenced.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { initialSessionState, type SessionInputRequest, type SessionState } from '../../shared/protocol/state.js';
import { derivationOf, MAX_DERIVATION_CHAIN } from '../../shared/state/input-needed-index.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { waitingBriefs } from '../../server/hub/input-briefs.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const REQUESTS = 3_000;
/** Far below the 149.5 MiB the unbroken chain kept, far above the newest list and its briefs (~1 MiB). */
const HEAP_BOUND_MIB = 16;

function ask(id: string, text: string): SessionInputRequest {
  return { kind: 'toolConfirmation', id, chat: 'ahp-chat:/a', turnId: 't1', toolCall: { toolCallId: id, status: 'pending-confirmation', toolName: 'rm', displayName: 'rm', invocationMessage: text } } as unknown as SessionInputRequest;
}

function heapMiB(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** 3,000 requests opened, each updated once, then all closed; `summaryEvery` changes a summary (0: none). */
function burst(session: { state: SessionState }, summaryEvery: number): void {
  let changes = 0;
  const change = (state: SessionState): void => {
    session.state = state;
    if (summaryEvery > 0 && ++changes % summaryEvery === 0) waitingBriefs(session);
  };
  for (let i = 0; i < REQUESTS; i++) change(sessionReducer(session.state, { type: 'session/inputNeededSet', request: ask(`r${i}`, `delete file ${i}`) }));
  for (let i = 0; i < REQUESTS; i++) change(sessionReducer(session.state, { type: 'session/inputNeededSet', request: ask(`r${i}`, `delete file ${i} (again)`) }));
  // Half stay open, so the lists a leak would keep are long ones.
  for (let i = 0; i < REQUESTS / 2; i++) change(sessionReducer(session.state, { type: 'session/inputNeededRemoved', id: `r${i}` }));
}

function chainLength(entries: readonly SessionInputRequest[] | undefined): number {
  let n = 0;
  for (let cur = entries; cur && derivationOf(cur); cur = derivationOf(cur)!.from) n++;
  return n;
}

describe("a session's inputNeeded lists", () => {
  it('followed by the root briefs (a summary every 8 changes), keep no earlier list alive', () => {
    const before = heapMiB();
    const session = { state: initialSessionState('ahp-session:/m', 'demo', 'M') };
    burst(session, 8);
    waitingBriefs(session);
    const grown = heapMiB() - before;
    expect(session.state.inputNeeded).toHaveLength(REQUESTS / 2);
    expect(chainLength(session.state.inputNeeded)).toBe(0);
    expect(grown).toBeLessThan(HEAP_BOUND_MIB);
  });

  it('followed by nobody (as in a browser tab), keep at most MAX_DERIVATION_CHAIN lists behind the newest', () => {
    const before = heapMiB();
    const session = { state: initialSessionState('ahp-session:/n', 'demo', 'N') };
    burst(session, 0);
    const grown = heapMiB() - before;
    expect(chainLength(session.state.inputNeeded)).toBeLessThanOrEqual(MAX_DERIVATION_CHAIN);
    expect(grown).toBeLessThan(HEAP_BOUND_MIB);
  });
});
