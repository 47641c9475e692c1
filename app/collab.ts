/**
 * Browser side of `x-collab/*` (shared/protocol/collab.ts): one Y.Doc + awareness per open input
 * request, synced over the AhpClient's socket with the SDK's generic request/notify/onNotification.
 * After a reconnect the document re-joins and sends what the server lacks (its own offline edits).
 * A hub that restarted holds a new document (seeded from the durable drafts, without this tab's
 * history): then what this tab changed since it last had the hub's text is merged into the new
 * text (text-merge.ts), so an offline edit is neither lost nor doubled, and a tab that changed
 * nothing never writes its older text over what others merged back first. An edit that clashes
 * with one the hub took meanwhile is kept in `undelivered` for the form to offer again.
 */
import * as Y from 'yjs';
import * as syncProtocol from 'y-protocols/sync';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as encoding from 'lib0/encoding';
import * as decoding from 'lib0/decoding';
import { fromBase64, toBase64 } from 'lib0/buffer';
import type { AhpClient } from '../shared/client/ahp-client.js';

import { CollabMethod, textDiff } from '../shared/protocol/collab.js';
import { mergeOfflineText } from './text-merge.js';

const REMOTE = 'remote';
/** Origin of texts this client sets itself (a merge after a restart, a resend): sent, and shown in bound fields. */
const MERGE = 'merge';

interface CollabParams {
  channel?: unknown;
  doc?: unknown;
  data?: unknown;
  reason?: unknown;
}

export interface PresenceState {
  readonly user?: { readonly name?: string; readonly id?: string; readonly role?: string; readonly color?: string };
  readonly editing?: string | null;
  /** The chat is open in a visible tab (`document.visibilityState`): the hub sends this person no push for it. */
  readonly visible?: boolean;
  /** Caret and selection in a shared text answer (Yjs relative positions, see text-binding.ts). */
  readonly cursor?: { readonly question: string; readonly anchor: string; readonly head: string } | null;
}

/**
 * The name to show for a presence state. The hub stamps the authenticated user id on every state;
 * in dev mode every tab is the same user "dev", so the tab's own name is shown instead.
 */
export function presenceName(state: PresenceState, devMode: boolean): string {
  if (devMode && state.user?.name) return state.user.name;
  return state.user?.id ?? state.user?.name ?? 'someone';
}

export class CollabDoc {
  readonly doc = new Y.Doc();
  readonly awareness: awarenessProtocol.Awareness;
  #joined = false;
  #closed = false;
  #offs: Array<() => void> = [];
  #listeners = new Set<() => void>();
  /** The server document's state vector at the last join: a later one that lacks it is a new document. */
  #serverVector: Map<number, number> | undefined;
  /** The server document instance last joined (see the hub's `CollabRoom.epoch`). */
  #epoch: string | undefined;
  /** Closed by the server while connected: retry the join on the next connection. */
  #rejoinAfterClose = false;
  closedReason: string | undefined;
  /** Set when joining again after a reconnect failed: edits made meanwhile are only in this tab. */
  rejoinFailed = false;
  /** The texts as they were when this tab last was joined: what it had in common with the hub. */
  #base: Map<string, string> | undefined;
  /** The texts exactly as this tab held them when it last stopped being joined. */
  #atLeave: Map<string, string> | undefined;
  /** Each text's latest draft the hub confirmed durable (the form passes on the chat state's). */
  readonly #durable = new Map<string, string>();
  /**
   * Texts this tab changed since their durable draft last matched: those edits went out but may
   * have died with the hub before they were mirrored, so the common text for them is the draft.
   */
  readonly #unconfirmed = new Set<string>();
  /**
   * Texts this tab changed offline that a restarted hub's document could not take (someone changed
   * the same words meanwhile), by name: not in the shared text, only here, until resent or dropped.
   */
  readonly undelivered = new Map<string, string>();

  constructor(
    private readonly client: AhpClient,
    readonly channel: string,
    readonly requestId: string,
  ) {
    this.awareness = new awarenessProtocol.Awareness(this.doc);
    const mine = (p: CollabParams): boolean => p.channel === channel && p.doc === requestId;
    this.#offs.push(
      client.onNotification(CollabMethod.Sync, (raw) => {
        const p = raw as CollabParams;
        if (!mine(p) || typeof p.data !== 'string') return;
        const decoder = decoding.createDecoder(fromBase64(p.data));
        const reply = encoding.createEncoder();
        syncProtocol.readSyncMessage(decoder, reply, this.doc, REMOTE);
        if (encoding.length(reply) > 0) this.#send(CollabMethod.Sync, encoding.toUint8Array(reply));
      }),
      client.onNotification(CollabMethod.Awareness, (raw) => {
        const p = raw as CollabParams;
        if (!mine(p) || typeof p.data !== 'string') return;
        awarenessProtocol.applyAwarenessUpdate(this.awareness, fromBase64(p.data), REMOTE);
      }),
      client.onNotification(CollabMethod.Closed, (raw) => {
        const p = raw as CollabParams;
        if (!mine(p)) return;
        this.closedReason = typeof p.reason === 'string' ? p.reason : 'closed';
        this.#leftJoined();
        this.#emit();
        // A hub shutting down closes every document; the request may still be open when it is
        // back, so the next connection tries to join again (and learns if it was answered).
        this.#rejoinAfterClose = true;
      }),
      client.onConnectionState((state) => {
        if (state === 'open' && !this.#closed && (!this.closedReason || this.#rejoinAfterClose)) {
          this.#rejoinAfterClose = false;
          this.closedReason = undefined;
          this.join().catch((err: unknown) => {
            // The request may have been resolved while we were away: stop following it.
            this.closedReason = err instanceof Error ? err.message : 'could not re-join';
            this.rejoinFailed = true;
            this.#emit();
          });
        }
        if (state !== 'open') {
          this.#leftJoined();
          // Others' presence is stale until we re-join; keep only our own.
          const others = [...this.awareness.getStates().keys()].filter((id) => id !== this.doc.clientID);
          awarenessProtocol.removeAwarenessStates(this.awareness, others, REMOTE);
        }
      }),
    );
    this.doc.on('afterTransaction', (tr: Y.Transaction) => {
      if (tr.origin === REMOTE) return;
      for (const [name, type] of this.doc.share) if (tr.changed.has(type)) this.#unconfirmed.add(name);
    });
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === REMOTE || !this.#joined) return;
      const e = encoding.createEncoder();
      syncProtocol.writeUpdate(e, update);
      this.#send(CollabMethod.Sync, encoding.toUint8Array(e));
    });
    this.awareness.on('update', ({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) => {
      if (origin !== REMOTE && this.#joined) {
        const mineOnly = [...added, ...updated, ...removed].filter((id) => id === this.doc.clientID);
        if (mineOnly.length > 0) this.#send(CollabMethod.Awareness, awarenessProtocol.encodeAwarenessUpdate(this.awareness, mineOnly));
      }
      this.#emit();
    });
  }

  get joined(): boolean {
    return this.#joined;
  }

  /** Joins (or re-joins after a reconnect): loads the server's state and sends what it lacks. */
  async join(): Promise<void> {
    if (this.#closed) return;
    const r = (await this.client.request(CollabMethod.Join, { channel: this.channel, doc: this.requestId })) as { state: string; stateVector: string; awareness: string; epoch?: string };
    if (this.#closed) return;
    const serverVector = Y.decodeStateVector(fromBase64(r.stateVector));
    const previous = this.#serverVector;
    // Another document than the one we edited (a restarted hub seeded it anew from the drafts), or
    // one that lost history we had from it: the texts we hold are what this tab last saw and typed.
    const fresh = (this.#epoch !== undefined && r.epoch !== this.#epoch) || (previous !== undefined && [...previous].some(([client, clock]) => (serverVector.get(client) ?? 0) < clock));
    this.#epoch = r.epoch;
    const merged = fresh ? this.#mergeIntoFresh(fromBase64(r.state)) : undefined;
    Y.applyUpdate(this.doc, fromBase64(r.state), REMOTE);
    awarenessProtocol.applyAwarenessUpdate(this.awareness, fromBase64(r.awareness), REMOTE);
    if (merged) {
      // Both histories are in the document now (ours and the new seed): make each text the merge.
      this.doc.transact(() => {
        for (const [name, value] of merged) applyTextDiff(this.doc.getText(name), value);
      }, MERGE);
    }
    this.#serverVector = serverVector;
    this.#joined = true;
    const missing = Y.encodeStateAsUpdate(this.doc, fromBase64(r.stateVector));
    // An empty update is two zero bytes; only send real edits made while disconnected.
    if (missing.length > 2) {
      const e = encoding.createEncoder();
      syncProtocol.writeUpdate(e, missing);
      this.#send(CollabMethod.Sync, encoding.toUint8Array(e));
    }
    const local = this.awareness.getLocalState();
    if (local) this.#send(CollabMethod.Awareness, awarenessProtocol.encodeAwarenessUpdate(this.awareness, [this.doc.clientID]));
    this.#emit();
  }

  text(questionId: string): Y.Text {
    return this.doc.getText(questionId);
  }

  /**
   * The text each name gets once a restarted hub's document (`state`) is joined: what this tab
   * changed since `#base` merged into the new text. Edits that clash go to `undelivered`.
   */
  #mergeIntoFresh(state: Uint8Array): Map<string, string> {
    const theirsDoc = new Y.Doc();
    Y.applyUpdate(theirsDoc, state);
    const ours = this.#texts();
    const base = this.#base ?? new Map<string, string>();
    const merged = new Map<string, string>();
    for (const name of new Set([...ours.keys(), ...theirsDoc.share.keys()])) {
      const theirs = theirsDoc.getText(name).toString();
      const mine = ours.get(name) ?? '';
      // A restarted hub holding exactly what we held when the connection went had all of it, even
      // if its durable draft never reached us; otherwise the common text is the last one we saw
      // durable. A text this tab never had in common with the hub holds nothing of ours to merge.
      const atLeave = this.#atLeave?.get(name);
      const common = atLeave !== undefined && theirs === atLeave ? atLeave : (base.get(name) ?? mine);
      const result = mergeOfflineText(common, mine, theirs);
      merged.set(name, result.text);
      if (result.kind === 'conflict') this.undelivered.set(name, result.ours);
    }
    theirsDoc.destroy();
    return merged;
  }

  /**
   * Writes an undelivered offline text over the shared one (the person chose Resend), or forgets
   * it (`false`). The edit goes out like typing does.
   */
  resend(name: string, send = true): void {
    const text = this.undelivered.get(name);
    if (text === undefined) return;
    this.undelivered.delete(name);
    if (send) this.doc.transact(() => applyTextDiff(this.doc.getText(name), text), MERGE);
    this.#emit();
  }

  /**
   * The chat state shows `text` as the durable draft of `name` (called by the form on every state
   * it shows while this document is joined).
   */
  confirmDurable(name: string, text: string): void {
    if (!this.#joined) return;
    this.#durable.set(name, text);
    if (this.doc.getText(name).toString() === text) this.#unconfirmed.delete(name);
  }

  /**
   * The connection went or the hub closed the document: remember what we had in common — the
   * text, or for a text with our own edits not yet seen durable, its last durable draft.
   */
  #leftJoined(): void {
    if (this.#joined) {
      this.#atLeave = this.#texts();
      const base = this.#texts();
      for (const name of this.#unconfirmed) {
        const durable = this.#durable.get(name);
        if (durable !== undefined) base.set(name, durable);
      }
      this.#base = base;
    }
    this.#joined = false;
  }

  /** Every shared text of the document by name, as this tab has it now. */
  #texts(): Map<string, string> {
    const texts = new Map<string, string>();
    for (const name of this.doc.share.keys()) texts.set(name, this.doc.getText(name).toString());
    return texts;
  }

  setPresence(state: PresenceState): void {
    this.awareness.setLocalState(state);
  }

  /** Presence of everyone else, keyed by awareness client id. */
  others(): Array<[number, PresenceState]> {
    return [...this.awareness.getStates()].filter(([id]) => id !== this.doc.clientID) as Array<[number, PresenceState]>;
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  destroy(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#joined && this.client.connectionState === 'open') {
      try {
        this.client.notify(CollabMethod.Leave, { channel: this.channel, doc: this.requestId });
      } catch {
        // closing anyway
      }
    }
    for (const off of this.#offs) off();
    this.#listeners.clear();
    this.awareness.destroy();
    this.doc.destroy();
  }

  #emit(): void {
    for (const l of [...this.#listeners]) l();
  }

  #send(method: string, data: Uint8Array): void {
    if (this.#closed || this.client.connectionState !== 'open') return;
    try {
      this.client.notify(method, { channel: this.channel, doc: this.requestId, data: toBase64(data) });
    } catch {
      // Disconnected: the re-join after reconnect sends the difference.
    }
  }
}

/** Turns `text` into `next` with one delete and one insert (see `textDiff`). */
export function applyTextDiff(text: Y.Text, next: string): void {
  const edit = textDiff(text.toString(), next);
  if (edit.remove > 0) text.delete(edit.index, edit.remove);
  if (edit.insert.length > 0) text.insert(edit.index, edit.insert);
}
