/**
 * `HubState`: the hub's in-memory image of everything it owns: root state, sessions (with owner
 * and tenant) and chats, each with its current AHP state. `applyRecord` is the one fold used both live and
 * when recovering from the log, so a restarted hub reaches exactly the state it had.
 *
 * Session and chat lifecycle (create/dispose, ownership) is recorded on an internal channel
 * that is never sent to clients; AHP channel actions go through the shared pure reducers.
 * Not to be confused with the README's "root catalogue": the session list root subscribers see,
 * which is derived from this state (`rollup.ts`).
 */
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { rootReducer } from '../../shared/state/root-reducer.js';
import { initialChatState, initialSessionState, type RootState } from '../../shared/protocol/state.js';
import { isKnownAction, type InputCompletedAction, type TurnCancelledAction } from '../../shared/protocol/actions.js';
import { channelKind } from '../../shared/protocol/uris.js';
import { ANSWERED_BY_META, answeredByIn, STOPPED_BY_META, withAnswer, type AnswerIndex } from '../../shared/state/answered-by.js';
import { foldChatGone, foldChatRecord } from '../../shared/state/input-receipts.js';
import type { LogRecord } from '../storage/action-log.js';
import { ChatTable } from './chat-table.js';
import type { ChatEntry, SessionEntry } from './entries.js';

/**
 * Internal channel for lifecycle records; not an AHP URI, so no client can subscribe to it. Its
 * value keeps the older spelling: every log holds it.
 */
export const CATALOGUE_CHANNEL = 'hub:catalog';

export const CatalogueAction = {
  SessionCreated: 'hub/sessionCreated',
  SessionDisposed: 'hub/sessionDisposed',
  ChatCreated: 'hub/chatCreated',
  ChatDisposed: 'hub/chatDisposed',
} as const;

// Type aliases rather than interfaces: an object type alias is assignable to `WireAction` (an
// index signature), so lifecycle records are sequenced like any action without a cast.
export type SessionCreatedRecord = {
  type: typeof CatalogueAction.SessionCreated;
  session: string;
  tenant: string;
  owner: string;
  provider: string;
  title: string;
  createdAt: string;
};
export type SessionDisposedRecord = { type: typeof CatalogueAction.SessionDisposed; session: string };
export type ChatCreatedRecord = {
  type: typeof CatalogueAction.ChatCreated;
  chat: string;
  session: string;
  title: string;
  createdAt: string;
};
export type ChatDisposedRecord = { type: typeof CatalogueAction.ChatDisposed; chat: string };
export type CatalogueRecordAction = SessionCreatedRecord | SessionDisposedRecord | ChatCreatedRecord | ChatDisposedRecord;

/** The lifecycle action a record carries, or undefined for a record on an AHP channel. */
export function catalogueActionOf(record: Pick<LogRecord, 'channel' | 'action'>): CatalogueRecordAction | undefined {
  // Only the hub writes this channel, and only these four actions.
  return record.channel === CATALOGUE_CHANNEL ? (record.action as CatalogueRecordAction) : undefined;
}

export type { ChatEntry, SessionEntry } from './entries.js';

/** JSON image stored in log snapshots. */
export interface CatalogueImage {
  root: RootState;
  sessions: Array<Omit<SessionEntry, 'chats'> & { chats: string[] }>;
  chats: ChatEntry[];
}

/** Records the stamp of an applied `chat/inputCompleted` in the chat's answer index. */
function indexAnswer(chat: ChatEntry, action: InputCompletedAction): void {
  const by = answeredByIn(action._meta);
  if (by) chat.answeredBy = withAnswer(chat.answeredBy, action.requestId, by);
}

/** Records the stamp of an applied `chat/turnCancelled` in the chat's stop index. */
function indexStop(chat: ChatEntry, action: TurnCancelledAction): void {
  const by = answeredByIn(action._meta);
  if (by) chat.stoppedBy = withAnswer(chat.stoppedBy, action.turnId, by);
}

/** A chat snapshot's own `_meta`: who answered and who stopped, beside the state (answered-by.ts). */
export function chatSnapshotMeta(chat: ChatEntry): Record<string, AnswerIndex> | undefined {
  if (!chat.answeredBy && !chat.stoppedBy) return undefined;
  return { ...(chat.answeredBy ? { [ANSWERED_BY_META]: chat.answeredBy } : {}), ...(chat.stoppedBy ? { [STOPPED_BY_META]: chat.stoppedBy } : {}) };
}

export class HubState {
  root: RootState;
  readonly sessions = new Map<string, SessionEntry>();
  /** Chat entries; those of parked sessions are loaded on lookup (chat-table.ts). */
  readonly chats = new ChatTable();

  constructor(root: RootState) {
    this.root = root;
  }

  static fromImage(image: CatalogueImage): HubState {
    const catalogue = new HubState(image.root);
    for (const s of image.sessions) catalogue.sessions.set(s.uri, { ...s, chats: new Set(s.chats) });
    for (const c of image.chats) catalogue.chats.set(c.uri, { ...c });
    return catalogue;
  }

  toImage(): CatalogueImage {
    return {
      root: this.root,
      sessions: [...this.sessions.values()].map((s) => ({ ...s, chats: [...s.chats] })),
      chats: [...this.chats.imageEntries()].map((c) => ({ ...c })),
    };
  }

  /** The session a session or chat channel belongs to (undefined for any other channel). */
  sessionOf(channel: string): SessionEntry | undefined {
    const chat = this.chats.get(channel);
    return this.sessions.get(chat ? chat.session : channel);
  }

  /**
   * Applies one sequenced record. Records for channels that no longer exist are no-ops.
   * `serverSeq` and `origin` feed the steering receipts (which record truncated a chat, whether
   * the hub or a client sent it); callers that only build state may leave them out.
   */
  applyRecord(record: Pick<LogRecord, 'channel' | 'action'> & Partial<Pick<LogRecord, 'serverSeq' | 'origin'>>): void {
    const lifecycle = catalogueActionOf(record);
    if (lifecycle) {
      this.#applyCatalogue(lifecycle);
      return;
    }
    switch (channelKind(record.channel)) {
      case 'root':
        this.root = rootReducer(this.root, record.action);
        return;
      case 'session': {
        const session = this.sessions.get(record.channel);
        if (!session) return;
        const defaultBefore = session.state.defaultChat;
        session.state = sessionReducer(session.state, record.action);
        if (defaultBefore !== undefined && session.state.defaultChat !== defaultBefore && session.inputs) session.inputs = foldChatGone(session.inputs, defaultBefore, 'default_chat_changed');
        return;
      }
      case 'chat': {
        const chat = this.chats.get(record.channel);
        if (!chat) return;
        const before = chat.state;
        chat.state = chatReducer(before, record.action);
        const action = record.action;
        if (!isKnownAction(action) || chat.state === before) return;
        if (action.type === 'chat/inputCompleted') indexAnswer(chat, action);
        else if (action.type === 'chat/turnCancelled') indexStop(chat, action);
        const session = this.sessions.get(chat.session);
        if (!session) return;
        const isDefault = session.state.defaultChat === chat.uri;
        const facts = { chat: chat.uri, isDefault, serverSeq: record.serverSeq ?? 0, action, fromClient: record.origin !== undefined, before, after: chat.state };
        const inputs = foldChatRecord(session.uri, session.inputs, facts);
        if (inputs !== session.inputs) session.inputs = inputs;
        return;
      }
      default:
        return;
    }
  }

  #applyCatalogue(action: CatalogueRecordAction): void {
    switch (action.type) {
      case CatalogueAction.SessionCreated:
        this.sessions.set(action.session, {
          uri: action.session,
          tenant: action.tenant,
          owner: action.owner,
          provider: action.provider,
          createdAt: action.createdAt,
          state: initialSessionState(action.session, action.provider, action.title),
          chats: new Set(),
        });
        return;
      case CatalogueAction.SessionDisposed: {
        const session = this.sessions.get(action.session);
        if (!session) return;
        for (const chat of session.chats) this.chats.delete(chat);
        this.sessions.delete(action.session);
        return;
      }
      case CatalogueAction.ChatCreated: {
        const session = this.sessions.get(action.session);
        if (!session) return;
        session.chats.add(action.chat);
        this.chats.set(action.chat, {
          uri: action.chat,
          session: action.session,
          state: initialChatState(action.chat, action.title, action.createdAt),
        });
        return;
      }
      case CatalogueAction.ChatDisposed: {
        const chat = this.chats.get(action.chat);
        if (!chat) return;
        const session = this.sessions.get(chat.session);
        session?.chats.delete(action.chat);
        if (session?.inputs) session.inputs = foldChatGone(session.inputs, action.chat, 'chat_disposed');
        this.chats.delete(action.chat);
        return;
      }
      default:
        return;
    }
  }
}
