/** The ACP editor bridge cases: an editor prompts through the real bridge, whose hub connection goes through the proxy. */
import type { ConformanceCase, Step } from '../case-format.js';

const opening: Step[] = [
  { do: 'connect', actor: 'a' },
  { do: 'createSession', actor: 'a', as: 'S' },
  { do: 'subscribe', actor: 'a', channel: 'S.chat' },
  { do: 'bridgeOpen', actor: 'e', session: 'S' },
];
const SCRIPT = [{ say: '$marker' }, { say: ' then more' }, { tool: { id: 'tool-1', name: 'lookup' } }, { say: ' and the end' }];

export const ACP_BRIDGE_CASES: readonly ConformanceCase[] = [
  {
    id: 'acp.bridge.hub-link-cut-mid-turn',
    surface: 'acp-bridge',
    title: "the bridge's hub connection is cut right after the turn's first part; it reconnects, and the editor's prompt ends with the whole turn shown once",
    faults: ['drop-events'],
    actors: ['a', 'e'],
    steps: [
      ...opening,
      { do: 'fault', actor: 'e', rule: { direction: 'toClient', match: { actionType: 'chat/responsePart' }, verdict: 'passThenCut' } },
      { do: 'bridgePrompt', actor: 'e', op: 'p1', script: SCRIPT },
      { do: 'bridgeAwait', actor: 'e', op: 'p1' },
      { do: 'awaitIdle', chat: 'S' },
    ],
    invariants: ['acked-kept', 'applied-once', 'outcome-known', 'replicas-converge'],
    allowedOutcomes: [],
    planted: { how: 'the bridge is started with reconnect: false (its SDK does not re-open the hub connection)', flaws: { e: { bridgeNoReconnect: true } }, breaks: 'outcome-known' },
  },
  {
    id: 'acp.bridge.prompt-aborted-mid-frame',
    surface: 'acp-bridge',
    title: "the bridge's turnStarted frame is aborted half-way; the SDK re-sends it with its clientSeq after reconnecting and the turn runs once",
    faults: ['abort-mid-frame', 'drop-before-accept'],
    actors: ['a', 'e'],
    steps: [
      ...opening,
      { do: 'fault', actor: 'e', rule: { direction: 'toServer', match: { method: 'dispatchAction' }, verdict: 'abortMidFrame' } },
      { do: 'bridgePrompt', actor: 'e', op: 'p1', script: SCRIPT },
      { do: 'bridgeAwait', actor: 'e', op: 'p1' },
      { do: 'awaitIdle', chat: 'S' },
    ],
    invariants: ['acked-kept', 'applied-once', 'outcome-known', 'replicas-converge'],
    allowedOutcomes: [],
    planted: { how: 'the bridge is started with reconnect: false (its SDK does not re-open the hub connection)', flaws: { e: { bridgeNoReconnect: true } }, breaks: 'outcome-known' },
  },
];
