/**
 * An in-memory `HubPort` for unit tests of features (steering, interactions, collab, qwen-serve):
 * no log, no sockets, no validation beyond tenant visibility and the principal's grants (the
 * real `authorize`, checked at `enter` as the hub's door checks it). Actions go through the real shared
 * reducers, so a feature reads the state it would read from the hub; hooks are called in
 * `HOOK_ORDER`, and `turnEnded` is derived from the state before and after by the hub's own `HookList`.
 * Every commit is "durable" at once: its delivered phase runs right after its commit phase (after
 * the delivered phases already waiting, so a dispatch from a hook is delivered in order too).
 * A test can make the next submission fail with `refuseNext`.
 */
import { isKnownAction } from '../../shared/protocol/actions.js';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { kindOfRpcCode, type ErrorKind } from '../../shared/protocol/error-kinds.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import { initialChatState, initialSessionState } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { foldChatRecord } from '../../shared/state/input-receipts.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import type { Principal } from '../../server/auth/auth.js';
import type { ChatEntry, SessionEntry } from '../../server/hub/catalogue.js';
import type { Connection } from '../../server/hub/connection.js';
import { HookList } from '../../server/hub/hook-list.js';
import type { CommitFacts, HookOwner, HubHooks, HubPort } from '../../server/hub/hub-port.js';
import { authorize } from '../../server/auth/authorize.js';
import { rejectedOf, sequenced, submitted, type CheckEntry, type Entry, type Outcome, type SubmitOutcome } from '../../server/hub/entry.js';
import type { SessionReader } from '../../server/hub/queries.js';

const AT = '2026-01-01T00:00:00.000Z';

export class FakeHubPort implements HubPort {
  readonly sessions = new Map<string, SessionEntry>();
  readonly chats = new Map<string, ChatEntry>();
  /** Every committed action, in order (what `submitAs` and `dispatchServer` let through). */
  readonly committed: Array<{ channel: string; action: WireAction; via: 'submitAs' | 'dispatchServer'; surface?: string | undefined }> = [];
  /** The hub's own hook list; a hook that throws fails the test at once instead of being logged. */
  readonly #hooks = new HookList((err) => {
    throw err;
  });
  #seq = 0;
  readonly reader: SessionReader = {
    sessions: (principal) => [...this.sessions.values()].filter((s) => s.tenant === principal.tenant),
    chatsOf: (session) => [...session.chats].flatMap((uri) => this.chats.get(uri) ?? []),
  };
  /** Delivered phases waiting to run, oldest commit first; drained by the outermost caller. */
  readonly #toDeliver: Array<{ readonly serverSeq: number; readonly phase: () => void }> = [];
  #delivering = false;
  /** Commit phases running (a hook that dispatches commits inside one): delivery waits for them. */
  #committing = 0;
  #refusal: { code: number; kind: ErrorKind; message: string } | undefined;

  /** A session of `tenant` with one chat, its default (`<uri>/chat`). Returns the chat's URI. */
  addSession(uri: string, tenant = 'default', provider = 'demo'): string {
    const chat = `ahp-chat:${uri.slice(uri.indexOf(':') + 1)}/main`;
    const state = { ...initialSessionState(uri, provider, 'test session'), defaultChat: chat };
    this.sessions.set(uri, { uri, tenant, owner: 'alice', provider, createdAt: AT, state, chats: new Set([chat]) });
    this.chats.set(chat, { uri: chat, session: uri, state: initialChatState(chat, 'main', AT) });
    return chat;
  }

  /** The next submission as a principal (only) is refused with this code, as the hub's validation would. */
  refuseNext(code: number, message: string): void {
    this.#refusal = { code, kind: kindOfRpcCode(code), message };
  }

  /** The door: a principal's or the hub's action, createSession / disposeSession, or a feature's own operation (grants, visibility). */
  enter(entry: CheckEntry): Outcome;
  enter(entry: Entry): Outcome | Promise<Outcome>;
  enter(entry: Entry): Outcome | Promise<Outcome> {
    const refusal = (kind: 'permission_denied' | 'not_found' | 'session_not_found', message: string): Outcome => ({
      outcome: 'rejected',
      kind,
      code: kind === 'permission_denied' ? ErrorCode.PermissionDenied : kind === 'not_found' ? ErrorCode.NotFound : ErrorCode.SessionNotFound,
      message,
      at: 'decision',
    });
    switch (entry.op) {
      case 'dispatch': {
        const by = entry.by;
        if (by.from === 'client') throw new Error('the fake hub port has no AHP clients');
        if (by.from === 'server') {
          if (!this.chats.has(entry.channel) && !this.sessions.has(entry.channel)) return Promise.resolve(rejectedOf(new Error(`no channel ${entry.channel}`), 'decision'));
          return Promise.resolve({ outcome: 'accepted', serverSeq: this.commit(entry.channel, entry.action, 'dispatchServer') });
        }
        const chat = this.chats.get(entry.channel);
        const session = this.sessions.get(chat ? chat.session : entry.channel);
        if (!session || session.tenant !== by.principal.tenant) return Promise.resolve(refusal('not_found', `no channel ${entry.channel}`));
        const denied = authorize(by.principal, entry.as ?? 'dispatch');
        if (denied) return Promise.resolve(refusal(denied.kind, denied.message));
        const next = this.#refusal;
        this.#refusal = undefined;
        if (next) return Promise.resolve({ outcome: 'rejected', ...next, at: 'decision' });
        return Promise.resolve({ outcome: 'accepted', serverSeq: this.commit(entry.channel, entry.action, 'submitAs', by.surface) });
      }
      case 'createSession': {
        const denied = authorize(entry.principal, entry.as ?? 'createSession');
        if (denied) return Promise.resolve(refusal(denied.kind, denied.message));
        return Promise.resolve({ outcome: 'accepted', defaultChat: this.addSession(entry.uri, entry.principal.tenant, entry.provider) });
      }
      case 'disposeSession': {
        const session = this.visibleSession(entry.principal, entry.uri);
        if (!session) return Promise.resolve(refusal('session_not_found', `session ${entry.uri} not found`));
        const denied = authorize(entry.principal, entry.as ?? 'disposeSession', session.owner);
        if (denied) return Promise.resolve(refusal(denied.kind, denied.message));
        for (const chat of session.chats) this.chats.delete(chat);
        this.sessions.delete(entry.uri);
        this.#deliver(this.#seq, () => this.#hooks.call((h) => h.sessionDisposed?.({ session: entry.uri })));
        return Promise.resolve({ outcome: 'accepted' });
      }
      case 'createChat':
      case 'disposeChat':
        throw new Error(`the fake hub port has no ${entry.op}`);
      default: {
        if (entry.session !== undefined && !this.visibleSession(entry.principal, entry.session)) return refusal('session_not_found', `session ${entry.session} not found`);
        const denied = authorize(entry.principal, entry.op);
        return denied ? refusal(denied.kind, denied.message) : { outcome: 'accepted' };
      }
    }
  }

  /** `Hub.submitAs`'s rendering, for tests. */
  async submitAs(principal: Principal, channel: string, action: WireAction, surface?: string): Promise<SubmitOutcome> {
    return submitted(await this.enter({ op: 'dispatch', by: { from: 'principal', principal, surface }, channel, action }));
  }

  /** `Hub.dispatchServer`'s rendering, for tests. */
  async dispatchServer(channel: string, action: WireAction): Promise<number> {
    return sequenced(await this.enter({ op: 'dispatch', by: { from: 'server' }, channel, action }));
  }

  /** Applies an action through the shared reducers and calls the hooks, like a hub commit. */
  commit(channel: string, action: WireAction, via: 'submitAs' | 'dispatchServer' = 'dispatchServer', surface?: string, remote = false): number {
    const chat = this.chats.get(channel);
    const turnBefore = chat?.state.activeTurn?.id;
    const serverSeq = ++this.#seq;
    if (chat) {
      const before = chat.state;
      chat.state = chatReducer(before, action);
      // The steering receipts beside the session state, folded as HubState.applyRecord does.
      const session = this.sessions.get(chat.session);
      if (session && isKnownAction(action)) {
        const facts = { chat: channel, isDefault: session.state.defaultChat === channel, serverSeq, action, fromClient: via === 'submitAs', before, after: chat.state };
        const inputs = foldChatRecord(session.uri, session.inputs, facts);
        if (inputs) session.inputs = inputs;
      }
    } else {
      const session = this.sessions.get(channel);
      if (session) session.state = sessionReducer(session.state, action);
    }
    this.committed.push({ channel, action, via, surface });
    const event: CommitFacts = { channel, action, known: isKnownAction(action) ? action : undefined, serverSeq, remote };
    this.#committing++;
    let delivered: () => void;
    try {
      delivered = this.#hooks.announceCommit(event, chat && { uri: channel, session: chat.session, activeTurnId: chat.state.activeTurn?.id }, turnBefore);
    } finally {
      this.#committing--;
    }
    this.#deliver(serverSeq, delivered);
    return serverSeq;
  }

  /** Queues a delivered phase in serverSeq order and runs the queue unless a phase is running. */
  #deliver(serverSeq: number, phase: () => void): void {
    const at = this.#toDeliver.findIndex((d) => d.serverSeq > serverSeq);
    this.#toDeliver.splice(at === -1 ? this.#toDeliver.length : at, 0, { serverSeq, phase });
    if (this.#delivering || this.#committing > 0) return;
    this.#delivering = true;
    try {
      for (let next = this.#toDeliver.shift(); next; next = this.#toDeliver.shift()) next.phase();
    } finally {
      this.#delivering = false;
    }
  }

  visibleSession(principal: Principal, uri: string): SessionEntry | undefined {
    const s = this.sessions.get(uri);
    return s && s.tenant === principal.tenant ? s : undefined;
  }

  visibleChat(principal: Principal, uri: string): ChatEntry | undefined {
    const c = this.chats.get(uri);
    return c && this.visibleSession(principal, c.session) ? c : undefined;
  }

  sessionEntry(uri: string): SessionEntry | undefined {
    return this.sessions.get(uri);
  }

  chatEntry(uri: string): ChatEntry | undefined {
    return this.chats.get(uri);
  }

  defaultChatOf(sessionUri: string): string | undefined {
    const chat = this.sessions.get(sessionUri)?.state.defaultChat;
    return chat !== undefined && this.chats.get(chat)?.session === sessionUri ? chat : undefined;
  }

  /** `Hub.disposeSession`'s rendering, for tests. */
  async disposeSession(principal: Principal, uri: string): Promise<void> {
    const o = await this.enter({ op: 'disposeSession', principal, uri });
    if (o.outcome !== 'accepted') throw new Error(`no session ${uri}`);
  }

  disposeChat(chat: string): void {
    const entry = this.chats.get(chat);
    if (!entry) return;
    this.chats.delete(chat);
    this.sessions.get(entry.session)?.chats.delete(chat);
    this.#deliver(this.#seq, () => this.#hooks.call((h) => h.chatDisposed?.({ chat, session: entry.session })));
  }

  disconnect(conn: Connection): void {
    this.#hooks.call((h) => h.disconnected?.(conn));
  }

  async drain(): Promise<void> {}

  /** The fake is one process with its own log: every decision is already in turn. */
  readonly sharesLog = false;
  /** Tests set it to stand for a tenant whose storage fails. */
  storageProblem: string | undefined = undefined;
  decisionTurn(): undefined {
    return undefined;
  }

  hook(owner: HookOwner, hooks: HubHooks): () => void {
    return this.#hooks.add(owner, hooks);
  }

  /** How many owners have hooks registered (a feature that stops unregisters its own). */
  get hookCount(): number {
    return this.#hooks.size;
  }
}
