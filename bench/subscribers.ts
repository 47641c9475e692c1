/**
 * Subscriber worker (worker_threads): opens `count` WebSocket clients of one kind and records, for
 * every timestamp marker they receive inside the measurement window, the latency from the
 * producer's send to this receive. Runs in its own thread so the producer's timers and the
 * subscribers' message handling do not share an event loop.
 *
 * Kinds:
 *  - `ahp`: initialize + subscribe to a chat (optionally with `delivery.maxLatencyMs`); every
 *    `action` notification is JSON-parsed and its `chat/delta` content scanned for markers.
 *  - `raw`: plain ws subscriber of bench/raw-ws-server.ts; frames are the same envelope JSON
 *    and are parsed the same way.
 *  - `hocuspocus`: Hocuspocus 2 wire protocol (auth token message, SyncStep1); update frames are
 *    scanned as bytes (Yjs carries inserted text verbatim as UTF-8) without applying them to a
 *    Y.Doc, so the client cost stays comparable to the JSON clients.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { leanLink, wsLink, type Link } from './lean-ws.js';
import * as encoding from 'lib0/encoding';
import * as decoding from 'lib0/decoding';
import { Histogram } from './histogram.js';
import { nowUs, scanBytes, scanString } from './clock.js';

export type SubscriberKind = 'ahp' | 'raw' | 'hocuspocus';

export interface SubscriberWorkerData {
  readonly kind: SubscriberKind;
  /** ws:// URL to connect to. */
  readonly url: string;
  readonly count: number;
  /** AHP chat URI or Hocuspocus document name. */
  readonly channel: string;
  readonly maxLatencyMs: number;
  /** Index of the first subscriber (for unique client ids across workers). */
  readonly offset: number;
  /**
   * `json`: JSON.parse every action frame, then scan the delta's content (what an AHP client does).
   * `scan`: recognise action frames by their prefix and scan the bytes for markers without
   * parsing, so the subscriber thread spends less of the machine's CPU.
   */
  readonly parse: 'json' | 'scan';
  /** `ws`: the `ws` client library; `lean`: bench/lean-ws.ts (cheaper per frame). */
  readonly client: 'ws' | 'lean';
}

export type WorkerCommand = { cmd: 'window'; fromUs: number; toUs: number } | { cmd: 'progress' } | { cmd: 'report' } | { cmd: 'close' };

export interface WorkerReport {
  type: 'report';
  hist: { counts: Float64Array; count: number; max: number; sum: number };
  /** Frames that carried at least one in-window timestamp, and their bytes. */
  frames: number;
  bytes: number;
  firstRecvUs: number;
  lastRecvUs: number;
  /** Per-subscriber in-window timestamp counts: min and max. */
  minPerSub: number;
  maxPerSub: number;
  /** Subscribers whose socket closed during the run, and the close codes seen. */
  closed: number;
  closeCodes: Record<string, number>;
  /** Event-loop utilisation of this worker since the window opened (0–1). */
  elu: number;
}

const data = workerData as SubscriberWorkerData;
const port = parentPort!;

let fromUs = Number.POSITIVE_INFINITY;
let toUs = Number.POSITIVE_INFINITY;
const hist = new Histogram();
let frames = 0;
let bytes = 0;
let firstRecvUs = 0;
let lastRecvUs = 0;
let closed = 0;
const closeCodes: Record<string, number> = {};
let eluStart: EventLoopUtilization | undefined;

class Sub {
  counted = 0;
  link!: Link;
  phase: 'connecting' | 'init' | 'sub' | 'live' = 'connecting';
  ready!: () => void;
  fail!: (e: Error) => void;
}
const subs: Sub[] = [];

function onStamps(sub: Sub, recvUs: number, stamps: number[], size: number): void {
  let inWindow = 0;
  for (const s of stamps) {
    if (s < fromUs || s > toUs) continue;
    hist.record(recvUs - s);
    inWindow++;
  }
  if (inWindow === 0) return;
  sub.counted += inWindow;
  frames++;
  bytes += size;
  if (firstRecvUs === 0) firstRecvUs = recvUs;
  lastRecvUs = recvUs;
}

const stampBuf: number[] = [];
const pushStamp = (v: number): void => {
  stampBuf.push(v);
};

const ACTION_PREFIX = Buffer.from('{"jsonrpc":"2.0","method":"action","params":');

function onJsonFrame(sub: Sub, raw: Buffer): void {
  const recvUs = nowUs();
  if (data.parse === 'scan' && sub.phase === 'live' && raw.length > ACTION_PREFIX.length && raw.compare(ACTION_PREFIX, 0, ACTION_PREFIX.length, 0, ACTION_PREFIX.length) === 0) {
    stampBuf.length = 0;
    scanBytes(raw, pushStamp);
    if (stampBuf.length > 0) onStamps(sub, recvUs, stampBuf, raw.length);
    return;
  }
  const text = raw.toString('utf8');
  const msg = JSON.parse(text) as { id?: number; error?: { message: string }; method?: string; params?: { action?: { type?: string; content?: unknown } } };
  if (msg.method === 'action') {
    const action = msg.params?.action;
    if (action?.type === 'chat/delta' && typeof action.content === 'string') {
      stampBuf.length = 0;
      scanString(action.content, pushStamp);
      if (stampBuf.length > 0) onStamps(sub, recvUs, stampBuf, raw.length);
    }
    return;
  }
  if (msg.id === undefined) return;
  if (msg.error) {
    sub.fail(new Error(`${sub.phase} failed: ${msg.error.message}`));
    return;
  }
  if (sub.phase === 'init') {
    sub.phase = 'sub';
    const params = data.maxLatencyMs > 0 ? { channel: data.channel, delivery: { maxLatencyMs: data.maxLatencyMs } } : { channel: data.channel };
    sub.link.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'subscribe', params }));
  } else if (sub.phase === 'sub') {
    sub.phase = 'live';
    sub.ready();
  }
}

// Hocuspocus message types (packages/common): Sync=0, Auth=2; sync step types: 0,1,2 (y-protocols).
function hocusAuthMessage(doc: string): Uint8Array {
  const e = encoding.createEncoder();
  encoding.writeVarString(e, doc);
  encoding.writeVarUint(e, 2); // Auth
  encoding.writeVarUint(e, 0); // Token
  encoding.writeVarString(e, '');
  return encoding.toUint8Array(e);
}

function hocusSyncStep1(doc: string): Uint8Array {
  const e = encoding.createEncoder();
  encoding.writeVarString(e, doc);
  encoding.writeVarUint(e, 0); // Sync
  encoding.writeVarUint(e, 0); // SyncStep1
  encoding.writeVarUint8Array(e, new Uint8Array([0])); // empty state vector
  return encoding.toUint8Array(e);
}

function onHocusFrame(sub: Sub, raw: Buffer): void {
  const recvUs = nowUs();
  if (sub.phase === 'live') {
    stampBuf.length = 0;
    scanBytes(raw, pushStamp);
    if (stampBuf.length > 0) onStamps(sub, recvUs, stampBuf, raw.length);
    return;
  }
  const d = decoding.createDecoder(raw);
  decoding.readVarString(d);
  const type = decoding.readVarUint(d);
  if (type === 2 && sub.phase === 'init') {
    const sub2 = decoding.readVarUint(d); // 2 = Authenticated, 0 = PermissionDenied
    if (sub2 !== 2) {
      sub.fail(new Error('hocuspocus auth refused'));
      return;
    }
    sub.phase = 'sub';
    sub.link.send(hocusSyncStep1(data.channel));
  } else if ((type === 0 || type === 4) && sub.phase === 'sub') {
    sub.phase = 'live';
    sub.ready();
  }
}

function connect(sub: Sub, index: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    sub.ready = resolve;
    sub.fail = reject;
    const url = data.kind === 'raw' ? `${data.url}/sub` : data.kind === 'hocuspocus' ? `${data.url}/${encodeURIComponent(data.channel)}` : data.url;
    const open = data.client === 'lean' ? leanLink : wsLink;
    sub.link = open(url, {
      error: (err) => reject(err),
      close: (code) => {
        if (sub.phase === 'live') {
          closed++;
          closeCodes[code] = (closeCodes[code] ?? 0) + 1;
        }
        reject(new Error(`closed with ${code} while ${sub.phase}`));
      },
      open: () => {
        if (data.kind === 'raw') {
          sub.phase = 'live';
          resolve();
        } else if (data.kind === 'ahp') {
          sub.phase = 'init';
          const clientId = `bench-sub-${process.pid}-${data.offset + index}`;
          sub.link.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId } }));
        } else {
          sub.phase = 'init';
          sub.link.send(hocusAuthMessage(data.channel));
        }
      },
      message: (payload) => {
        try {
          if (data.kind === 'hocuspocus') onHocusFrame(sub, payload);
          else onJsonFrame(sub, payload);
        } catch (err) {
          reject(err as Error);
        }
      },
    });
  });
}

async function connectAll(): Promise<void> {
  const started = performance.now();
  const CONCURRENCY = 64;
  let next = 0;
  const runLane = async (): Promise<void> => {
    while (next < data.count) {
      const i = next++;
      const sub = new Sub();
      subs.push(sub);
      await connect(sub, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, data.count) }, runLane));
  port.postMessage({ type: 'ready', connectMs: performance.now() - started });
}

port.on('message', (m: WorkerCommand) => {
  switch (m.cmd) {
    case 'window':
      if (m.fromUs !== fromUs) {
        fromUs = m.fromUs;
        hist.reset();
        frames = bytes = firstRecvUs = lastRecvUs = 0;
        for (const s of subs) s.counted = 0;
        eluStart = performance.eventLoopUtilization();
      }
      toUs = m.toUs;
      break;
    case 'progress': {
      port.postMessage({ type: 'progress', count: hist.count, lastRecvUs, closed });
      break;
    }
    case 'report': {
      let min = Number.POSITIVE_INFINITY;
      let max = 0;
      for (const s of subs) {
        if (s.counted < min) min = s.counted;
        if (s.counted > max) max = s.counted;
      }
      const elu = eluStart ? performance.eventLoopUtilization(eluStart).utilization : 0;
      const report: WorkerReport = {
        type: 'report',
        hist: { counts: hist.counts, count: hist.count, max: hist.max, sum: hist.sum },
        frames,
        bytes,
        firstRecvUs,
        lastRecvUs,
        minPerSub: subs.length ? min : 0,
        maxPerSub: max,
        closed,
        closeCodes,
        elu,
      };
      port.postMessage(report);
      break;
    }
    case 'close':
      for (const s of subs) s.link.terminate();
      setTimeout(() => process.exit(0), 50);
      break;
  }
});

connectAll().catch((err: unknown) => {
  port.postMessage({ type: 'error', message: err instanceof Error ? err.message : String(err) });
});
