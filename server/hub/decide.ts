/**
 * The decide stage: a pure function from the hub's state and one client action to a typed result
 * (`Decision`). No clock, no I/O, nothing sequenced: the hub passes the time in, runs the size
 * budget on an accepted action (the one stateful check) and sequences it. Because deciding is a
 * plain synchronous call, "first reply wins" needs no lock (AGENTS.md).
 *
 * Stages of a dispatch, each in its module: decode (`../ahp/rpc.ts`, `../ahp/ahp-methods.ts`: framing, bounds,
 * params) → the door (`door.ts`: admission, visibility, authorization) → decide (here) → sequence
 * (`commit-pipeline.ts` `sequence`) → persist (the pipeline's group commit) → deliver
 * (`fanout.ts`, after the log append). `hub.ts` is the facade that runs them.
 */
import { CLIENT_DISPATCHABLE_ACTIONS, parseAction } from '../../shared/protocol/actions.js';
import { rpcCodeOf, type ErrorKind } from '../../shared/protocol/error-kinds.js';
import { ProtocolError } from '../../shared/protocol/errors.js';
import { checkJsonBounds } from '../../shared/protocol/json-bounds.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import { channelKind } from '../../shared/protocol/uris.js';
import { ANSWERED_BY_META } from '../../shared/state/answered-by.js';
import { hasTurn } from '../../shared/state/selectors.js';
import { validateParsedClientAction } from '../../shared/state/validate-action.js';
import { canActAsAgent, type Principal } from '../auth/auth.js';
import { errorMessage } from '../log.js';
import { validateAgentAction } from './agent-actions.js';
import type { HubState, SessionEntry } from './catalogue.js';

/** Answers, approvals and stops, stamped with who gave them (see `stampAnswer`). */
const ANSWER_ACTIONS: ReadonlySet<string> = new Set(['chat/inputCompleted', 'chat/toolCallConfirmed', 'chat/toolCallResultConfirmed', 'chat/turnCancelled']);
/** The surface of a WebSocket (AHP) client that does not name itself. */
export const CLIENT_SURFACE = 'AHP client';

/** A refused decision: its kind (and the JSON-RPC code that kind has) and words for people. */
export interface Rejection {
  readonly ok: false;
  readonly kind: ErrorKind;
  /** `rpcCodeOf(kind)`. */
  readonly code: number;
  readonly reason: string;
}

/** What deciding one action gives: accepted (as it will be sequenced) or refused. */
export type Decision = { readonly ok: true; readonly action: WireAction } | Rejection;

export function rejection(kind: ErrorKind, reason: string): Rejection {
  return { ok: false, kind, code: rpcCodeOf(kind), reason };
}

/** A write turn that failed (the hub's write turn throws a ProtocolError) as a rejection. */
export function rejectionOf(err: unknown): Rejection {
  const kind = err instanceof ProtocolError && err.kind === 'internal_error' ? 'internal_error' : 'storage_unavailable';
  return rejection(kind, errorMessage(err));
}

/** What one decision is about: who, from which client and surface, on which channel, and when. */
export interface DecisionInput {
  readonly principal: Principal;
  readonly clientId: string;
  /** The channel's session, already found visible to the principal (at the door, `door.ts`). */
  readonly session: SessionEntry;
  readonly channel: string;
  readonly rawAction: WireAction;
  readonly surface: string;
  /** The hub's clock, read by the caller (answers are stamped with it). */
  readonly now: number;
}

/** The channel's session when the principal's tenant may see it. */
export function sessionOfVisibleChannel(state: HubState, principal: Principal, channel: string): SessionEntry | undefined {
  const session = state.sessionOf(channel);
  return session && session.tenant === principal.tenant ? session : undefined;
}

/** Validation shared by every client path (AHP dispatches and principals' submissions), once the door found the channel visible and the principal authorized. */
export function decide(state: HubState, input: DecisionInput): Decision {
  const { principal, channel, rawAction, session } = input;
  const chat = channelKind(channel) === 'chat' ? state.chats.get(channel) : undefined;
  const parsed = parseAction(rawAction);
  if (!parsed.ok) return rejection('invalid_params', `invalid ${rawAction.type}: ${parsed.message}`);
  const action = parsed.action as WireAction;
  // Server-side actions (streaming, input requests, turn end) are open to agents only, and are
  // checked for shape and turn; everything a client may dispatch gets the full AHP validation.
  const reason =
    !CLIENT_DISPATCHABLE_ACTIONS.has(action.type) && canActAsAgent(principal)
      ? validateAgentAction(action, chat?.state, { session: session.uri, chats: session.chats })
      : validateParsedClientAction(
          {
            channelKind: chat ? 'chat' : 'session',
            chat: chat?.state,
            session: session.state,
            clientId: input.clientId,
            sessionChats: [...session.chats],
            allTurnIds: (turnId: string) => turnIdUsed(state, session, turnId),
          },
          action,
        );
  if (reason !== undefined) {
    // Starting a turn while one runs is the one refusal callers answer differently (HTTP 409).
    return rejection(action.type === 'chat/turnStarted' && chat?.state.activeTurn ? 'turn_in_progress' : 'action_refused', reason);
  }
  return { ok: true, action: ANSWER_ACTIONS.has(action.type) ? stampAnswer(action, principal, input.surface, input.now) : action };
}

/** True when some chat of the session has, or had, a turn with this id. */
function turnIdUsed(state: HubState, session: SessionEntry, turnId: string): boolean {
  for (const uri of session.chats) {
    const chat = state.chats.get(uri)?.state;
    if (chat && hasTurn(chat, turnId)) return true;
  }
  return false;
}

/**
 * Records who answered, from which surface and when, in the answer's `_meta["hub/answeredBy"]`
 * (the standard reducers carry it onto the tool call; for input requests it is indexed beside
 * the chat state and sent as the snapshot's `_meta`, see answered-by.ts), so every client can say
 * "approved by alice in the app, 10:42" whichever surface the answer came from. The user is
 * always the authenticated one; a WebSocket client may only name itself (`hub/client`, e.g.
 * "app"), which becomes the surface "<name> (AHP)".
 */
function stampAnswer(action: WireAction, principal: Principal, surface: string, now: number): WireAction {
  const meta = (action as { _meta?: Record<string, unknown> })._meta;
  const named = meta?.['hub/client'];
  const from = surface === CLIENT_SURFACE && typeof named === 'string' && /^[\w .-]{1,40}$/.test(named) ? named : surface;
  const answeredBy = { user: principal.user, surface: from, at: new Date(now).toISOString() };
  return { ...action, _meta: { ...meta, [ANSWERED_BY_META]: answeredBy } };
}

/** An action of the hub itself or an in-process agent, checked for shape and turn like a remote agent's; refusals throw. */
export function decideServer(state: HubState, channel: string, action: WireAction): WireAction {
  const parsed = parseAction(action);
  if (!parsed.ok) throw new Error(`invalid server action ${action.type}: ${parsed.message}`);
  const chat = state.chats.get(channel);
  const session = state.sessionOf(channel);
  if (!chat && !state.sessions.has(channel)) throw new ProtocolError('not_found', `no channel ${channel}`);
  const reason = validateAgentAction(parsed.action as WireAction, chat?.state, session && { session: session.uri, chats: session.chats });
  if (reason !== undefined) throw new ProtocolError('invalid_params', reason);
  return parsed.action as WireAction;
}

/**
 * The action a rejection echo carries: the action as sent, unless its JSON is out of bounds, in
 * which case only its type (a rejection must never send the refused value back, nor fail to encode).
 */
export function echoableRejected(raw: WireAction): WireAction {
  return checkJsonBounds(raw) || hasOversizedUnknownFields(raw) ? { type: typeof raw.type === 'string' ? raw.type.slice(0, 128) : 'unknown' } : raw;
}

/** Whether parseAction refuses `raw` for what it carries under unknown keys (never echoed back whole either). */
function hasOversizedUnknownFields(raw: WireAction): boolean {
  const parsed = parseAction(raw);
  return !parsed.ok && parsed.code === 'unknown_fields_too_large';
}
