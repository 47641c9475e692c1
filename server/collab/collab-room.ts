import { randomUUID } from 'node:crypto';
/**
 * One collaborative document: the Y.Doc of an open input request, its awareness (presence) and
 * the connections following it. Knows y-protocols and the hub's `Connection`, nothing about AHP
 * validation: the feature decides who may join and what happens to merged text.
 */
import * as Y from 'yjs';
import * as syncProtocol from 'y-protocols/sync';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as encoding from 'lib0/encoding';
import * as decoding from 'lib0/decoding';
import { toBase64 } from 'lib0/buffer';
import type { Connection } from '../hub/connection.js';
import type { Principal } from '../auth/auth.js';
import { CollabMethod } from '../../shared/protocol/collab.js';
import type { CollabLimits } from './protocol.js';

/** Transaction origin of changes a member made (so they are not echoed back to it). */
export interface MemberOrigin {
  readonly conn: Connection;
  readonly principal: Principal;
}

interface Member {
  readonly principal: Principal;
  /** Awareness client ids this connection has announced. */
  readonly awarenessIds: Set<number>;
}

/** Origin used for edits the server makes (drafts from AHP clients merged into the text). */
export const SERVER_ORIGIN = Symbol('collab-server');
/** Origin of presence another hub process relayed (never relayed again). */
export const REMOTE_ORIGIN = Symbol('collab-remote');
/** Origin of updates read from the cluster's shared update log (history: nobody edited now). */
export const LOG_ORIGIN = Symbol('collab-log');

/**
 * Origin of a text update another hub process appended to the shared update log, with who made
 * it there: the text changed here too, so this process mirrors it into the draft as that person.
 */
export interface RemoteEditOrigin {
  readonly remoteEditBy: Principal;
}

export class CollabRoom {
  /**
   * Names this document instance: a client re-joining after a hub restart (or after the document
   * was dropped and seeded anew) sees another epoch and knows its history is not in this one.
   */
  readonly epoch: string;
  readonly doc = new Y.Doc();
  readonly awareness: awarenessProtocol.Awareness;
  readonly members = new Map<Connection, Member>();
  /**
   * The document as members have been sent it: every update but the held ones. Joins and sync
   * answers are built from it, so nobody is shown text that is not durable yet.
   */
  readonly #sent = new Y.Doc();
  /** Members' updates not sent to the others yet (see `draft-mirror.ts`), oldest first. */
  #held: Array<{ readonly update: Uint8Array; readonly from: Connection }> = [];
  /** How many updates were ever held before `#held[0]` (so a mark stays valid as they go). */
  #released = 0;
  #bytes = 0;
  #closed = false;
  /** Cluster mode: awareness client ids whose presence another process relayed → that process. */
  readonly remoteOwners = new Map<number, string>();
  /** Cluster mode: called with the client ids whose presence changed here (members, leaves). */
  relayAwareness: ((ids: readonly number[]) => void) | undefined;
  /** Cluster mode: called with each update made here (members, the server), for the shared log. */
  onLocalUpdate: ((update: Uint8Array, by: Principal | undefined) => void) | undefined;

  constructor(
    readonly channel: string,
    readonly requestId: string,
    readonly session: string,
    private readonly limits: CollabLimits,
    /**
     * Called when a member changed the document (question id of the text it changed, if any;
     * who): its update is held until the text is in the log (`release`).
     */
    private readonly onMemberEdit: (questionId: string | undefined, principal: Principal) => void,
    /** Called when the document outgrew its budget. */
    private readonly onOverflow: (room: CollabRoom) => void,
    /** Cluster mode: the document's name in the shared update log, the same on every node. */
    epoch: string = randomUUID(),
  ) {
    this.epoch = epoch;
    this.awareness = new awarenessProtocol.Awareness(this.doc);
    // The server has no presence of its own.
    this.awareness.setLocalState(null);
    // Text is state: a member's update reaches the others only once the text is in the log (held
    // here, released by the mirror's commit). The server's own updates (drafts merged in the
    // delivered phase) and other nodes' (read from the shared collab log) are durable: sent now.
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      this.#bytes += update.length;
      if (isMemberOrigin(origin)) {
        this.#held.push({ update, from: origin.conn });
        this.onMemberEdit(undefined, origin.principal);
      } else {
        this.#send(update, undefined);
      }
      if (isMemberOrigin(origin) || origin === SERVER_ORIGIN) this.onLocalUpdate?.(update, isMemberOrigin(origin) ? origin.principal : undefined);
      if (this.#bytes > this.limits.maxDocBytes) this.onOverflow(this);
    });
    this.doc.on('afterTransaction', (tr: Y.Transaction) => {
      const editor = isMemberOrigin(tr.origin) ? tr.origin.principal : isRemoteEditOrigin(tr.origin) ? tr.origin.remoteEditBy : undefined;
      if (editor === undefined) return;
      for (const type of tr.changed.keys()) {
        const name = nameOf(this.doc, type);
        if (name !== undefined) this.onMemberEdit(name, editor);
      }
    });
    // Presence (awareness) is ephemeral by design: it is never in the log, so it goes out at once.
    this.awareness.on('update', ({ added, updated, removed }: AwarenessChange, origin: unknown) => {
      const changed = [...added, ...updated, ...removed];
      if (changed.length === 0) return;
      const data = awarenessProtocol.encodeAwarenessUpdate(this.awareness, changed);
      this.#broadcast(CollabMethod.Awareness, data, isMemberOrigin(origin) ? origin.conn : undefined);
      if (origin === REMOTE_ORIGIN) return;
      this.relayAwareness?.(changed.filter((id) => !this.remoteOwners.has(id)));
      // A relayed client that timed out here (no renewal for 30 s) is forgotten.
      for (const id of removed) this.remoteOwners.delete(id);
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  text(questionId: string): Y.Text {
    return this.doc.getText(questionId);
  }

  /** Marks how far the held updates go now: `release(mark)` sends those, not later ones. */
  heldMark(): number {
    return this.#released + this.#held.length;
  }

  /** The text of the updates held before `mark` is in the log: they go to the other members. */
  release(mark: number): void {
    const count = mark - this.#released;
    if (count <= 0 || this.#closed) return;
    const due = this.#held.slice(0, count);
    this.#held = this.#held.slice(count);
    this.#released += due.length;
    for (const { update, from } of due) this.#send(update, from);
  }

  /** Records an update as sent and sends it to every member but `except`. */
  #send(update: Uint8Array, except: Connection | undefined): void {
    if (this.#closed) return;
    Y.applyUpdate(this.#sent, update);
    if (this.members.size === 0) return;
    const encoder = encoding.createEncoder();
    syncProtocol.writeUpdate(encoder, update);
    this.#broadcast(CollabMethod.Sync, encoding.toUint8Array(encoder), except);
  }

  join(conn: Connection, principal: Principal): { state: string; stateVector: string; awareness: string; epoch: string } {
    if (!this.members.has(conn)) this.members.set(conn, { principal, awarenessIds: new Set() });
    const ids = [...this.awareness.getStates().keys()];
    return {
      epoch: this.epoch,
      state: toBase64(Y.encodeStateAsUpdate(this.#sent)),
      stateVector: toBase64(Y.encodeStateVector(this.#sent)),
      awareness: toBase64(awarenessProtocol.encodeAwarenessUpdate(this.awareness, ids)),
    };
  }

  /** A member leaves (explicitly or because its connection closed): its presence goes too. */
  leave(conn: Connection): void {
    const member = this.members.get(conn);
    if (!member) return;
    this.members.delete(conn);
    const ids = [...member.awarenessIds].filter((id) => this.awareness.getStates().has(id));
    if (ids.length > 0) awarenessProtocol.removeAwarenessStates(this.awareness, ids, SERVER_ORIGIN);
  }

  /** A y-protocols sync message from a member. Viewers may ask (step 1) but not write. */
  sync(conn: Connection, data: Uint8Array, canWrite: boolean): void {
    const member = this.members.get(conn);
    if (!member) return;
    const decoder = decoding.createDecoder(data);
    const type = decoding.readVarUint(decoder);
    const reply = encoding.createEncoder();
    const origin: MemberOrigin = { conn, principal: member.principal };
    switch (type) {
      case syncProtocol.messageYjsSyncStep1:
        encoding.writeVarUint(reply, syncProtocol.messageYjsSyncStep2);
        syncProtocol.writeSyncStep2(reply, this.#sent, decoding.readVarUint8Array(decoder));
        conn.send(notification(CollabMethod.Sync, this.channel, this.requestId, encoding.toUint8Array(reply)));
        return;
      case syncProtocol.messageYjsSyncStep2:
      case syncProtocol.messageYjsUpdate:
        if (!canWrite) return;
        Y.applyUpdate(this.doc, decoding.readVarUint8Array(decoder), origin);
        return;
      default:
        throw new Error(`unknown sync message type ${type}`);
    }
  }

  /**
   * An awareness update from a member. Each state gets the authenticated `user.id` and `role`
   * stamped over whatever the client claimed; a connection may own only a few client ids.
   */
  awarenessUpdate(conn: Connection, data: Uint8Array): string | undefined {
    const member = this.members.get(conn);
    if (!member) return undefined;
    let tooBig = false;
    const ids = readAwarenessClientIds(data);
    for (const id of ids) {
      if (!member.awarenessIds.has(id)) {
        // Another connection's id: refuse, so nobody can overwrite or erase someone else's presence.
        for (const other of this.members.values()) if (other !== member && other.awarenessIds.has(id)) return 'awareness client id belongs to another connection';
      }
    }
    if (ids.some((id) => this.remoteOwners.has(id))) return 'awareness client id belongs to another connection';
    if (new Set([...member.awarenessIds, ...ids]).size > this.limits.maxAwarenessClientsPerConnection) return 'too many awareness client ids';
    const stamped = awarenessProtocol.modifyAwarenessUpdate(data, (state: unknown) => {
      if (state === null) return null;
      if (JSON.stringify(state).length > this.limits.maxAwarenessStateChars) tooBig = true;
      const obj = typeof state === 'object' && state !== null ? (state as Record<string, unknown>) : {};
      const user = typeof obj['user'] === 'object' && obj['user'] !== null ? (obj['user'] as Record<string, unknown>) : {};
      return { ...obj, user: { ...user, id: member.principal.user, role: member.principal.role } };
    });
    if (tooBig) return 'awareness state too large';
    for (const id of ids) member.awarenessIds.add(id);
    awarenessProtocol.applyAwarenessUpdate(this.awareness, stamped, { conn, principal: member.principal } satisfies MemberOrigin);
    return undefined;
  }

  /** Awareness client ids of this process's members that have a state (what it relays). */
  localAwarenessIds(): number[] {
    const states = this.awareness.getStates();
    const ids: number[] = [];
    for (const member of this.members.values()) for (const id of member.awarenessIds) if (states.has(id)) ids.push(id);
    return ids;
  }

  /** One client's presence encoded alone (a bus message carries one, to stay small). */
  encodeAwareness(id: number): Uint8Array {
    return awarenessProtocol.encodeAwarenessUpdate(this.awareness, [id]);
  }

  /**
   * Cluster mode: presence another process relayed (its members' states, already stamped and
   * bounded there). Refused when it names a client id a member here owns, or when the room
   * already holds `maxRemote` remote clients.
   */
  applyRemoteAwareness(from: string, data: Uint8Array, maxRemote: number): void {
    if (this.#closed) return;
    const ids = readAwarenessClientIds(data);
    for (const id of ids) {
      for (const member of this.members.values()) if (member.awarenessIds.has(id)) return;
      const owner = this.remoteOwners.get(id);
      if (owner !== undefined && owner !== from) return;
      if (owner === undefined && this.remoteOwners.size >= maxRemote) return;
    }
    for (const id of ids) this.remoteOwners.set(id, from);
    awarenessProtocol.applyAwarenessUpdate(this.awareness, data, REMOTE_ORIGIN);
    const states = this.awareness.getStates();
    for (const id of ids) if (!states.has(id)) this.remoteOwners.delete(id);
  }

  /** Cluster mode: another process stopped (or went silent): its members' presence goes. */
  expireRemote(from: string): void {
    const ids = [...this.remoteOwners].filter(([, owner]) => owner === from).map(([id]) => id);
    for (const id of ids) this.remoteOwners.delete(id);
    const present = ids.filter((id) => this.awareness.getStates().has(id));
    if (present.length > 0 && !this.#closed) awarenessProtocol.removeAwarenessStates(this.awareness, present, REMOTE_ORIGIN);
  }

  /** Tells every member the document is gone and releases it. */
  close(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    const text = JSON.stringify({ jsonrpc: '2.0', method: CollabMethod.Closed, params: { channel: this.channel, doc: this.requestId, reason } });
    for (const conn of this.members.keys()) conn.send(text);
    this.members.clear();
    this.#held = [];
    this.awareness.destroy();
    this.doc.destroy();
    this.#sent.destroy();
  }

  #broadcast(method: string, data: Uint8Array, except: Connection | undefined): void {
    if (this.#closed || this.members.size === 0) return;
    const text = notification(method, this.channel, this.requestId, data);
    for (const conn of this.members.keys()) if (conn !== except) conn.send(text);
  }
}

interface AwarenessChange {
  added: number[];
  updated: number[];
  removed: number[];
}

function isRemoteEditOrigin(origin: unknown): origin is RemoteEditOrigin {
  return typeof origin === 'object' && origin !== null && 'remoteEditBy' in origin;
}

function isMemberOrigin(origin: unknown): origin is MemberOrigin {
  return typeof origin === 'object' && origin !== null && 'conn' in origin && 'principal' in origin;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Yjs types are parameterised by event type
function nameOf(doc: Y.Doc, type: Y.AbstractType<any>): string | undefined {
  for (const [name, t] of doc.share) if (t === type) return name;
  return undefined;
}

function notification(method: string, channel: string, doc: string, data: Uint8Array): string {
  return JSON.stringify({ jsonrpc: '2.0', method, params: { channel, doc, data: toBase64(data) } });
}

/** Client ids named in an awareness update (`[count, (clientID, clock, json)*]`). */
function readAwarenessClientIds(update: Uint8Array): number[] {
  const decoder = decoding.createDecoder(update);
  const count = decoding.readVarUint(decoder);
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(decoding.readVarUint(decoder));
    decoding.readVarUint(decoder);
    decoding.readVarString(decoder);
  }
  return ids;
}
