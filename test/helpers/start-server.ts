/** Starts a real hub on port 0 (optionally on a real SQLite file) and registers nothing global. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { devAuthenticator, tokenAuthenticator, type AuthFile } from '../../server/auth/auth.js';
import { silentLogger } from '../../server/log.js';
import { defaultFeatures } from '../../server/features.js';
import { startHubServer, type HubServer, type HubServerConfig } from '../../server/server.js';

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
