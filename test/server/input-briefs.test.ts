/**
 * The root catalogue's `hub/inputNeeded` briefs (server/hub/input-briefs.ts) follow a session's
 * list change by change; whatever the changes, they must equal a build from scratch, in the
 * list's order (`entries.filter(awaitsUser).map(brief)`). Random sequences (seeded) of what the
 * session reducer and `x-session/stateReplaced` do to the list: entries added, updated in place
 * (their kind may flip between waiting and client execution), removed (present or not), and the
 * whole list replaced (sometimes by one with a repeated id), with summaries taken after 0 to 5
 * changes, as the root catalogue takes one per event-loop turn.
 */
import { describe, expect, it } from 'vitest';
import { initialSessionState, type SessionInputRequest, type SessionState } from '../../shared/protocol/state.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { awaitsUser } from '../../shared/state/status.js';
import { briefEntriesRebuilt, type InputNeededBrief, waitingBriefs } from '../../server/hub/input-briefs.js';
import { prng } from '../helpers/prng.js';

const CHATS = ['ahp-chat:/a', 'ahp-chat:/b'];
const KINDS = ['toolConfirmation', 'chatInput', 'toolClientExecution'] as const;

function entryOf(id: string, kind: (typeof KINDS)[number], chat: string, text: string): SessionInputRequest {
  if (kind === 'chatInput') return { kind, id, chat, request: { id, message: text } } as SessionInputRequest;
  return { kind, id, chat, turnId: 't1', toolCall: { toolCallId: id, status: 'pending-confirmation', toolName: 'rm', displayName: 'rm', invocationMessage: text } } as unknown as SessionInputRequest;
}

/** The briefs built from scratch: a session object the keeper has never seen. */
function fromScratch(entries: readonly SessionInputRequest[] | undefined): readonly InputNeededBrief[] {
  return waitingBriefs({ state: { inputNeeded: entries } });
}

/** Applies `steps` random changes to one session, checking its briefs after every 1 to 5; returns how many checks. */
function run(seed: number, steps: number): number {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const randomEntry = (id: string): SessionInputRequest => entryOf(id, pick(KINDS), pick(CHATS), `ask ${Math.floor(rnd() * 4)}`);
  const session: { state: SessionState } = { state: initialSessionState('ahp-session:/p', 'demo', 'P') };
  const ids: string[] = [];
  const handedOut: Array<{ briefs: readonly InputNeededBrief[]; json: string }> = [];
  let pending = 0;
  for (let step = 0; step < steps; step++) {
    const r = rnd();
    if (r < 0.4 || ids.length === 0) {
      const id = `ahp-chat:/a#n${step}`;
      ids.push(id);
      session.state = sessionReducer(session.state, { type: 'session/inputNeededSet', request: randomEntry(id) });
    } else if (r < 0.7) {
      session.state = sessionReducer(session.state, { type: 'session/inputNeededSet', request: randomEntry(pick(ids)) });
    } else if (r < 0.95) {
      session.state = sessionReducer(session.state, { type: 'session/inputNeededRemoved', id: pick(ids) });
    } else {
      // What `x-session/stateReplaced` does: a list nobody derived, in any order, maybe repeating an id.
      const fresh = (session.state.inputNeeded ?? []).map((e) => ({ ...e })).sort(() => rnd() - 0.5);
      if (fresh.length > 0 && rnd() < 0.3) fresh.push({ ...fresh[0]! });
      session.state = { ...session.state, inputNeeded: fresh.length > 0 ? fresh : undefined };
    }
    if (++pending < 1 + Math.floor(rnd() * 5)) continue;
    pending = 0;
    const briefs = waitingBriefs(session);
    const entries = session.state.inputNeeded ?? [];
    expect(briefs.map((b) => b.id)).toEqual(entries.filter(awaitsUser).map((e) => e.id));
    expect(briefs).toEqual(fromScratch(session.state.inputNeeded));
    expect(waitingBriefs(session)).toBe(briefs);
    handedOut.push({ briefs, json: JSON.stringify(briefs) });
  }
  // A brief list handed out (a published summary holds it) is never changed afterwards.
  for (const { briefs, json } of handedOut) expect(JSON.stringify(briefs)).toBe(json);
  return handedOut.length;
}

describe('input briefs follow every change of the list', () => {
  it('equal a build from scratch, in list order, after random adds, updates, kind flips, removals and replacements (200 seeds)', () => {
    let summaries = 0;
    for (let seed = 1; seed <= 200; seed++) summaries += run(seed, 300);
    expect(summaries).toBeGreaterThan(200 * 50);
  });

  it('build nothing from scratch after the first summary while every change can be followed (no kind flips, no replacements)', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const session: { state: SessionState } = { state: initialSessionState('ahp-session:/q', 'demo', 'Q') };
      const rnd = prng(seed);
      const ids: string[] = [];
      expect(waitingBriefs(session)).toEqual([]); // the keeper starts from the empty list
      for (let step = 0; step < 500; step++) {
        const r = rnd();
        if (r < 0.5 || ids.length === 0) {
          const id = `ahp-chat:/a#m${step}`;
          ids.push(id);
          session.state = sessionReducer(session.state, { type: 'session/inputNeededSet', request: entryOf(id, rnd() < 0.2 ? 'toolClientExecution' : 'toolConfirmation', CHATS[0]!, `m ${step}`) });
        } else if (r < 0.75) {
          const id = ids[Math.floor(rnd() * ids.length)]!;
          const kind = session.state.inputNeeded?.find((e) => e.id === id)?.kind ?? 'toolConfirmation';
          session.state = sessionReducer(session.state, { type: 'session/inputNeededSet', request: entryOf(id, kind as (typeof KINDS)[number], CHATS[1]!, `u ${step}`) });
        } else {
          session.state = sessionReducer(session.state, { type: 'session/inputNeededRemoved', id: ids[Math.floor(rnd() * ids.length)]! });
        }
        if (rnd() < 0.3) {
          const counted = briefEntriesRebuilt();
          const briefs = waitingBriefs(session);
          expect(briefEntriesRebuilt()).toBe(counted);
          expect(briefs).toEqual(fromScratch(session.state.inputNeeded));
        }
      }
    }
  });
});
