/**
 * Allocation probe, preloaded into the hub child by bench/alloc.ts (`node --expose-gc --import
 * dist/bench/alloc-probe.js dist/server/main.js …`, with an IPC channel). It never touches the hub:
 * on `start` it runs a full GC and begins counting, on `stop` it runs a full GC again and answers
 *  - `heapBytes`: bytes allocated on the V8 heap in between, exact up to V8's accounting: the sum,
 *    over every GC in the window, of used heap before that GC minus used heap after the previous one
 *    (`v8.GCProfiler`), the last GC being the forced one;
 *  - `scavenges` / `markCompacts`: GCs of each kind in the window (the forced one left out);
 *  - `layers`: the sampling heap profiler's estimate (objects collected by either GC included) split
 *    by the code that allocated: `socket` (ws, Node's net/stream internals, server/transport) or
 *    `core` (everything else: decode, decide, sequence, append, fan-out);
 *  - `top`: the top allocation sites of the sample.
 * Counting, not timing: the figures do not depend on how busy the machine is.
 */
import inspector from 'node:inspector';
import v8 from 'node:v8';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  callFrame: CallFrame;
  selfSize: number;
  children: ProfileNode[];
}

export interface ProbeResult {
  type: 'stopped';
  heapBytes: number;
  scavenges: number;
  markCompacts: number;
  scavengeMs: number;
  layers: { socket: number; core: number };
  top: { site: string; layer: 'socket' | 'core'; bytes: number }[];
}

const gc = (globalThis as { gc?: () => void }).gc;
const session = new inspector.Session();
session.connect();
const post = <T>(method: string, params?: object): Promise<T> => new Promise((resolve, reject) => session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res as T))));

const SOCKET_URL = /node_modules\/ws\/|^node:(net|stream|_stream|internal\/(streams|stream_base_commons|net))|\/server\/transport\//;

function layerOf(stack: readonly CallFrame[]): 'socket' | 'core' {
  // The innermost frame with a script decides (builtins such as JSON.parse have no url).
  for (let i = stack.length - 1; i >= 0; i--) {
    const url = stack[i]!.url;
    if (url) return SOCKET_URL.test(url) ? 'socket' : 'core';
  }
  return 'core';
}

function short(url: string): string {
  const at = url.search(/\/(server|shared|node_modules)\//);
  return at >= 0 ? url.slice(at + 1) : url.replace(/^file:\/\//, '');
}

let profiler: v8.GCProfiler | undefined;
let startUsed = 0;

async function start(): Promise<void> {
  gc?.();
  startUsed = v8.getHeapStatistics().used_heap_size;
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  profiler = new v8.GCProfiler();
  profiler.start();
}

async function stop(): Promise<ProbeResult> {
  const { profile } = await post<{ profile: { head: ProfileNode } }>('HeapProfiler.stopSampling');
  gc?.();
  const stats = profiler!.stop().statistics;
  profiler = undefined;
  let heapBytes = 0;
  let prevUsed = startUsed;
  let scavenges = 0;
  let markCompacts = 0;
  let scavengeMs = 0;
  stats.forEach((s, i) => {
    heapBytes += Math.max(0, s.beforeGC.heapStatistics.usedHeapSize - prevUsed);
    prevUsed = s.afterGC.heapStatistics.usedHeapSize;
    if (i === stats.length - 1) return; // the forced GC
    if (s.gcType === 'Scavenge' || s.gcType === 'MinorMarkSweep') {
      scavenges++;
      scavengeMs += s.cost / 1000;
    } else if (s.gcType === 'MarkSweepCompact') markCompacts++;
  });
  const layers = { socket: 0, core: 0 };
  const sites = new Map<string, { layer: 'socket' | 'core'; bytes: number }>();
  const stack: CallFrame[] = [];
  const walk = (node: ProfileNode): void => {
    stack.push(node.callFrame);
    if (node.selfSize > 0) {
      const layer = layerOf(stack);
      layers[layer] += node.selfSize;
      const f = node.callFrame;
      const site = `${f.functionName || '(anonymous)'} ${f.url ? `${short(f.url)}:${f.lineNumber + 1}` : '(builtin)'}${f.url ? '' : ` ← ${callerOf(stack)}`}`;
      const prev = sites.get(site);
      if (prev) prev.bytes += node.selfSize;
      else sites.set(site, { layer, bytes: node.selfSize });
    }
    for (const c of node.children) walk(c);
    stack.pop();
  };
  walk(profile.head);
  const top = [...sites.entries()]
    .sort((a, b) => b[1].bytes - a[1].bytes)
    .slice(0, 20)
    .map(([site, v]) => ({ site, ...v }));
  return { type: 'stopped', heapBytes, scavenges, markCompacts, scavengeMs, layers, top };
}

function callerOf(stack: readonly CallFrame[]): string {
  for (let i = stack.length - 1; i >= 0; i--) {
    const f = stack[i]!;
    if (f.url) return `${f.functionName || '(anonymous)'} ${short(f.url)}:${f.lineNumber + 1}`;
  }
  return '(root)';
}

process.on('message', (m: { cmd?: string }) => {
  if (m.cmd === 'start') void start().then(() => process.send?.({ type: 'started' }));
  else if (m.cmd === 'stop') void stop().then((r) => process.send?.(r));
});
// The IPC channel must not keep a hub alive that is asked to stop.
process.channel?.unref();
