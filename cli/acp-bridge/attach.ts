/**
 * ACP multi-client attach (ACP RFD #533, "Multi-Client Session Attach") on the editor bridge:
 * the `session/attach` params, its errors, the `history` of its result and the two session
 * updates the RFD adds (`permission_resolved`, `client_disconnected`). The bridge (bridge.ts)
 * wires them; who is attached comes from the hub (roster.ts). docs/agents.md "ACP multi-client
 * attach" says what is supported and where the RFD left a choice.
 */
import * as acp from '@agentclientprotocol/sdk';
import { z } from 'zod';
import type { ChatState } from '../../shared/client/ahp-client.js';
import type { ToolCallConfirmedAction } from '../../shared/protocol/actions.js';
import { describeIssues } from '../../shared/protocol/describe-issues.js';
import { AcpAttachErrorCode } from '../../shared/protocol/errors.js';
import { answeredByIn } from '../../shared/state/answered-by.js';
import { openInteractions } from '../../shared/state/selectors.js';
import type { AttachRole, ConnectedClient } from './roster.js';

export const ATTACH_METHOD = 'session/attach';
export const DETACH_METHOD = 'session/detach';

export type HistoryPolicy = 'full' | 'pending_only' | 'none';

const clientInfoSchema = z.object({ name: z.string().min(1).max(200), version: z.string().max(100).optional(), title: z.string().max(200).nullish() });

export const attachParamsSchema = z.object({
  sessionId: z.string().min(1).max(1024),
  role: z.enum(['controller', 'observer']),
  historyPolicy: z.enum(['full', 'pending_only', 'none']).default('full'),
  clientInfo: clientInfoSchema.optional(),
});
export type AttachParams = z.infer<typeof attachParamsSchema>;

export const detachParamsSchema = z.object({ sessionId: z.string().min(1).max(1024) });

/** Raw params → attach params, or ACP's invalid-params error naming the field. */
export function parseAttachParams(raw: unknown): AttachParams {
  const parsed = attachParamsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const where = parsed.error.issues[0]?.path.join('.') || 'params';
  throw acp.RequestError.invalidParams({ kind: 'invalid_params', field: where }, `session/attach: ${describeIssues(parsed.error.issues, 'rpc')}`);
}

export function parseDetachParams(raw: unknown): z.infer<typeof detachParamsSchema> {
  const parsed = detachParamsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw acp.RequestError.invalidParams({ kind: 'invalid_params', field: 'sessionId' }, `session/detach: ${describeIssues(parsed.error.issues, 'rpc')}`);
}

export const attachErrors = {
  sessionNotFound: (sessionId: string): acp.RequestError => new acp.RequestError(AcpAttachErrorCode.SessionNotFound, 'Session not found', { sessionId, kind: 'session_not_found' }),
  notAuthorised: (message: string, data: Record<string, unknown> = {}): acp.RequestError => new acp.RequestError(AcpAttachErrorCode.NotAuthorised, `Not authorised: ${message}`, { ...data, kind: 'permission_denied' }),
  noCapability: (): acp.RequestError => new acp.RequestError(AcpAttachErrorCode.NoAttachCapability, 'Session does not support multi-client attach: the hub offers no presence room for this chat', { kind: 'method_not_found' }),
};

/** The roles a principal of this hub role may attach with: a viewer only observes. */
export function rolesFor(hubRole: string | undefined): AttachRole[] {
  return hubRole === 'viewer' ? ['observer'] : ['controller', 'observer'];
}

/**
 * The `history` of the attach result: each turn's prompt (`full` only) and every pending
 * permission request and question (`full` and `pending_only`); `none` has no history field.
 */
export function historyItems(chat: ChatState, policy: HistoryPolicy): Array<Record<string, unknown>> | undefined {
  if (policy === 'none') return undefined;
  const items: Array<Record<string, unknown>> = [];
  if (policy === 'full') {
    for (const turn of [...chat.turns, ...(chat.activeTurn ? [chat.activeTurn] : [])]) items.push({ type: 'prompt', content: turn.message.text, timestamp: turn.startedAt });
  }
  for (const open of openInteractions(chat)) {
    if (open.kind === 'toolConfirmation') items.push({ type: 'permission_request', toolCallId: open.toolCall.toolCallId, status: 'pending' });
    else items.push({ type: 'elicitation', requestId: open.request.id, status: 'pending' });
  }
  return items;
}

/**
 * `permission_resolved` for an accepted tool confirmation: the option that won (the ACP option
 * id this bridge offered for it) and who gave it, from the hub's answered-by stamp, with the
 * attached editor's clientInfo when the answer came from one. The update carries both ACP's
 * `sessionUpdate` discriminator and the RFD's `type`.
 */
export function permissionResolved(
  action: ToolCallConfirmedAction,
  offered: ReadonlyArray<{ optionId: string; kind: string; ahpId?: string }> | undefined,
  attachedAs: (surface: string, user: string) => Pick<ConnectedClient, 'name' | 'version'> | undefined,
): Record<string, unknown> {
  const stamp = answeredByIn(action._meta);
  const chosen =
    action.selectedOptionId !== undefined
      ? (offered?.find((o) => o.ahpId === action.selectedOptionId)?.optionId ?? action.selectedOptionId)
      : offered?.find((o) => (action.approved ? o.kind === 'allow_once' || o.kind === 'allow_always' : o.kind === 'reject_once' || o.kind === 'reject_always'))?.optionId;
  const editor = stamp ? attachedAs(stamp.surface, stamp.user) : undefined;
  const resolvedBy: Record<string, unknown> = stamp ? { name: editor?.name ?? stamp.surface, ...(editor?.version !== undefined && { version: editor.version }), user: stamp.user, surface: stamp.surface, at: stamp.at } : { name: 'hub' };
  return {
    sessionUpdate: 'permission_resolved',
    type: 'permission_resolved',
    toolCallId: action.toolCallId,
    ...(chosen !== undefined && { chosenOptionId: chosen }),
    approved: action.approved,
    resolvedBy,
  };
}

/** `client_disconnected`: a client that was present on the chat left (detached, closed, or its connection dropped). */
export function clientDisconnected(client: ConnectedClient, now: Date): Record<string, unknown> {
  return { sessionUpdate: 'client_disconnected', type: 'client_disconnected', client, timestamp: now.toISOString() };
}
