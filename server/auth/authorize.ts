/**
 * The authorize stage: whether a principal's role may perform an operation, decided by one
 * function for every surface (WebSocket methods and dispatches, steering, the prompt routes,
 * permission replies). Each operation is checked once, where the surface first knows what is
 * asked; a refusal is always the kind `permission_denied` (docs/errors.md), with words that say
 * what the role may not do. Tenant visibility is not a role question: it stays with the lookups
 * (`visibleSession`), which answer "not found".
 */
import type { ErrorKind } from '../../shared/protocol/error-kinds.js';
import { ProtocolError } from '../../shared/protocol/errors.js';
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
} as const;

export type Operation = keyof typeof WRITE_OPERATIONS;

export interface AuthorizationRefusal {
  readonly kind: ErrorKind & 'permission_denied';
  readonly message: string;
}

/** undefined when the principal may perform the operation; else why not. */
export function authorize(principal: Principal, operation: Operation): AuthorizationRefusal | undefined {
  return canWrite(principal) ? undefined : { kind: 'permission_denied', message: WRITE_OPERATIONS[operation] };
}

/**
 * Deleting a session (`disposeSession`) ends it for everyone, so on top of write access it needs
 * the session's owner (who created it) or an admin. Renaming and archiving stay open to every
 * writer: they are undone as easily as they are done.
 */
export function authorizeSessionDeletion(principal: Principal, owner: string): AuthorizationRefusal | undefined {
  const refused = authorize(principal, 'disposeSession');
  if (refused) return refused;
  if (principal.role === Role.Admin || principal.user === owner) return undefined;
  return { kind: 'permission_denied', message: `only the session's owner (${owner}) or an admin can delete this session` };
}

/** `authorizeSessionDeletion` for JSON-RPC methods: a refusal is thrown as the kind's ProtocolError. */
export function assertMayDeleteSession(principal: Principal, owner: string): void {
  const refused = authorizeSessionDeletion(principal, owner);
  if (refused) throw new ProtocolError(refused.kind, refused.message);
}

/** `authorize` for JSON-RPC methods: a refusal is thrown as the kind's ProtocolError. */
export function assertAuthorized(principal: Principal, operation: Operation): void {
  const refused = authorize(principal, operation);
  if (refused) throw new ProtocolError(refused.kind, refused.message);
}
