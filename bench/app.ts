/**
 * Browser benchmark: `npm run bench:app` (= build + `node dist/bench/app.js`). Not a test.
 *
 * A real hub (`dist/server/main.js`, dev mode, SQLite log in a temp dir) serves the app to Debian's
 * headless Chromium (playwright-core). One AHP connection acting as the agent streams a markdown
 * answer (bench/markdown-corpus.ts, ~24-character deltas, as fast as its socket takes them) into a
 * chat the page shows. Per answer size it reports:
 *  - whole text in page / formatted after last delta: from the agent's echo of its last delta (the
 *    hub has delivered it) to the moment the page holds the part's whole text (`data-text-chars`:
 *    formatted, or plain while the formatter catches up) and has formatted all of it
 *    (`data-shown-chars`);
 *  - longest main-thread task while streaming (PerformanceObserver "longtask", which reports tasks
 *    of 50 ms or more);
 *  - renderer JS heap and DOM nodes afterwards (CDP Performance.getMetrics);
 *  - scroll p95 frame: the page scrolled top to bottom, 400 px a frame, time between frames.
 * Then the same for a chat of 1,000 completed turns opened cold, scrolled from the bottom to the
 * top (older turns are built on the way; the row says in how many frames, and whether it got there).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import { chromium, type Page } from 'playwright-core';
import { prng } from '../scripts/prng.js';
import { randomMarkdown, splitAtRandom } from './markdown-corpus.js';
import { openSocket } from './open-socket.js';
import { spawnServer } from './proc.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--no-first-run'];

/** A minimal JSON-RPC peer on the hub (requests and dispatches; echoes counted by clientSeq). */
class Peer {
  #id = 0;
  #seq = 0;
  confirmedSeq = 0;
  readonly #pending = new Map<number, (v: unknown) => void>();
  readonly #echoWaiters: Array<{ seq: number; resolve: () => void; reject: (e: Error) => void }> = [];
  /** Set when the hub closed the agent's socket: the bench fails instead of waiting for echoes forever. */
  closed: Error | undefined;
  constructor(private readonly ws: WebSocket) {
    ws.on('close', (code, reason) => {
      this.closed = new Error(`the hub closed the bench agent's socket (${code} ${reason.toString()})`);
      for (const w of this.#echoWaiters.splice(0)) w.reject(this.closed);
      for (const p of this.#pending.values()) p(Promise.reject(this.closed));
      this.#pending.clear();
    });
    ws.on('message', (raw: Buffer) => {
      const msg = JSON.parse(raw.toString('utf8')) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: { origin?: { clientSeq: number }; rejectionReason?: string } };
      if (typeof msg.id === 'number') {
        this.#pending.get(msg.id)?.(msg.error ? Promise.reject(new Error(msg.error.message)) : msg.result);
        this.#pending.delete(msg.id);
        return;
      }
      if (msg.method === 'action' && msg.params?.origin) {
        if (msg.params.rejectionReason) throw new Error(`rejected: ${msg.params.rejectionReason}`);
        this.confirmedSeq = Math.max(this.confirmedSeq, msg.params.origin.clientSeq);
        while (this.#echoWaiters[0] && this.#echoWaiters[0].seq <= this.confirmedSeq) this.#echoWaiters.shift()!.resolve();
      }
    });
  }
  static async open(url: string): Promise<Peer> {
    const peer = new Peer(await openSocket(url));
    await peer.request('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: `bench-app-${randomUUID()}` });
    return peer;
  }
  request<T>(method: string, params: unknown): Promise<T> {
    const id = ++this.#id;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, (v) => (v instanceof Promise ? v.catch(reject) : resolve(v as T)));
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }
  /** Dispatches; resolves once echoed (durable and delivered). */
  async dispatch(channel: string, action: Record<string, unknown>, wait = true): Promise<void> {
    if (this.closed) throw this.closed;
    const clientSeq = ++this.#seq;
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel, clientSeq, action } }));
    if (!wait) {
      // Read the echoes as we go: an agent that only writes is a slow consumer of its own echoes
      // (4 MiB unsent and the hub closes it with 4008; the bench then waited forever for the last one).
      if (clientSeq % 128 === 0) await new Promise((r) => setImmediate(r));
      // At most 8,192 echoes (~1.6 MB) outstanding, however slowly this process gets to read them.
      while (clientSeq - this.confirmedSeq > 8_192 && !this.closed) await new Promise((r) => setTimeout(r, 1));
      while (this.ws.bufferedAmount > 1 << 20 && !this.closed) await new Promise((r) => setTimeout(r, 1));
      if (this.closed) throw this.closed;
      return;
    }
    await new Promise<void>((resolve, reject) => this.#echoWaiters.push({ seq: clientSeq, resolve, reject }));
  }
  close(): void {
    this.ws.terminate();
  }
}

interface Row {
  what: string;
  /** Last delta → the whole text in the page (plain where not yet formatted). */
  inPageAfterLastDeltaMs?: number;
  /** Last delta → the whole text formatted. */
  shownAfterLastDeltaMs: number | undefined;
  longestTaskMs: number | undefined;
  longTasks: number;
  heapMiB: number;
  domNodes: number;
  scrollP95Ms: number;
  scrollFrames: number;
  /** False when the scroll stopped at `MAX_SCROLL_FRAMES` before reaching the end. */
  scrolledToEnd: boolean;
}

async function newSession(peer: Peer): Promise<{ session: string; chat: string }> {
  const session = `ahp-session:/${randomUUID()}`;
  const { defaultChat } = await peer.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote', title: 'bench:app' });
  return { session, chat: defaultChat };
}

/** `beforeGoto` runs once the page exists, before it loads (a trace of the cold open starts there). */
async function openPage(browser: import('playwright-core').Browser, base: string, session: string, beforeGoto?: (page: Page) => Promise<void>): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  await page.addInitScript(() => {
    const w = globalThis as unknown as { __longTasks: number[]; PerformanceObserver: typeof PerformanceObserver };
    w.__longTasks = [];
    new w.PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__longTasks.push(e.duration);
    }).observe({ type: 'longtask' as never, buffered: true });
  });
  await beforeGoto?.(page);
  await page.goto(`${base}/s/${encodeURIComponent(session.replace('ahp-session:/', ''))}`);
  await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor({ timeout: 60_000 });
  return page;
}

/** `--profile=DIR`: a CPU profile of the page while it streams (open it in Chromium's DevTools). */
const PROFILE_DIR = process.argv.find((a) => a.startsWith('--profile='))?.slice(10);

/**
 * `--trace=DIR`: performance traces, and what the longest tasks spent their time on: while each
 * answer streams, and for the long chat its cold open (from before the page loads to the newest
 * turn on screen) and its scroll to the top.
 */
const TRACE_DIR = process.argv.find((a) => a.startsWith('--trace='))?.slice(8);
const TRACE_CATEGORIES = ['devtools.timeline', 'disabled-by-default-devtools.timeline'];

const startTrace = (page: Page): Promise<void> => page.context().browser()!.startTracing(page, { categories: TRACE_CATEGORIES });
const stopTrace = async (page: Page, name: string): Promise<void> => writeTrace(await page.context().browser()!.stopTracing(), name);

async function writeTrace(buffer: Buffer, name: string): Promise<void> {
  mkdirSync(TRACE_DIR!, { recursive: true });
  const file = join(TRACE_DIR!, `${name}.json`);
  writeFileSync(file, buffer);
  type Ev = { name: string; ph: string; ts: number; dur?: number; tdur?: number; tid: number; pid: number; args?: { data?: { functionName?: string; url?: string; type?: string } } };
  const events = (JSON.parse(buffer.toString('utf8')) as { traceEvents: Ev[] }).traceEvents.filter((e) => e.ph === 'X' && e.dur !== undefined);
  const tasks = events
    .filter((e) => e.name === 'RunTask' && e.dur! > 50_000)
    .sort((a, b) => (b.tdur ?? b.dur!) - (a.tdur ?? a.dur!))
    .slice(0, 5);
  // Which script work it was: the function called (and its file), the event type dispatched.
  const label = (e: Ev): string => {
    const d = e.args?.data;
    if (e.name === 'FunctionCall' && d?.functionName) return `FunctionCall(${d.functionName} ${d.url?.split('/').pop() ?? ''})`;
    if (e.name === 'EventDispatch' && d?.type) return `EventDispatch(${d.type})`;
    return e.name;
  };
  const lines = tasks.map((t) => {
    const inside = events.filter((e) => e !== t && e.tid === t.tid && e.pid === t.pid && e.ts >= t.ts && e.ts + e.dur! <= t.ts + t.dur! && e.name !== 'RunTask');
    const by = new Map<string, number>();
    for (const e of inside) by.set(label(e), (by.get(label(e)) ?? 0) + (e.tdur ?? e.dur!));
    const top = [...by]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([n, us]) => `${n} ${(us / 1000).toFixed(0)}`)
      .join(', ');
    // Thread (CPU) time beside wall time: on a busy machine the wall time is mostly waiting.
    return `  task ${(t.dur! / 1000).toFixed(0)} ms (cpu ${((t.tdur ?? t.dur!) / 1000).toFixed(0)} ms): ${top}`;
  });
  process.stderr.write(`trace ${file}:\n${lines.join('\n')}\n`);
}

async function startProfile(page: Page): Promise<{ stop(name: string): Promise<void> }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 500 });
  await cdp.send('Profiler.start');
  return {
    async stop(name) {
      const { profile } = await cdp.send('Profiler.stop');
      mkdirSync(PROFILE_DIR!, { recursive: true });
      const file = join(PROFILE_DIR!, `${name}.cpuprofile`);
      writeFileSync(file, JSON.stringify(profile));
      // The functions with the most self time, so a run says where the main thread went.
      const dt = new Map<number, number>();
      profile.samples?.forEach((id, i) => {
        dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas?.[i] ?? 0));
      });
      const self = new Map<string, number>();
      for (const node of profile.nodes) {
        const f = node.callFrame;
        const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`;
        self.set(key, (self.get(key) ?? 0) + (dt.get(node.id) ?? 0));
      }
      const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 15);
      process.stderr.write(`profile ${file}:\n${top.map(([k, us]) => `  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`).join('\n')}\n`);
    },
  };
}

async function metrics(page: Page): Promise<{ heapMiB: number; domNodes: number }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  await cdp.send('HeapProfiler.collectGarbage');
  const { metrics: list } = await cdp.send('Performance.getMetrics');
  const get = (name: string): number => list.find((m) => m.name === name)?.value ?? Number.NaN;
  return { heapMiB: get('JSHeapUsedSize') / 2 ** 20, domNodes: get('Nodes') };
}

/**
 * At most this many frames of scrolling: 600 stopped the 1,000-turn chat about 700 turns in (its
 * oldest turns were never built nor scrolled past).
 */
const MAX_SCROLL_FRAMES = 5_000;

/**
 * Scrolls the page from top to bottom (`up`: from the bottom to the top, as a person reading a long
 * chat back does; older turns are built on the way), 400 px a frame; p95 of the time between frames,
 * how many frames it took and whether it reached the end before `MAX_SCROLL_FRAMES`.
 */
async function scrollP95(page: Page, up = false): Promise<{ p95: number; frames: number; reachedEnd: boolean }> {
  const { gaps, reachedEnd } = await page.evaluate(
    async ([up, max]) => {
      const w = globalThis as unknown as {
        scrollTo(x: number, y: number): void;
        scrollBy(x: number, y: number): void;
        requestAnimationFrame(cb: (t: number) => void): void;
        document: { documentElement: { scrollHeight: number; clientHeight: number; scrollTop: number } };
      };
      w.scrollTo(0, up ? w.document.documentElement.scrollHeight : 0);
      const out: number[] = [];
      let last = -1;
      let atTop = 0;
      const reachedEnd = await new Promise<boolean>((resolve) => {
        const step = (t: number): void => {
          if (last >= 0) out.push(t - last);
          last = t;
          const el = w.document.documentElement;
          // Going up, the top is the end once it stays the top (no older turns were built above it).
          atTop = up && el.scrollTop <= 0 ? atTop + 1 : 0;
          if (up ? atTop > 10 : el.scrollTop + el.clientHeight >= el.scrollHeight - 2) return resolve(true);
          if (out.length >= max) return resolve(false);
          w.scrollBy(0, up ? -400 : 400);
          w.requestAnimationFrame(step);
        };
        w.requestAnimationFrame(step);
      });
      return { gaps: out, reachedEnd };
    },
    [up, MAX_SCROLL_FRAMES] as const,
  );
  const sorted = [...gaps].sort((a, b) => a - b);
  return { p95: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))] ?? Number.NaN, frames: gaps.length, reachedEnd };
}

async function streamedAnswer(browser: import('playwright-core').Browser, base: string, peer: Peer, chars: number): Promise<Row> {
  const { session, chat } = await newSession(peer);
  const turnId = `turn-${randomUUID()}`;
  const partId = 'md-1';
  await peer.dispatch(chat, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: { text: `a ${chars}-character answer`, origin: { kind: 'user' } } });
  await peer.dispatch(chat, { type: 'chat/responsePart', turnId, part: { kind: 'markdown', id: partId, content: '' } });
  const page = await openPage(browser, base, session);
  const random = prng(chars);
  const text = randomMarkdown(random, chars).slice(0, chars);
  const chunks = splitAtRandom(random, text, 24); // 1..48 characters, ~24 on average
  await page.evaluate(() => {
    (globalThis as unknown as { __longTasks: number[] }).__longTasks.length = 0;
  });
  const profiler = PROFILE_DIR ? await startProfile(page) : undefined;
  if (TRACE_DIR) await startTrace(page);
  for (let i = 0; i < chunks.length - 1; i++) await peer.dispatch(chat, { type: 'chat/delta', turnId, partId, content: chunks[i] }, false);
  await peer.dispatch(chat, { type: 'chat/delta', turnId, partId, content: chunks[chunks.length - 1] });
  const lastDeltaAt = Date.now();
  // Two moments: the whole text in the page (formatted, or plain while the formatter catches up:
  // markdown-stream.ts RawBacklog) and the whole text formatted.
  const [inPageAt, shownAt] = await page.evaluate(async (want) => {
    const w = globalThis as unknown as { document: { querySelector(s: string): { dataset: Record<string, string | undefined> } | null }; requestAnimationFrame(cb: () => void): void };
    const deadline = Date.now() + 180_000;
    let inPage = Number.NaN;
    return new Promise<[number, number]>((resolve) => {
      const check = (): void => {
        const part = w.document.querySelector('.part.md');
        if (Number.isNaN(inPage) && part?.dataset['textChars'] === String(want)) inPage = Date.now();
        if (part?.dataset['shownChars'] === String(want)) resolve([Number.isNaN(inPage) ? Date.now() : inPage, Date.now()]);
        else if (Date.now() > deadline) resolve([inPage, Number.NaN]);
        else w.requestAnimationFrame(check);
      };
      check();
    });
  }, text.length);
  const longTasks = await page.evaluate(() => (globalThis as unknown as { __longTasks: number[] }).__longTasks.slice());
  if (profiler) await profiler.stop(`streamed-${chars}`);
  if (TRACE_DIR) await stopTrace(page, `streamed-${chars}`);
  await peer.dispatch(chat, { type: 'chat/turnComplete', turnId, duration: 1 });
  const mem = await metrics(page);
  const scroll = await scrollP95(page);
  await page.context().close();
  return {
    what: `streamed answer, ${chars.toLocaleString('en')} characters (${chunks.length.toLocaleString('en')} deltas)`,
    inPageAfterLastDeltaMs: Math.max(0, inPageAt - lastDeltaAt),
    shownAfterLastDeltaMs: shownAt - lastDeltaAt,
    longestTaskMs: longTasks.length ? Math.max(...longTasks) : undefined,
    longTasks: longTasks.length,
    ...mem,
    scrollP95Ms: scroll.p95,
    scrollFrames: scroll.frames,
    scrolledToEnd: scroll.reachedEnd,
  };
}

async function longChat(browser: import('playwright-core').Browser, base: string, peer: Peer, turns: number): Promise<Row> {
  const { session, chat } = await newSession(peer);
  const random = prng(turns);
  for (let i = 0; i < turns; i++) {
    const turnId = `turn-${i}`;
    const last = i === turns - 1;
    void peer.dispatch(chat, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: { text: `question ${i}`, origin: { kind: 'user' } } }, false);
    void peer.dispatch(chat, { type: 'chat/responsePart', turnId, part: { kind: 'markdown', id: 'md', content: randomMarkdown(random, 400) } }, false);
    await peer.dispatch(chat, { type: 'chat/turnComplete', turnId, duration: 1 }, last);
  }
  const openedAt = Date.now();
  // `--profile=DIR` profiles the cold open too (from before the page loads to the newest turn shown).
  let profiler: { stop(name: string): Promise<void> } | undefined;
  const page = await openPage(browser, base, session, async (p) => {
    if (TRACE_DIR) await startTrace(p);
    if (PROFILE_DIR) profiler = await startProfile(p);
  });
  // The newest turn on screen (the app builds the last turns first and older ones as they are scrolled to).
  await page.locator(`article.turn[data-turn="turn-${turns - 1}"] .part.md`).waitFor({ state: 'visible', timeout: 120_000 });
  const shownMs = Date.now() - openedAt;
  if (TRACE_DIR) await stopTrace(page, `long-chat-${turns}-open`);
  if (profiler) await profiler.stop(`long-chat-${turns}-open`);
  const builtAtOpen = await page.locator('article.turn').count();
  const longTasks = await page.evaluate(() => (globalThis as unknown as { __longTasks: number[] }).__longTasks.slice());
  const mem = await metrics(page);
  if (TRACE_DIR) await startTrace(page);
  const scroll = await scrollP95(page, true);
  if (TRACE_DIR) await stopTrace(page, `long-chat-${turns}-scroll`);
  const builtAfterScroll = await page.locator('article.turn').count();
  await page.context().close();
  return {
    what: `${turns.toLocaleString('en')}-turn chat, opened cold (newest turn shown in ${shownMs} ms, ${builtAtOpen} turns built; ${builtAfterScroll} after scrolling up ${scroll.reachedEnd ? `to the top in ${scroll.frames.toLocaleString('en')} frames` : `${scroll.frames.toLocaleString('en')} frames, stopped short of the top`})`,
    shownAfterLastDeltaMs: undefined,
    longestTaskMs: longTasks.length ? Math.max(...longTasks) : undefined,
    longTasks: longTasks.length,
    ...mem,
    scrollP95Ms: scroll.p95,
    scrollFrames: scroll.frames,
    scrolledToEnd: scroll.reachedEnd,
  };
}

async function main(): Promise<void> {
  const sizes = (process.argv.find((a) => a.startsWith('--sizes='))?.slice(8) ?? '10000,100000,1000000').split(',').map(Number);
  const turns = Number(process.argv.find((a) => a.startsWith('--turns='))?.slice(8) ?? 1000);
  const dataDir = mkdtempSync(join(tmpdir(), 'ahp-bench-app-'));
  const server = await spawnServer([join(HERE, '..', 'server', 'main.js'), '--port', '0', '--data', dataDir, '--log-level', 'warn'], 'hub', 20_000, 1_000);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const rows: Row[] = [];
  try {
    const peer = await Peer.open(`${server.url.replace('http://', 'ws://')}/ahp`);
    for (const chars of sizes) {
      process.stderr.write(`… streamed ${chars} characters\n`);
      rows.push(await streamedAnswer(browser, server.url, peer, chars));
      process.stderr.write(line(rows[rows.length - 1]!));
    }
    if (turns > 0) {
      process.stderr.write(`… ${turns}-turn chat\n`);
      rows.push(await longChat(browser, server.url, peer, turns));
      process.stderr.write(line(rows[rows.length - 1]!));
    }
    peer.close();
  } finally {
    await browser.close();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  process.stdout.write(HEADER);
  for (const r of rows) process.stdout.write(line(r));
}

const HEADER = '| scenario | whole text in page after last delta ms | formatted after last delta ms | longest task ms | tasks ≥ 50 ms | JS heap MiB | DOM nodes | scroll p95 frame ms |\n|---|---|---|---|---|---|---|---|\n';
const f = (v: number | undefined, d = 0): string => (v === undefined ? '< 50 (none reported)' : Number.isFinite(v) ? v.toFixed(d) : 'not shown in 180 s');
function line(r: Row): string {
  return `| ${r.what} | ${r.inPageAfterLastDeltaMs === undefined ? '—' : f(r.inPageAfterLastDeltaMs)} | ${r.shownAfterLastDeltaMs === undefined ? '—' : f(r.shownAfterLastDeltaMs)} | ${f(r.longestTaskMs)} | ${r.longTasks} | ${f(r.heapMiB, 1)} | ${f(r.domNodes)} | ${f(r.scrollP95Ms, 1)} (${r.scrollFrames.toLocaleString('en')} frames${r.scrolledToEnd ? '' : `, stopped at the ${MAX_SCROLL_FRAMES.toLocaleString('en')}-frame cap`}) |\n`;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:app failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
