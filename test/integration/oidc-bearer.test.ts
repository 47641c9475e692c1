/**
 * The provider's access tokens as bearer JWTs (issue 30), against a real OpenID provider in
 * process (`oidc-provider`: its discovery, JWKS and JWT access tokens) and a real hub on port 0:
 * the built CLI runs a turn with alice's token; an expired, wrong-audience, badly signed or
 * foreign token is refused by name on WebSocket, HTTP and SSE; a socket closes at its token's
 * expiry; the token file keeps working beside it.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { SignJWT, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenAuthenticator } from '../../server/auth/auth.js';
import { OidcAuth } from '../../server/auth/oidc/oidc-auth.js';
import { silentLogger } from '../../server/log.js';
import { TOKEN_EXPIRED_CLOSE_CODE } from '../../shared/protocol/close-codes.js';
import { ERROR_TABLE } from '../../shared/protocol/error-kinds.js';
import { ensureCliBuilt } from '../cli/cli-process.js';
import { CLIENT_ID, CLIENT_SECRET, TestIdp } from '../helpers/oidc-provider.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { AUTH_FILE, startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

const run = promisify(execFile);

/** The status and JSON body a WebSocket upgrade is refused with (or 101). */
function upgrade(url: string, token: string): Promise<{ status: number; body?: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    ws.on('open', () => {
      ws.close();
      resolve({ status: 101 });
    });
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
    });
    ws.on('error', (err) => reject(err));
  });
}

describe('OpenID access tokens as bearer JWTs', () => {
  let idp: TestIdp;
  let signIn: OidcAuth;
  let hub: TestServer;

  beforeAll(async () => {
    ensureCliBuilt();
    idp = await TestIdp.listen();
    signIn = new OidcAuth({ base: tokenAuthenticator(AUTH_FILE), logger: silentLogger, options: { issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, defaultTenant: 'acme' } });
    hub = await startTestServer({ auth: signIn.authenticator, signIn });
    await idp.configure({ hubUrl: hub.url, accounts: { alice: { tenant: 'acme', role: 'user' }, olga: { tenant: 'acme', role: 'viewer' } } });
  }, 120_000);

  afterAll(async () => {
    await hub?.stop();
    await idp?.stop();
  });

  it("the CLI runs a turn against the demo agent with alice's access token", async () => {
    const token = await idp.mintAccessToken('alice');
    const { stdout } = await run(process.execPath, ['dist/cli/main.js', 'run', '--url', hub.wsUrl, '--session', 'oidc-cli', '-p', JSON.stringify({ script: [{ say: 'Hello, alice of the provider.' }] })], {
      env: { ...process.env, AHP_TOKEN: token },
      timeout: 30_000,
    });
    expect(stdout.trim()).toBe('Hello, alice of the provider.');
    const summary = await fetch(`${hub.url}/v2/sessions/oidc-cli/events`, { headers: { authorization: `Bearer ${TOKENS.bob}` }, signal: AbortSignal.timeout(5_000) });
    // Same tenant (acme) as the token file's bob: the session alice made through the provider is there for him.
    expect(summary.status).toBe(200);
    await summary.body?.cancel();
  }, 60_000);

  it('an expired and a wrong-audience token are refused by name on WebSocket, HTTP and SSE', async () => {
    const expired = await idp.mintAccessToken('alice', { ttl: 1 });
    const wrongAudience = await idp.mintAccessToken('alice', { audience: 'another-service' });
    await waitFor(() => Date.now() > JSON.parse(Buffer.from(expired.split('.')[1]!, 'base64url').toString()).exp * 1000 + 50 || undefined, { what: 'the token to expire', timeoutMs: 15_000 });
    for (const [token, code] of [
      [expired, 'token_expired'],
      [wrongAudience, 'token_audience_mismatch'],
    ] as const) {
      const ws = await upgrade(hub.wsUrl, token);
      expect([ws.status, ws.body?.['code']]).toEqual([401, code]);
      expect(String(ws.body?.['message'])).not.toMatch(/\n\s+at /);
      const http = await fetch(`${hub.url}/v2/search?q=hello`, { headers: { authorization: `Bearer ${token}` } });
      expect([http.status, ((await http.json()) as { code?: string }).code]).toEqual([ERROR_TABLE[code].http, code]);
      const sse = await fetch(`${hub.url}/v2/sessions/oidc-cli/events`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
      const body = (await sse.json()) as { code?: string; message?: string };
      expect([sse.status, body.code]).toEqual([401, code]);
      expect(body.message).toMatch(code === 'token_expired' ? /expired/ : /audience/);
      // The CLI says which, in one line, and exits 3 (token refused).
      const cli = await run(process.execPath, ['dist/cli/main.js', 'run', '--url', hub.wsUrl, '--session', 'oidc-cli', '-p', 'hello'], { env: { ...process.env, AHP_TOKEN: token }, timeout: 30_000 }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code?: number; stderr?: string }) => ({ code: e.code, stderr: e.stderr ?? '' }),
      );
      expect(cli.code).toBe(3);
      expect(cli.stderr).toMatch(code === 'token_expired' ? /^the access token has expired: .* \(token_expired\)\n$/ : /^the access token is for another audience, .* \(token_audience_mismatch\)\n$/);
    }
  }, 60_000);

  it('a token signed by another key, or from another issuer, is refused by name', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ tenant: 'acme', role: 'admin' }).setProtectedHeader({ alg: 'RS256', kid: 'test-key-1' }).setIssuer(idp.issuer).setAudience(CLIENT_ID).setSubject('alice').setExpirationTime('5m').sign(privateKey);
    const foreign = await new SignJWT({}).setProtectedHeader({ alg: 'RS256' }).setIssuer('https://elsewhere.example').setAudience(CLIENT_ID).setSubject('alice').setExpirationTime('5m').sign(privateKey);
    expect((await upgrade(hub.wsUrl, forged)).body?.['code']).toBe('token_signature_invalid');
    expect((await upgrade(hub.wsUrl, foreign)).body?.['code']).toBe('token_issuer_unknown');
    const http = await fetch(`${hub.url}/v2/search?q=x`, { headers: { authorization: `Bearer ${forged}` } });
    expect([http.status, ((await http.json()) as { code?: string }).code]).toEqual([401, 'token_signature_invalid']);
  });

  it("a socket opened with an access token is closed at the token's expiry", async () => {
    const token = await idp.mintAccessToken('alice', { ttl: 2 });
    const exp = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).exp * 1000;
    const client = await RpcClient.open(hub.wsUrl, { token });
    try {
      await waitFor(() => client.closed || undefined, { what: 'the socket to close at expiry', timeoutMs: 10_000 });
      expect(client.closeCode).toBe(TOKEN_EXPIRED_CLOSE_CODE);
      expect(Date.now()).toBeGreaterThanOrEqual(exp);
    } finally {
      await client.close();
    }
  }, 20_000);

  it('roles come from each token: a viewer token is read-only, and a new token after a role change applies at once', async () => {
    const viewer = await RpcClient.open(hub.wsUrl, { token: await idp.mintAccessToken('olga') });
    try {
      await expect(viewer.createSession('not allowed')).rejects.toThrow(/viewers cannot create sessions/);
    } finally {
      await viewer.close();
    }
    idp.setAccount('olga', { tenant: 'acme', role: 'user' });
    const promoted = await RpcClient.open(hub.wsUrl, { token: await idp.mintAccessToken('olga') });
    try {
      await expect(promoted.createSession('now allowed')).resolves.toMatchObject({ session: expect.any(String) });
    } finally {
      await promoted.close();
    }
  });

  it('the token file works beside the provider', async () => {
    const client = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
    await expect(client.createSession('from the token file')).resolves.toMatchObject({ session: expect.any(String) });
    await client.close();
    const bad = await fetch(`${hub.url}/v2/search?q=x`, { headers: { authorization: 'Bearer not-a-token-at-all' } });
    expect([bad.status, ((await bad.json()) as { code?: string }).code]).toEqual([401, 'unauthorized']);
  });
});
