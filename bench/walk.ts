/**
 * The files a draft answer runs through, measured: a real hub (in this process, SQLite log in a
 * temp dir) and two SDK clients on one chat; the first client dispatches a draft answer to an
 * open input request, and V8's precise coverage (node:inspector, call counts) records every
 * function that ran until the second client's view shows the draft. The files those functions
 * live in are the walk's files (`npm run walk`; `--json` prints them as JSON).
 *
 * It counts files entered, not their order: docs/architecture.md walks the hops in order by
 * reading the code, and this keeps that list honest (a file the walk names must be here, and a
 * file here that the walk leaves out is a hop it forgot). Library files (ws, zod, better-sqlite3)
 * are counted apart. The browser's own files (the form's field and view) are not in this process;
 * the walk adds them by hand. Timers that fire inside the window (there are none at this scale:
 * the window is a few milliseconds) would add their files; run it twice to see it is stable.
 *
 * This is not a test and is never run by vitest.
 */
import { Session } from 'node:inspector/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { devAuthenticator } from '../server/auth/auth.js';
import { silentLogger } from '../server/log.js';
import { defaultFeatures } from '../server/features.js';
import { startHubServer } from '../server/server.js';
import { AhpClient } from '../shared/client/ahp-client.js';
import type { ChatState } from '../shared/protocol/state.js';

const QUESTION = {
  id: 'req-walk',
  message: 'Walk',
  questions: [{ id: 'notes', kind: 'text', message: 'Anything else?', required: true, max: 200 }],
};

const distRoot = join(fileURLToPath(new URL('.', import.meta.url)), '..');

function sourceOf(url: string): string | undefined {
  if (!url.startsWith('file://')) return undefined;
  const path = relative(distRoot, fileURLToPath(url));
  if (path.startsWith('..')) return undefined;
  return path.split(sep).join('/').replace(/\.js$/, '.ts');
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-walk-'));
  const server = await startHubServer({ host: '127.0.0.1', port: 0, dataDir, auth: devAuthenticator(), logger: silentLogger, features: defaultFeatures() });
  const open = async (): Promise<AhpClient> => {
    const client = new AhpClient({ url: server.wsUrl, createSocket: (u) => new WebSocket(u) as never });
    await client.connect();
    return client;
  };
  const a = await open();
  const b = await open();
  try {
    const { defaultChat } = await a.createSession({ title: 'walk' });
    const va = await a.subscribe(defaultChat);
    const vb = await b.subscribe(defaultChat);
    const message = { text: JSON.stringify({ script: [{ ask: QUESTION }] }), origin: { kind: 'user' } };
    const started = await va.dispatch({ type: 'chat/turnStarted', turnId: 'walk-turn', startedAt: new Date().toISOString(), message } as never);
    const shows = (text: string): Promise<void> =>
      new Promise((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`the second client never showed ${JSON.stringify(text)} (10 s)`)), 10_000);
        deadline.unref();
        const check = (): boolean => JSON.stringify((vb.state as ChatState).activeTurn ?? null).includes(text);
        if (check()) return resolve(clearTimeout(deadline));
        const off = vb.onChange(() => {
          if (check()) {
            off();
            resolve(clearTimeout(deadline));
          }
        });
      });
    if (!started.accepted) throw new Error(`the turn was refused: ${JSON.stringify(started)}`);
    await shows('req-walk');
    const draft = (value: string) => ({ type: 'chat/inputAnswerChanged', requestId: 'req-walk', questionId: 'notes', answer: { state: 'draft', value: { kind: 'text', value } } });
    // A first draft warms every lazy path up, so the measured one is the steady walk.
    const warm = va.dispatch(draft('warm-up') as never);
    await shows('warm-up');
    await warm;

    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await session.post('Profiler.takePreciseCoverage'); // resets the counters: only the walk counts
    const measured = va.dispatch(draft('the measured draft') as never);
    await shows('the measured draft');
    const { result } = await session.post('Profiler.takePreciseCoverage');
    await session.post('Profiler.stopPreciseCoverage');
    session.disconnect();
    await measured;

    const project = new Map<string, string[]>();
    const libraries = new Set<string>();
    for (const script of result) {
      const ran = script.functions.filter((f) => f.ranges.some((r) => r.count > 0)).map((f) => f.functionName || '(anonymous)');
      if (ran.length === 0) continue;
      const source = sourceOf(script.url);
      if (source && !source.startsWith('bench/')) project.set(source, ran);
      else if (script.url.includes('node_modules'))
        libraries.add(
          script.url
            .replace(/^.*node_modules\//, '')
            .split('/')
            .slice(0, script.url.includes('node_modules/@') ? 2 : 1)
            .join('/'),
        );
    }
    const files = [...project.keys()].sort();
    if (process.argv.includes('--json')) {
      console.log(JSON.stringify({ files, libraries: [...libraries].sort(), functions: Object.fromEntries(project) }, null, 2));
    } else {
      console.log(`project files entered by one draft answer (server and SDK, this process): ${files.length}`);
      for (const file of files) console.log(`  ${file}  (${project.get(file)!.length} functions)`);
      console.log(`libraries: ${[...libraries].sort().join(', ')}`);
    }
  } finally {
    a.close();
    b.close();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
