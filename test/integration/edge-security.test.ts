/**
 * Issue 8, the edge: what a web page, a malformed URL or a greedy client can do to a hub before
 * the hub's own logic runs. Each test replays an attack from the outside review.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { tokenAuthenticator } from '../../server/auth/auth.js';
import type { Logger } from '../../server/log.js';
import { rawRequest, tryUpgrade } from '../helpers/raw-http.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { openWatchedSession, replyQwen } from '../helpers/sse.js';
import { AUTH_FILE, startTestServer, tempDir, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { ensureBuilt, startHubProcess } from '../helpers/hub-process.js';
import { connectionCapsFor, openFileLimit, parseArgs } from '../../server/config.js';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function server(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const s = await startTestServer(options);
  closers.push(() => s.stop());
  return s;
}

/** A logger that keeps error lines, to prove a request logged no stack trace. */
function recordingLogger(): Logger & { errors: Array<{ msg: string; fields?: Record<string, unknown> }> } {
  const errors: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
  const logger = {
    errors,
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: (msg: string, fields?: Record<string, unknown>) => void errors.push({ msg, ...(fields ? { fields } : {}) }),
    child: () => logger,
  };
  return logger;
}

describe('dev mode answers only this machine (Origin, Host, Content-Type)', () => {
  it('refuses a WebSocket upgrade from a foreign page, accepts loopback pages and non-browser clients', async () => {
    const hub = await server();
    const evil = await tryUpgrade(hub.wsUrl, { origin: 'https://evil.example' });
    expect(evil.status).toBe(403);
    expect(evil.ws === undefined && JSON.parse(evil.body).code).toBe('origin_not_allowed');
    const nullOrigin = await tryUpgrade(hub.wsUrl, { origin: 'null' });
    expect(nullOrigin.status).toBe(403);

    for (const origin of [`http://127.0.0.1:${hub.port}`, `http://localhost:${hub.port}`, 'http://[::1]:5173', undefined]) {
      const ok = await tryUpgrade(hub.wsUrl, origin ? { origin } : {});
      expect(ok.status, `origin ${origin}`).toBe(101);
      ok.ws!.close();
    }
  });

  it('refuses requests whose Host is not loopback (DNS rebinding), over HTTP and WebSocket', async () => {
    const hub = await server();
    const rebound = await rawRequest(hub.port, { path: '/healthz', headers: { host: `evil.example:${hub.port}` } });
    expect(rebound.status).toBe(421);
    expect(rebound.json().code).toBe('host_not_allowed');
    const upgrade = await tryUpgrade(hub.wsUrl, { headers: { host: `evil.example:${hub.port}` } });
    expect(upgrade.status).toBe(421);

    for (const host of [`localhost:${hub.port}`, `127.0.0.1:${hub.port}`, `[::1]:${hub.port}`, '127.0.0.1']) {
      expect((await rawRequest(hub.port, { path: '/healthz', headers: { host } })).status, host).toBe(200);
    }
    // With tokens the hub may sit behind any name: the Host check is for dev mode only.
    const withAuth = await server({ withAuth: true });
    expect((await rawRequest(withAuth.port, { path: '/healthz', headers: { host: 'hub.example.com' } })).status).toBe(200);
  });

  it('a cross-site "simple" POST (no Content-Type, or text/plain) cannot answer an open question', async () => {
    const hub = await server();
    const watched = await openWatchedSession(hub, 'csrf', closers as Array<() => Promise<void>>);
    await startScriptTurn(watched.tab, watched.chat, [{ ask: TWO_QUESTION_REQUEST }, { say: 'answered' }]);
    const request = await watched.sse.waitForPermissionRequest();
    const path = `/session/${encodeURIComponent(watched.sessionId)}/permission/${encodeURIComponent(request.requestId)}`;
    // Cancelling the question is the simplest answer a page could force.
    const answer = JSON.stringify({ outcome: { outcome: 'cancelled' } });

    for (const headers of [{}, { 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }] as Array<Record<string, string>>) {
      const res = await rawRequest(hub.port, { method: 'POST', path, headers: { ...headers, origin: 'http://127.0.0.1' }, body: answer });
      expect(res.status, JSON.stringify(headers)).toBe(415);
      expect(res.json().code).toBe('unsupported_media_type');
    }
    expect(watched.tab.envelopes.some((e) => e.action.type === 'chat/inputCompleted')).toBe(false);

    // The same answer as application/json (what the CLI, SDK and tests send) is taken.
    const ok = await replyQwen(hub.url, watched.sessionId, request.requestId, JSON.parse(answer));
    expect(ok.status).toBe(200);
    await watched.tab.waitForEnvelope((e) => e.action.type === 'chat/inputCompleted', 'the JSON answer to land');
  });
});

describe('malformed URLs, source maps, oversized DataWorks bodies, /healthz', () => {
  it('answers /% and /%zz with 400 JSON, not 500, and logs no error', async () => {
    const logger = recordingLogger();
    const app = tempDir('hub-app-');
    closers.push(() => app.remove());
    writeFileSync(join(app.dir, 'index.html'), '<!doctype html>');
    const hub = await server({ logger, staticDir: app.dir });
    for (const path of ['/%', '/%zz', '/v2/sessions/%zz/inputs', '/%E0%A4%A']) {
      const res = await rawRequest(hub.port, { path });
      expect(res.status, path).toBe(400);
      expect(res.json()).toMatchObject({ code: 'invalid_url' });
    }
    expect(logger.errors).toEqual([]);
  });

  it('does not serve source maps, even when one sits in the app directory', async () => {
    const app = tempDir('hub-app-');
    closers.push(() => app.remove());
    mkdirSync(join(app.dir, 'assets'));
    writeFileSync(join(app.dir, 'app.js'), 'console.log(1)');
    writeFileSync(join(app.dir, 'app.js.map'), '{"sources":["secret.ts"]}');
    writeFileSync(join(app.dir, 'assets', 'x.css.map'), '{}');
    const hub = await server({ staticDir: app.dir });
    expect((await rawRequest(hub.port, { path: '/app.js' })).status).toBe(200);
    for (const path of ['/app.js.map', '/assets/x.css.map']) {
      const res = await rawRequest(hub.port, { path });
      expect(res.status, path).toBe(404);
      expect(res.text).not.toContain('secret.ts');
    }
  });

  it('answers an oversized DataWorks reply with 413 in the DataWorks envelope', async () => {
    const hub = await server();
    const body = JSON.stringify({ Jsonrpc: '2.0', Id: 'big', Params: { Answers: { '0': 'x'.repeat(300 * 1024) } } });
    const res = await rawRequest(hub.port, { method: 'POST', path: '/v2/agent-sessions/reply', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(413);
    expect(res.json().JsonRpcResponse.Error).toMatchObject({ ErrorCode: 'INVALID_REQUEST' });
    expect(res.json().JsonRpcResponse.Error.Message).toMatch(/larger than/);
  });

  it('/healthz says ok without revealing the hub-wide serverSeq', async () => {
    const hub = await server();
    const tab = await RpcClient.open(hub.wsUrl);
    closers.push(() => tab.close());
    await tab.createSession('busy');
    const res = await rawRequest(hub.port, { path: '/healthz' });
    expect(res.json()).toEqual({ status: 'ok' });
  });
});

describe('tokens', () => {
  it('accepts exactly the configured tokens: no prefix, extension or case variant of one', () => {
    const auth = tokenAuthenticator(AUTH_FILE);
    expect(auth.authenticate(TOKENS.alice)).toEqual({ user: 'alice', tenant: 'acme', role: 'user' });
    expect(auth.authenticate(TOKENS.mallory)?.tenant).toBe('evil');
    for (const guess of [TOKENS.alice.slice(0, -1), TOKENS.alice + 'x', TOKENS.alice.toUpperCase(), '', ' ' + TOKENS.alice, undefined]) {
      expect(auth.authenticate(guess), String(guess)).toBeUndefined();
    }
  });
});

describe('connection caps', () => {
  it('one token cannot take every slot: per-user and per-tenant caps refuse with 429 while others still connect', async () => {
    const hub = await server({ withAuth: true, maxConnectionsPerPrincipal: 3, maxConnectionsPerTenant: 5, maxConnections: 100 });
    const url = (token: string): string => `${hub.wsUrl}?token=${token}`;
    const open: WebSocket[] = [];
    closers.push(() => {
      for (const ws of open) ws.terminate();
    });
    for (let i = 0; i < 3; i++) {
      const r = await tryUpgrade(url(TOKENS.viewer));
      expect(r.status).toBe(101);
      open.push(r.ws!);
    }
    const fourth = await tryUpgrade(url(TOKENS.viewer));
    expect(fourth.status).toBe(429);
    expect(fourth.ws === undefined && JSON.parse(fourth.body)).toMatchObject({ code: 'too_many_connections' });

    // Another user of the same tenant still gets in, up to the tenant's cap of 5 …
    for (let i = 0; i < 2; i++) {
      const r = await tryUpgrade(url(TOKENS.alice));
      expect(r.status).toBe(101);
      open.push(r.ws!);
    }
    expect((await tryUpgrade(url(TOKENS.bob))).status).toBe(429);
    // … and another tenant is not affected at all.
    const other = await tryUpgrade(url(TOKENS.mallory));
    expect(other.status).toBe(101);
    open.push(other.ws!);

    // Closing a connection frees its slot.
    open.shift()!.close();
    await waitFor(
      async () => {
        const r = await tryUpgrade(url(TOKENS.viewer));
        if (r.status !== 101) return undefined;
        open.push(r.ws!);
        return true;
      },
      { what: 'a freed slot' },
    );
  });

  it('closes a connection that never initializes with 4408, and keeps one that did', async () => {
    const hub = await server({ initializeTimeoutMs: 1_500 });
    const initialized = await RpcClient.open(hub.wsUrl);
    closers.push(() => initialized.close());
    const idle = await tryUpgrade(hub.wsUrl);
    expect(idle.status).toBe(101);
    const closed = await new Promise<number>((resolve) => idle.ws!.once('close', (code) => resolve(code)));
    expect(closed).toBe(4408);
    // The initialized one connected earlier, so its timer ran out first; it is still serving.
    expect(initialized.closed).toBe(false);
    expect(await initialized.request('listSessions', { channel: 'ahp-root://' })).toHaveProperty('items');
  });

  it('half-open HTTP requests beyond the cap: newcomers refused during the burst, then the stalest dropped so /healthz answers', async () => {
    const hub = await server({ maxHttpConnections: 20, httpIdleGraceMs: 300 });
    const sockets: Socket[] = [];
    closers.push(() => {
      for (const s of sockets) s.destroy();
    });
    const closed = new Set<number>();
    for (let i = 0; i < 60; i++) {
      const s = connect(hub.port, '127.0.0.1');
      s.on('error', () => {});
      s.on('close', () => closed.add(i));
      await new Promise<void>((resolve) => s.once('connect', () => resolve()));
      s.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `); // never finished
      sockets.push(s);
    }
    // The burst came faster than the grace period: the 40 beyond the cap were the ones refused.
    await waitFor(() => (closed.size >= 40 ? true : undefined), { what: 'the newcomers beyond the cap to be refused' });
    expect([...closed].every((i) => i >= 20)).toBe(true);
    // Once the held ones are stale, a real request displaces the oldest of them.
    const status = await waitFor(
      async () => {
        const res = await rawRequest(hub.port, { path: '/healthz', headers: { connection: 'close' } }).catch(() => undefined);
        return res?.status;
      },
      { what: '/healthz to answer' },
    );
    expect(status).toBe(200);
    await waitFor(() => (closed.has(0) ? true : undefined), { what: 'the stalest half-open request to be dropped' });
  });
});

describe('connection caps fit the open-file limit', () => {
  it('derives caps from ulimit -n, and reads the limit from /proc', () => {
    expect(connectionCapsFor(undefined)).toEqual({ maxConnections: 10_000, maxHttpConnections: 1_000 });
    expect(connectionCapsFor(1024)).toEqual({ maxConnections: 720, maxHttpConnections: 240 });
    // Descriptors the tenants' logs hold open come off the WebSocket and HTTP shares.
    expect(connectionCapsFor(1024, 40)).toEqual({ maxConnections: 690, maxHttpConnections: 230 });
    // The WebSocket cap grows with the limit (no fixed 10,000), up to 100,000 unless asked for more.
    expect(connectionCapsFor(20_000)).toEqual({ maxConnections: 18_936, maxHttpConnections: 1_000 });
    expect(connectionCapsFor(1_048_576)).toEqual({ maxConnections: 100_000, maxHttpConnections: 1_000 });
    expect(openFileLimit('Limit   Soft Limit   Hard Limit   Units\nMax open files            1024                 4096                 files     \n')).toBe(1024);
    expect(openFileLimit('Max open files            unlimited            unlimited            files\n')).toBeUndefined();
  });

  it('--max-connections lowers the cap, raises it within the limit, and names the limit a request needs', () => {
    expect(connectionCapsFor(20_000, 0, 12_000)).toEqual({ maxConnections: 12_000, maxHttpConnections: 1_000 });
    expect(connectionCapsFor(1_048_576, 0, 250_000)).toEqual({ maxConnections: 250_000, maxHttpConnections: 1_000 });
    expect(connectionCapsFor(undefined, 0, 20_000)).toEqual({ maxConnections: 20_000, maxHttpConnections: 1_000 });
    expect(() => connectionCapsFor(20_000, 0, 19_000)).toThrow(/ulimit -n 20000 holds 18936 WebSockets\); raise it to at least 20064/);
    expect(parseArgs(['--max-connections', '15000']).maxConnections).toBe(15_000);
    expect(parseArgs([], { HUB_MAX_CONNECTIONS: '12000' }).maxConnections).toBe(12_000);
    expect(() => parseArgs(['--max-connections', '0'])).toThrow(/--max-connections must be a positive integer/);
    expect(() => parseArgs(['--max-connections', 'lots'])).toThrow(/--max-connections must be a positive integer/);
  });

  it('a hub started with --max-connections 3 holds three WebSockets and refuses the fourth with 503', async () => {
    const data = tempDir();
    closers.push(() => data.remove());
    const hub = await startHubProcess(['--data', join(data.dir, 'data'), '--max-connections', '3']);
    closers.push(() => void hub.child.kill('SIGKILL'));
    const held: WebSocket[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await tryUpgrade(hub.wsUrl);
      expect(r.status).toBe(101);
      if (r.ws) held.push(r.ws);
    }
    closers.push(() => {
      for (const ws of held) ws.terminate();
    });
    const fourth = await tryUpgrade(hub.wsUrl);
    expect(fourth.status).toBe(503);
    expect(fourth.ws === undefined ? fourth.body : '').toContain('too_many_connections');
  });

  it('--max-connections beyond ulimit -n stops the start with exit status 2 and the limit to set', async () => {
    ensureBuilt();
    const data = tempDir();
    closers.push(() => data.remove());
    const child = spawn('bash', ['-c', `ulimit -n 1024 && exec "${process.execPath}" dist/server/main.js --port 0 --data "${data.dir}/data" --max-connections 5000`], { stdio: ['ignore', 'pipe', 'pipe'] });
    closers.push(() => void child.kill('SIGKILL'));
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.resume();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    // Dev mode's one tenant keeps 4 log files open: 1024 - 64 - 4 = 956 usable, 239 for HTTP.
    expect(err).toContain('--max-connections 5000 does not fit the open-file limit (ulimit -n 1024 holds 717 WebSockets); raise it to at least 5307');
  });

  it("refuses to start, saying how far to raise ulimit -n, when the tenants' logs would not fit in it", async () => {
    ensureBuilt();
    const data = tempDir();
    closers.push(() => data.remove());
    // 300 tenants keep 1,200 log files open: more than ulimit -n 1024 allows.
    const tokens = Array.from({ length: 300 }, (_, i) => ({ token: `token-of-tenant-${i}-0123456789`, user: 'u', tenant: `t${i}`, role: 'user' }));
    writeFileSync(join(data.dir, 'tokens.json'), JSON.stringify({ tokens }));
    const child = spawn('bash', ['-c', `ulimit -n 1024 && exec "${process.execPath}" dist/server/main.js --port 0 --data "${data.dir}/data" --auth "${data.dir}/tokens.json"`], { stdio: ['ignore', 'pipe', 'pipe'] });
    closers.push(() => void child.kill('SIGKILL'));
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.resume();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(err).toContain('the open-file limit (ulimit -n 1024) is too low for 300 tenants: their logs keep 1200 files open');
    expect(err).toContain('raise it to at least 1296');
  });

  it('under ulimit -n 1024, 1,100 half-open requests do not starve /healthz', async () => {
    ensureBuilt();
    const data = tempDir();
    closers.push(() => data.remove());
    const child = spawn('bash', ['-c', `ulimit -n 1024 && exec "${process.execPath}" dist/server/main.js --port 0 --data "${data.dir}" --log-level warn`], { stdio: ['ignore', 'pipe', 'pipe'] });
    closers.push(() => void child.kill('SIGKILL'));
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const url = await waitFor(() => /listening on (\S+)/.exec(out)?.[1], { what: 'the hub to listen', timeoutMs: 20_000 });
    const port = Number(new URL(url).port);
    const cap = Number(await waitFor(() => /"maxHttpConnections":(\d+)/.exec(err)?.[1], { what: 'the hub to log its lowered HTTP cap' }));
    expect(cap).toBeLessThan(1_100);
    const sockets: Socket[] = [];
    let refused = 0;
    closers.push(() => {
      for (const s of sockets) s.destroy();
    });
    // Opened 100 at a time: a larger burst overflows the kernel's accept queue, and the dropped
    // connections come back as a second wave when their SYN is retried a second later.
    for (let i = 0; i < 1_100; i += 100) {
      const batch = Array.from({ length: 100 }, () => {
        const s = connect(port, '127.0.0.1');
        s.on('error', () => {});
        s.once('close', () => refused++);
        s.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
        sockets.push(s);
        return new Promise<void>((resolve) => {
          s.once('connect', resolve);
          s.once('close', resolve);
        });
      });
      await Promise.all(batch);
    }
    // The hub has seen every one of them: it holds `cap` and refused the rest.
    await waitFor(() => (refused >= 1_100 - cap ? true : undefined), { what: 'the hub to refuse the half-open requests beyond its cap', timeoutMs: 20_000 });
    // A fresh /healthz may be refused like the other newcomers until the held half-open requests
    // are stale (1 s); from then on each new request displaces the oldest of them.
    const healthz = (): Promise<number> =>
      new Promise((resolve) => {
        const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 5_000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(0));
        req.end();
      });
    await waitFor(async () => ((await healthz()) === 200 ? true : undefined), { what: '/healthz to answer', timeoutMs: 20_000 });
    // Not a lucky one: the next ones answer too, on fresh connections.
    for (let i = 0; i < 5; i++) expect(await healthz()).toBe(200);
    // The first half-open request, held since the start, was dropped for them.
    await waitFor(() => (sockets[0]!.destroyed || sockets[0]!.readyState === 'closed' ? true : undefined), { what: 'the stalest half-open request to be dropped' });
  }, 60_000);
});
