/** Child-process helpers for the bench: spawn a server, wait for its URL, read its CPU and RSS. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface ServerChild {
  readonly child: ChildProcess;
  readonly pid: number;
  /** http://HOST:PORT */
  readonly url: string;
  stderrTail(): string;
  stop(): Promise<void>;
}

/** Spawns `node <args>` and resolves once it prints `listening on http://…`. */
export function spawnServer(nodeArgs: readonly string[], what: string, timeoutMs = 20_000, killAfterMs = 5_000): Promise<ServerChild> {
  const child = spawn(process.execPath, [...nodeArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-8_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    await exited;
    clearTimeout(timer);
  };
  return new Promise<ServerChild>((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${what} did not print "listening on" within ${timeoutMs} ms; stderr: ${err.slice(-2_000)}`));
    }, timeoutMs);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m && child.pid !== undefined) {
        clearTimeout(timer);
        resolve({ child, pid: child.pid, url: m[1]!, stderrTail: () => err, stop });
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? signal}) before listening; stderr: ${err.slice(-2_000)}`));
    });
  });
}

const CLK_TCK = 100; // Linux USER_HZ; /proc/<pid>/stat times are in these ticks

/** Total CPU seconds (user + system) the process has used so far; NaN off Linux. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the comm field: state is [0], utime is field 14 overall → index 11, stime → 12.
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/** Resident set size and its peak, in MiB; NaN off Linux. */
export function rssMiB(pid: number): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return { rss: Number.NaN, peak: Number.NaN };
  }
}

/**
 * CPU seconds the whole machine has spent running tasks (user + nice + system, all cores; IRQ and
 * softirq time — much of it loopback TCP work done for our own sockets — left out); NaN off Linux.
 */
export function machineBusySeconds(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    return ((v[0] ?? 0) + (v[1] ?? 0) + (v[2] ?? 0)) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}
