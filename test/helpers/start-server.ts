/** Starts a real hub on port 0 (optionally on a real SQLite file) and registers nothing global. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { devAuthenticator, tokenAuthenticator, type AuthFile } from '../../server/auth/auth.js';
import { silentLogger } from '../../server/log.js';
import { defaultFeatures } from '../../server/features.js';
import { startHubServer, type HubServer, type HubServerConfig } from '../../server/server.js';
import { afterEach } from 'vitest';
import { RpcClient } from './rpc-client.js';

export interface TestServer extends HubServer {
  readonly dataDir: string | undefined;
  /** Closes the server and removes its temp data dir. */
  stop(): Promise<void>;
}

export function tempDir(prefix = 'hub-test-'): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export const TOKENS = {
  alice: 'alice-token-0123456789',
  bob: 'bob-token-0123456789ab',
  viewer: 'viewer-token-012345678',
  agent: 'agent-token-0123456789',
  mallory: 'mallory-token-01234567',
} as const;

export const AUTH_FILE: AuthFile = {
  tokens: [
    { token: TOKENS.alice, user: 'alice', tenant: 'acme', role: 'user' },
    { token: TOKENS.bob, user: 'bob', tenant: 'acme', role: 'user' },
    { token: TOKENS.viewer, user: 'victor', tenant: 'acme', role: 'viewer' },
    { token: TOKENS.agent, user: 'agent-1', tenant: 'acme', role: 'agent' },
    { token: TOKENS.mallory, user: 'mallory', tenant: 'evil', role: 'user' },
  ],
};

export function writeAuthFile(dir: string): string {
  const file = join(dir, 'tokens.json');
  writeFileSync(file, JSON.stringify(AUTH_FILE));
  return file;
}

export async function startTestServer(options: { persistent?: boolean; withAuth?: boolean } & Partial<HubServerConfig> = {}): Promise<TestServer> {
  const tmp = options.persistent && !options.dataDir ? tempDir() : undefined;
  const dataDir = options.dataDir ?? tmp?.dir;
  const server = await startHubServer({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    auth: options.withAuth ? tokenAuthenticator(AUTH_FILE) : devAuthenticator(),
    logger: silentLogger,
    features: defaultFeatures(),
    ...options,
  });
  return {
    ...server,
    dataDir,
    close: server.close,
    stop: async () => {
      await server.close();
      tmp?.remove();
    },
  };
}

/**
 * One hub per test, and everything a test opens on it, closed after each test: the hub last
 * started (`start`), the clients (`open`, or `track` for ones connected by hand) and temp dirs.
 * Call inside a `describe` or at a file's top level.
 */
export function hubPerTest(): {
  start(options?: Parameters<typeof startTestServer>[0]): Promise<TestServer>;
  /** `token` undefined: dev mode (no auth). */
  open(token?: string, options?: { clientId?: string; subscribe?: string[] }): Promise<RpcClient>;
  track(client: RpcClient): RpcClient;
  closeClients(): Promise<void>;
  tempDir(): { dir: string; remove(): void };
} {
  let server: TestServer | undefined;
  const clients: RpcClient[] = [];
  const dirs: Array<{ remove(): void }> = [];
  const closeClients = async (): Promise<void> => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  };
  afterEach(async () => {
    await closeClients();
    await server?.stop();
    server = undefined;
    for (const d of dirs.splice(0)) d.remove();
  });
  return {
    async start(options) {
      server = await startTestServer(options);
      return server;
    },
    async open(token, options = {}) {
      if (!server) throw new Error('hubPerTest: start a hub first');
      const c = await RpcClient.open(server.wsUrl, token === undefined ? options : { token, ...options });
      clients.push(c);
      return c;
    },
    track(client) {
      clients.push(client);
      return client;
    },
    closeClients,
    tempDir() {
      const d = tempDir();
      dirs.push(d);
      return d;
    },
  };
}
