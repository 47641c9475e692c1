/** The qwen / DataWorks HTTP and SSE cases: an AHP actor starts the turn, an HTTP actor follows and answers it. */
import type { ConformanceCase, Step } from '../case-format.js';

/** A demo-agent turn whose tool needs a confirmation, with text before and after. */
const CONFIRMING = [{ say: '$marker' }, { tool: { id: 'tool-1', name: 'deploy', confirm: true } }, { say: 'deployed' }];

const opening: Step[] = [
  { do: 'connect', actor: 'a' },
  { do: 'createSession', actor: 'a', as: 'S' },
  { do: 'subscribe', actor: 'a', channel: 'S.chat' },
  { do: 'sseOpen', actor: 'h', session: 'S' },
  { do: 'turn', actor: 'a', chat: 'S', op: 't1', script: CONFIRMING },
  { do: 'sseAwait', actor: 'h', type: 'permission_request' },
];
const closing: Step[] = [
  { do: 'awaitIdle', chat: 'S' },
  { do: 'sseAwait', actor: 'h', type: 'turn_end' },
];

export const HTTP_SSE_CASES: readonly ConformanceCase[] = [
  {
    id: 'http.reply.503-retry-after',
    surface: 'http-sse',
    title: 'a qwen permission reply answered 503 with Retry-After (never reaching the hub) is sent again after the hint and taken once',
    faults: ['http-5xx-retry-after'],
    actors: ['a', 'h'],
    steps: [
      ...opening,
      { do: 'httpFault', actor: 'h', rule: { route: '^POST /session/.*/permission/', verdict: { respond: { status: 503, headers: { 'Retry-After': '1' }, body: '{"code":"unavailable"}' } } } },
      { do: 'httpReply', actor: 'h', op: 'r1', optionId: 'proceed_once' },
      ...closing,
    ],
    invariants: ['acked-kept', 'applied-once', 'outcome-known', 'replicas-converge'],
    allowedOutcomes: [],
    planted: { how: 'the HTTP client gives up on a 5xx instead of retrying', flaws: { h: { giveUpOn5xx: true } }, breaks: 'outcome-known' },
  },
  {
    id: 'http.reply.503-no-hint',
    surface: 'http-sse',
    title: 'a qwen permission reply answered 503 twice without Retry-After is retried with backoff and taken once',
    faults: ['http-5xx'],
    actors: ['a', 'h'],
    steps: [
      ...opening,
      { do: 'httpFault', actor: 'h', rule: { route: '^POST /session/.*/permission/', verdict: { respond: { status: 503, body: '' } }, times: 2 } },
      { do: 'httpReply', actor: 'h', op: 'r1', optionId: 'proceed_once' },
      ...closing,
    ],
    invariants: ['acked-kept', 'applied-once', 'outcome-known', 'replicas-converge'],
    allowedOutcomes: [],
    planted: { how: 'the HTTP client gives up on a 5xx instead of retrying', flaws: { h: { giveUpOn5xx: true } }, breaks: 'outcome-known' },
  },
  {
    id: 'http.reply.response-lost',
    surface: 'http-sse',
    title: 'the hub takes a reply but its answer is cut off; the retry finds the request gone and the client looks the outcome up on the stream',
    faults: ['drop-after-accept', 'drop-response'],
    actors: ['a', 'h'],
    steps: [...opening, { do: 'httpFault', actor: 'h', rule: { route: '^POST /session/.*/permission/', verdict: 'forwardThenCut' } }, { do: 'httpReply', actor: 'h', op: 'r1', optionId: 'proceed_once' }, ...closing],
    invariants: ['acked-kept', 'applied-once', 'outcome-known', 'replicas-converge'],
    allowedOutcomes: ['resolved-by-lookup'],
    planted: { how: 'the client takes "permission_request_not_found" after a lost answer as a refusal, without looking it up', flaws: { h: { trustNotFound: true } }, breaks: 'outcome-known' },
  },
  {
    id: 'sse.stream.cut-and-resumed',
    surface: 'http-sse',
    title: 'the event stream is cut after two events; resumed with Last-Event-ID it carries every later event once',
    faults: ['sse-cut', 'drop-events'],
    actors: ['a', 'h'],
    steps: [
      { do: 'connect', actor: 'a' },
      { do: 'createSession', actor: 'a', as: 'S' },
      { do: 'subscribe', actor: 'a', channel: 'S.chat' },
      { do: 'httpFault', actor: 'h', rule: { route: '^GET /v2/sessions/.*/events', verdict: { cutAfterSseEvents: 2 } } },
      { do: 'sseOpen', actor: 'h', session: 'S' },
      { do: 'turn', actor: 'a', chat: 'S', op: 't1', script: [{ say: '$marker' }, { say: ' second' }, { say: ' third' }, { tool: { id: 'tool-1', name: 'lookup' } }, { say: ' last' }] },
      { do: 'awaitIdle', chat: 'S' },
      { do: 'sseResume', actor: 'h' },
      { do: 'sseAwait', actor: 'h', type: 'turn_end' },
    ],
    invariants: ['acked-kept', 'replicas-converge'],
    allowedOutcomes: [],
    planted: { how: 'the SSE client reopens the stream without Last-Event-ID', flaws: { h: { resumeWithoutLastEventId: true } }, breaks: 'replicas-converge' },
  },
];
