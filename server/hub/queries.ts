/**
 * Reads of the hub's state for a principal: the tenant check (other tenants' sessions do not
 * exist for them), the default chat the catalogue vouches for, session lists and snapshots. Pure
 * functions of `HubState`; the hub's facade methods call them.
 */
import { ProtocolError } from '../../shared/protocol/errors.js';
import type { Snapshot } from '../../shared/protocol/messages.js';
import { channelKind, ROOT_URI } from '../../shared/protocol/uris.js';
import type { Principal } from '../auth/auth.js';
import { chatSnapshotMeta, type ChatEntry, type HubState, type SessionEntry } from './catalogue.js';
import { sessionSummary, type SessionSummaryView } from './rollup.js';

export function visibleSessionIn(state: HubState, principal: Principal, uri: string): SessionEntry | undefined {
  const s = state.sessions.get(uri);
  return s && s.tenant === principal.tenant ? s : undefined;
}

export function visibleChatIn(state: HubState, principal: Principal, uri: string): ChatEntry | undefined {
  const c = state.chats.get(uri);
  return c && visibleSessionIn(state, principal, c.session) ? c : undefined;
}

/** The session's default chat, only when the catalogue says that chat belongs to the session. */
export function defaultChatIn(state: HubState, sessionUri: string): string | undefined {
  const session = state.sessions.get(sessionUri);
  const chat = session?.state.defaultChat;
  return chat !== undefined && session!.chats.has(chat) && state.chats.get(chat)?.session === sessionUri ? chat : undefined;
}

/** Read-only access for search and export (`HubPort.reader`): never loads a parked session. */
export interface SessionReader {
  /** Every session of the principal's tenant, most recently modified first. */
  sessions(principal: Principal): SessionEntry[];
  /** The session's chats as they are now, in catalogue order (parked ones read from the cache, left parked). */
  chatsOf(session: SessionEntry): ChatEntry[];
}

export function sessionReaderOf(state: () => HubState): SessionReader {
  const modifiedAt = (s: SessionEntry): number => Math.max(Date.parse(s.createdAt), ...s.state.chats.map((c) => Date.parse(c.modifiedAt)).filter(Number.isFinite));
  return {
    sessions: (principal) =>
      [...state().sessions.values()]
        .filter((s) => s.tenant === principal.tenant)
        .map((s) => [s, modifiedAt(s)] as const)
        .sort((a, b) => b[1] - a[1])
        .map(([s]) => s),
    chatsOf: (session) =>
      state().chats.peekSession(
        session.uri,
        session.state.chats.map((c) => c.resource).filter((uri) => session.chats.has(uri)),
      ),
  };
}

export function listSessionsIn(state: HubState, principal: Principal): SessionSummaryView[] {
  const out: SessionSummaryView[] = [];
  for (const s of state.sessions.values()) {
    if (s.tenant === principal.tenant) out.push(sessionSummary(s, state));
  }
  return out.sort((a, b) => Date.parse(b.modifiedAt) - Date.parse(a.modifiedAt));
}

/** The snapshot of a channel visible to the principal at `fromSeq`; throws SessionNotFound/NotFound otherwise. */
export function snapshotIn(state: HubState, principal: Principal, channel: string, fromSeq: number): Snapshot {
  const kind = channelKind(channel);
  if (kind === 'root') return { resource: ROOT_URI, state: state.root, fromSeq };
  if (kind === 'session') {
    const s = visibleSessionIn(state, principal, channel);
    if (!s) throw new ProtocolError('session_not_found', `session ${channel} not found`);
    // Who created it, beside the state (replicas stay equal): the app offers Delete to them and admins.
    return { resource: channel, state: s.state, fromSeq, _meta: { 'hub/owner': s.owner } };
  }
  if (kind === 'chat') {
    const c = visibleChatIn(state, principal, channel);
    if (!c) throw new ProtocolError('not_found', `chat ${channel} not found`);
    // Who answered stays beside the state (see shared/state/answered-by.ts).
    // Who answered and who stopped stay beside the state (see shared/state/answered-by.ts).
    const meta = chatSnapshotMeta(c);
    return meta ? { resource: channel, state: c.state, fromSeq, _meta: meta } : { resource: channel, state: c.state, fromSeq };
  }
  throw new ProtocolError('invalid_params', `unsupported channel URI ${JSON.stringify(channel)}`);
}
