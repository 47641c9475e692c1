/**
 * The hubs a conformance run talks to. An `ExternalHost` is any running AHP host given by URL
 * (`npm run conformance -- --url`); a `ManagedHost` is a real hub process (`dist/server/main.js`,
 * as `npm start` runs it) that the runner starts on a temp data dir and may restart — on that
 * data or on a fresh one — or give new tokens (token file rewritten, SIGHUP).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import pg from 'pg';
import { FaultProxy } from './fault-proxy.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface HubHost {
  readonly managed: boolean;
  /** host and port of the hub (what a proxy forwards to); changes on restart. */
  readonly target: { host: string; port: number };
  readonly wsPath: string;
  /** A concrete token for a handle (undefined: no auth). */
  token(handle: string | undefined): string | undefined;
  /** Some valid token (the invariants' own connection); undefined without auth. */
  anyToken(): string | undefined;
  restart(options: { durable: boolean }): Promise<void>;
  replaceToken(from: string, to: string): Promise<void>;
  /** Cluster: drains (SIGTERM) the serving node and serves from the next one. */
  moveToNextNode?(): Promise<void>;
  /** Cluster: cuts every connection between the serving node and PostgreSQL (it may reconnect); returns how many. */
  cutStore?(): number;
  close(): Promise<void>;
}

export class ExternalHost implements HubHost {
  readonly managed = false;
  readonly target: { host: string; port: number };
  readonly wsPath: string;
  constructor(
    url: string,
    private readonly bearer: string | undefined,
  ) {
    const u = new URL(url);
    this.target = { host: u.hostname === 'localhost' ? '127.0.0.1' : u.hostname, port: Number(u.port || (u.protocol === 'wss:' ? 443 : 80)) };
    this.wsPath = u.pathname + u.search;
  }
  token(): string | undefined {
    return this.bearer;
  }
  anyToken(): string | undefined {
    return this.bearer;
  }
  restart(): Promise<void> {
    return Promise.reject(new Error('an external host cannot be restarted by the runner'));
  }
  replaceToken(): Promise<void> {
    return Promise.reject(new Error("an external host's tokens are not the runner's"));
  }
  async close(): Promise<void> {}
}

/** One user (`alice`) in tenant `acme`; each handle is another token of that user. */
function tokenFile(tokens: Map<string, string>): string {
  return JSON.stringify({ tokens: [...tokens.values()].map((token) => ({ token, user: 'alice', tenant: 'acme', role: 'user' })) });
}

export class ManagedHost implements HubHost {
  readonly managed = true;
  readonly wsPath = '/ahp';
  target = { host: '127.0.0.1', port: 0 };
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #dataDir: string;
  readonly #root: string;
  readonly #tokens = new Map<string, string>();
  readonly #authFile: string | undefined;
  #stderr = '';

  private constructor(
    readonly distDir: string,
    readonly env: Record<string, string>,
    handles: readonly string[],
  ) {
    this.#root = mkdtempSync(join(tmpdir(), 'ahp-conformance-'));
    this.#dataDir = join(this.#root, 'data-0');
    for (const h of handles) this.#tokens.set(h, `${h}-${randomBytes(12).toString('hex')}`);
    if (handles.length > 0) {
      this.#authFile = join(this.#root, 'tokens.json');
      writeFileSync(this.#authFile, tokenFile(this.#tokens));
    }
  }

  /** Starts `node <distDir>/server/main.js` on port 0 in a temp data dir. */
  static async start(options: { distDir: string; env?: Record<string, string>; tokens?: readonly string[] }): Promise<ManagedHost> {
    const host = new ManagedHost(options.distDir, options.env ?? {}, options.tokens ?? []);
    await host.#spawn();
    return host;
  }

  token(handle: string | undefined): string | undefined {
    if (handle === undefined) return undefined;
    const t = this.#tokens.get(handle);
    if (t === undefined) throw new Error(`no token handle ${handle}`);
    return t;
  }

  anyToken(): string | undefined {
    return this.#tokens.values().next().value;
  }

  async #spawn(): Promise<void> {
    const args = [join(this.distDir, 'server/main.js'), '--host', '127.0.0.1', '--port', '0', '--data', this.#dataDir, '--log-level', 'warn'];
    if (this.#authFile) args.push('--auth', this.#authFile);
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...this.env } });
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    let out = '';
    this.#stderr = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.#stderr += d.toString()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        this.target = { host: '127.0.0.1', port: Number(m[1]) };
        return;
      }
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the hub did not start: ${this.#stderr.slice(-1_000)}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** SIGKILL, then start again: on the same data dir, or (`durable: false`) on a fresh one. */
  async restart(options: { durable: boolean }): Promise<void> {
    this.#child?.kill('SIGKILL');
    await this.#exited;
    if (!options.durable) this.#dataDir = join(this.#root, `data-${randomBytes(4).toString('hex')}`);
    await this.#spawn();
  }

  /** Gives handle `to` a token and takes `from`'s away: the token file is rewritten, then SIGHUP. */
  async replaceToken(from: string, to: string): Promise<void> {
    if (!this.#authFile) throw new Error('this hub runs without tokens');
    this.#tokens.delete(from);
    this.#tokens.set(to, `${to}-${randomBytes(12).toString('hex')}`);
    writeFileSync(this.#authFile, tokenFile(this.#tokens));
    this.#child?.kill('SIGHUP');
  }

  async close(): Promise<void> {
    this.#child?.kill('SIGKILL');
    await this.#exited;
    rmSync(this.#root, { recursive: true, force: true });
  }
}

interface SpawnedHub {
  readonly child: ChildProcess;
  readonly port: number;
  readonly exited: Promise<void>;
}

/** Starts `node <distDir>/server/main.js <args>` and waits for it to listen. */
async function spawnHub(distDir: string, args: readonly string[], env: Record<string, string>): Promise<SpawnedHub> {
  const child = spawn(process.execPath, [join(distDir, 'server/main.js'), '--host', '127.0.0.1', '--port', '0', '--log-level', 'warn', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
    if (m) return { child, port: Number(m[1]), exited };
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the hub did not start: ${err.slice(-1_000)}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Two hub nodes on one fresh database of a PostgreSQL server (`--store`), each reaching
 * PostgreSQL through its own TCP fault proxy. Actors are served by one node at a time; moving
 * drains it (SIGTERM: its turns are handed over, its connections closed with 4012) and the
 * actors' proxies send new connections to the other.
 */
export class ClusterHost implements HubHost {
  readonly managed = true;
  readonly wsPath = '/ahp';
  #serving = 0;

  private constructor(
    private readonly nodes: SpawnedHub[],
    private readonly storeProxies: FaultProxy[],
    private readonly dropDatabase: () => Promise<void>,
  ) {}

  static async start(options: { distDir: string; postgresUrl: string; env?: Record<string, string> }): Promise<ClusterHost> {
    const name = `conformance_${process.pid}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: options.postgresUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const dropDatabase = async (): Promise<void> => {
      const c = new pg.Client({ connectionString: options.postgresUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => c.end());
    };
    const server = new URL(options.postgresUrl);
    const nodes: SpawnedHub[] = [];
    const proxies: FaultProxy[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const proxy = await FaultProxy.start({ host: server.hostname, port: Number(server.port || 5432) }, 'tcp');
        proxies.push(proxy);
        const store = new URL(options.postgresUrl);
        store.hostname = '127.0.0.1';
        store.port = String(proxy.port);
        store.pathname = `/${name}`;
        nodes.push(await spawnHub(options.distDir, ['--store', store.toString()], { HUB_DRAIN_GRACE_MS: '200', HUB_AGENT_LEASE_TTL_MS: '1000', ...options.env }));
      }
    } catch (err) {
      for (const n of nodes) n.child.kill('SIGKILL');
      for (const p of proxies) await p.close();
      await dropDatabase();
      throw err;
    }
    return new ClusterHost(nodes, proxies, dropDatabase);
  }

  get target(): { host: string; port: number } {
    return { host: '127.0.0.1', port: this.nodes[this.#serving]!.port };
  }
  token(): string | undefined {
    return undefined;
  }
  anyToken(): string | undefined {
    return undefined;
  }
  restart(): Promise<void> {
    return Promise.reject(new Error('restart a cluster node by moving the session (moveToNextNode)'));
  }
  replaceToken(): Promise<void> {
    return Promise.reject(new Error('the cluster cases run in dev mode'));
  }

  async moveToNextNode(): Promise<void> {
    const old = this.nodes[this.#serving]!;
    this.#serving = (this.#serving + 1) % this.nodes.length;
    old.child.kill('SIGTERM');
    await old.exited;
  }

  cutStore(): number {
    return this.storeProxies[this.#serving]!.abortAll();
  }

  async close(): Promise<void> {
    for (const n of this.nodes) n.child.kill('SIGKILL');
    await Promise.all(this.nodes.map((n) => n.exited));
    for (const p of this.storeProxies) await p.close();
    await this.dropDatabase();
  }
}
