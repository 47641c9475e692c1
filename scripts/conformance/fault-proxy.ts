/**
 * The conformance suite's fault proxy: a loopback TCP proxy that understands just enough HTTP and
 * WebSocket framing to inject faults at message boundaries (the RFD's rule: faults at complete
 * records unless a case tests broken framing). One proxy serves one actor's link to a hub, so a
 * rule never has to guess whose frame it sees.
 *
 * - HTTP: each request is read up to the end of its head; a rule may answer it itself (a 5xx,
 *   with or without Retry-After) without the hub ever seeing it, let the hub answer and then cut
 *   the answer off (the request was taken, the client hears nothing), or cut an SSE stream after
 *   N events. Clients here open one connection per request (no keep-alive), so every request
 *   passes the rules.
 * - WebSocket (after a 101): frames in both directions are parsed (client frames unmasked to be
 *   read, then forwarded byte for byte) and each goes through the rules: pass, drop, duplicate,
 *   hold until a named barrier, cut the link (after or instead of the frame), abort in the middle
 *   of the frame, half-close the direction, or pause the reader (stop reading from the hub, so
 *   its unsent data grows as behind a stalled consumer).
 * - Plain TCP (`mode: 'tcp'`, for PostgreSQL): bytes pass; `abortAll` cuts every link.
 */
import { createServer, type Server, type Socket, connect } from 'node:net';

export type Direction = 'toServer' | 'toClient';

export interface Frame {
  readonly direction: Direction;
  readonly opcode: number;
  /** The payload as text for text frames. */
  readonly text: string | undefined;
  /** The payload parsed as JSON when it is a JSON text frame. */
  readonly json: Record<string, unknown> | undefined;
  /** 0-based index of this frame in its direction on its link. */
  readonly index: number;
}

export type FrameVerdict =
  | 'pass'
  | 'drop'
  | 'duplicate'
  /** Forward the frame, then cut the link (both sockets destroyed). */
  | 'passThenCut'
  /** Do not forward it; cut the link. */
  | 'dropAndCut'
  /** Forward the first half of the frame's bytes, then cut. */
  | 'abortMidFrame'
  /** Forward the frame, then end (FIN) this direction; the other direction keeps flowing. */
  | 'passThenHalfClose'
  /** Forward the frame, then stop reading this direction until `resume()`. */
  | 'passThenPause'
  | { hold: string };

export interface FrameRule {
  readonly name: string;
  readonly direction: Direction;
  readonly match: (frame: Frame) => boolean;
  readonly verdict: FrameVerdict;
  /** How many frames the rule acts on (default 1); then it retires. */
  times?: number;
}

export interface HttpRequestHead {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
}

export type HttpVerdict =
  /** Answer it here; the hub never sees the request. */
  | { respond: { status: number; headers?: Record<string, string>; body?: string } }
  /** The hub takes the request; the answer is cut off before the client reads its status. */
  | 'forwardThenCut'
  /** The hub's answer passes until `events` SSE events went through, then the link is cut. */
  | { cutAfterSseEvents: number };

export interface HttpRule {
  readonly name: string;
  readonly match: (head: HttpRequestHead) => boolean;
  readonly verdict: HttpVerdict;
  times?: number;
}

/** What the proxy did, for the case report (which faults fired and how often). */
export interface FaultLog {
  readonly fired: Map<string, number>;
}

interface Link {
  readonly client: Socket;
  readonly upstream: Socket;
  cut(): void;
}

const HEAD_END = Buffer.from('\r\n\r\n');

export class FaultProxy {
  readonly #server: Server;
  #target: { host: string; port: number } = { host: '127.0.0.1', port: 0 };
  readonly #frameRules: FrameRule[] = [];
  readonly #httpRules: HttpRule[] = [];
  readonly #links = new Set<Link>();
  readonly #barriers = new Map<string, Array<() => void>>();
  readonly #paused = new Set<() => void>();
  readonly log: FaultLog = { fired: new Map() };
  /** Every request head seen, in order (a case can assert what reached the proxy). */
  readonly requests: HttpRequestHead[] = [];

  private constructor(
    server: Server,
    readonly port: number,
  ) {
    this.#server = server;
  }

  /** Listens on 127.0.0.1 (port 0) and forwards to `target` (loopback hosts only). */
  static async start(target: { host: string; port: number }, mode: 'http' | 'tcp' = 'http'): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = createServer({ allowHalfOpen: true }, (client) => {
      if (proxy) proxy.#accept(client, proxy.#target, mode);
      else client.destroy();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    proxy = new FaultProxy(server, address.port);
    proxy.retarget(target);
    return proxy;
  }

  /** New links go to `target` (the hub restarted on another port). */
  retarget(target: { host: string; port: number }): void {
    if (!['127.0.0.1', 'localhost', '::1'].includes(target.host)) throw new Error(`the fault proxy forwards to loopback hosts only, not ${target.host}`);
    this.#target = { ...target };
  }

  url(scheme: 'ws' | 'http', path = ''): string {
    return `${scheme}://127.0.0.1:${this.port}${path}`;
  }

  addFrameRule(rule: FrameRule): void {
    this.#frameRules.push({ ...rule, times: rule.times ?? 1 });
  }

  addHttpRule(rule: HttpRule): void {
    this.#httpRules.push({ ...rule, times: rule.times ?? 1 });
  }

  clearRules(): void {
    this.#frameRules.length = 0;
    this.#httpRules.length = 0;
  }

  /** Frames held at `barrier` (and everything queued behind them) move on. */
  release(barrier: string): void {
    for (const go of this.#barriers.get(barrier) ?? []) go();
    this.#barriers.delete(barrier);
  }

  /** Rules that have not acted yet (a case waits for its fault to happen before the next step). */
  get pendingRules(): number {
    return this.#frameRules.length + this.#httpRules.length;
  }

  /** How many frames wait at `barrier`. */
  held(barrier: string): number {
    return this.#barriers.get(barrier)?.length ?? 0;
  }

  /** Readers stopped by `passThenPause` read again. */
  resume(): void {
    for (const go of this.#paused) go();
    this.#paused.clear();
  }

  /** Cuts every open link (a network failure between the actor and the hub); returns how many. */
  abortAll(): number {
    const links = [...this.#links];
    for (const link of links) link.cut();
    return links.length;
  }

  get openLinks(): number {
    return this.#links.size;
  }

  async close(): Promise<void> {
    this.abortAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #fire(name: string): void {
    this.log.fired.set(name, (this.log.fired.get(name) ?? 0) + 1);
  }

  #accept(client: Socket, target: { host: string; port: number }, mode: 'http' | 'tcp'): void {
    const upstream = connect({ host: target.host, port: target.port, allowHalfOpen: true });
    const link: Link = {
      client,
      upstream,
      cut: () => {
        client.resetAndDestroy();
        upstream.resetAndDestroy();
        this.#links.delete(link);
      },
    };
    this.#links.add(link);
    const gone = (): void => {
      this.#links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', gone);
    upstream.on('error', gone);
    client.on('close', gone);
    upstream.on('close', gone);
    if (mode === 'tcp') {
      client.pipe(upstream);
      upstream.pipe(client);
      return;
    }
    this.#readHttpHead(link);
  }

  /** Reads the request head, applies the HTTP rules, then hands the link to the right mode. */
  #readHttpHead(link: Link): void {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf(HEAD_END);
      if (end < 0) return;
      link.client.off('data', onData);
      link.client.pause();
      const headBytes = buffered.subarray(0, end + 4);
      const rest = buffered.subarray(end + 4);
      const head = parseRequestHead(headBytes.toString('latin1'));
      this.requests.push(head);
      const rule = this.#takeRule(this.#httpRules, (r) => r.match(head));
      if (rule) this.#fire(rule.name);
      if (rule && typeof rule.verdict === 'object' && 'respond' in rule.verdict) {
        const { status, headers = {}, body = '' } = rule.verdict.respond;
        const lines = [`HTTP/1.1 ${status} Fault`, 'Connection: close', `Content-Length: ${Buffer.byteLength(body)}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
        link.client.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
        return;
      }
      link.upstream.write(headBytes);
      if (rest.length > 0) link.upstream.write(rest);
      const upgrade = (head.headers['upgrade'] ?? '').toLowerCase() === 'websocket';
      if (upgrade) this.#websocket(link);
      else this.#plainHttp(link, rule?.verdict);
      link.client.resume();
    };
    link.client.on('data', onData);
  }

  #plainHttp(link: Link, verdict: HttpVerdict | undefined): void {
    link.client.pipe(link.upstream);
    link.client.on('end', () => link.upstream.end());
    if (verdict === 'forwardThenCut') {
      // The hub got the whole request and answers it; the client never reads a status line.
      link.upstream.once('data', () => link.cut());
      return;
    }
    if (verdict !== undefined && typeof verdict === 'object' && 'cutAfterSseEvents' in verdict) {
      let events = 0;
      let text = '';
      link.upstream.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
        // Forward event by event, so the cut falls exactly after the Nth complete event.
        let boundary: number;
        while ((boundary = text.indexOf('\n\n')) >= 0) {
          const piece = text.slice(0, boundary + 2);
          text = text.slice(boundary + 2);
          link.client.write(piece);
          if (/^(id|data):/m.test(piece) && ++events >= verdict.cutAfterSseEvents) return link.cut();
        }
      });
      return;
    }
    link.upstream.pipe(link.client);
    link.upstream.on('end', () => link.client.end());
  }

  #websocket(link: Link): void {
    // The response head (101) passes whole, then both directions are framed.
    let head = Buffer.alloc(0);
    const onHead = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf(HEAD_END);
      if (end < 0) return;
      link.upstream.off('data', onHead);
      link.client.write(head.subarray(0, end + 4));
      const status = /^HTTP\/1\.1 (\d+)/.exec(head.toString('latin1'))?.[1];
      if (status !== '101') {
        link.client.write(head.subarray(end + 4));
        link.upstream.pipe(link.client);
        return;
      }
      this.#frames(link, 'toClient', link.upstream, link.client, head.subarray(end + 4));
    };
    link.upstream.on('data', onHead);
    this.#frames(link, 'toServer', link.client, link.upstream, Buffer.alloc(0));
  }

  #frames(link: Link, direction: Direction, from: Socket, to: Socket, initial: Buffer): void {
    let buffered = initial;
    let index = 0;
    // Frames wait here while a barrier holds the direction (order is kept behind a held frame).
    const queue: Array<{ bytes: Buffer; after?: 'cut' | 'halfClose' | 'pause' }> = [];
    let heldBy: string | undefined;
    let stopped = false;
    const flush = (): void => {
      while (queue.length > 0 && heldBy === undefined && !stopped) {
        const item = queue.shift()!;
        to.write(item.bytes);
        if (item.after === 'cut') return link.cut();
        if (item.after === 'halfClose') {
          stopped = true;
          to.end();
          return;
        }
        if (item.after === 'pause') {
          from.pause();
          stopped = true;
          this.#paused.add(() => {
            stopped = false;
            from.resume();
            flush();
            onData(Buffer.alloc(0));
          });
          return;
        }
      }
    };
    const onData = (chunk: Buffer): void => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      for (;;) {
        if (stopped) return;
        const parsed = parseFrame(buffered);
        if (!parsed) return;
        const bytes = buffered.subarray(0, parsed.length);
        buffered = buffered.subarray(parsed.length);
        const frame: Frame = { direction, opcode: parsed.opcode, text: parsed.text, json: parsed.json, index: index++ };
        const rule = this.#takeRule(this.#frameRules, (r) => r.direction === direction && r.match(frame));
        const verdict = rule?.verdict ?? 'pass';
        if (rule) this.#fire(rule.name);
        if (verdict === 'drop') continue;
        if (verdict === 'dropAndCut') {
          flush();
          return link.cut();
        }
        if (verdict === 'abortMidFrame') {
          flush();
          to.write(bytes.subarray(0, Math.max(1, Math.floor(bytes.length / 2))));
          return link.cut();
        }
        if (typeof verdict === 'object') {
          const barrier = verdict.hold;
          heldBy = barrier;
          queue.push({ bytes });
          const waiting = this.#barriers.get(barrier) ?? [];
          waiting.push(() => {
            heldBy = undefined;
            flush();
          });
          this.#barriers.set(barrier, waiting);
          continue;
        }
        queue.push({ bytes });
        if (verdict === 'duplicate') queue.push({ bytes });
        if (verdict === 'passThenCut') queue[queue.length - 1]!.after = 'cut';
        if (verdict === 'passThenHalfClose') queue[queue.length - 1]!.after = 'halfClose';
        if (verdict === 'passThenPause') queue[queue.length - 1]!.after = 'pause';
        flush();
      }
    };
    from.on('data', onData);
    from.on('end', () => {
      if (!stopped) to.end();
    });
    if (initial.length > 0) onData(Buffer.alloc(0));
  }

  #takeRule<R extends { times?: number }>(rules: R[], test: (r: R) => boolean): R | undefined {
    const i = rules.findIndex((r) => (r.times ?? 1) > 0 && test(r));
    if (i < 0) return undefined;
    const rule = rules[i]!;
    rule.times = (rule.times ?? 1) - 1;
    if (rule.times <= 0) rules.splice(i, 1);
    return rule;
  }
}

function parseRequestHead(text: string): HttpRequestHead {
  const [requestLine = '', ...lines] = text.split('\r\n');
  const [method = '', path = ''] = requestLine.split(' ');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { method, path, headers };
}

/** One complete WebSocket frame at the start of `buf`, or undefined while it is incomplete. */
function parseFrame(buf: Buffer): { length: number; opcode: number; text: string | undefined; json: Record<string, unknown> | undefined } | undefined {
  if (buf.length < 2) return undefined;
  const opcode = buf[0]! & 0x0f;
  const masked = (buf[1]! & 0x80) !== 0;
  let payloadLength = buf[1]! & 0x7f;
  let offset = 2;
  if (payloadLength === 126) {
    if (buf.length < 4) return undefined;
    payloadLength = buf.readUInt16BE(2);
    offset = 4;
  } else if (payloadLength === 127) {
    if (buf.length < 10) return undefined;
    payloadLength = Number(buf.readBigUInt64BE(2));
    offset = 10;
  }
  const maskOffset = offset;
  if (masked) offset += 4;
  if (buf.length < offset + payloadLength) return undefined;
  let text: string | undefined;
  let json: Record<string, unknown> | undefined;
  if (opcode === 1) {
    const payload = Buffer.from(buf.subarray(offset, offset + payloadLength));
    if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= buf[maskOffset + (i % 4)]!;
    text = payload.toString('utf8');
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) json = value as Record<string, unknown>;
    } catch {
      json = undefined;
    }
  }
  return { length: offset + payloadLength, opcode, text, json };
}
