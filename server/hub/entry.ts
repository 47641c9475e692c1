/**
 * What enters the hub's one door (`door.ts`) and what comes out: the `Entry` (an action from an
 * AHP client, a principal on another surface, or the hub itself; a catalogue command; a feature's
 * own operation) and the one `Outcome` type, with the renderings in-process callers use.
 * Types only and pure functions: features and the `HubPort` import this, never the door.
 */
import type { ErrorKind } from '../../shared/protocol/error-kinds.js';
import { rpcCodeOf } from '../../shared/protocol/error-kinds.js';
import { ProtocolError } from '../../shared/protocol/errors.js';
import type { ActionEnvelope, WireAction } from '../../shared/protocol/messages.js';
import type { Principal } from '../auth/auth.js';
import type { Operation } from '../auth/authorize.js';
import { errorMessage } from '../log.js';
import type { Connection } from './connection.js';

/** An AHP connection as the hub sees it: where echoes go, who it is, and its clientId. */
export interface ClientHandle {
  readonly conn: Connection;
  readonly principal: Principal;
  readonly clientId: string;
}

/** Who an action comes from: an AHP connection (origin, duplicate ledger, echoes), a principal on another surface, or the hub itself. */
export type Source =
  | { readonly from: 'client'; readonly client: ClientHandle; readonly clientSeq: number }
  | { readonly from: 'principal'; readonly principal: Principal; readonly surface?: string | undefined }
  | { readonly from: 'server' };

/** The operations a feature performs itself; the door checks them (visibility, grants) and sequences nothing. */
export type FeatureOperation = 'steer' | 'prompt' | 'answerPermission' | 'cancel' | 'createQwenSession' | 'editDraft';

export type Entry =
  | {
      readonly op: 'dispatch';
      readonly by: Source;
      readonly channel: string;
      readonly action: WireAction;
      /** The operation the action stands for (its refusal text), when not a plain `dispatch`. */
      readonly as?: Operation | undefined;
      /** A client's dispatch refused before decoding (rate budget, JSON bounds): echoed in order, never decided. */
      readonly refused?: { readonly kind: ErrorKind; readonly message: string } | undefined;
    }
  | { readonly op: 'createSession'; readonly principal: Principal; readonly uri: string; readonly provider?: string | undefined; readonly title?: string | undefined; readonly as?: Operation | undefined }
  | { readonly op: 'disposeSession'; readonly principal: Principal; readonly uri: string; readonly as?: Operation | undefined }
  | { readonly op: 'createChat'; readonly principal: Principal; readonly session: string; readonly chat?: string | undefined; readonly title?: string | undefined }
  | { readonly op: 'disposeChat'; readonly principal: Principal; readonly chat: string }
  | CheckEntry;

/** A feature's own operation, on a session when it names one. */
export interface CheckEntry {
  readonly op: FeatureOperation;
  readonly principal: Principal;
  readonly session?: string | undefined;
}

/** Where a refusal was made: before deciding (the hub takes no writes now), by the decision, or after it (the batch never became durable). */
export type Stage = 'admission' | 'decision' | 'durability';

export interface Accepted {
  readonly outcome: 'accepted';
  /** The last record the entry sequenced; absent for a feature's own operation (nothing sequenced). */
  readonly serverSeq?: number | undefined;
  /** createSession: the new session's default chat. */
  readonly defaultChat?: string | undefined;
  /** createChat: the new chat. */
  readonly chat?: string | undefined;
}

export interface Rejected {
  readonly outcome: 'rejected';
  readonly kind: ErrorKind;
  /** The JSON-RPC code this refusal is answered with. */
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
  readonly at: Stage;
  /** The error a stage threw, kept so that a rendering that throws throws it unchanged. */
  readonly cause?: unknown;
}

/** The outcome of one entry (see the file header). */
export type Outcome = Accepted | Rejected | { readonly outcome: 'duplicate'; readonly echo: ActionEnvelope } | { readonly outcome: 'ignored' };

/** A thrown error (a ProtocolError of a command or of admission) as a rejection. */
export function rejectedOf(err: unknown, at: Stage): Rejected {
  if (err instanceof ProtocolError) return { outcome: 'rejected', kind: err.family, code: err.code, message: err.message, data: err.data, at, cause: err };
  return { outcome: 'rejected', kind: 'internal_error', code: rpcCodeOf('internal_error'), message: errorMessage(err), at, cause: err };
}

/** The rendering for JSON-RPC methods and in-process callers that throw: a refusal as its ProtocolError (or the error a stage threw, unchanged). */
export function protocolErrorOf(o: Rejected): unknown {
  return o.cause ?? new ProtocolError(o.kind, o.message, o.data);
}

// ─── Renderings for in-process callers (`Hub.submitAs`, `Hub.dispatchServer`, the commands) ───

/** How a principal's submission fared, as `Hub.submitAs` answers: committed (durable), or refused by the decision. */
export type SubmitOutcome = { readonly ok: true; readonly serverSeq: number } | { readonly ok: false; readonly code: number; readonly kind: ErrorKind; readonly message: string };

/** A refusal the caller did not ask to branch on (admission, durability, a command's) is thrown as its ProtocolError. */
function thrown(o: Outcome): never {
  throw o.outcome === 'rejected' ? protocolErrorOf(o) : new ProtocolError('internal_error', `unexpected outcome ${o.outcome}`);
}

export function submitted(o: Outcome): SubmitOutcome {
  if (o.outcome === 'accepted') return { ok: true, serverSeq: o.serverSeq! };
  if (o.outcome === 'rejected' && o.at === 'decision') return { ok: false, code: o.code, kind: o.kind, message: o.message };
  return thrown(o);
}

/** An accepted outcome, or its refusal thrown. */
export function accepted(o: Outcome): Accepted {
  return o.outcome === 'accepted' ? o : thrown(o);
}

/** The serverSeq of an accepted server action, or its refusal thrown. */
export function sequenced(o: Outcome): number {
  return accepted(o).serverSeq!;
}

/** The hub itself or an in-process agent. */
export const AS_HUB: Source = { from: 'server' };

/** An action of the hub itself or an in-process agent (a refusal throws): its serverSeq, once durable. */
export async function dispatchAsHub(hub: { enter(entry: Entry): Outcome | Promise<Outcome> }, channel: string, action: WireAction): Promise<number> {
  return sequenced(await hub.enter({ op: 'dispatch', by: AS_HUB, channel, action }));
}
