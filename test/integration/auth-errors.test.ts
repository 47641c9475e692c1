/**
 * A missing or wrong token says so, in words, on every surface (issue 20): the hub refuses the
 * WebSocket upgrade with 401 before any frame, which a browser cannot see, so a plain GET of the
 * same URL answers 401 / 426; the SDK turns that into a typed `AhpAuthError`; the CLI exits 3 with
 * one line; the SDK example prints one line instead of a stack trace. Real hub on port 0, real
 * `ws` sockets, the built CLI and example as child processes.
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AhpAuthError, AhpClient, AhpConnectionError } from '../../shared/client/ahp-client.js';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { ensureCliBuilt } from '../cli/cli-process.js';

const run = promisify(execFile);

/** Runs a built program to its end; never throws on a non-zero exit. */
async function runNode(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, args, { env: { ...process.env, ...env }, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** A port nothing listens on (bound, read, released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('a missing or invalid token, in words', () => {
  let server: TestServer;
  const clients: AhpClient[] = [];

  beforeAll(async () => {
    ensureCliBuilt();
    server = await startTestServer({ withAuth: true });
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    await server?.stop();
  });

  const client = (token: string | undefined, url = server.wsUrl): AhpClient => {
    const c = new AhpClient({ url, createSocket: (u) => new WebSocket(u), reconnect: false, ...(token !== undefined && { token }) });
    clients.push(c);
    return c;
  };

  it('GET of the WebSocket endpoint answers what its upgrade would: 401 for a bad or missing token, 426 for a good one', async () => {
    const http = server.wsUrl.replace(/^ws/, 'http');
    const bad = await fetch(`${http}?token=not-a-token`);
    expect(bad.status).toBe(401);
    expect(await bad.json()).toMatchObject({ code: 'unauthorized' });
    expect((await fetch(http)).status).toBe(401);
    const good = await fetch(`${http}?token=${TOKENS.alice}`);
    expect(good.status).toBe(426);
    expect(await good.json()).toMatchObject({ code: 'upgrade_required' });
  });

  it('the SDK rejects connect() with a typed, permanent AhpAuthError: "token missing or invalid"', async () => {
    for (const token of ['not-a-token', undefined]) {
      const err = await client(token)
        .connect()
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(AhpAuthError);
      expect(err).toBeInstanceOf(AhpConnectionError);
      expect(err).toMatchObject({ message: 'token missing or invalid', permanent: true, status: 401 });
    }
    await expect(client(TOKENS.alice).connect()).resolves.toMatchObject({ protocolVersion: expect.any(String) });
  });

  it('the SDK says which hub it cannot reach instead of a bare close code', async () => {
    const port = await closedPort();
    const err = await client(TOKENS.alice, `ws://127.0.0.1:${port}/ahp`)
      .connect()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(AhpConnectionError);
    expect(err).not.toBeInstanceOf(AhpAuthError);
    expect((err as Error).message).toBe(`cannot reach the hub at ws://127.0.0.1:${port}`);
  });

  it('the CLI exits 3 with one line for a bad or missing token, and 1 with one line when the hub is unreachable', async () => {
    const args = (url: string, token?: string) => ['dist/cli/main.js', 'run', '--url', url, '--session', 'auth-check', '-p', 'hello', ...(token ? ['--token', token] : [])];
    for (const token of ['not-a-token', undefined]) {
      const out = await runNode(args(server.wsUrl, token), { AHP_TOKEN: '' });
      expect(out.code).toBe(3);
      expect(out.stderr).toBe("token missing or invalid: pass --token or set AHP_TOKEN to a token from the hub's token file\n");
      expect(out.stderr).not.toContain('1006');
    }
    const port = await closedPort();
    const down = await runNode(args(`ws://127.0.0.1:${port}/ahp`, TOKENS.alice));
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`cannot connect to the hub at ws://127.0.0.1:${port}/ahp: check that it is running and that --url is right\n`);
    const json = await runNode([...args(server.wsUrl, 'not-a-token'), '--output-format', 'json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ type: 'result', is_error: true, code: 'unauthorized', exit_code: 3 });
  }, 60_000);

  it('the SDK example prints one line for a wrong token, not a stack trace', async () => {
    const out = await runNode(['dist/examples/sdk-quickstart.js', server.wsUrl], { AHP_TOKEN: 'not-a-token' });
    expect(out.code).toBe(1);
    expect(out.stderr).toBe("token missing or invalid: set AHP_TOKEN to a token from the hub's token file\n");
    expect(out.stdout).toBe('');
  });
});
