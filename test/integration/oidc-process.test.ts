/**
 * `npm start` with sign-in (issue 30): the real hub process (`dist/server/main.js`) given only the
 * `--oidc-*` flags (no token file) reads its client secret from a file, signs alice in through a
 * real OpenID provider's login and consent forms, and accepts her access token on the WebSocket.
 * A flag without `--oidc-issuer` stops the start with one line and exit 2.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_ID, CLIENT_SECRET, signInWithFetch, TestIdp } from '../helpers/oidc-provider.js';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';

const run = promisify(execFile);

describe('the hub process with --oidc-* flags', () => {
  let idp: TestIdp;
  let hub: HubProcess;
  const dir = mkdtempSync(join(tmpdir(), 'hub-oidc-'));

  beforeAll(async () => {
    idp = await TestIdp.listen();
    const secretFile = join(dir, 'oidc-secret');
    writeFileSync(secretFile, `${CLIENT_SECRET}\n`);
    chmodSync(secretFile, 0o600);
    hub = await startHubProcess(['--data', join(dir, 'data'), '--oidc-issuer', idp.issuer, '--oidc-client-id', CLIENT_ID, '--oidc-client-secret-file', secretFile, '--oidc-default-tenant', 'acme']);
    await idp.configure({ hubUrl: hub.url, accounts: { alice: { role: 'user' } } });
  }, 60_000);

  afterAll(async () => {
    if (hub && hub.child.exitCode === null) {
      hub.child.kill('SIGTERM');
      await hub.exited();
    }
    await idp?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs alice in through the provider and takes her access token; no token file needed', async () => {
    const cookie = await signInWithFetch(hub.url, 'alice');
    const me = await fetch(`${hub.url}/auth/session`, { headers: { cookie } });
    expect(await me.json()).toEqual({ oidc: true, signedIn: true, user: 'alice', tenant: 'acme', role: 'user' });
    const client = await RpcClient.open(hub.wsUrl, { token: await idp.mintAccessToken('alice') });
    try {
      await expect(client.createSession('signed in by the provider')).resolves.toMatchObject({ session: expect.any(String) });
    } finally {
      await client.close();
    }
    // Without a credential the hub is not in dev mode: it asks for one.
    expect((await fetch(`${hub.url}/v2/search?q=x`)).status).toBe(401);
    expect(hub.stderr()).not.toContain('dev mode');
  }, 30_000);

  it('a sign-in flag without --oidc-issuer stops the start with one line, exit 2', async () => {
    const out = await run(process.execPath, ['dist/server/main.js', '--port', '0', '--data', join(dir, 'other'), '--oidc-client-id', 'x'], { timeout: 20_000 }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code?: number; stderr?: string }) => ({ code: e.code, stderr: e.stderr ?? '' }),
    );
    expect(out).toEqual({ code: 2, stderr: '--oidc-client-id needs --oidc-issuer (sign-in with OpenID Connect: docs/sign-in.md)\n' });
  });
});
