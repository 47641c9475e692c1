/**
 * The case format of the conformance suite: every case is data — its actors, the steps they and
 * the fault proxy take, the invariants checked at the end and the outcomes it may end in — and
 * one runner (`runner.ts`) interprets them all. A case also names the planted bug that must make
 * it fail (`planted`), so the suite can show each invariant check catching something.
 */
import type { Direction, FrameVerdict, HttpVerdict } from './fault-proxy.js';
import type { Flaws } from './actor.js';

export type Surface = 'ahp-ws' | 'http-sse' | 'acp-bridge';

/** The faults of the ACP Remote draft's list that this suite injects. */
export const FAULTS = {
  'drop-before-accept': 'drop a client message before the hub accepts it',
  'drop-after-accept': 'drop the answer to a client message the hub accepted',
  'drop-response': 'drop a JSON-RPC response',
  'drop-events': 'drop events (the connection dies with them in flight)',
  duplicate: 'duplicate every event',
  barrier: 'delay messages to a barrier and release them together',
  'abort-mid-frame': 'abort the connection in the middle of a frame',
  'half-close': 'half-close the client-to-hub direction',
  'http-5xx': 'answer 503 without Retry-After',
  'http-5xx-retry-after': 'answer 503 with Retry-After',
  'token-revoked': 'revoke or replace the token (token file reload, SIGHUP)',
  'restart-durable': 'restart the hub on its data (SIGKILL)',
  'restart-no-state': 'restart the hub without its data',
  'retention-truncated': 'the replay window no longer covers the cursor',
  'paused-consumer': 'pause a consumer until the hub gives up on it',
  'clock-skew': 'actors with wall clocks a day apart',
  'sse-cut': 'cut an SSE stream after some events',
  'session-moved': 'move a session to another node and fence (drain) the old owner',
  'store-cut': 'cut the links between a hub node and PostgreSQL',
} as const;
export type Fault = keyof typeof FAULTS;

export const INVARIANTS = {
  'acked-kept': 'nothing acknowledged is lost',
  'applied-once': 'nothing is applied twice',
  'replicas-converge': "every replica converges to the hub's snapshot",
  'one-winner': 'every race has one winner and the losers are told who won',
  'outcome-known': 'every outcome the client did not hear was looked up',
} as const;
export type Invariant = keyof typeof INVARIANTS;

/**
 * What a case needs from its host. `own-hub`: a hub the runner starts for this case alone (it is
 * restarted, its tokens replaced, or it runs with small limits), so the case cannot run against
 * `--url`.
 */
export type HostNeed = 'own-hub' | 'cluster';

/** A channel named by a case: a session the case created (`S`), its default chat (`S.chat`). */
export type ChannelRef = `${string}.chat` | `${string}.session`;

/** Which frames a rule acts on, as data. */
export interface FrameMatch {
  /** Client frames: a JSON-RPC method (`dispatchAction`, `createSession`, …). */
  method?: string;
  /** `dispatchAction` frames of this operation (its clientSeq at the time of matching). */
  op?: string;
  /** Hub frames: the echo of this operation. */
  echoOf?: string;
  /** Hub frames: a JSON-RPC success whose result has this key. */
  resultHas?: string;
  /** Hub frames: any action envelope. */
  envelope?: boolean;
  /** Hub frames: action envelopes of this action type. */
  actionType?: string;
}

export interface FrameRuleSpec {
  direction: Direction;
  match: FrameMatch;
  verdict: FrameVerdict;
  times?: number;
}

export interface HttpRuleSpec {
  /** A regular expression on `METHOD path`. */
  route: string;
  verdict: HttpVerdict;
  times?: number;
}

export type Step =
  | { do: 'connect'; actor: string; token?: string }
  | { do: 'createSession'; actor: string; as: string; retryOnLoss?: boolean }
  | { do: 'subscribe'; actor: string; channel: ChannelRef }
  | { do: 'fault'; actor: string; rule: FrameRuleSpec }
  | { do: 'httpFault'; actor: string; rule: HttpRuleSpec }
  /** A turn on the chat: `chat/turnStarted` with a demo-agent script (the op's marker in its text). */
  | { do: 'turn'; actor: string; chat: string; op: string; script: unknown[]; clockSkewMs?: number }
  /** Submits the open input request `requestId` of the chat's active turn with the text answer `text`. */
  | { do: 'answer'; actor: string; chat: string; op: string; requestId: string; questionId: string }
  | { do: 'draft'; actor: string; chat: string; op: string; requestId: string; questionId: string; chars: number }
  /** `note`: the case's outcome becomes how the op was answered (accepted, refused-clearly, refused). */
  | { do: 'awaitAnswer'; actor: string; op: string; note?: boolean }
  | { do: 'awaitHeld'; barrier: string; count: number }
  | { do: 'release'; barrier: string }
  | { do: 'cut'; actor: string }
  | { do: 'reconnect'; actor: string; token?: string; expectRefused?: boolean }
  /** Waits until the actor's connection is gone; `noteAnswerOf`: the outcome says whether that op was answered before. */
  | { do: 'awaitClosed'; actor: string; code?: number; noteAnswerOf?: string }
  | { do: 'resume'; actor: string }
  | { do: 'awaitIdle'; chat: string }
  | { do: 'awaitInputRequest'; chat: string; requestId: string }
  | { do: 'restartHub'; durable: boolean }
  /** Cluster: the serving node drains (SIGTERM) and the actors' proxies turn to the other node. */
  | { do: 'moveSession' }
  /** Cluster: every connection between the serving node and PostgreSQL is cut. */
  | { do: 'cutStore' }
  | { do: 'replaceToken'; from: string; to: string }
  /** Drafts until the hub closed a paused consumer (its slow-consumer counter rose). */
  | { do: 'floodUntilSlowClose'; actor: string; chat: string; requestId: string; questionId: string }
  /** Replies to the newest permission request on the actor's stream (qwen's reply route). */
  | { do: 'httpReply'; actor: string; op: string; optionId: string }
  | { do: 'sseOpen'; actor: string; session: string }
  | { do: 'sseAwait'; actor: string; type: string; count?: number }
  | { do: 'sseResume'; actor: string }
  | { do: 'bridgeOpen'; actor: string; session: string }
  | { do: 'bridgePrompt'; actor: string; op: string; script: unknown[] }
  | { do: 'bridgeAwait'; actor: string; op: string };

export interface PlantedBug {
  /** What is planted, in words (goes into docs/conformance.md). */
  readonly how: string;
  /** The client flaws the planted run gives each actor. */
  readonly flaws?: Record<string, Flaws>;
  /** Planted on the hub's side of the proxy: the runner gives the hub a fresh data dir instead of its own. */
  readonly loseHubState?: boolean;
  /** The invariant the planted run must break. */
  readonly breaks: Invariant;
}

export interface ConformanceCase {
  readonly id: string;
  readonly surface: Surface;
  readonly title: string;
  readonly faults: readonly Fault[];
  readonly actors: readonly string[];
  readonly needs?: readonly HostNeed[];
  /** Extra environment for an own hub (limits). */
  readonly hubEnv?: Record<string, string>;
  /** Tokens (by handle) an own hub starts with; the case's actors connect with handles. */
  readonly tokens?: readonly string[];
  readonly steps: readonly Step[];
  readonly invariants: readonly Invariant[];
  /** Empty: the case has one outcome (`expect`). Otherwise the finite set it may end in. */
  readonly allowedOutcomes: readonly string[];
  readonly expect?: string;
  readonly planted: PlantedBug;
}
