/**
 * The authorize stage: whether a principal's role may perform an operation, decided by one
 * function for every surface. The principal's grants are computed once per principal
 * (`grantsOf`) and checked in one place, the hub's door (`server/hub/door.ts`), from the entry's
 * operation (dispatch, steer, prompt, answerPermission, createSession, disposeSession: owner or
 * admin, …); features enter the operation instead of calling this. A refusal is always the kind
 * `permission_denied` (docs/errors.md), with words that say what the role may not do. Tenant
 * visibility is not a role question: the door checks it too, once per entry ("not found").
 */
import type { ErrorKind } from '../../shared/protocol/error-kinds.js';
import { canWrite, Role, type Principal } from './auth.js';

/** Every operation that needs more than read access, with what a viewer is told. */
const WRITE_OPERATIONS = {
  createSession: 'viewers cannot create sessions',
  disposeSession: 'viewers cannot dispose sessions',
  createChat: 'viewers cannot create chats',
  disposeChat: 'viewers cannot dispose chats',
  dispatch: 'read-only access: viewers cannot dispatch actions',
  steer: 'read-only access: viewers cannot add input to a turn',
  prompt: 'read-only access: viewers cannot prompt',
  answerPermission: 'read-only access: viewers cannot answer permission requests',
  createQwenSession: 'read-only access: viewers cannot create sessions',
  closeQwenSession: 'read-only access: viewers cannot close sessions',
  cancel: 'read-only access: viewers cannot cancel',
  editDraft: 'read-only access: viewers cannot edit shared drafts',
} as const;

export type Operation = keyof typeof WRITE_OPERATIONS;

export interface AuthorizationRefusal {
  readonly kind: ErrorKind & 'permission_denied';
  readonly message: string;
}

/** What a principal may do, computed once per principal (`grantsOf`) and checked at the hub's door (`server/hub/door.ts`). */
export interface Grants {
  /** Any operation beyond reading (every role but viewer). */
  readonly write: boolean;
  /** Deleting any session, not only one's own (admins). */
  readonly deleteAnySession: boolean;
  readonly user: string;
}

/** Principals are made once at the edge (a connection, a request) and never change: their grants are kept beside them. */
const grantsByPrincipal = new WeakMap<Principal, Grants>();

export function grantsOf(principal: Principal): Grants {
  let grants = grantsByPrincipal.get(principal);
  if (!grants) {
    grants = { write: canWrite(principal), deleteAnySession: principal.role === Role.Admin, user: principal.user };
    grantsByPrincipal.set(principal, grants);
  }
  return grants;
}

/**
 * undefined when the principal may perform the operation; else why not. `owner` is the session's
 * owner for `disposeSession` and `closeQwenSession`: deleting a session ends it for everyone, so on
 * top of write access it needs its owner (who created it) or an admin. Renaming and archiving stay
 * open to every writer: they are undone as easily as they are done.
 */
export function authorize(principal: Principal, operation: Operation, owner?: string): AuthorizationRefusal | undefined {
  const grants = grantsOf(principal);
  if (!grants.write) return { kind: 'permission_denied', message: WRITE_OPERATIONS[operation] };
  if (owner === undefined || grants.deleteAnySession || grants.user === owner) return undefined;
  return { kind: 'permission_denied', message: `only the session's owner (${owner}) or an admin can delete this session` };
}
