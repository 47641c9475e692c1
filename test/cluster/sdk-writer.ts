/**
 * A client of the SDK (`shared/client`, with its own reconnect logic, over `ws`) that keeps
 * dispatching `chat/pendingMessageSet` actions with unique ids on its own chat through the load
 * balancer, and records when its socket dropped and when it was open again. `echoed` is every id
 * the hub acknowledged as applied (accepted, or re-sent after a reconnect and answered "already
 * applied").
 */
import WebSocket from 'ws';
import { AhpClient, type ChannelView } from '../../shared/client/ahp-client.js';
import type { ChatState } from '../../shared/protocol/state.js';

export class SdkWriter {
  readonly echoed = new Set<string>();
  readonly refused: string[] = [];
  /** Close codes of the sockets the hub closed, in order. */
  readonly closeCodes: number[] = [];
  /** Times (Date.now) the connection was lost and open again, in order. */
  readonly lost: number[] = [];
  readonly reopened: number[] = [];
  #view: ChannelView<ChatState> | undefined;
  #stopped = false;
  #sent = 0;

  private constructor(
    readonly name: string,
    readonly client: AhpClient,
  ) {}

  static async open(name: string, url: string): Promise<SdkWriter> {
    let writer: SdkWriter | undefined;
    const client = new AhpClient({
      url,
      createSocket: (u) => {
        const ws = new WebSocket(u);
        ws.on('close', (code) => writer?.closeCodes.push(code));
        return ws;
      },
    });
    writer = new SdkWriter(name, client);
    client.onConnectionState((state) => {
      if (state === 'reconnecting' && writer.lost.length === writer.reopened.length) writer.lost.push(Date.now());
      if (state === 'open' && writer.lost.length > writer.reopened.length) writer.reopened.push(Date.now());
    });
    await client.connect();
    return writer;
  }

  get chat(): string {
    if (!this.#view) throw new Error(`${this.name} has no chat yet`);
    return this.#view.channel;
  }

  get sent(): number {
    return this.#sent;
  }

  /** Creates a session on whichever node it is connected to and follows its default chat. */
  async createChat(): Promise<string> {
    const { defaultChat } = await this.client.createSession({ title: this.name });
    this.#view = (await this.client.subscribe(defaultChat as `ahp-chat:/${string}`)) as ChannelView<ChatState>;
    return defaultChat;
  }

  /** Dispatches `total` actions, `window` in flight at a time (`pauseMs` between sends); resolves once each has its answer. */
  async run(total: number, window = 3, pauseMs = 0): Promise<void> {
    const view = this.#view;
    if (!view) throw new Error(`${this.name}: createChat first`);
    const inFlight = new Set<Promise<void>>();
    while (!this.#stopped && this.#sent < total) {
      const id = `${this.name}-${++this.#sent}`;
      const done = view.dispatch({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: { text: id, origin: { kind: 'user' } } }).then((result) => {
        if (result.accepted || /already applied/.test(result.reason)) this.echoed.add(id);
        else this.refused.push(`${id}: ${result.reason}`);
      });
      inFlight.add(done);
      void done.finally(() => inFlight.delete(done));
      if (inFlight.size >= window) await Promise.race(inFlight);
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    await Promise.all(inFlight);
  }

  stop(): void {
    this.#stopped = true;
  }

  close(): void {
    this.client.close();
  }
}
