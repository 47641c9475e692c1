/** The cluster cases: two hub nodes on one PostgreSQL database, each through its own TCP proxy to PostgreSQL. */
import type { ConformanceCase } from '../case-format.js';

export const CLUSTER_CASES: readonly ConformanceCase[] = [
  {
    id: 'cluster.session-moved-mid-turn',
    surface: 'ahp-ws',
    title: 'the node running a turn drains (SIGTERM): its lease is handed over, the client gets 4012 and resumes on the other node, the turn completes there',
    faults: ['session-moved'],
    actors: ['a'],
    needs: ['cluster'],
    steps: [
      { do: 'connect', actor: 'a' },
      { do: 'createSession', actor: 'a', as: 'S' },
      { do: 'subscribe', actor: 'a', channel: 'S.chat' },
      { do: 'turn', actor: 'a', chat: 'S', op: 't1', script: [{ say: '$marker' }, { sleep: 1_000 }, { say: ' after the move' }] },
      { do: 'awaitAnswer', actor: 'a', op: 't1' },
      { do: 'moveSession' },
      { do: 'awaitClosed', actor: 'a', code: 4012 },
      // The turn ends on the other node while the client is away, so what it resumes holds the
      // rest of the turn: resuming at the live edge (the planted bug) then always misses it.
      { do: 'awaitIdle', chat: 'S' },
      { do: 'reconnect', actor: 'a' },
    ],
    invariants: ['acked-kept', 'applied-once', 'outcome-known', 'replicas-converge'],
    allowedOutcomes: [],
    planted: { how: 'the client resumes from the live edge of the new node instead of its cursor', flaws: { a: { cursorAhead: true } }, breaks: 'replicas-converge' },
  },
  {
    id: 'cluster.store-link-cut',
    surface: 'ahp-ws',
    title: 'every connection between the serving node and PostgreSQL is cut as a dispatch arrives; it is answered (applied once, or refused by name) and a client away meanwhile catches up',
    faults: ['store-cut'],
    actors: ['a', 'b'],
    needs: ['cluster'],
    steps: [
      { do: 'connect', actor: 'b' },
      { do: 'createSession', actor: 'b', as: 'S' },
      { do: 'subscribe', actor: 'b', channel: 'S.chat' },
      { do: 'connect', actor: 'a' },
      { do: 'subscribe', actor: 'a', channel: 'S.chat' },
      { do: 'fault', actor: 'b', rule: { direction: 'toServer', match: { op: 't1' }, verdict: { hold: 'store' } } },
      { do: 'turn', actor: 'b', chat: 'S', op: 't1', script: [{ say: '$marker' }, { say: ' more' }] },
      { do: 'awaitHeld', barrier: 'store', count: 1 },
      { do: 'cut', actor: 'a' },
      { do: 'cutStore' },
      { do: 'release', barrier: 'store' },
      { do: 'awaitAnswer', actor: 'b', op: 't1', note: true },
      { do: 'awaitIdle', chat: 'S' },
      { do: 'reconnect', actor: 'a' },
    ],
    invariants: ['acked-kept', 'applied-once', 'outcome-known', 'replicas-converge'],
    allowedOutcomes: ['accepted', 'refused-clearly'],
    planted: { how: 'the client that was away resumes from the live edge instead of its cursor', flaws: { a: { cursorAhead: true } }, breaks: 'replicas-converge' },
  },
];
