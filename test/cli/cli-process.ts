/** Builds (when stale) and runs the real headless CLI (`node dist/cli/main.js`) as a child process. */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../helpers/wait-for.js';

function staleSources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...staleSources(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      const built = join('dist', path.replace(/\.ts$/, '.js'));
      if (!existsSync(built) || statSync(built).mtimeMs < statSync(path).mtimeMs) out.push(path);
    }
  }
  return out;
}

/** Rebuilds dist/ when any cli/ or shared/ source is newer than its output (as hub-process.ts does for the server). */
export function ensureCliBuilt(): void {
  const stale = () => [...staleSources('cli'), ...staleSources('shared')];
  if (stale().length === 0) return;
  try {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'pipe' });
  } catch (err) {
    // Type errors elsewhere (other work in progress) still emit; only fail when our outputs are stale.
    const left = stale();
    if (left.length > 0) throw new Error(`could not build the CLI (${left.join(', ')}): ${String((err as { stdout?: Buffer }).stdout ?? err)}`);
  }
}

export interface CliRun {
  readonly child: ChildProcessWithoutNullStreams;
  /** Parsed stdout records so far. */
  readonly records: Array<Record<string, unknown>>;
  stdout(): string;
  stderr(): string;
  write(text: string | Buffer): void;
  end(): void;
  exited(): Promise<number | null>;
  waitForRecord(predicate: (r: Record<string, unknown>) => boolean, what?: string): Promise<Record<string, unknown>>;
}

export function runCli(args: string[]): CliRun {
  const child = spawn(process.execPath, ['dist/cli/main.js', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const records: Array<Record<string, unknown>> = [];
  let partial = '';
  child.stdout.on('data', (d: Buffer) => {
    const text = d.toString('utf8');
    out += text;
    partial += text;
    let nl: number;
    while ((nl = partial.indexOf('\n')) !== -1) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      if (line.trim() !== '') {
        try {
          records.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          records.push({ type: '<non-json>', line });
        }
      }
    }
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
  child.stdin.on('error', () => undefined);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    records,
    stdout: () => out,
    stderr: () => err,
    write: (text) => {
      if (child.stdin.writable) child.stdin.write(text);
    },
    end: () => child.stdin.end(),
    exited: () => exit,
    waitForRecord: (predicate, what = 'record') =>
      waitFor(
        () => {
          const found = records.find(predicate);
          if (found) return found;
          if (child.exitCode !== null) throw new Error(`CLI exited (${child.exitCode}) before ${what}; stderr: ${err}; stdout: ${out}`);
          return undefined;
        },
        { what, timeoutMs: 15_000 },
      ),
  };
}
