/**
 * The real headless CLI (`node dist/cli/main.js run …`) as a child process against a real hub:
 * seed 003 items 29 and 48–56.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { ensureCliBuilt, runCli, type CliRun } from './cli-process.js';
import { answer, askStep, chatState, waitForOpenRequest } from './steering-support.js';

type Rec = Record<string, unknown>;
const script = (steps: unknown[]): string => JSON.stringify({ script: steps });
const frame = (f: Rec): string => JSON.stringify(f) + '\n';

describe('headless CLI (child process, real hub)', () => {
  let server: TestServer;
  let observer: RpcClient;
  const runs: CliRun[] = [];

  beforeAll(() => ensureCliBuilt(), 120_000);
  beforeEach(async () => {
    server = await startTestServer();
    observer = await RpcClient.open(server.wsUrl);
  });
  afterEach(async () => {
    for (const r of runs.splice(0)) if (r.child.exitCode === null) r.child.kill('SIGKILL');
    await observer.close();
    await server.stop();
  });

  const start = (sessionId: string, prompt: string, extra: string[] = ['--output-format', 'stream-json', '--input-format', 'ndjson']): CliRun => {
    const run = runCli(['run', '--url', server.wsUrl, '--session', sessionId, '-p', prompt, ...extra]);
    runs.push(run);
    return run;
  };

  /** The chat of a session the CLI created. */
  const chatOf = async (run: CliRun): Promise<string> => String((await run.waitForRecord((r) => r['type'] === 'system', 'init'))['chat']);

  it('48–53: events, then input.ready with the target; steer / input_status answered by id; split UTF-8, CRLF and a last line without newline all parse; one result; exit 0', async () => {
    const run = start('cli-main', script([askStep('ask-1'), { say: 'finished' }]));
    const chat = await chatOf(run);
    const ready = await run.waitForRecord((r) => r['type'] === 'input.ready', 'input.ready');
    const target = (ready['capabilities'] as { target: { historyEpoch: string; turnId: string } }).target;
    expect(ready['capabilities']).toMatchObject({ version: 1, durableAck: false, image: false });
    expect(target).toEqual({ historyEpoch: expect.any(String), turnId: expect.stringMatching(/^turn-/) });
    // Hub events come first: the turn start echo precedes input.ready.
    const iReady = run.records.indexOf(ready);
    const iStart = run.records.findIndex((r) => r['type'] === 'event' && (r['action'] as Rec)['type'] === 'chat/turnStarted');
    expect(iStart).toBeGreaterThanOrEqual(0);
    expect(iStart).toBeLessThan(iReady);

    await observer.subscribe(chat);
    await waitForOpenRequest(observer, chat, 'ask-1');
    // A steer frame whose UTF-8 is split mid-character across two writes, ending in CRLF.
    const steer = Buffer.from(JSON.stringify({ v: 1, id: 'a', method: 'steer', params: { inputId: 'ui-001', target, content: { text: '追加要求: 更新条項も確認' }, ack: 'memory' } }) + '\r\n', 'utf8');
    const cut = steer.indexOf(Buffer.from('追', 'utf8')) + 1;
    run.write(steer.subarray(0, cut));
    await waitFor(() => (run.child.stdin.writableLength === 0 ? true : undefined));
    run.write(steer.subarray(cut));
    const resA = await run.waitForRecord((r) => r['type'] === 'input.response' && r['id'] === 'a', 'response a');
    expect(resA['result']).toMatchObject({ outcome: 'accepted', receipt: { inputId: 'ui-001', state: 'accepted', ordinal: 1, turnId: target.turnId, historyEpoch: target.historyEpoch } });
    run.write(frame({ v: 1, id: 'b', method: 'input_status', params: { inputId: 'ui-001', target } }));
    const resB = await run.waitForRecord((r) => r['type'] === 'input.response' && r['id'] === 'b', 'response b');
    expect(resB['result']).toMatchObject({ receipt: { inputId: 'ui-001', state: 'accepted' } });
    run.write(frame({ v: 1, id: 'c', method: 'input_status', params: { inputId: 'nope', target } }));
    expect((await run.waitForRecord((r) => r['id'] === 'c', 'response c'))['result']).toMatchObject({ receipt: null, code: 'input_not_found' });
    // Rejections are answered too, in order.
    run.write(frame({ v: 1, id: 'd', method: 'steer', params: { inputId: 'e', target, content: { text: '   ' } } }));
    expect((await run.waitForRecord((r) => r['id'] === 'd', 'response d'))['result']).toMatchObject({ outcome: 'rejected', code: 'empty_content' });
    // Last frame without a trailing newline, then EOF: still parsed and answered; EOF does not cancel.
    run.write(
      JSON.stringify({
        v: 1,
        id: 'z',
        method: 'steer',
        params: {
          inputId: 'ui-002',
          target,
          content: {
            blocks: [
              { t: 'text', text: 'one' },
              { t: 'text', text: 'two' },
            ],
          },
        },
      }),
    );
    run.end();
    expect((await run.waitForRecord((r) => r['id'] === 'z', 'response z'))['result']).toMatchObject({ outcome: 'accepted', receipt: { ordinal: 2 } });
    expect((await chatState(observer, chat)).activeTurn).toBeDefined();

    await answer(observer, chat, 'ask-1');
    expect(await run.exited()).toBe(0);
    const results = run.records.filter((r) => r['type'] === 'result');
    expect(results).toHaveLength(1);
    expect(run.records.at(-1)).toBe(results[0]);
    expect(results[0]).toMatchObject({ subtype: 'success', is_error: false, state: 'complete', turnId: target.turnId, exit_code: 0 });
    expect(String(results[0]!['result'])).toContain('finished');
    // 29: frames never start a query: one turn, with both supplements as user messages.
    const s = await chatState(observer, chat);
    expect(s.turns).toHaveLength(1);
    expect(s.turns[0]!.responseParts.filter((p) => p.kind === 'userMessage').map((p) => p.message!.text)).toEqual(['追加要求: 更新条項も確認', 'one\ntwo']);
    // Every stdout line is one JSON record with a type.
    expect(run.records.every((r) => typeof r['type'] === 'string' && r['type'] !== '<non-json>')).toBe(true);
  });

  it('54: oversized and malformed frames get explicit rejection records and do not stop the channel', async () => {
    const run = start('cli-bad', script([askStep('ask-1')]));
    const chat = await chatOf(run);
    const ready = await run.waitForRecord((r) => r['type'] === 'input.ready');
    const target = (ready['capabilities'] as { target: unknown }).target;
    run.write('x'.repeat(65_537) + '\n');
    run.write('{"v":1,"id":"j",\n');
    run.write('{"v":1,"id":"s","method":"start","params":{"prompt":"another query"}}\n');
    run.write(frame({ v: 2, id: 'v', method: 'cancel' }));
    // 65,536 UTF-16 units of multi-byte text (> 65,536 bytes) is within the limit: parsed, then refused as JSON.
    run.write('"' + '😀'.repeat(32_767) + '"\n');
    run.write(frame({ v: 1, id: 'ok', method: 'input_status', params: { inputId: 'x', target } }));
    await run.waitForRecord((r) => r['id'] === 'ok', 'response ok');
    const responses = run.records.filter((r) => r['type'] === 'input.response');
    expect(responses.map((r) => [r['id'], (r['result'] as Rec)['code']])).toEqual([
      [null, 'frame_too_large'],
      [null, 'invalid_json'],
      ['s', 'unknown_method'],
      ['v', 'unsupported_version'],
      [null, 'invalid_frame'],
      ['ok', 'input_not_found'],
    ]);
    expect((responses[0]!['result'] as Rec)['limit']).toBe(65_536);
    await observer.subscribe(chat);
    await waitForOpenRequest(observer, chat, 'ask-1');
    expect((await chatState(observer, chat)).turns).toHaveLength(0);
    await answer(observer, chat, 'ask-1');
    expect(await run.exited()).toBe(0);
  });

  it('50/52: a cancel frame answers cancel_requested, ends the query as cancelled with one result, and keeps the usual cancel exit code', async () => {
    const run = start('cli-cancel', script([askStep('ask-1')]));
    const ready = await run.waitForRecord((r) => r['type'] === 'input.ready');
    const target = (ready['capabilities'] as { target: unknown }).target;
    run.write(frame({ v: 1, id: 's1', method: 'steer', params: { inputId: 'pending', target, content: { text: 'never consumed' } } }));
    await run.waitForRecord((r) => r['id'] === 's1');
    run.write(frame({ v: 1, id: 'c', method: 'cancel' }));
    expect((await run.waitForRecord((r) => r['id'] === 'c'))['result']).toEqual({ outcome: 'cancel_requested' });
    const code = await run.exited();
    const results = run.records.filter((r) => r['type'] === 'result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ subtype: 'cancelled', state: 'cancelled', is_error: true, exit_code: 130 });
    expect(code).toBe(130);

    // Same exit code when the query is cancelled from elsewhere (another client) …
    const other = start('cli-cancel-2', script([askStep('ask-2')]));
    const chat2 = await chatOf(other);
    const ready2 = await other.waitForRecord((r) => r['type'] === 'input.ready');
    const turn2 = (ready2['capabilities'] as { target: { turnId: string } }).target.turnId;
    await observer.subscribe(chat2);
    await observer.dispatchAndWait(chat2, { type: 'chat/turnCancelled', turnId: turn2, duration: 1 });
    expect(await other.exited()).toBe(130);
    // … and on SIGINT.
    const sig = start('cli-cancel-3', script([askStep('ask-3')]));
    await sig.waitForRecord((r) => r['type'] === 'input.ready');
    sig.child.kill('SIGINT');
    expect(await sig.exited()).toBe(130);
    expect(sig.records.filter((r) => r['type'] === 'result')).toHaveLength(1);
  });

  // That frames arriving after the query ended are not answered is tested on the control channel
  // itself (control-channel.test.ts "55: after stop…"): once this process has exited, nothing can be.
  it('55: when the query ends first the CLI stops reading and exits without waiting for EOF', async () => {
    const run = start('cli-end', script([askStep('ask-1')]));
    const chat = await chatOf(run);
    const ready = await run.waitForRecord((r) => r['type'] === 'input.ready');
    const target = (ready['capabilities'] as { target: unknown }).target;
    run.write(frame({ v: 1, id: 'before', method: 'input_status', params: { inputId: 'x', target } }));
    await run.waitForRecord((r) => r['id'] === 'before');
    await observer.subscribe(chat);
    await waitForOpenRequest(observer, chat, 'ask-1');
    await answer(observer, chat, 'ask-1');
    // stdin stays open: the process must still exit.
    expect(await run.exited()).toBe(0);
    const last = run.records.at(-1)!;
    expect(last['type']).toBe('result');
  });

  it('55: stdin EOF right after input.ready does not cancel the query', async () => {
    const run = start('cli-eof', script([askStep('ask-1'), { say: 'still ran' }]));
    const chat = await chatOf(run);
    await run.waitForRecord((r) => r['type'] === 'input.ready');
    run.end();
    await observer.subscribe(chat);
    await waitForOpenRequest(observer, chat, 'ask-1');
    await answer(observer, chat, 'ask-1');
    expect(await run.exited()).toBe(0);
    expect(run.records.filter((r) => r['type'] === 'result')).toEqual([expect.objectContaining({ subtype: 'success', result: expect.stringContaining('still ran') })]);
  });

  it('48: empty -p and incompatible flags are refused with a clear message and exit code 2, before connecting', async () => {
    for (const [args, message] of [
      [['-p', '', '--output-format', 'stream-json', '--input-format', 'ndjson'], /-p must not be empty/],
      [['-p', 'x', '--output-format', 'stream-json', '--input-format', 'ndjson', '--cc-compat'], /--cc-compat cannot be combined/],
      [['-p', 'x', '--output-format', 'stream-json', '--input-format', 'ndjson', '--bg'], /--bg cannot be combined/],
      [['-p', 'x', '--output-format', 'json', '--input-format', 'ndjson'], /needs --output-format stream-json/],
      [['-p', 'x', '--output-format', 'text', '--input-format', 'ndjson'], /needs --output-format stream-json/],
    ] as Array<[string[], RegExp]>) {
      const run = runCli(['run', '--url', 'ws://127.0.0.1:9/ahp', '--session', 's', ...args]);
      runs.push(run);
      expect(await run.exited()).toBe(2);
      expect(run.stderr()).toMatch(message);
      expect(run.stdout()).toBe('');
    }
  });

  it('48: --input-format text keeps the plain behaviour (no control channel); text output prints the final answer', async () => {
    const run = start('cli-text', script([{ say: 'plain answer' }]), ['--output-format', 'text']);
    run.write(frame({ v: 1, id: 'ignored', method: 'cancel' }));
    expect(await run.exited()).toBe(0);
    expect(run.stdout()).toBe('plain answer\n');
    const json = start('cli-json', script([{ say: 'json answer' }]), ['--output-format', 'json']);
    expect(await json.exited()).toBe(0);
    expect(json.records).toEqual([expect.objectContaining({ type: 'result', subtype: 'success', result: 'json answer' })]);
  });

  it('28/52: a session that is already running a turn is not given a second query (busy → one error result)', async () => {
    const first = start('cli-busy', script([askStep('ask-1')]));
    const chat = await chatOf(first);
    await first.waitForRecord((r) => r['type'] === 'input.ready');
    const second = start('cli-busy', script([{ say: 'should not run' }]));
    expect(await second.exited()).toBe(1);
    expect(second.records.filter((r) => r['type'] === 'result')).toEqual([expect.objectContaining({ subtype: 'error_busy', code: 'turn_in_progress' })]);
    await observer.subscribe(chat);
    await answer(observer, chat, 'ask-1');
    expect(await first.exited()).toBe(0);
    expect((await chatState(observer, chat)).turns).toHaveLength(1);
  });
});

describe('headless CLI with token auth', () => {
  let server: TestServer;
  beforeAll(() => ensureCliBuilt(), 120_000);
  afterEach(async () => server.stop());

  it('uses --token; without it the run fails with one error result (exit 3: token missing or invalid)', async () => {
    server = await startTestServer({ withAuth: true });
    const ok = runCli(['run', '--url', server.wsUrl, '--session', 'tok-1', '-p', script([{ say: 'hi' }]), '--token', TOKENS.alice, '--output-format', 'stream-json', '--input-format', 'ndjson']);
    expect(await ok.exited()).toBe(0);
    const denied = runCli(['run', '--url', server.wsUrl, '--session', 'tok-2', '-p', 'x', '--output-format', 'stream-json', '--input-format', 'ndjson']);
    expect(await denied.exited()).toBe(3);
    expect(denied.records.filter((r) => r['type'] === 'result')).toEqual([expect.objectContaining({ is_error: true })]);
  });
});
