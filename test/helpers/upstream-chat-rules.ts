/**
 * An AHP chat replica that follows the upstream reducer rules as the specification and the
 * upstream fixtures state them (written here from those rules, independent of the hub's
 * `shared/state/chat-reducer.ts`), for the actions a hub-backed turn produces. It is what an
 * official client's mirror does; `test/integration/ahp-official-replica.test.ts` checks it
 * against the copied upstream fixtures first, then compares it with the hub's snapshots.
 *
 * Rules used (upstream, clock-free line): `modifiedAt` = `turnStarted.startedAt`, and at a turn's
 * end `startedAt + duration`; input and tool actions leave it alone. Status activity bits are
 * derived (error / input needed / in progress / idle), higher flag bits kept, IsRead cleared by
 * `turnStarted` and `inputRequested`. An action's `_meta` replaces a tool call's; an input-request
 * part's `_meta` is never touched. Implementation-defined (`x-`) and unknown actions are no-ops;
 * a standard action this replica has no rule for throws, so a test can never pass by skipping it.
 */
type Json = Record<string, any>;

const IDLE = 1;
const ERROR = 2;
const IN_PROGRESS = 8;
const INPUT_NEEDED = 24;
const IS_READ = 32;
const ACTIVITY_MASK = 31;

/** Chat action types whose rules are implemented below. */
export const UPSTREAM_RULE_TYPES = new Set([
  'chat/turnStarted',
  'chat/responsePart',
  'chat/delta',
  'chat/reasoning',
  'chat/usage',
  'chat/turnComplete',
  'chat/turnCancelled',
  'chat/error',
  'chat/toolCallStart',
  'chat/toolCallDelta',
  'chat/toolCallReady',
  'chat/toolCallConfirmed',
  'chat/toolCallComplete',
  'chat/toolCallResultConfirmed',
  'chat/inputRequested',
  'chat/inputAnswerChanged',
  'chat/inputCompleted',
  'chat/steeringMessageSet',
  'chat/steeringMessageRemoved',
  'chat/activityChanged',
  'chat/draftChanged',
]);

const BLOCKING_TOOL = new Set(['pending-confirmation', 'pending-result-confirmation', 'auth-required']);

function activity(state: Json, error = false): number {
  if (error) return ERROR;
  const parts: Json[] = state['activeTurn']?.responseParts ?? [];
  const blocked = parts.some((p) => (p.kind === 'inputRequest' && p.response === undefined) || (p.kind === 'toolCall' && BLOCKING_TOOL.has(p.toolCall.status)));
  if (blocked) return INPUT_NEEDED;
  return state['activeTurn'] ? IN_PROGRESS : IDLE;
}

function withStatus(state: Json, options: { error?: boolean; clearRead?: boolean } = {}): Json {
  let status = (state['status'] & ~ACTIVITY_MASK) | activity(state, options.error);
  if (options.clearRead) status &= ~IS_READ;
  return { ...state, status };
}

function mapActiveParts(state: Json, turnId: string | undefined, fn: (part: Json) => Json): Json {
  const turn = state['activeTurn'];
  if (!turn || (turnId !== undefined && turn.id !== turnId)) return state;
  let changed = false;
  const responseParts = turn.responseParts.map((p: Json) => {
    const next = fn(p);
    if (next !== p) changed = true;
    return next;
  });
  return changed ? { ...state, activeTurn: { ...turn, responseParts } } : state;
}

function mapTool(state: Json, a: Json, fn: (tc: Json) => Json): Json {
  return mapActiveParts(state, a['turnId'], (p) => {
    if (p.kind !== 'toolCall' || p.toolCall.toolCallId !== a['toolCallId']) return p;
    const tc = fn(p.toolCall);
    return tc === p.toolCall ? p : { ...p, toolCall: tc };
  });
}

const base = (tc: Json, meta?: unknown): Json => ({
  toolCallId: tc.toolCallId,
  toolName: tc.toolName,
  displayName: tc.displayName,
  intention: tc.intention,
  contributor: tc.contributor,
  _meta: meta ?? tc._meta,
});

function endTurn(state: Json, a: Json, outcome: 'complete' | 'cancelled' | 'error'): Json {
  const turn = state['activeTurn'];
  if (!turn || turn.id !== a['turnId']) return state;
  const duration = Math.max(0, a['duration']);
  const responseParts = turn.responseParts.map((p: Json) => {
    if (p.kind !== 'toolCall' || p.toolCall.status === 'completed' || p.toolCall.status === 'cancelled') return p;
    const tc = p.toolCall;
    const streaming = tc.status === 'streaming';
    return { kind: 'toolCall', toolCall: { status: 'cancelled', ...base(tc), invocationMessage: streaming ? (tc.invocationMessage ?? '') : tc.invocationMessage, toolInput: streaming ? undefined : tc.toolInput, reason: 'skipped' } };
  });
  const ended = { id: turn.id, startedAt: turn.startedAt, duration, message: turn.message, responseParts, usage: turn.usage, state: outcome, error: a['error'] };
  const modifiedAt = new Date(Date.parse(turn.startedAt) + duration).toISOString();
  return withStatus({ ...state, turns: [...state['turns'], ended], activeTurn: undefined, modifiedAt }, { error: outcome === 'error' });
}

const openInput = (p: Json, id: string): boolean => p.kind === 'inputRequest' && p.response === undefined && p.request.id === id;
const nonEmpty = (o: Json): Json | undefined => (Object.keys(o).length > 0 ? o : undefined);

export function upstreamChatRules(state: Json, a: Json): Json {
  if (!UPSTREAM_RULE_TYPES.has(a['type'])) {
    if (typeof a['type'] === 'string' && a['type'].startsWith('chat/')) throw new Error(`no upstream rule implemented here for ${a['type']}`);
    return state;
  }
  switch (a['type']) {
    case 'chat/turnStarted': {
      let next: Json = { ...state, activeTurn: { id: a['turnId'], startedAt: a['startedAt'], message: a['message'], responseParts: [], usage: undefined }, modifiedAt: a['startedAt'] };
      const q = a['queuedMessageId'];
      if (q !== undefined) {
        if (next['steeringMessage']?.id === q) next = { ...next, steeringMessage: undefined };
        if (next['queuedMessages']) next = { ...next, queuedMessages: nonEmptyList(next['queuedMessages'].filter((m: Json) => m.id !== q)) };
        if (next['steeringMessages']) next = { ...next, steeringMessages: nonEmptyList(next['steeringMessages'].filter((m: Json) => m.id !== q)) };
      }
      return withStatus(next, { clearRead: true });
    }
    case 'chat/responsePart': {
      const turn = state['activeTurn'];
      if (!turn || turn.id !== a['turnId']) return state;
      return { ...state, activeTurn: { ...turn, responseParts: [...turn.responseParts, a['part']] } };
    }
    case 'chat/delta':
    case 'chat/reasoning': {
      const kind = a['type'] === 'chat/delta' ? 'markdown' : 'reasoning';
      let done = false;
      return mapActiveParts(state, a['turnId'], (p) => {
        const id = p.kind === 'toolCall' ? p.toolCall.toolCallId : p.id;
        if (done || id !== a['partId']) return p;
        done = true;
        return p.kind === kind ? { ...p, content: p.content + a['content'] } : p;
      });
    }
    case 'chat/usage': {
      const turn = state['activeTurn'];
      return turn && turn.id === a['turnId'] ? { ...state, activeTurn: { ...turn, usage: a['usage'] } } : state;
    }
    case 'chat/turnComplete':
      return endTurn(state, a, 'complete');
    case 'chat/turnCancelled':
      return endTurn(state, a, 'cancelled');
    case 'chat/error':
      return endTurn(state, a, 'error');
    case 'chat/activityChanged':
      return { ...state, activity: a['activity'] };
    case 'chat/draftChanged':
      return { ...state, draft: a['draft'] };
    case 'chat/toolCallStart': {
      const turn = state['activeTurn'];
      if (!turn || turn.id !== a['turnId']) return state;
      const toolCall = { toolCallId: a['toolCallId'], toolName: a['toolName'], displayName: a['displayName'], intention: a['intention'], contributor: a['contributor'], _meta: a['_meta'], status: 'streaming' };
      return { ...state, activeTurn: { ...turn, responseParts: [...turn.responseParts, { kind: 'toolCall', toolCall }] } };
    }
    case 'chat/toolCallDelta':
      return mapTool(state, a, (tc) =>
        tc.status !== 'streaming' ? tc : { ...tc, ...(a['_meta'] !== undefined ? { _meta: a['_meta'] } : {}), partialInput: (tc.partialInput ?? '') + a['content'], invocationMessage: a['invocationMessage'] ?? tc.invocationMessage },
      );
    case 'chat/toolCallReady':
      return withStatus(
        mapTool(state, a, (current) => {
          let tc = current;
          if (tc.status !== 'streaming' && tc.status !== 'running' && tc.status !== 'pending-confirmation') return tc;
          // Ready refines intention and contributor, but never moves execution to or from a client.
          const clientOwned = tc.contributor?.kind === 'client';
          const contributor = clientOwned || a['contributor']?.kind === 'client' ? tc.contributor : (a['contributor'] ?? tc.contributor);
          tc = { ...tc, intention: a['intention'] ?? tc.intention, contributor };
          if (a['confirmed']) return { status: 'running', ...base(tc, a['_meta']), invocationMessage: a['invocationMessage'], toolInput: a['toolInput'], confirmed: a['confirmed'] };
          const was = tc.status === 'pending-confirmation' ? tc : ({} as Json);
          const options = a['options'] ?? was['options'];
          return {
            status: 'pending-confirmation',
            ...base(tc, a['_meta']),
            invocationMessage: a['invocationMessage'],
            toolInput: a['toolInput'] ?? was['toolInput'],
            confirmationTitle: a['confirmationTitle'] ?? was['confirmationTitle'],
            riskAssessment: a['riskAssessment'] ?? was['riskAssessment'],
            edits: a['edits'] ?? was['edits'],
            editable: a['editable'] ?? was['editable'],
            ...(options ? { options } : {}),
          };
        }),
      );
    case 'chat/toolCallConfirmed':
      return withStatus(
        mapTool(state, a, (tc) => {
          if (tc.status !== 'pending-confirmation') return tc;
          const selectedOption = a['selectedOptionId'] ? tc.options?.find((o: Json) => o.id === a['selectedOptionId']) : undefined;
          const picked = selectedOption ? { selectedOption } : {};
          if (a['approved']) return { status: 'running', ...base(tc, a['_meta']), invocationMessage: tc.invocationMessage, toolInput: a['editedToolInput'] ?? tc.toolInput, confirmed: a['confirmed'], ...picked };
          return { status: 'cancelled', ...base(tc, a['_meta']), invocationMessage: tc.invocationMessage, toolInput: tc.toolInput, reason: a['reason'], reasonMessage: a['reasonMessage'], userSuggestion: a['userSuggestion'], ...picked };
        }),
      );
    case 'chat/toolCallComplete':
      return withStatus(
        mapTool(state, a, (tc) => {
          if (tc.status !== 'running' && tc.status !== 'pending-confirmation' && tc.status !== 'auth-required') return tc;
          if (tc.status === 'auth-required' && a['result'].success) return tc;
          const ran = tc.status !== 'pending-confirmation';
          const carried = { ...(ran && tc.selectedOption ? { selectedOption: tc.selectedOption } : {}), ...(tc.status === 'auth-required' && tc.content ? { content: tc.content } : {}) };
          const status = a['requiresResultConfirmation'] && tc.status !== 'auth-required' ? 'pending-result-confirmation' : 'completed';
          return { status, ...base(tc, a['_meta']), invocationMessage: tc.invocationMessage, toolInput: tc.toolInput, confirmed: ran ? tc.confirmed : 'not-needed', ...carried, ...a['result'] };
        }),
      );
    case 'chat/toolCallResultConfirmed':
      return withStatus(
        mapTool(state, a, (tc) => {
          if (tc.status !== 'pending-result-confirmation') return tc;
          const picked = tc.selectedOption ? { selectedOption: tc.selectedOption } : {};
          if (a['approved']) {
            return {
              status: 'completed',
              ...base(tc, a['_meta']),
              invocationMessage: tc.invocationMessage,
              toolInput: tc.toolInput,
              confirmed: tc.confirmed,
              ...picked,
              success: tc.success,
              pastTenseMessage: tc.pastTenseMessage,
              content: tc.content,
              structuredContent: tc.structuredContent,
              error: tc.error,
            };
          }
          return { status: 'cancelled', ...base(tc, a['_meta']), invocationMessage: tc.invocationMessage, toolInput: tc.toolInput, reason: 'result-denied', ...picked };
        }),
      );
    case 'chat/inputRequested': {
      const turn = state['activeTurn'];
      if (!turn) return state;
      const request = a['request'];
      const at = turn.responseParts.findIndex((p: Json) => openInput(p, request.id));
      const responseParts = [...turn.responseParts];
      if (at === -1) responseParts.push({ kind: 'inputRequest', request });
      else responseParts[at] = { kind: 'inputRequest', request: { ...request, answers: request.answers ?? responseParts[at].request.answers } };
      return withStatus({ ...state, activeTurn: { ...turn, responseParts } }, { clearRead: true });
    }
    case 'chat/inputAnswerChanged':
      return mapActiveParts(state, undefined, (p) => {
        if (!openInput(p, a['requestId'])) return p;
        const answers: Json = { ...p.request.answers };
        if (a['answer'] === undefined) delete answers[a['questionId']];
        else answers[a['questionId']] = a['answer'];
        return { ...p, request: { ...p.request, answers: nonEmpty(answers) } };
      });
    case 'chat/inputCompleted': {
      const next = mapActiveParts(state, undefined, (p) => {
        if (!openInput(p, a['requestId'])) return p;
        return { ...p, request: { ...p.request, answers: nonEmpty({ ...p.request.answers, ...a['answers'] }) }, response: a['response'] };
      });
      return next === state ? state : withStatus(next);
    }
    case 'chat/steeringMessageSet': {
      const list: Json[] = state['steeringMessages'] ?? [];
      const m = a['steeringMessage'];
      const at = list.findIndex((x) => x.id === m.id);
      return { ...state, steeringMessages: at === -1 ? [...list, m] : list.map((x, i) => (i === at ? m : x)) };
    }
    case 'chat/steeringMessageRemoved': {
      const list: Json[] | undefined = state['steeringMessages'];
      if (!list) return state;
      const rest = list.filter((x) => x.id !== a['id']);
      return rest.length === list.length ? state : { ...state, steeringMessages: nonEmptyList(rest) };
    }
    default:
      throw new Error(`unhandled ${a['type']}`);
  }
}

function nonEmptyList<T>(list: T[]): T[] | undefined {
  return list.length > 0 ? list : undefined;
}
