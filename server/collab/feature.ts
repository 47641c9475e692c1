/**
 * Collaborative answers: a Yjs document per open input request so that several people typing in
 * the same text answer merge character by character, plus presence (who views the request and
 * which question each person edits). Wire protocol: shared/protocol/collab.ts; server-side
 * limits: protocol.ts.
 *
 * The AHP chat state stays the source of truth for everyone else: merged text is mirrored into
 * `chat/inputAnswerChanged` drafts through the hub's door (`hub.enter`, full client validation, so a viewer's
 * edit could never land there), and drafts written by clients that do not speak Yjs are merged
 * back into the text. A document is dropped when its request resolves, its turn ends (complete,
 * cancel, error, truncation) or its chat/session is disposed; presence goes with the connection.
 */
import type { KnownAction } from '../../shared/protocol/actions.js';
import * as Y from 'yjs';
import { fromBase64, toBase64 } from 'lib0/buffer';
import { CLUSTER_BUS_SERVICE, type BusMessage, type ClusterBus } from '../cluster-bus/cluster-bus.js';
import { ProtocolError } from '../../shared/protocol/errors.js';
import type { ChatInputRequest } from '../../shared/protocol/state.js';
import type { Principal } from '../auth/auth.js';
import type { Connection } from '../hub/connection.js';
import type { HubPort } from '../hub/hub-port.js';
import type { RpcContext } from '../ahp/rpc.js';
import { encodeError } from '../ahp/rpc.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import type { Feature, FeatureContext } from '../feature-contract.js';
import { CollabRoom, SERVER_ORIGIN } from './collab-room.js';
import { COLLAB_LOG_SERVICE, type CollabLog } from './collab-log.js';
import { ClusterText } from './cluster-text.js';
import { DraftMirror, openRequest } from './draft-mirror.js';
import { CHAT_PRESENCE_DOC, CollabMethod, dataParamsSchema, joinParamsSchema, leaveParamsSchema, textDiff } from '../../shared/protocol/collab.js';
import { DEFAULT_COLLAB_LIMITS, type CollabLimits } from './protocol.js';
import { COLLAB_PRESENCE_SERVICE, presenceService } from './presence.js';

/** Cluster mode: how often a process tells the others it is alive, and when silence means gone. */
export const PRESENCE_HEARTBEAT_MS = 1_000;
export const PRESENCE_EXPIRY_MS = 4_000;
/** Presence clients other processes may hold in one document here. */
export const MAX_REMOTE_AWARENESS_CLIENTS = 1_024;

function roomKey(channel: string, doc: string): string {
  return `${channel}\u0000${doc}`;
}

/** The collaboration engine; the feature wires it to JSON-RPC and hub events. Exposed for tests. */
export class CollabEngine {
  readonly rooms = new Map<string, CollabRoom>();
  readonly #byConn = new Map<Connection, Set<CollabRoom>>();
  /** Writes members' text into the drafts; their updates reach the others after that append. */
  readonly mirror: DraftMirror;
  /** Cluster mode: the ephemeral bus presence travels on, and when each other process was last heard. */
  readonly #bus: ClusterBus | undefined;
  readonly #lastHeard = new Map<string, number>();
  #heartbeat: NodeJS.Timeout | undefined;
  #offBus: (() => void) | undefined;
  /** Cluster mode with a collab log: the one Yjs history per document every node shares. */
  readonly #text: ClusterText | undefined;
  /** Cluster mode: rooms whose history is being read (joins of the same document wait for it). */
  readonly #opening = new Map<string, Promise<CollabRoom>>();

  constructor(
    private readonly hub: HubPort,
    private readonly logger: Logger,
    readonly limits: CollabLimits = DEFAULT_COLLAB_LIMITS,
    bus?: ClusterBus,
    collabLog?: CollabLog,
  ) {
    this.mirror = new DraftMirror(hub, logger, limits.mirrorDelayMs);
    this.#bus = bus;
    this.#text = bus && collabLog ? new ClusterText(collabLog, bus, logger, roomKey) : undefined;
    if (bus) {
      const offMessages = bus.onMessage((m) => this.#onBusMessage(m));
      // Connected (late at start, or again after an outage): announce and ask again, since
      // everything sent while the bus was down is lost.
      const offConnected = bus.onConnected(() => {
        this.#text?.onBusConnected();
        for (const room of this.rooms.values()) {
          bus.publish({ kind: 'awarenessQuery', channel: room.channel, doc: room.requestId });
          this.#relay(room, room.localAwarenessIds());
        }
      });
      this.#offBus = () => {
        offMessages();
        offConnected();
      };
      this.#heartbeat = setInterval(() => this.#beat(), PRESENCE_HEARTBEAT_MS);
      this.#heartbeat.unref();
    }
  }

  // ─── Cluster presence ───────────────────────────────────────────────────────
  // Presence is ephemeral, so it never enters the durable log: each process relays its members'
  // awareness changes on the cluster bus (one client per message, to stay under the bus's size
  // limit) and applies what others relay to its own room of the same document. A process that
  // joins a room asks the others for their members' current presence. Every process with a room
  // announces itself every PRESENCE_HEARTBEAT_MS; one not heard from for PRESENCE_EXPIRY_MS (killed, cut
  // off) has its members' presence removed everywhere.

  #relay(room: CollabRoom, ids: readonly number[]): void {
    for (const id of ids) {
      const sent = this.#bus!.publish({ kind: 'awareness', channel: room.channel, doc: room.requestId, data: toBase64(room.encodeAwareness(id)) });
      if (!sent) this.logger.debug('presence not relayed (bus down or state too large for one message)', { channel: room.channel, doc: room.requestId });
    }
  }

  #onBusMessage(m: BusMessage): void {
    this.#lastHeard.set(m.from, Date.now());
    if (m.kind === 'bye') return this.#expire(m.from);
    if (this.#text?.onBusMessage(m)) return;
    if (typeof m['channel'] !== 'string' || typeof m['doc'] !== 'string') return;
    const room = this.rooms.get(roomKey(m['channel'], m['doc']));
    if (!room) return;
    if (m.kind === 'awarenessQuery') {
      this.#relay(room, room.localAwarenessIds());
    } else if (m.kind === 'awareness' && typeof m['data'] === 'string' && m['data'].length <= this.limits.maxMessageChars) {
      try {
        room.applyRemoteAwareness(m.from, fromBase64(m['data']), MAX_REMOTE_AWARENESS_CLIENTS);
      } catch (err) {
        this.logger.debug('malformed relayed presence ignored', errorFields(err));
      }
    }
  }

  #beat(): void {
    // Only a process with rooms has members whose presence others must keep alive: an idle
    // tenant sends nothing (one NOTIFY per tenant per second adds up on a node with many).
    if (this.rooms.size > 0) this.#bus!.publish({ kind: 'alive' });
    const now = Date.now();
    for (const [node, at] of this.#lastHeard) if (now - at > PRESENCE_EXPIRY_MS) this.#expire(node);
  }

  #expire(node: string): void {
    this.#lastHeard.delete(node);
    for (const room of this.rooms.values()) room.expireRemote(node);
  }

  join(conn: Connection, principal: Principal, channel: string, doc: string): ReturnType<CollabRoom['join']> | Promise<ReturnType<CollabRoom['join']>> {
    const { chat, request } = this.#joinable(principal, channel, doc);
    const key = roomKey(channel, doc);
    const room = this.rooms.get(key);
    this.#assertRoomFor(conn, room);
    if (room) return this.#enter(conn, principal, room);
    if (!this.#text || doc === CHAT_PRESENCE_DOC) {
      const created = this.#newRoom(channel, doc, chat.session);
      // Seed each text question with its current draft (or its default), once, by the server:
      // every member then receives the same insert through sync and nobody seeds twice.
      created.doc.transact(() => {
        for (const [questionId, value] of seedTextOf(request)) if (value) created.text(questionId).insert(0, value);
      }, SERVER_ORIGIN);
      return this.#enter(conn, principal, created);
    }
    // Cluster mode: the document's history is shared, and the first node to open it seeds it.
    const text = this.#text;
    let opening = this.#opening.get(key);
    if (!opening) {
      opening = (async () => {
        const { epoch, rows } = await text.history(channel, doc, seedTextOf(request));
        const created = this.#newRoom(channel, doc, chat.session, epoch);
        text.attach(created, rows);
        return created;
      })().finally(() => this.#opening.delete(key));
      this.#opening.set(key, opening);
    }
    return opening.then((opened) => {
      // The request may have been answered (or the member gone) while the history was read.
      this.#joinable(principal, channel, doc);
      if (opened.closed) throw new ProtocolError('not_found', `no open input request ${doc} on ${channel}`);
      this.#assertRoomFor(conn, opened);
      return this.#enter(conn, principal, opened);
    });
  }

  #joinable(principal: Principal, channel: string, doc: string): { chat: NonNullable<ReturnType<HubPort['visibleChat']>>; request: ChatInputRequest | undefined } {
    const chat = this.hub.visibleChat(principal, channel);
    const presenceOnly = doc === CHAT_PRESENCE_DOC;
    const request = chat && !presenceOnly ? openRequest(chat.state, doc) : undefined;
    if (!chat || (!request && !presenceOnly)) throw new ProtocolError('not_found', `no open input request ${doc} on ${channel}`);
    return { chat, request };
  }

  #assertRoomFor(conn: Connection, room: CollabRoom | undefined): void {
    const mine = this.#byConn.get(conn);
    if (!(room && mine?.has(room)) && (mine?.size ?? 0) >= this.limits.maxDocsPerConnection) {
      throw new ProtocolError('limit_exceeded', `at most ${this.limits.maxDocsPerConnection} collaborative documents per connection`);
    }
  }

  #newRoom(channel: string, doc: string, session: string, epoch?: string): CollabRoom {
    const room: CollabRoom = new CollabRoom(
      channel,
      doc,
      session,
      this.limits,
      (questionId, who) => this.mirror.markDirty(room, questionId, who),
      (r) => this.drop(r, 'document too large'),
      epoch,
    );
    this.rooms.set(roomKey(channel, doc), room);
    if (this.#bus) {
      room.relayAwareness = (ids) => this.#relay(room, ids);
      // Others' members already in this document: ask them to say so.
      this.#bus.publish({ kind: 'awarenessQuery', channel, doc });
    }
    return room;
  }

  #enter(conn: Connection, principal: Principal, room: CollabRoom): ReturnType<CollabRoom['join']> {
    const mine = this.#byConn.get(conn) ?? new Set<CollabRoom>();
    mine.add(room);
    this.#byConn.set(conn, mine);
    return room.join(conn, principal);
  }

  leave(conn: Connection, channel: string, doc: string): void {
    const room = this.rooms.get(roomKey(channel, doc));
    if (!room) return;
    room.leave(conn);
    this.#byConn.get(conn)?.delete(room);
    this.#releaseIfEmpty(room);
  }

  /** The connection closed: leave every room (its presence disappears for the others). */
  disconnect(conn: Connection): void {
    const rooms = this.#byConn.get(conn);
    if (!rooms) return;
    this.#byConn.delete(conn);
    for (const room of rooms) {
      room.leave(conn);
      this.#releaseIfEmpty(room);
    }
  }

  /**
   * A presence room holds nothing but presence: free it with its last member. Request documents
   * stay until the request resolves (their text is the state being answered).
   */
  #releaseIfEmpty(room: CollabRoom): void {
    if (room.requestId === CHAT_PRESENCE_DOC && room.members.size === 0) this.drop(room, 'nobody is viewing');
  }

  sync(ctx: RpcContext, channel: string, doc: string, data: Uint8Array): void {
    const room = this.rooms.get(roomKey(channel, doc));
    if (!room || !room.members.has(ctx.conn)) return this.#notJoined(ctx, channel, doc);
    try {
      room.sync(ctx.conn, data, room.requestId !== CHAT_PRESENCE_DOC && this.hub.enter({ op: 'editDraft', principal: ctx.principal }).outcome === 'accepted');
    } catch (err) {
      this.logger.warn('bad collab sync message', { channel, doc, ...errorFields(err) });
      ctx.conn.send(encodeError(null, new ProtocolError('invalid_params', `invalid ${CollabMethod.Sync} payload`)));
    }
  }

  awareness(ctx: RpcContext, channel: string, doc: string, data: Uint8Array): void {
    const room = this.rooms.get(roomKey(channel, doc));
    if (!room || !room.members.has(ctx.conn)) return this.#notJoined(ctx, channel, doc);
    let problem: string | undefined;
    try {
      problem = room.awarenessUpdate(ctx.conn, data);
    } catch {
      problem = 'malformed awareness update';
    }
    if (problem) ctx.conn.send(encodeError(null, new ProtocolError('invalid_params', `${CollabMethod.Awareness} refused: ${problem}`)));
  }

  /**
   * Drops a document: members are told, pending mirrors are abandoned. `ended`: its request is
   * over (answered, turn ended, chat gone), so the cluster's shared history of it goes too.
   */
  drop(room: CollabRoom, reason: string, ended = false): void {
    if (this.rooms.get(roomKey(room.channel, room.requestId)) !== room) return;
    this.#text?.detach(room, ended && room.requestId !== CHAT_PRESENCE_DOC);
    this.rooms.delete(roomKey(room.channel, room.requestId));
    this.mirror.forget(room);
    for (const conn of room.members.keys()) this.#byConn.get(conn)?.delete(room);
    room.close(reason);
  }

  dropWhere(predicate: (room: CollabRoom) => boolean, reason: string, ended = false): void {
    for (const room of [...this.rooms.values()]) if (predicate(room)) this.drop(room, reason, ended);
  }

  /** Hub commits: drafts from non-Yjs clients flow into the text; resolution drops documents. */
  onCommitted(channel: string, action: KnownAction | undefined, remote = false): void {
    if (!action) return;
    if (action.type === 'chat/inputCompleted' && action.requestId !== CHAT_PRESENCE_DOC) {
      const room = this.rooms.get(roomKey(channel, action.requestId));
      if (room) this.drop(room, `input request ${room.requestId} was answered (${String(action.response)})`, true);
      else if (!remote) this.#text?.removeHistory(channel, action.requestId);
      return;
    }
    // Cluster mode: text reaches this node's document through the shared history; only the node
    // that sequenced a draft merges it (into the history), or two nodes would insert it twice.
    if (action.type === 'chat/inputAnswerChanged' && !(this.#text && remote)) {
      const room = this.rooms.get(roomKey(channel, action.requestId));
      const questionId = action.questionId;
      const answer: { state?: string; value?: { kind?: string; value?: unknown } } | undefined = action.answer;
      const next = answer === undefined ? '' : answer.value?.kind === 'text' && typeof answer.value.value === 'string' ? answer.value.value : undefined;
      if (!room) {
        if (this.#text && next !== undefined && this.#isTextQuestionOf(channel, action.requestId, questionId)) this.#text.mergeDraftWithoutRoom(channel, action.requestId, questionId, next, applyDiff);
        return;
      }
      if (next === undefined || !this.#isTextQuestion(room, questionId)) return;
      if (this.mirror.takeInFlight(room, questionId, next)) return;
      const text = room.text(questionId);
      if (text.toString() !== next) room.doc.transact(() => applyDiff(text, next), SERVER_ORIGIN);
    }
  }

  /** The chat's turn ended: its input requests are gone, and so are their documents. */
  onTurnEnded(channel: string): void {
    this.dropWhere((r) => r.channel === channel && r.requestId !== CHAT_PRESENCE_DOC, 'the turn ended', true);
  }

  /** Shutdown: text typed in the last `mirrorDelayMs` reaches the drafts first (the log is still open). */
  close(): Promise<void> {
    return this.mirror.flush().then(() => this.#closeNow());
  }

  #closeNow(): void {
    this.dropWhere(() => true, 'the hub is shutting down');
    this.#text?.close();
    if (this.#bus) {
      clearInterval(this.#heartbeat);
      this.#offBus?.();
      // Others remove this process's members' presence now instead of after the expiry.
      this.#bus.publish({ kind: 'bye' });
    }
  }

  #isTextQuestion(room: CollabRoom, questionId: string): boolean {
    return this.#isTextQuestionOf(room.channel, room.requestId, questionId);
  }

  #isTextQuestionOf(channel: string, requestId: string, questionId: string): boolean {
    const chat = this.hub.chatEntry(channel);
    const request = openRequest(chat?.state, requestId);
    return request?.questions?.some((q) => q.id === questionId && q.kind === 'text') ?? false;
  }

  #notJoined(ctx: RpcContext, channel: string, doc: string): void {
    ctx.conn.send(encodeError(null, new ProtocolError('not_found', `not joined to collaborative document ${doc} on ${channel}: send ${CollabMethod.Join} first`)));
  }
}

/** Question id → the text a new document starts with: its current draft, or its default. */
function seedTextOf(request: ChatInputRequest | undefined): Map<string, string> {
  const seed = new Map<string, string>();
  for (const q of request?.questions ?? []) {
    if (q.kind !== 'text') continue;
    const answer = request?.answers?.[q.id];
    const draft = answer && answer.state !== 'skipped' && answer.value.kind === 'text' ? (answer.value as { value: string }).value : undefined;
    seed.set(q.id, draft ?? (answer === undefined && typeof q.defaultValue === 'string' ? q.defaultValue : ''));
  }
  return seed;
}

/** Turns `text` into `next` with one delete and one insert (see `textDiff`). */
export function applyDiff(text: Y.Text, next: string): void {
  const edit = textDiff(text.toString(), next);
  if (edit.remove > 0) text.delete(edit.index, edit.remove);
  if (edit.insert.length > 0) text.insert(edit.index, edit.insert);
}

function decode(data: string, limits: CollabLimits): Uint8Array {
  if (data.length > limits.maxMessageChars) throw new ProtocolError('limit_exceeded', `collab payload larger than ${limits.maxMessageChars} characters`);
  return fromBase64(data);
}

/** Registers the `x-collab/*` methods and hub listeners; `dispose` undoes it and drops every document. */
export function installCollab(ctx: Pick<FeatureContext, 'hub' | 'rpc' | 'logger'> & Partial<Pick<FeatureContext, 'services'>>, limits: CollabLimits = DEFAULT_COLLAB_LIMITS): { engine: CollabEngine; dispose(): Promise<void> } {
  const { hub, rpc, logger } = ctx;
  const engine = new CollabEngine(hub, logger, limits, ctx.services?.get(CLUSTER_BUS_SERVICE) as ClusterBus | undefined, ctx.services?.get(COLLAB_LOG_SERVICE) as CollabLog | undefined);
  ctx.services?.set(COLLAB_PRESENCE_SERVICE, presenceService(engine.rooms, roomKey));

  rpc.request(CollabMethod.Join, {
    params: joinParamsSchema,
    handle: (c, p) => engine.join(c.conn, c.principal, p.channel, p.doc),
  });
  const guarded = (handler: (c: RpcContext, channel: string, doc: string, data: Uint8Array) => void) => (c: RpcContext, p: { channel: string; doc: string; data: string }) => {
    let bytes: Uint8Array;
    try {
      bytes = decode(p.data, limits);
    } catch (err) {
      c.conn.send(encodeError(null, new ProtocolError('limit_exceeded', err instanceof Error ? err.message : 'collab payload refused')));
      return;
    }
    handler(c, p.channel, p.doc, bytes);
  };
  rpc.notification(CollabMethod.Sync, { params: dataParamsSchema, handle: guarded((c, ch, d, b) => engine.sync(c, ch, d, b)) });
  rpc.notification(CollabMethod.Awareness, { params: dataParamsSchema, handle: guarded((c, ch, d, b) => engine.awareness(c, ch, d, b)) });
  rpc.notification(CollabMethod.Leave, { params: leaveParamsSchema, handle: (c, p) => engine.leave(c.conn, p.channel, p.doc) });

  // Every reaction sends frames to members (or drops documents they hold): delivered phase only.
  // The commit phase only registers, on a draft the mirror wrote, the release of the text frames
  // it makes durable (`draft-mirror.ts`).
  const off = hub.hook('collab', {
    afterCommit: (e) => engine.mirror.committed(e),
    afterDurable: (e) => engine.onCommitted(e.channel, e.known, e.remote),
    turnEndedDurable: (e) => engine.onTurnEnded(e.chat),
    chatDisposed: (e) => engine.dropWhere((r) => r.channel === e.chat, 'the chat was disposed', true),
    sessionDisposed: (e) => engine.dropWhere((r) => r.session === e.session, 'the session was disposed', true),
    disconnected: (conn) => engine.disconnect(conn),
  });

  return {
    engine,
    dispose: () => {
      off();
      return engine.close();
    },
  };
}

export const collabFeature: Feature = {
  name: 'collab',
  install(ctx) {
    const { dispose } = installCollab(ctx);
    return { close: dispose };
  },
};
