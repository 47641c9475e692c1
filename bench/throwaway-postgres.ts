/**
 * A throwaway PostgreSQL server from Debian's binaries (`postgresql` package): a fresh cluster in
 * a temp dir, on a free loopback port, unix socket in the same dir, trust auth. Used by the tests
 * (test/helpers/postgres.ts) and by the cluster benchmark; never by the hub itself.
 *
 * PostgreSQL refuses to run as root, so when the caller is root the server runs as the `postgres`
 * user (`runuser`), in a temp dir it owns. Missing binaries are an error saying what to install.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Debian installs each major version under /usr/lib/postgresql/<major>/bin; the newest wins. */
function debianBinDirs(): string[] {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return [join(root, '<major>', 'bin')];
  return readdirSync(root)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a))
    .map((major) => join(root, major, 'bin'));
}

export interface RunningPostgres {
  /** Connection string of the `postgres` database, as the `postgres` superuser over TCP. */
  readonly url: string;
  stop(): void;
  /** Fast shutdown then start again on the same port and data directory (tests of outages). */
  restart(): void;
  /** Fast shutdown (or `immediate`: no clean shutdown, crash recovery at start) only; `start()` brings it back. */
  stopServer(mode?: 'fast' | 'immediate'): void;
  start(): void;
}

function findBinDir(): string {
  const override = process.env['PG_BIN'];
  const dirs = override ? [override] : debianBinDirs();
  const found = dirs.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl')));
  if (!found) {
    throw new Error(
      `PostgreSQL server binaries not found (looked for initdb and pg_ctl in ${dirs.join(', ')}). ` +
        "Install Debian's `postgresql` package (`.ci/run` does), set PG_BIN to the directory holding " +
        'initdb/pg_ctl, or set PG_URL to an existing server.',
    );
  }
  return found;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a fresh cluster in a temp dir on a free loopback port. `fsync: false` (the tests) trades
 * crash safety of the throwaway data for speed; durability across a PostgreSQL fast shutdown and
 * restart does not depend on fsync, only on commit. The benchmark keeps fsync on.
 */
export async function startPostgres(options: { fsync?: boolean } = {}): Promise<RunningPostgres> {
  const bin = findBinDir();
  const isRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'ahp-pg-'));
  const data = join(dir, 'data');
  const port = await freePort();
  let uid: number | undefined;
  let gid: number | undefined;
  if (isRoot) {
    const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    if (ids.status !== 0) throw new Error("running as root but there is no `postgres` user to run PostgreSQL as (install Debian's postgresql package)");
    uid = Number(ids.stdout.trim());
    gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const run = (cmd: string, args: string[]): void => {
    const [file, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]] : [join(bin, cmd), args];
    try {
      execFileSync(file, argv, { stdio: 'pipe', encoding: 'utf8', cwd: dir });
    } catch (error) {
      const e = error as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${cmd} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
    }
  };
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  const serverOptions = [`-p ${port}`, '-c listen_addresses=127.0.0.1', `-c unix_socket_directories=${dir}`, '-c max_connections=200', ...(options.fsync === true ? [] : ['-c fsync=off', '-c full_page_writes=off'])].join(' ');
  const start = (): void => run('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', serverOptions, '-w', '-t', '60', 'start']);
  const stopServer = (mode: 'fast' | 'immediate' = 'fast'): void => run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
  start();
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stopServer: (mode) => stopServer(mode),
    restart: () => {
      stopServer();
      start();
    },
    stop: () => {
      if (stopped) return;
      stopped = true;
      try {
        stopServer();
      } catch {
        // already down
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
