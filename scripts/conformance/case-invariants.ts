/**
 * The invariants a conformance case names, checked after its steps against the hub's own answers
 * (read on a connection that bypasses every proxy): acknowledged actions kept, applied once,
 * every outcome known, one winner of a race, replicas equal to the hub's snapshots. Split from
 * runner.ts, which runs the steps; `InvariantSubject` is the part of a run they read.
 */
import type { Actor } from './actor.js';
import { withoutHubMeta } from './actor.js';
import type { ConformanceCase } from './case-format.js';
import type { BridgeActor } from './bridge-actor.js';
import type { HttpActor } from './http-actor.js';
import type { CaseContext, CaseResult, CaseSession } from './case-types.js';
import { asJson, countWitnesses, firstDifference, sameJson, supersededDraft, until } from './case-match.js';

/** What the invariant checks read of a case run (`CaseRun` in runner.ts). */
export interface InvariantSubject extends CaseContext {
  readonly spec: ConformanceCase;
  readonly planted: boolean;
  readonly actors: ReadonlyMap<string, Actor>;
  readonly http: ReadonlyMap<string, HttpActor>;
  readonly bridges: ReadonlyMap<string, BridgeActor>;
  readonly sessions: Map<string, CaseSession>;
  readonly requestOutcomes: ReadonlyMap<string, string>;
  /** The case's outcome so far; a race's winner names it. */
  outcome: string;
  marker(op: string): string;
  /** A connection to the hub that bypasses every proxy. */
  truth(): Promise<Actor>;
}

export async function checkInvariants(run: InvariantSubject, violations: CaseResult['violations']): Promise<void> {
  const truth = await run.truth();
  try {
    const states = new Map<string, unknown>();
    const stateOf = async (channel: string): Promise<unknown> => {
      // A channel the hub no longer has (restarted without its data) has no state.
      const s = await truth.subscribe(channel).then(
        () => truth.replicas.get(channel)!.state,
        () => undefined,
      );
      states.set(channel, s);
      return s;
    };
    for (const s of run.sessions.values()) {
      await stateOf(s.chat);
      await stateOf(s.session);
    }
    const ops = [...run.actors.values()].flatMap((a) => a.operations.map((op) => ({ actor: a, op })));
    for (const inv of run.spec.invariants) {
      if (inv === 'acked-kept') {
        for (const { actor, op } of ops) {
          if (op.status !== 'accepted' || supersededDraft(op, ops)) continue;
          const state = states.get(op.channel);
          if (countWitnesses(state, op, run.marker(op.key)) < 1) violations.push({ invariant: inv, detail: `${actor.name}'s ${op.key} was acknowledged (serverSeq ${op.serverSeq}) but is not in the hub's state` });
        }
      }
      if (inv === 'applied-once') {
        for (const { actor, op } of ops) {
          const n = countWitnesses(states.get(op.channel), op, run.marker(op.key));
          if (n > 1) violations.push({ invariant: inv, detail: `${actor.name}'s ${op.key} is in the hub's state ${n} times` });
        }
        for (const [key, outcome] of run.requestOutcomes) if (outcome === 'created-twice') violations.push({ invariant: inv, detail: `createSession ${key} made two sessions for one operation` });
        const titles = (await truth.request<{ items: Array<{ title?: string }> }>('listSessions', { channel: 'ahp-root://', limit: 200 })).items;
        for (const key of run.requestOutcomes.keys()) {
          const n = titles.filter((t) => t.title === run.marker(key)).length;
          if (n > 1) violations.push({ invariant: inv, detail: `${n} sessions carry the title of createSession ${key}` });
        }
      }
      if (inv === 'outcome-known') {
        for (const { actor, op } of ops) if (op.status === 'pending') violations.push({ invariant: inv, detail: `${actor.name} never learned the outcome of ${op.key} (sent ${op.sends}×)` });
        for (const [key, outcome] of run.requestOutcomes) if (outcome === 'unknown') violations.push({ invariant: inv, detail: `createSession ${key}: outcome unknown` });
        for (const h of run.http.values()) for (const d of h.unknownOutcomes()) violations.push({ invariant: inv, detail: `${h.name}: ${d}` });
      }
      if (inv === 'one-winner') checkRace(run, violations);
      if (inv === 'replicas-converge') await checkConvergence(run, truth, violations);
    }
    for (const h of run.http.values()) h.checkInvariants(run.spec.invariants, violations, states, run);
    for (const b of run.bridges.values()) b.checkInvariants(run.spec.invariants, violations, states, run);
  } finally {
    truth.close();
  }
}

function checkRace(run: InvariantSubject, violations: CaseResult['violations']): void {
  const racers = [...run.actors.values()].flatMap((a) => a.operations.filter((o) => o.key.startsWith('race-')).map((op) => ({ actor: a, op })));
  const winners = racers.filter((r) => r.op.status === 'accepted');
  if (winners.length !== 1) {
    violations.push({ invariant: 'one-winner', detail: `${winners.length} of ${racers.length} racing answers were accepted` });
    return;
  }
  const winner = winners[0]!;
  if (run.outcome === 'completed') run.outcome = `${winner.actor.name} won`;
  for (const loser of racers.filter((r) => r !== winner)) {
    if (loser.op.status !== 'rejected') violations.push({ invariant: 'one-winner', detail: `${loser.actor.name}'s ${loser.op.key} has no answer` });
    const told = loser.actor.received.some((e) => e.rejectionReason === undefined && e.origin?.clientId === winner.actor.clientId && e.origin.clientSeq === winner.op.clientSeq);
    if (!told) violations.push({ invariant: 'one-winner', detail: `${loser.actor.name} was never shown the winning answer of ${winner.actor.name}` });
  }
}

async function checkConvergence(run: InvariantSubject, truth: Actor, violations: CaseResult['violations']): Promise<void> {
  for (const actor of run.actors.values()) {
    for (const [channel, replica] of actor.replicas) {
      if (replica.missing) continue;
      try {
        await until(
          `${actor.name}'s replica of ${channel}`,
          async () => {
            // A ping on the actor's own connection: every envelope committed before it arrives first.
            if (actor.connected) await actor.request('ping', {});
            await truth.subscribe(channel);
            return sameJson(withoutHubMeta(replica.state), withoutHubMeta(truth.replicas.get(channel)!.state));
          },
          run.planted ? 1_000 : 5_000,
        );
      } catch {
        const hub = await truth.subscribe(channel).then(
          () => truth.replicas.get(channel)!.state,
          (err: Error) => `(the hub has no such channel: ${err.message})`,
        );
        violations.push({ invariant: 'replicas-converge', detail: `${actor.name}'s replica of ${channel} differs from the hub's snapshot: ${firstDifference(asJson(withoutHubMeta(replica.state)), asJson(withoutHubMeta(hub)))}` });
      }
    }
  }
}
