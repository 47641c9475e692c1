/**
 * Driving the headless CLI from a program: run one query, wait for `input.ready`, add a steering
 * input to the running turn through the CLI's control channel (stdin), ask for its receipt, and
 * print the final result.
 *
 *   npm run build && node dist/examples/cli-steer.js [ws://127.0.0.1:8787/ahp]
 *
 * With `--auth`, pass your token in AHP_TOKEN (the CLI reads it). Exits with the CLI's exit code.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const url = process.argv[2] ?? 'ws://127.0.0.1:8787/ahp';
const cliMain = fileURLToPath(new URL('../cli/main.js', import.meta.url)); // what `npx ahp-hub-cli` runs
const script = { script: [{ say: 'Reading the contract.' }, { sleep: 1500 }, { say: 'Open clauses: renewal, liability.' }] };

const cli = spawn(process.execPath, [cliMain, 'run', '--url', url, '--session', 'cli-steer-demo', '-p', JSON.stringify(script), '--output-format', 'stream-json', '--input-format', 'ndjson'], { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = once(cli, 'exit') as Promise<[number | null]>;
const send = (frame: object): void => {
  cli.stdin.write(JSON.stringify(frame) + '\n');
};

const inputId = crypto.randomUUID();
type Target = { historyEpoch: string; turnId: string };
let target: Target | null = null;
// One NDJSON record per line; `event` records (every hub action on the chat) are skipped here.
for await (const line of createInterface({ input: cli.stdout })) {
  const record = JSON.parse(line) as { type: string; [key: string]: unknown };
  if (record.type === 'input.ready') {
    target = (record['capabilities'] as { target: Target | null }).target;
    if (!target) throw new Error('the query ended before input.ready');
    console.log(`input.ready: the turn ${target.turnId} takes steering inputs`);
    send({ v: 1, id: 'a', method: 'steer', params: { inputId, target, content: { text: 'also check the renewal clause' }, ack: 'memory' } });
  } else if (record.type === 'input.response') {
    const result = record['result'] as { outcome?: string; receipt?: { state: string } | null };
    console.log(`input.response ${String(record['id'])}: ${result.outcome ?? 'status'}, receipt ${result.receipt?.state ?? 'none'}`);
    if (record['id'] === 'a') send({ v: 1, id: 'b', method: 'input_status', params: { inputId, target } });
  } else if (record.type === 'result') {
    console.log(`result: ${String(record['subtype'])}`);
    console.log(String(record['result']));
  }
}
const [code] = await exited;
process.exitCode = code ?? 1;
