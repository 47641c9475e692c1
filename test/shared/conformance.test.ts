/**
 * Upstream AHP conformance vectors (copied data, see the fixtures' README):
 * - every reducer fixture is folded through our reducer and deep-compared with `expected`;
 * - every round-trip fixture is decoded with our schema for its wire type and re-encoded.
 *
 * Runner conventions follow upstream: JSON `null` means "absent" (converted to `undefined`
 * before anything runs), actions are applied in order, the result is deep-compared.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseAction } from '../../shared/protocol/actions.js';
import { actionEnvelopeSchema } from '../../shared/protocol/messages.js';
import {
  annotationsStateSchema,
  changesetStateSchema,
  chatInputQuestionSchema,
  chatStateSchema,
  resourceWatchStateSchema,
  rootStateSchema,
  sessionStateSchema,
  sessionStatusSchema,
  sessionSummarySchema,
  terminalStateSchema,
  type AnnotationsState,
  type ChangesetState,
  type ChatState,
  type ResourceWatchState,
  type RootState,
  type SessionState,
  type TerminalState,
} from '../../shared/protocol/state.js';
import { annotationsReducer } from '../../shared/state/annotations-reducer.js';
import { changesetReducer } from '../../shared/state/changeset-reducer.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { resourceWatchReducer } from '../../shared/state/resource-watch-reducer.js';
import { rootReducer } from '../../shared/state/root-reducer.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { terminalReducer } from '../../shared/state/terminal-reducer.js';

// ─── Locating and loading the fixtures ───────────────────────────────────────

/** The copy kept in the repository (`test/fixtures/ahp-conformance`, provenance in its README). */
function conformanceDir(): string {
  const dir = fileURLToPath(new URL('../fixtures/ahp-conformance', import.meta.url));
  if (!existsSync(join(dir, 'reducers'))) throw new Error(`AHP conformance fixtures not found in ${dir}`);
  return dir;
}

const DIR = conformanceDir();
const REDUCERS_DIR = join(DIR, 'reducers');
const ROUND_TRIPS_DIR = join(DIR, 'round-trips');

function jsonFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort();
}

/** Upstream rule: a JSON `null` anywhere in a reducer fixture means "field absent". */
function nullsToUndefined(value: unknown): unknown {
  if (value === null) return undefined;
  if (Array.isArray(value)) return value.map(nullsToUndefined);
  if (typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, nullsToUndefined(item)]));
  }
  return value;
}

/** Freezing the inputs turns any mutation inside a reducer into a thrown TypeError (ESM is strict). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}

type AnyState = ChatState | SessionState | RootState | TerminalState | ChangesetState | AnnotationsState | ResourceWatchState;
type ReducerName = 'chat' | 'session' | 'root' | 'terminal' | 'changeset' | 'annotations' | 'resourceWatch';

interface ReducerFixture {
  readonly description: string;
  readonly reducer: ReducerName;
  readonly initial: AnyState;
  readonly actions: ReadonlyArray<{ type: string }>;
  readonly expected: AnyState & { modifiedAt?: string };
}

function loadReducerFixture(file: string): ReducerFixture {
  const raw = nullsToUndefined(JSON.parse(readFileSync(join(REDUCERS_DIR, file), 'utf8'))) as ReducerFixture;
  // Upstream falls back to the session reducer when `reducer` is missing.
  return deepFreeze({ ...raw, reducer: raw.reducer ?? 'session' });
}

const REDUCERS: Record<ReducerName, (state: AnyState, action: { type: string }) => AnyState> = {
  chat: (state, action) => chatReducer(state as ChatState, action),
  session: (state, action) => sessionReducer(state as SessionState, action),
  root: (state, action) => rootReducer(state as RootState, action),
  terminal: (state, action) => terminalReducer(state as TerminalState, action),
  changeset: (state, action) => changesetReducer(state as ChangesetState, action),
  annotations: (state, action) => annotationsReducer(state as AnnotationsState, action),
  resourceWatch: (state, action) => resourceWatchReducer(state as ResourceWatchState, action),
};

const STATE_SCHEMAS: Record<ReducerName, z.ZodType> = {
  chat: chatStateSchema,
  session: sessionStateSchema,
  root: rootStateSchema,
  terminal: terminalStateSchema,
  changeset: changesetStateSchema,
  annotations: annotationsStateSchema,
  resourceWatch: resourceWatchStateSchema,
};

function run(fixture: ReducerFixture): AnyState & { modifiedAt?: string } {
  const reduce = REDUCERS[fixture.reducer];
  return fixture.actions.reduce<AnyState>((state, action) => reduce(state, action), fixture.initial);
}

function withoutModifiedAt(state: object): object {
  return Object.fromEntries(Object.entries(state).filter(([key]) => key !== 'modifiedAt'));
}

// ─── The clock-free exclusion list ───────────────────────────────────────────

/**
 * The fixtures were written when reducers stamped `modifiedAt` with `Date.now()` (mocked to
 * 9999 ms). Ours are clock-free (upstream since 2026-08-24): `chat/turnStarted` sets
 * `modifiedAt = startedAt`, a turn end sets `startedAt + duration`, and nothing else touches it.
 * These files differ from us *only* in `modifiedAt`; `modifiedAt` is what our rule yields.
 */
const STARTED_AT = '1970-01-01T00:00:01.000Z';
const CLOCK_FREE_MODIFIED_AT: Readonly<Record<string, { reason: string; modifiedAt: string }>> = {
  '005-session-turnstarted.json': { reason: 'turnStarted stamps startedAt', modifiedAt: STARTED_AT },
  '006-turnstarted-with-queuedmessageid-removes-from-queuedmessages.json': {
    reason: 'turnStarted stamps startedAt',
    modifiedAt: STARTED_AT,
  },
  '007-turnstarted-with-queuedmessageid-removes-last-queued-message.json': {
    reason: 'turnStarted stamps startedAt',
    modifiedAt: STARTED_AT,
  },
  '008-turnstarted-with-queuedmessageid-removes-matching-steering-message.json': {
    reason: 'turnStarted stamps startedAt',
    modifiedAt: STARTED_AT,
  },
  '009-turnstarted-without-queuedmessageid-does-not-touch-pending-messages.json': {
    reason: 'turnStarted stamps startedAt',
    modifiedAt: STARTED_AT,
  },
  '063-session-truncated-keeps-turns-up-to-turnid.json': {
    reason: 'truncation carries no timestamp, so it leaves modifiedAt alone',
    modifiedAt: STARTED_AT,
  },
  '064-session-truncated-keeps-all-when-turnid-is-last.json': {
    reason: 'truncation carries no timestamp, so it leaves modifiedAt alone',
    modifiedAt: STARTED_AT,
  },
  '065-session-truncated-keeps-only-first-when-turnid-is-first.json': {
    reason: 'truncation carries no timestamp, so it leaves modifiedAt alone',
    modifiedAt: STARTED_AT,
  },
  '066-session-truncated-clears-all-when-turnid-omitted.json': {
    reason: 'truncation carries no timestamp, so it leaves modifiedAt alone',
    modifiedAt: STARTED_AT,
  },
  '067-session-truncated-drops-active-turn.json': {
    reason: 'truncation carries no timestamp, so it leaves modifiedAt alone',
    modifiedAt: '1970-01-01T00:00:02.000Z',
  },
  '068-session-truncated-drops-active-turn-even-when-clearing-all.json': {
    reason: 'truncation carries no timestamp, so it leaves modifiedAt alone',
    modifiedAt: '1970-01-01T00:00:02.000Z',
  },
  '075-turnstarted-clears-isread.json': { reason: 'turnStarted stamps startedAt', modifiedAt: STARTED_AT },
  '105-session-input-full-draft-and-complete-flow.json': {
    reason: 'turnStarted stamps startedAt; input actions do not touch modifiedAt',
    modifiedAt: STARTED_AT,
  },
  '106-session-input-requested-with-drafts-status.json': {
    reason: 'input actions do not touch modifiedAt',
    modifiedAt: '1970-01-01T00:00:02.000Z',
  },
  '108-session-input-upsert-and-clear-answer.json': {
    reason: 'input actions do not touch modifiedAt',
    modifiedAt: '1970-01-01T00:00:02.000Z',
  },
  '110-session-input-completion-and-truncation-filtering.json': {
    reason: 'input actions and truncation do not touch modifiedAt',
    modifiedAt: '1970-01-01T00:00:02.000Z',
  },
  '234-chat-truncated-clears-turns-next-cursor-when-clearing-all.json': {
    reason: 'truncation carries no timestamp, so it leaves modifiedAt alone',
    modifiedAt: STARTED_AT,
  },
  '235-session-input-completion-records-declined-request-in-turn.json': {
    reason: 'input actions do not touch modifiedAt',
    modifiedAt: STARTED_AT,
  },
  '240-turn-duration-is-clamped-to-zero.json': {
    reason: 'turn end stamps startedAt + clamped duration (10.000 + 0)',
    modifiedAt: '1970-01-01T00:00:10.000Z',
  },
  '250-turncomplete-force-cancels-auth-required-tool-call.json': {
    reason: 'turn end stamps startedAt + duration (1.000 + 500 ms)',
    modifiedAt: '1970-01-01T00:00:01.500Z',
  },
};

// ─── Reducer fixtures ────────────────────────────────────────────────────────

const reducerFiles = jsonFiles(REDUCERS_DIR);
/** Every reducer fixture of the copied upstream tree (see the fixtures' README): all of them run. */
const UPSTREAM_REDUCER_FIXTURES = 249;

describe('AHP reducer fixtures', () => {
  it('finds the full copied set', () => {
    expect(reducerFiles).toHaveLength(UPSTREAM_REDUCER_FIXTURES);
  });

  describe.each(reducerFiles)('%s', (file) => {
    const fixture = loadReducerFixture(file);
    const clockFree = CLOCK_FREE_MODIFIED_AT[file];

    it(`${fixture.reducer}: ${fixture.description}`, () => {
      const result = run(fixture);
      if (!clockFree) {
        expect(result).toEqual(fixture.expected);
        return;
      }
      expect(withoutModifiedAt(result)).toEqual(withoutModifiedAt(fixture.expected));
      expect(result.modifiedAt).toBe(clockFree.modifiedAt);
    });

    it('initial and expected states decode with our state schema', () => {
      const schema = STATE_SCHEMAS[fixture.reducer];
      expect(schema.parse(fixture.initial)).toEqual(fixture.initial);
      expect(schema.parse(fixture.expected)).toEqual(fixture.expected);
    });

    it('every action passes parseAction unchanged', () => {
      for (const action of fixture.actions) {
        const parsed = parseAction(action);
        expect(parsed, JSON.stringify(action)).toEqual({ ok: true, action });
      }
    });
  });
});

describe('clock-free exclusion list', () => {
  it.each(Object.entries(CLOCK_FREE_MODIFIED_AT))('%s differs only in modifiedAt', (file) => {
    expect(reducerFiles).toContain(file);
    const fixture = loadReducerFixture(file);
    const result = run(fixture);
    expect(result.modifiedAt).not.toBe(fixture.expected.modifiedAt);
    expect(withoutModifiedAt(result)).toEqual(withoutModifiedAt(fixture.expected));
  });
});

// ─── Round-trip fixtures ─────────────────────────────────────────────────────

interface RoundTripFixture {
  readonly name: string;
  readonly type: string;
  readonly input: unknown;
  readonly acceptableOutputs: readonly unknown[];
  readonly preservedOutput?: unknown;
}

/** `root/sessionAdded` params; notification params are plain JSON on our side, the summary is typed. */
const sessionAddedParamsSchema = z.looseObject({ channel: z.string(), summary: sessionSummarySchema });

/** Decoders per wire type, as a plain-JSON TypeScript path: unknown keys are kept. */
const DECODERS: Readonly<Record<string, (input: unknown) => unknown>> = {
  ActionEnvelope: (input) => {
    const envelope = actionEnvelopeSchema.parse(input);
    const action = parseAction(envelope.action);
    if (!action.ok) throw new Error(action.message);
    return { ...envelope, action: action.action };
  },
  StateAction: (input) => {
    const action = parseAction(input);
    if (!action.ok) throw new Error(action.message);
    return action.action;
  },
  SessionStatus: (input) => sessionStatusSchema.parse(input),
  // JSON-RPC framing is not ours to type here: the TypeScript path is JSON in, JSON out.
  JsonRpcMessage: (input) => input,
  ChatInputQuestion: (input) => chatInputQuestionSchema.parse(input),
  SessionSummary: (input) => sessionSummarySchema.parse(input),
  SessionAddedParams: (input) => sessionAddedParamsSchema.parse(input),
};

const roundTripFiles = jsonFiles(ROUND_TRIPS_DIR);

describe('AHP round-trip fixtures', () => {
  it('finds the full copied set', () => {
    expect(roundTripFiles).toHaveLength(15);
  });

  it.each(roundTripFiles)('%s', (file) => {
    const fixture = JSON.parse(readFileSync(join(ROUND_TRIPS_DIR, file), 'utf8')) as RoundTripFixture;
    const decode = DECODERS[fixture.type];
    expect(decode, `no decoder for wire type ${fixture.type}`).toBeDefined();
    // README: a plain-JSON TypeScript path keeps unknown keys, so it is held to preservedOutput.
    const expected = fixture.preservedOutput ?? fixture.acceptableOutputs[0];
    const reencoded: unknown = JSON.parse(JSON.stringify(decode!(JSON.parse(JSON.stringify(fixture.input)))));
    // Key order does not matter, but null vs absent does: toStrictEqual on re-encoded JSON.
    expect(reencoded).toStrictEqual(expected);
  });
});
