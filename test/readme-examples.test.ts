/**
 * The README's and the docs pages' examples run verbatim, so they cannot rot. Blocks are marked in
 * README.md and docs/*.md (wherever an example lives) with an HTML comment just before the fence:
 *   <!-- example: NAME -->  a shell block, run through bash against a fresh hub (the README's
 *                            `127.0.0.1:8787` is replaced by the hub's address)
 *   <!-- excerpt: PATH -->   a code block copied from the file PATH, which must contain it verbatim
 * The hub is the built server (`node dist/server/main.js`) started as a child process on port 0
 * in dev mode, as `npm start` would run it. Each example must finish (or, for the "keep it running"
 * blocks, be stopped) with exit code 0 and print what its `# →` comments say, in that order: the
 * literal text between the `…` / `...` wildcards (a trailing remark in parentheses is prose). Each
 * test then checks the example's key output more precisely.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubProcess, type HubProcess } from './helpers/hub-process.js';
import { tempDir } from './helpers/start-server.js';
import { waitFor } from './helpers/wait-for.js';

interface MarkedBlock {
  readonly marker: 'example' | 'excerpt';
  /** The example's name, or the excerpt's source file. */
  readonly name: string;
  readonly code: string;
  /** The markdown file the block is in, and its line there. */
  readonly file: string;
  readonly line: number;
}

function markedBlocks(file: string, markdown: string): MarkedBlock[] {
  const blocks: MarkedBlock[] = [];
  const pattern = /<!-- (example|excerpt): (\S+) -->\n```\w*\n([\s\S]*?)```\n/g;
  for (const match of markdown.matchAll(pattern)) {
    const line = markdown.slice(0, match.index).split('\n').length;
    blocks.push({ marker: match[1] as 'example' | 'excerpt', name: match[2]!, code: match[3]!, file, line });
  }
  return blocks;
}

/** What a block's `# →` comments (and their `#   ` continuation lines) say it prints: literal pieces, in order. */
function claimedOutput(code: string): string[] {
  const pieces: string[] = [];
  let inClaim = false;
  for (const line of code.split('\n')) {
    const arrow = /^# → (.*)$/.exec(line);
    const more: RegExpExecArray | null = inClaim ? /^#(?: {3}(.*))?$/.exec(line) : null;
    const text: string | undefined = arrow ? arrow[1]! : more ? (more[1] ?? '') : undefined;
    inClaim = text !== undefined;
    if (text === undefined) continue;
    const claim = text.replace(/\s{2,}\(.*\)$/, '');
    for (const piece of claim.split(/…|\.\.\./)) if (piece.trim() !== '') pieces.push(piece.trim());
  }
  return pieces;
}

function expectClaimedOutput(name: string, code: string, output: string): void {
  let from = 0;
  for (const piece of claimedOutput(code)) {
    const at = output.indexOf(piece, from);
    expect(at, `README example "${name}" says it prints ${JSON.stringify(piece)} (after what its comments list before it); it printed:\n${output}`).toBeGreaterThanOrEqual(0);
    from = at + piece.length;
  }
}

/** The README is the front door; the topic pages under docs/ hold most of the examples. */
const MARKDOWN_FILES = [
  'README.md',
  ...readdirSync('docs')
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const BLOCKS = MARKDOWN_FILES.flatMap((file) => markedBlocks(file, readFileSync(file, 'utf8')));
/** The examples this file runs; the first test keeps this list and the markers in README.md and docs/ equal. */
const KNOWN_EXAMPLES = ['quickstart-hello', 'sdk-quickstart', 'steering-http', 'cli-stream-json', 'cli-steer', 'replies-session', 'replies-watch', 'replies-prompt', 'replies-answer'];
const BLOCK_TIMEOUT_MS = 20_000;

/** `npm test` builds first; a lone run of this file rebuilds when the examples' output is missing or stale. */
function ensureExamplesBuilt(): void {
  const stale = ['sdk-quickstart', 'cli-steer'].some((name) => {
    const built = `dist/examples/${name}.js`;
    return !existsSync(built) || statSync(built).mtimeMs < statSync(`examples/${name}.ts`).mtimeMs;
  });
  if (stale || !existsSync('dist/cli/main.js') || !existsSync('dist/server/main.js')) execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}

interface RunningBlock {
  readonly name: string;
  output(): string;
  errors(): string;
  /** Bash's exit code once it ended and its output was read to the end, else undefined. */
  ended(): { code: number | null } | undefined;
  /** Ends the block's whole process group (bash and what it started). */
  stop(): void;
}

describe('README examples, run verbatim against a fresh hub process', () => {
  let hub: HubProcess;
  let data: { dir: string; remove(): void };
  const running: RunningBlock[] = [];

  beforeAll(async () => {
    ensureExamplesBuilt();
    data = tempDir();
    hub = await startHubProcess(['--data', data.dir]);
  });

  afterAll(async () => {
    for (const block of running.splice(0)) block.stop();
    if (hub && hub.child.exitCode === null) {
      hub.child.kill('SIGTERM');
      await hub.exited();
    }
    data?.remove();
  });

  const example = (name: string): string => {
    const found = BLOCKS.filter((b) => b.marker === 'example' && b.name === name);
    if (found.length !== 1) throw new Error(`README.md and docs/*.md have ${found.length} blocks marked "example: ${name}" (expected one)`);
    return found[0]!.code;
  };

  /** Starts a README block in bash (errexit on), in its own process group, with the hub's address substituted. */
  const start = (name: string): RunningBlock => {
    const script = example(name).replaceAll('127.0.0.1:8787', new URL(hub.url).host);
    const child = spawn('bash', ['-e', '-c', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    let ended: { code: number | null } | undefined;
    child.once('close', (code) => (ended = { code }));
    const block: RunningBlock = {
      name,
      output: () => out,
      errors: () => err,
      ended: () => ended,
      stop: () => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
        } catch {
          // Already gone.
        }
      },
    };
    running.push(block);
    return block;
  };

  /** Runs a block to its end; fails when it does not finish in time or exits non-zero. */
  const run = async (name: string): Promise<string> => {
    const block = start(name);
    const { code } = await waitFor(block.ended, { what: `README example "${name}" to finish`, timeoutMs: BLOCK_TIMEOUT_MS }).catch((err: unknown) => {
      block.stop();
      throw new Error(`${String(err)}\nstdout: ${block.output()}\nstderr: ${block.errors()}`);
    });
    expect(code, `README example "${name}" exit code; stderr: ${block.errors()}`).toBe(0);
    expectClaimedOutput(name, example(name), block.output());
    return block.output();
  };

  it('every marked block is an example this test runs or an excerpt of a real file, and every example it runs is marked in README.md or docs/', () => {
    const names = BLOCKS.filter((b) => b.marker === 'example').map((b) => b.name);
    expect([...names].sort()).toEqual([...KNOWN_EXAMPLES].sort());
    expect(BLOCKS.filter((b) => b.marker === 'excerpt').length).toBeGreaterThan(0);
    for (const name of KNOWN_EXAMPLES) expect(claimedOutput(example(name)).length, `README example "${name}" says what it prints (# → …)`).toBeGreaterThan(0);
  });

  it('each excerpt appears verbatim in the file it names (so the README and docs show code that typechecks and runs)', () => {
    for (const block of BLOCKS.filter((b) => b.marker === 'excerpt')) {
      expect(existsSync(block.name), `${block.file} line ${block.line}: ${block.name} exists`).toBe(true);
      expect(readFileSync(block.name, 'utf8'), `${block.file} line ${block.line}: excerpt of ${block.name}`).toContain(block.code);
    }
  });

  it('quickstart: the CLI creates the session "hello" and prints the demo agent\'s answer', async () => {
    expect(await run('quickstart-hello')).toBe('Hello from the demo agent.\n');
  });

  it("SDK quickstart: creates a session, the steering input is accepted then consumed, and the agent's answer includes it", async () => {
    const out = await run('sdk-quickstart');
    expect(out).toMatch(/^session ahp-session:\/\S+\n/);
    expect(out).toContain('status: InProgress\n');
    expect(out).toContain('steering input: accepted (ordinal 1)\n');
    expect(out).toContain('agent: Taking your addition into account: “also check the renewal clause”\n');
    expect(out).toContain('agent: Done: two clauses are still open.\n');
    expect(out.endsWith('receipt: consumed\n')).toBe(true);
  });

  it('steering over HTTP: step 0 gives my-session a running turn, the input is accepted with 202 and its receipt ends consumed, acknowledged by the agent', async () => {
    const out = await run('steering-http');
    expect(out).toMatch(/"target":\{"historyEpoch":"epoch-[^"]+","turnId":"turn-[^"]+"\}/);
    expect(out).toMatch(/^HTTP\/1\.1 202 Accepted/m);
    expect(out).toMatch(/\{"outcome":"accepted","receipt":\{"inputId":"ui-001",.*"ordinal":1,"revision":1,.*"state":"accepted"/);
    expect(out).toContain('Taking your addition into account: “also check the renewal clause”');
    expect(out).toMatch(/\{"receipt":\{"inputId":"ui-001",.*"revision":2,.*"state":"consumed"/);
  });

  it('CLI: stdout is pure NDJSON (init, events, input.ready with a target, one final success result) and the CLI exits 0 on its own', async () => {
    const out = await run('cli-stream-json');
    const records = out
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records[0]).toMatchObject({ type: 'system', subtype: 'init', session: 'ahp-session:/my-session' });
    expect(records.some((r) => r['type'] === 'event')).toBe(true);
    const ready = records.find((r) => r['type'] === 'input.ready') as { capabilities: { target: unknown } } | undefined;
    expect(ready?.capabilities.target).toMatchObject({ historyEpoch: expect.any(String), turnId: expect.any(String) });
    expect(records.filter((r) => r['type'] === 'result')).toHaveLength(1);
    expect(records.at(-1)).toMatchObject({ type: 'result', subtype: 'success', is_error: false, exit_code: 0, result: 'Reading the contract.\n\nOpen clauses: renewal, liability.' });
  });

  it('CLI control channel example: the steer frame is accepted, the status frame finds the receipt, and the agent takes the addition into account', async () => {
    const out = await run('cli-steer');
    expect(out).toMatch(/^input\.ready: the turn turn-\S+ takes steering inputs\n/);
    expect(out).toContain('input.response a: accepted, receipt accepted\n');
    expect(out).toMatch(/input\.response b: status, receipt (accepted|consumed)\n/);
    expect(out).toContain('result: success\n');
    expect(out).toContain('Taking your addition into account: “also check the renewal clause”');
    expect(out).toContain('Open clauses: renewal, liability.');
  });

  it('replies: after the session demo is created, the watch sees both permission requests and their resolution, both replies are accepted, and the prompt stream ends with end_turn for p1', async () => {
    expect(await run('replies-session')).toBe('Session demo is ready.\n');
    const watch = start('replies-watch');
    const prompt = start('replies-prompt');
    // A person reads the question in terminal 2 before answering in terminal 3.
    await waitFor(
      () => {
        if (prompt.ended()) throw new Error(`the prompt block ended early: ${prompt.output()} ${prompt.errors()}`);
        return /"kind":"permission_request","data":\{"requestId":"q1"/.test(prompt.output()) || undefined;
      },
      {
        what: 'the prompt stream to show request q1',
        timeoutMs: BLOCK_TIMEOUT_MS,
      },
    );
    const answers = await run('replies-answer');
    expect(answers).toMatch(/\{"JsonRpcResponse":\{"Id":"reply-rpc-001","Jsonrpc":"2.0","Result":\{"Accepted":true\},"Timestamp":\d+\},"RequestId":"[^"]+"\}/);
    expect(answers).toMatch(/^HTTP\/1\.1 200 OK/m);
    expect(answers).toContain('{"accepted":true}');

    const promptEnd = await waitFor(prompt.ended, { what: 'the prompt stream to end', timeoutMs: BLOCK_TIMEOUT_MS });
    expect(promptEnd.code).toBe(0);
    expectClaimedOutput('replies-prompt', example('replies-prompt'), prompt.output());
    expect(prompt.output().trimEnd().endsWith('data: {"jsonrpc":"2.0","id":"p1","result":{"stopReason":"end_turn"}}')).toBe(true);
    expect(prompt.output()).toContain('"toolName":"write_file"');

    await waitFor(() => watch.output().includes('"kind":"turn_end"') || undefined, { what: 'the watch to see the turn end', timeoutMs: BLOCK_TIMEOUT_MS });
    const events = watch.output();
    expectClaimedOutput('replies-watch', example('replies-watch'), events);
    expect(events).toMatch(/"kind":"permission_request","data":\{"requestId":"q1"/);
    expect(events).toMatch(/"kind":"permission_resolved","data":\{"requestId":"q1","sessionId":"demo","outcome":\{"outcome":"selected","optionId":"proceed_once"\}/);
    expect(events).toMatch(/"kind":"permission_request","data":\{"requestId":"[^"]+","sessionId":"demo","toolCall":\{"toolCallId":"t1"/);
    expect(events).toContain('"stopReason":"end_turn"');
    watch.stop();
  });
});
