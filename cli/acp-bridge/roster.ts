/**
 * Who is attached to a hub chat, for ACP multi-client attach (docs/agents.md "ACP multi-client
 * attach"). Bridges are separate processes, so the roster lives in the hub: it is the chat's
 * presence room (`x-collab` document `~chat`, shared/protocol/collab.ts), the same one browser
 * tabs use to show who is viewing. The hub stamps every state with the authenticated user and
 * role, drops a connection's states when it closes, and relays them between cluster nodes.
 *
 * The bridge joins with no state of its own (invisible) and sets one when its editor attaches:
 * `{ user: { name }, acp: { name, version, title, role } }`. A state that disappears is a client
 * that left (`onLeft`), except across a reconnect of the bridge's own hub connection, where the
 * room is joined again and a state still missing `RESYNC_GRACE_MS` afterwards counts as gone
 * (after a hub restart every client re-joins, each at its own moment).
 */
import * as Y from 'yjs';
import * as awarenessProtocol from 'y-protocols/awareness';
import { fromBase64, toBase64 } from 'lib0/buffer';
import { z } from 'zod';
import { AhpRequestError, type AhpClient } from '../../shared/client/ahp-client.js';
import { CHAT_PRESENCE_DOC, CollabMethod } from '../../shared/protocol/collab.js';
import { ErrorCode } from '../../shared/protocol/errors.js';

export type AttachRole = 'controller' | 'observer';

/** What an attached editor announces about itself (its `clientInfo` and the role it was granted). */
export interface AcpPresence {
  readonly name: string;
  readonly version?: string;
  readonly title?: string;
  readonly role: AttachRole;
}

/** One entry of `connectedClients` / `client_disconnected.client` (RFD shape plus the hub's user). */
export interface ConnectedClient {
  readonly name: string;
  readonly version?: string;
  readonly title?: string;
  readonly role: AttachRole;
  readonly _meta: { readonly 'hub/user': string; readonly 'hub/surface': 'acp' | 'app' };
}

/** How long a client missing after this bridge re-joined may take to re-join too before it is announced as gone. */
export const RESYNC_GRACE_MS = 5_000;

const RESYNC = Symbol('resync');
const REMOTE = Symbol('remote');

const stateSchema = z.object({
  user: z.object({ id: z.string().optional(), name: z.string().optional(), role: z.string().optional() }).partial().optional(),
  acp: z.object({ name: z.string(), version: z.string().optional(), title: z.string().optional(), role: z.enum(['controller', 'observer']) }).optional(),
});
const dataSchema = z.object({ channel: z.string(), doc: z.string(), data: z.string() });
const closedSchema = z.object({ channel: z.string(), doc: z.string(), reason: z.string().optional() });

/** A presence state as a connected client: an editor by its clientInfo, a tab by its user (a viewer only observes). */
export function clientOfState(state: unknown): ConnectedClient | undefined {
  const parsed = stateSchema.safeParse(state);
  if (!parsed.success) return undefined;
  const { user, acp } = parsed.data;
  const userId = user?.id ?? user?.name ?? 'someone';
  if (acp) return { name: acp.name, ...(acp.version !== undefined && { version: acp.version }), ...(acp.title !== undefined && { title: acp.title }), role: acp.role, _meta: { 'hub/user': userId, 'hub/surface': 'acp' } };
  if (!user) return undefined;
  return { name: userId, role: user.role === 'viewer' ? 'observer' : 'controller', _meta: { 'hub/user': userId, 'hub/surface': 'app' } };
}

export class AttachRoster {
  readonly #doc = new Y.Doc();
  readonly #awareness = new awarenessProtocol.Awareness(this.#doc);
  /** Everyone seen, by awareness client id, so a removed state can still be named. */
  readonly #known = new Map<number, ConnectedClient>();
  /** States dropped for a re-join: announced only if the re-join does not bring them back. */
  readonly #resyncing = new Map<number, ConnectedClient>();
  readonly #offs: Array<() => void> = [];
  readonly #graceTimers = new Set<ReturnType<typeof setTimeout>>();
  #joined = false;
  #closed = false;

  constructor(
    private readonly client: AhpClient,
    private readonly channel: string,
    private readonly onLeft: (client: ConnectedClient) => void,
    private readonly log: (line: string) => void,
  ) {
    this.#awareness.setLocalState(null);
    this.#awareness.on('update', ({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) => {
      const mine = [...added, ...updated, ...removed].filter((id) => id === this.#doc.clientID);
      if (origin !== REMOTE && origin !== RESYNC && this.#joined && mine.length > 0) this.#send(awarenessProtocol.encodeAwarenessUpdate(this.#awareness, mine));
    });
    this.#awareness.on('change', ({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) => {
      const states = this.#awareness.getStates();
      for (const id of [...added, ...updated]) {
        const entry = clientOfState(states.get(id));
        if (entry && id !== this.#doc.clientID) this.#known.set(id, entry);
      }
      for (const id of removed) {
        const entry = this.#known.get(id);
        this.#known.delete(id);
        if (!entry || id === this.#doc.clientID) continue;
        if (origin === RESYNC) this.#resyncing.set(id, entry);
        else this.onLeft(entry);
      }
    });
    this.#offs.push(
      client.onNotification(CollabMethod.Awareness, (params) => {
        const p = dataSchema.safeParse(params);
        if (!p.success || p.data.channel !== channel || p.data.doc !== CHAT_PRESENCE_DOC) return;
        awarenessProtocol.applyAwarenessUpdate(this.#awareness, fromBase64(p.data.data), REMOTE);
      }),
      client.onNotification(CollabMethod.Closed, (params) => {
        const p = closedSchema.safeParse(params);
        if (!p.success || p.data.channel !== channel || p.data.doc !== CHAT_PRESENCE_DOC) return;
        this.#joined = false;
        this.log(`presence room closed: ${p.data.reason ?? 'no reason'}`);
      }),
      client.onConnectionState((state) => {
        if (state === 'open' && !this.#closed && this.#joined) {
          const others = [...this.#awareness.getStates().keys()].filter((id) => id !== this.#doc.clientID);
          awarenessProtocol.removeAwarenessStates(this.#awareness, others, RESYNC);
          // A state only replaces one with a lower clock, and the room's states come back with the
          // clocks already seen: forget those too, so the re-join's answer is taken whole.
          for (const id of others) this.#awareness.meta.delete(id);
          this.join().catch((err: unknown) => this.log(`presence re-join failed: ${String(err)}`));
        }
      }),
    );
  }

  /** Joins the chat's presence room; false when the hub has none (no attach capability then). */
  async join(): Promise<boolean> {
    let r: { awareness?: unknown };
    try {
      r = (await this.client.request(CollabMethod.Join, { channel: this.channel, doc: CHAT_PRESENCE_DOC })) as { awareness?: unknown };
    } catch (err) {
      // No presence room (an older hub) or none to be had (a limit): the bridge works without attach.
      if (!(err instanceof AhpRequestError && err.code === ErrorCode.MethodNotFound)) this.log(`presence room not joined, attach unavailable: ${String(err)}`);
      return false;
    }
    if (this.#closed) return false;
    const rejoin = this.#joined;
    if (typeof r.awareness === 'string') awarenessProtocol.applyAwarenessUpdate(this.#awareness, fromBase64(r.awareness), REMOTE);
    this.#joined = true;
    // After a re-join: whoever is still missing after a grace period (to re-join too) really left.
    const missing = [...this.#resyncing].filter(([id]) => !this.#awareness.getStates().has(id));
    this.#resyncing.clear();
    if (rejoin) {
      const timer = setTimeout(() => {
        this.#graceTimers.delete(timer);
        if (this.#closed) return;
        const gone = missing.filter(([id]) => !this.#awareness.getStates().has(id));
        for (const [, entry] of gone) this.onLeft(entry);
        this.log(`presence re-joined: ${this.#known.size} other client(s) present, ${gone.length} gone`);
      }, RESYNC_GRACE_MS);
      timer.unref?.();
      this.#graceTimers.add(timer);
    }
    const local = this.#awareness.getLocalState();
    if (local) {
      // Re-joining: the room dropped our state when the old connection closed but keeps its clock,
      // and a state only replaces one with a lower clock, so the state is sent with a newer one
      // (two ticks: one more for peers that removed it themselves).
      this.#awareness.setLocalState({ ...local });
      this.#awareness.setLocalState({ ...local });
    }
    return true;
  }

  /** This editor's presence (null: not attached, so invisible to the others). */
  set(presence: AcpPresence | null): void {
    if (presence === null) {
      if (this.#awareness.getLocalState() !== null) this.#awareness.setLocalState(null);
      return;
    }
    this.#awareness.setLocalState({ user: { name: presence.title ?? presence.name }, acp: presence });
  }

  /** Every other client present on the chat now (editors and app tabs). */
  others(): ConnectedClient[] {
    return [...this.#known.values()];
  }

  /** An attached client named `surface` (the answered-by stamp's surface), if one is present. */
  bySurface(surface: string, user: string): ConnectedClient | undefined {
    return this.others().find((c) => c._meta['hub/surface'] === 'acp' && c._meta['hub/user'] === user && (c.title === surface || c.name === surface));
  }

  #send(data: Uint8Array): void {
    if (this.client.connectionState !== 'open') return;
    try {
      this.client.notify(CollabMethod.Awareness, { channel: this.channel, doc: CHAT_PRESENCE_DOC, data: toBase64(data) });
    } catch (err) {
      this.log(`presence not sent: ${String(err)}`);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#graceTimers) clearTimeout(timer);
    for (const off of this.#offs) off();
    this.#awareness.destroy();
    this.#doc.destroy();
  }
}
