/**
 * Producers: the one writer of each scenario. Each `send(sentUs)` emits one logical update whose
 * text carries the timestamp; the producer counts what it sent and anything the server refused.
 *
 *  - HubProducer: an AHP client in dev mode (admin, so it may dispatch server-side actions like
 *    an agent). Creates a session with provider `remote`, starts a turn (`chat/turnStarted`,
 *    client action), adds a markdown part (`chat/responsePart`), then streams `chat/delta`.
 *    The hub's budget is 500 frames/s per connection (token bucket, burst 2000; beyond it the hub
 *    stops reading the socket), so for paced rows above 400/s the deltas are spread over
 *    ceil(rate / 400) producer connections, taking turns in 100 ms slices: within a slice every
 *    delta comes from one connection, as from a single agent, so the hub's same-source burst
 *    merging sees what it would see from one fast agent. The unpaced row uses one connection.
 *  - RawProducer: sends to bench/raw-ws-server.ts the exact JSON-RPC `action` envelope text the
 *    hub would send for the same delta (same encoder, same field lengths).
 *  - HocuspocusProducer: a real @hocuspocus/provider on a Y.Doc; each update is one Y.Text insert.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import * as Y from 'yjs';
import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider';
import { encodeEnvelope } from '../server/hub/envelope-text.js';
import { stampedText } from './clock.js';
import { openSocket } from './open-socket.js';

export interface ProducerStats {
  sent: number;
  /** Echoes (accepted or rejected) of the producer's own dispatches; hub producers only. */
  echoed: number;
  rejected: number;
  errors: string[];
}

export interface Producer {
  /** Channel / document the subscribers should follow (known after setup). */
  readonly channel: string;
  send(sentUs: number): void;
  /** Bytes queued in the producer's own sockets (to spot a producer that cannot push). */
  bufferedAmount(): number;
  stats(): ProducerStats;
  close(): Promise<void>;
}

/** Per-connection budget kept under the hub's default 500 msg/s rate limit. */
const HUB_MSGS_PER_CONNECTION = 400;
/** How long one producer connection sends before the next takes over. */
const LANE_SLICE_MS = 100;
const PART_ID = 'md-1';

/** A minimal JSON-RPC peer: requests with ids, notifications, and a hook for everything else. */
const ACTION_PREFIX = Buffer.from('{"jsonrpc":"2.0","method":"action","params":');
const REJECTION = Buffer.from('"rejectionReason"');

class Rpc {
  #nextId = 1;
  /** Parse every action notification (only while waiting for setup echoes). */
  watchActions = false;
  /** `action` notifications received (echoes of this connection's dispatches, unless subscribed). */
  actionFrames = 0;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  onOther: (msg: Record<string, unknown>) => void = () => {};

  constructor(readonly ws: WebSocket) {
    ws.on('message', (raw: Buffer) => {
      const isAction = raw.length > ACTION_PREFIX.length && raw.compare(ACTION_PREFIX, 0, ACTION_PREFIX.length, 0, ACTION_PREFIX.length) === 0;
      if (isAction) this.actionFrames++;
      // Echoes of our own deltas (and, when subscribed, everyone's envelopes) are not inspected
      // unless they carry a rejection: the producer thread must stay cheap.
      if (isAction && raw.indexOf(REJECTION) < 0 && !this.watchActions) return;
      const msg = JSON.parse(raw.toString('utf8')) as Record<string, unknown> & { id?: number; error?: { message: string } };
      const p = typeof msg.id === 'number' ? this.#pending.get(msg.id) : undefined;
      if (!p) return this.onOther(msg);
      this.#pending.delete(msg.id!);
      if (msg.error) p.reject(new Error(msg.error.message));
      else p.resolve(msg['result']);
    });
  }

  request<T>(method: string, params: unknown): Promise<T> {
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  notify(method: string, params: unknown): void {
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  initialize(clientId: string): Promise<unknown> {
    return this.request('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId });
  }
}

export class HubProducer implements Producer {
  #stats: ProducerStats = { sent: 0, echoed: 0, rejected: 0, errors: [] };
  readonly #seq: number[];
  readonly #startedMs = performance.now();

  private constructor(
    readonly channel: string,
    private readonly turnId: string,
    private readonly control: Rpc,
    private readonly lanes: Rpc[],
    private readonly filler: string,
  ) {
    this.#seq = lanes.map(() => 0);
    for (const lane of [control, ...lanes]) {
      lane.onOther = (msg) => {
        const params = msg['params'] as { rejectionReason?: string } | undefined;
        if (msg['method'] === 'action' && params?.rejectionReason) {
          this.#stats.rejected++;
          if (this.#stats.errors.length < 5) this.#stats.errors.push(params.rejectionReason);
        } else if (msg['error']) {
          this.#stats.rejected++;
          if (this.#stats.errors.length < 5) this.#stats.errors.push((msg['error'] as { message: string }).message);
        }
      };
    }
  }

  /**
   * `subscribe`: each producer connection also subscribes to the chat, as an agent that follows
   * its chat would (it then gets its echoes through the fan-out instead of privately).
   */
  static async open(wsUrl: string, rate: number, filler: string, subscribe = false, name = ''): Promise<HubProducer> {
    // `name`: distinguishes several producers of one process (duplicate detection is per clientId).
    const control = new Rpc(await openSocket(wsUrl));
    await control.initialize(`bench-control-${process.pid}${name}`);
    const session = `ahp-session:/${randomUUID()}`;
    const { defaultChat } = await control.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote', title: 'fan-out bench' });
    // Subscribe the control connection just long enough to see the setup echoes.
    await control.request('subscribe', { channel: defaultChat });
    control.watchActions = true;
    const turnId = `turn-${randomUUID()}`;
    const waitEcho = (clientSeq: number): Promise<void> =>
      new Promise((resolve, reject) => {
        const prev = control.onOther;
        control.onOther = (msg) => {
          const p = msg['params'] as { origin?: { clientSeq: number }; rejectionReason?: string } | undefined;
          if (msg['method'] === 'action' && p?.origin?.clientSeq === clientSeq) {
            control.onOther = prev;
            if (p.rejectionReason) reject(new Error(`setup action rejected: ${p.rejectionReason}`));
            else resolve();
          }
        };
      });
    let cs = 0;
    const dispatch = async (action: Record<string, unknown>): Promise<void> => {
      const clientSeq = ++cs;
      const echo = waitEcho(clientSeq);
      control.notify('dispatchAction', { channel: defaultChat, clientSeq, action });
      await echo;
    };
    await dispatch({ type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: { text: 'fan-out benchmark', origin: { kind: 'user' } } });
    await dispatch({ type: 'chat/responsePart', turnId, part: { kind: 'markdown', id: PART_ID, content: '' } });
    control.notify('unsubscribe', { channel: defaultChat });
    control.watchActions = false;

    const laneCount = Math.max(1, Math.ceil(rate / HUB_MSGS_PER_CONNECTION));
    const lanes: Rpc[] = [];
    for (let i = 0; i < laneCount; i++) {
      const lane = new Rpc(await openSocket(wsUrl));
      await lane.initialize(`bench-producer-${process.pid}${name}-${i}`);
      if (subscribe) await lane.request('subscribe', { channel: defaultChat });
      lanes.push(lane);
    }
    return new HubProducer(defaultChat, turnId, control, lanes, filler);
  }

  get laneCount(): number {
    return this.lanes.length;
  }

  send(sentUs: number): void {
    const i = Math.floor((performance.now() - this.#startedMs) / LANE_SLICE_MS) % this.lanes.length;
    const clientSeq = ++this.#seq[i]!;
    this.lanes[i]!.notify('dispatchAction', {
      channel: this.channel,
      clientSeq,
      action: { type: 'chat/delta', turnId: this.turnId, partId: PART_ID, content: stampedText(sentUs, this.filler) },
    });
    this.#stats.sent++;
  }

  bufferedAmount(): number {
    let n = 0;
    for (const l of this.lanes) n += l.ws.bufferedAmount;
    return n;
  }

  stats(): ProducerStats {
    this.#stats.echoed = this.lanes.reduce((n, l) => n + l.actionFrames, 0);
    return this.#stats;
  }

  async close(): Promise<void> {
    for (const l of [this.control, ...this.lanes]) l.ws.terminate();
  }
}

export class RawProducer implements Producer {
  #stats: ProducerStats = { sent: 0, echoed: 0, rejected: 0, errors: [] };
  /** Same shapes and lengths as the hub's ids. */
  readonly channel = `ahp-chat:/${randomUUID()}`;
  readonly #turnId = `turn-${randomUUID()}`;
  readonly #clientId = `bench-producer-${process.pid}-0`;
  #serverSeq = 16;

  private constructor(
    private readonly ws: WebSocket,
    private readonly filler: string,
  ) {}

  static async open(baseWsUrl: string, filler: string): Promise<RawProducer> {
    return new RawProducer(await openSocket(`${baseWsUrl}/producer`), filler);
  }

  send(sentUs: number): void {
    const serverSeq = ++this.#serverSeq;
    const text = encodeEnvelope({
      channel: this.channel,
      action: { type: 'chat/delta', turnId: this.#turnId, partId: PART_ID, content: stampedText(sentUs, this.filler) },
      serverSeq,
      origin: { clientId: this.#clientId, clientSeq: serverSeq - 16 },
    });
    this.ws.send(text);
    this.#stats.sent++;
  }

  bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  stats(): ProducerStats {
    return this.#stats;
  }

  async close(): Promise<void> {
    this.ws.terminate();
  }
}

export class HocuspocusProducer implements Producer {
  #stats: ProducerStats = { sent: 0, echoed: 0, rejected: 0, errors: [] };
  readonly #text: Y.Text;

  private constructor(
    readonly channel: string,
    private readonly doc: Y.Doc,
    private readonly provider: HocuspocusProvider,
    private readonly socket: HocuspocusProviderWebsocket,
    private readonly filler: string,
  ) {
    this.#text = doc.getText('content');
  }

  static async open(baseWsUrl: string, filler: string): Promise<HocuspocusProducer> {
    const name = `bench-${randomUUID()}`;
    const doc = new Y.Doc();
    const socket = new HocuspocusProviderWebsocket({ url: baseWsUrl, WebSocketPolyfill: WebSocket });
    const provider = await new Promise<HocuspocusProvider>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('hocuspocus provider did not sync within 10 s')), 10_000);
      const p: HocuspocusProvider = new HocuspocusProvider({
        websocketProvider: socket,
        name,
        document: doc,
        onSynced: () => {
          clearTimeout(timer);
          resolve(p);
        },
      });
    });
    return new HocuspocusProducer(name, doc, provider, socket, filler);
  }

  send(sentUs: number): void {
    this.#text.insert(this.#text.length, stampedText(sentUs, this.filler));
    this.#stats.sent++;
  }

  bufferedAmount(): number {
    const ws = (this.socket as unknown as { webSocket?: { bufferedAmount?: number } }).webSocket;
    return ws?.bufferedAmount ?? 0;
  }

  stats(): ProducerStats {
    return this.#stats;
  }

  async close(): Promise<void> {
    this.provider.destroy();
    this.socket.destroy();
    this.doc.destroy();
  }
}
