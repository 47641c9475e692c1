/**
 * A real HAProxy (Debian's `haproxy`, /usr/sbin/haproxy; `.ci/run` installs it) in front of hub
 * processes, run with the very file the docker-compose profile uses (`deploy/haproxy.cfg`), given
 * the addresses through the environment variables that file reads. HAProxy cannot listen on port
 * 0, so a free port is found by binding port 0 first and passed to it.
 * Missing binary: the test fails and says so, it never skips.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { waitFor } from './wait-for.js';

export const HAPROXY = '/usr/sbin/haproxy';
export const HAPROXY_CONFIG = 'deploy/haproxy.cfg';

export interface RunningHaproxy {
  readonly child: ChildProcess;
  readonly url: string;
  readonly wsUrl: string;
  /** What HAProxy printed (server state changes such as `Server hubs/hub-3 is DOWN` among it). */
  output(): string;
  stop(): Promise<void>;
}

/** A port nothing listens on right now (bound on port 0, then released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** `backends`: `host:port` of hub-1, hub-2 and hub-3, in that order. */
export async function startHaproxy(backends: readonly string[]): Promise<RunningHaproxy> {
  if (!existsSync(HAPROXY)) throw new Error(`${HAPROXY} is missing: install Debian's haproxy package (apt-get install haproxy; .ci/run does)`);
  if (backends.length !== 3) throw new Error(`${HAPROXY_CONFIG} names three hub nodes; got ${backends.length} addresses`);
  const port = await freePort();
  const env: Record<string, string> = {
    ...process.env,
    LB_BIND: `127.0.0.1:${port}`,
    // The open-file limit here is lower than what the compose default would need.
    LB_MAXCONN: '2000',
    HUB_1: backends[0]!,
    HUB_2: backends[1]!,
    HUB_3: backends[2]!,
  };
  // -db: stay in the foreground, messages (server UP/DOWN) on stderr.
  const child = spawn(HAPROXY, ['-db', '-f', HAPROXY_CONFIG], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}): ${out.slice(-2_000)}`);
        const res = await fetch(`${url}/healthz`);
        return res.status === 200 ? true : undefined;
      },
      { what: 'haproxy to answer /healthz through a hub', timeoutMs: 15_000 },
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    child,
    url,
    wsUrl: `ws://127.0.0.1:${port}/ahp`,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
