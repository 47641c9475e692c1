/** Runs the real hub as a child process (`node dist/server/main.js`), as `npm start` does. */
import { spawn, execFileSync, type ChildProcess, type SpawnOptionsWithStdioTuple } from 'node:child_process';
import { existsSync } from 'node:fs';
import { waitFor } from './wait-for.js';

export function ensureBuilt(): void {
  if (!existsSync('dist/server/main.js')) execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}

export interface HubProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly wsUrl: string;
  stdout(): string;
  stderr(): string;
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * `openFiles`: the hub runs under `ulimit -n openFiles` (a shell sets it, then execs node).
 * `env`: variables added to this process's environment for the hub.
 */
export async function startHubProcess(args: string[], options: { openFiles?: number; env?: Record<string, string> } = {}): Promise<HubProcess> {
  ensureBuilt();
  const argv = ['dist/server/main.js', '--port', '0', ...args];
  const spawnOptions: SpawnOptionsWithStdioTuple<'ignore', 'pipe', 'pipe'> = { stdio: ['ignore', 'pipe', 'pipe'], ...(options.env ? { env: { ...process.env, ...options.env } } : {}) };
  const child = options.openFiles === undefined ? spawn(process.execPath, argv, spawnOptions) : spawn('bash', ['-c', `ulimit -n ${options.openFiles} && exec "$0" "$@"`, process.execPath, ...argv], spawnOptions);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const url = await waitFor(() => /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? (child.exitCode !== null ? Promise.reject(new Error(`hub exited: ${err}`)) : undefined), {
    what: 'hub to listen',
    timeoutMs: 20_000,
  }).catch((e: unknown) => {
    // A hub that never listened is not left running; what it printed says why.
    child.kill('SIGKILL');
    throw new Error(`${e instanceof Error ? e.message : String(e)}; hub stderr: ${err.slice(-2_000)}; stdout: ${out.slice(-500)}`);
  });
  return { child, url, wsUrl: url.replace('http://', 'ws://') + '/ahp', stdout: () => out, stderr: () => err, exited: () => exit };
}

/** One unlabelled series of the process's `/metrics` (Prometheus text), as a number; throws when absent. */
export async function metricOf(hub: Pick<HubProcess, 'url'>, series: string): Promise<number> {
  const text = await (await fetch(`${hub.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  if (line === undefined) throw new Error(`no ${series} in /metrics`);
  return Number(line.slice(series.length + 1));
}
