/** A minimal Yjs peer speaking x-collab over an RpcClient, as the browser app does (tests only). */
import * as Y from 'yjs';
import * as syncProtocol from 'y-protocols/sync';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as encoding from 'lib0/encoding';
import * as decoding from 'lib0/decoding';
import { fromBase64, toBase64 } from 'lib0/buffer';
import type { RpcClient } from './rpc-client.js';

interface Params {
  channel: string;
  doc: string;
  data?: string;
  reason?: string;
}

export class Peer {
  readonly doc = new Y.Doc();
  readonly awareness = new awarenessProtocol.Awareness(this.doc);
  closedReason: string | undefined;

  constructor(
    readonly rpc: RpcClient,
    readonly channel: string,
    readonly docId: string,
  ) {
    rpc.ws.on('message', (raw) => {
      const msg = JSON.parse(String(raw)) as { method?: string; params?: Params };
      const p = msg.params;
      if (!p || p.channel !== channel || p.doc !== docId) return;
      if (msg.method === 'x-collab/sync') {
        const decoder = decoding.createDecoder(fromBase64(p.data!));
        const reply = encoding.createEncoder();
        syncProtocol.readSyncMessage(decoder, reply, this.doc, 'remote');
        if (encoding.length(reply) > 0) this.#send('x-collab/sync', encoding.toUint8Array(reply));
      } else if (msg.method === 'x-collab/awareness') {
        awarenessProtocol.applyAwarenessUpdate(this.awareness, fromBase64(p.data!), 'remote');
      } else if (msg.method === 'x-collab/closed') {
        this.closedReason = p.reason;
      }
    });
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === 'remote') return;
      const e = encoding.createEncoder();
      syncProtocol.writeUpdate(e, update);
      this.#send('x-collab/sync', encoding.toUint8Array(e));
    });
    this.awareness.on('update', ({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) => {
      if (origin === 'remote') return;
      this.#send('x-collab/awareness', awarenessProtocol.encodeAwarenessUpdate(this.awareness, [...added, ...updated, ...removed]));
    });
  }

  static async join(rpc: RpcClient, channel: string, doc: string): Promise<Peer> {
    const peer = new Peer(rpc, channel, doc);
    const r = await rpc.request<{ state: string; stateVector: string; awareness: string }>('x-collab/join', { channel, doc });
    Y.applyUpdate(peer.doc, fromBase64(r.state), 'remote');
    awarenessProtocol.applyAwarenessUpdate(peer.awareness, fromBase64(r.awareness), 'remote');
    return peer;
  }

  text(q: string): Y.Text {
    return this.doc.getText(q);
  }

  #send(method: string, data: Uint8Array): void {
    if (!this.rpc.closed) this.rpc.notify(method, { channel: this.channel, doc: this.docId, data: toBase64(data) });
  }

  destroy(): void {
    this.awareness.destroy();
    this.doc.destroy();
  }
}
