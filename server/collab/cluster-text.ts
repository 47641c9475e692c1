/**
 * Cluster mode: one Yjs history per collaborative document, shared by every node through the
 * collab log (collab-log.ts, a PostgreSQL table). A node's room appends each update made on it
 * (its members typing, the server merging a non-Yjs draft) and then wakes the other nodes on the
 * cluster bus, with the update inline when it fits; they apply it to their room of the same
 * document. Yjs updates are idempotent and commute, so duplicates, reordering and catching up by
 * re-reading the whole history are all harmless. A node opening a room reads the history (the
 * first node to open it stores the seed, atomically), so no two nodes ever seed the same text.
 *
 * Drafts stay what everyone else reads: each node mirrors its room's text into
 * `chat/inputAnswerChanged` as before, also after edits that arrived from other nodes, so the
 * newest draft in the log ends equal to the merged text. A draft from a client that does not speak
 * Yjs is merged into the history once, by the node that sequenced it; other nodes never diff
 * folded drafts into their text (that was what lost characters between nodes).
 */
import * as Y from 'yjs';
import { fromBase64, toBase64 } from 'lib0/buffer';
import { z } from 'zod';
import type { BusMessage, ClusterBus } from '../cluster-bus/cluster-bus.js';
import type { Principal } from '../auth/auth.js';
import { Role } from '../auth/auth.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import type { CollabLog, CollabLogRow } from './collab-log.js';
import { type CollabRoom, LOG_ORIGIN, type RemoteEditOrigin, SERVER_ORIGIN } from './collab-room.js';

/** Bus message kind of "an update was appended to the collab log". */
const UPDATE_KIND = 'collabUpdate';
/** How long a node waits before retrying updates the log refused (store unreachable). */
const RETRY_MS = 1_000;

const principalSchema = z.object({ user: z.string(), tenant: z.string(), role: z.enum(Object.values(Role) as [Role, ...Role[]]) });

export class ClusterText {
  /** Rooms by key whose history is known to this node. */
  readonly #rooms = new Map<string, CollabRoom>();
  /** Updates made here the log has not taken yet, per room (retried). */
  readonly #unsent = new Map<CollabRoom, { updates: Uint8Array[]; by: Principal | undefined }>();
  #retry: NodeJS.Timeout | undefined;
  /** Merges of non-Yjs drafts into documents this node holds no room for, one at a time. */
  #merging: Promise<void> = Promise.resolve();

  constructor(
    private readonly log: CollabLog,
    private readonly bus: ClusterBus,
    private readonly logger: Logger,
    private readonly keyOf: (channel: string, doc: string) => string,
  ) {}

  /**
   * The document's history, stored with `seedText` (question id → text) first when it has none;
   * returns the epoch every node uses for it (the history's first id).
   */
  async history(channel: string, doc: string, seedText: ReadonlyMap<string, string>): Promise<{ epoch: string; rows: CollabLogRow[] }> {
    const seedDoc = new Y.Doc();
    seedDoc.transact(() => {
      for (const [questionId, value] of seedText) if (value) seedDoc.getText(questionId).insert(0, value);
    });
    const seed = Y.encodeStateAsUpdate(seedDoc);
    seedDoc.destroy();
    const rows = await this.log.open(channel, doc, seed);
    return { epoch: `log-${rows[0]?.id ?? 0}`, rows };
  }

  /** The room holds `rows`; from now on its updates go to the log and others' reach it. */
  attach(room: CollabRoom, rows: readonly CollabLogRow[]): void {
    for (const row of rows) Y.applyUpdate(room.doc, row.update, LOG_ORIGIN);
    this.#rooms.set(this.keyOf(room.channel, room.requestId), room);
    room.onLocalUpdate = (update, by) => this.#append(room, update, by);
    // Appended between reading the history and registering the room: their wake-ups found no room.
    void this.#catchUp(room);
  }

  /** The room is gone here; `ended`: its request is over everywhere, so its history goes too. */
  detach(room: CollabRoom, ended: boolean): void {
    const key = this.keyOf(room.channel, room.requestId);
    if (this.#rooms.get(key) === room) this.#rooms.delete(key);
    this.#unsent.delete(room);
    room.onLocalUpdate = undefined;
    if (ended) this.#removeHistory(room.channel, room.requestId);
  }

  /** The request ended while this node held no room for it: its history goes all the same. */
  removeHistory(channel: string, doc: string): void {
    this.#removeHistory(channel, doc);
  }

  onBusMessage(m: BusMessage): boolean {
    if (m.kind !== UPDATE_KIND) return false;
    if (typeof m['channel'] !== 'string' || typeof m['doc'] !== 'string') return true;
    const room = this.#rooms.get(this.keyOf(m['channel'], m['doc']));
    if (!room || room.closed) return true;
    const by = principalSchema.safeParse(m['by']);
    const origin: RemoteEditOrigin | typeof LOG_ORIGIN = by.success ? { remoteEditBy: by.data } : LOG_ORIGIN;
    if (typeof m['data'] !== 'string') {
      void this.#catchUp(room, origin);
      return true;
    }
    try {
      Y.applyUpdate(room.doc, fromBase64(m['data']), origin);
    } catch (err) {
      this.logger.debug('malformed relayed collab update ignored; reading the log instead', errorFields(err));
      void this.#catchUp(room, origin);
    }
    return true;
  }

  /** The bus was down: whatever it carried meanwhile is lost, so every room reads its history again. */
  onBusConnected(): void {
    for (const room of this.#rooms.values()) void this.#catchUp(room);
    this.#flushUnsent();
  }

  /**
   * A draft from a client that does not speak Yjs, sequenced here, for a document this node has
   * no room for: merged into the shared history (if the document has one) by a throwaway Y.Doc.
   */
  mergeDraftWithoutRoom(channel: string, doc: string, questionId: string, next: string, diff: (text: Y.Text, next: string) => void): void {
    this.#merging = this.#merging.then(async () => {
      try {
        const rows = await this.log.readSince(channel, doc, 0);
        if (rows.length === 0) return;
        const scratch = new Y.Doc();
        for (const row of rows) Y.applyUpdate(scratch, row.update);
        const text = scratch.getText(questionId);
        if (text.toString() === next) return scratch.destroy();
        let update: Uint8Array | undefined;
        scratch.on('update', (u: Uint8Array) => {
          update = update ? Y.mergeUpdates([update, u]) : u;
        });
        scratch.transact(() => diff(text, next), SERVER_ORIGIN);
        scratch.destroy();
        if (update) await this.#appendAndWake(channel, doc, update, undefined);
      } catch (err) {
        this.logger.warn('a draft could not be merged into the shared collab history', { channel, doc, ...errorFields(err) });
      }
    });
  }

  close(): void {
    clearTimeout(this.#retry);
    this.#rooms.clear();
    this.#unsent.clear();
  }

  #append(room: CollabRoom, update: Uint8Array, by: Principal | undefined): void {
    this.#appendAndWake(room.channel, room.requestId, update, by).catch((err: unknown) => {
      if (room.closed) return;
      this.logger.warn('collab update not in the shared log yet; retrying', { channel: room.channel, doc: room.requestId, ...errorFields(err) });
      const unsent = this.#unsent.get(room) ?? { updates: [], by };
      unsent.updates.push(update);
      unsent.by = by ?? unsent.by;
      this.#unsent.set(room, unsent);
      this.#retry ??= setTimeout(() => {
        this.#retry = undefined;
        this.#flushUnsent();
      }, RETRY_MS);
      this.#retry.unref?.();
    });
  }

  async #appendAndWake(channel: string, doc: string, update: Uint8Array, by: Principal | undefined): Promise<void> {
    const id = await this.log.append(channel, doc, update);
    const wake = { kind: UPDATE_KIND, channel, doc, id, ...(by ? { by: { user: by.user, tenant: by.tenant, role: by.role } } : {}) };
    // Inline when it fits; otherwise the others read it from the log.
    if (!this.bus.publish({ ...wake, data: toBase64(update) })) this.bus.publish(wake);
  }

  #flushUnsent(): void {
    const pending = [...this.#unsent];
    this.#unsent.clear();
    for (const [room, { updates, by }] of pending) if (!room.closed && updates.length > 0) this.#append(room, Y.mergeUpdates(updates), by);
  }

  async #catchUp(room: CollabRoom, origin: RemoteEditOrigin | typeof LOG_ORIGIN = LOG_ORIGIN): Promise<void> {
    try {
      const rows = await this.log.readSince(room.channel, room.requestId, 0);
      if (room.closed) return;
      if (rows.length > 0) Y.applyUpdate(room.doc, Y.mergeUpdates(rows.map((r) => r.update)), origin);
    } catch (err) {
      this.logger.warn('collab history could not be read; it is read again when the bus reconnects', { channel: room.channel, doc: room.requestId, ...errorFields(err) });
    }
  }

  #removeHistory(channel: string, doc: string): void {
    this.log.remove(channel, doc).catch((err: unknown) => this.logger.debug('collab history not removed', { channel, doc, ...errorFields(err) }));
  }
}
