import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureBuilt, startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir, TOKENS, writeAuthFile } from '../helpers/start-server.js';

const run = promisify(execFile);

describe('the hub process (npm start)', () => {
  const procs: HubProcess[] = [];
  const dirs: Array<{ remove(): void }> = [];
  afterEach(() => {
    for (const p of procs.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    for (const d of dirs.splice(0)) d.remove();
  });

  it('prints one listening line, answers /healthz, and drains on SIGTERM with exit code 0', async () => {
    const data = tempDir();
    dirs.push(data);
    const hub = await startHubProcess(['--data', data.dir]);
    procs.push(hub);
    expect(hub.stdout()).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+\n$/);
    const health = await fetch(`${hub.url}/healthz`);
    expect(health.status).toBe(200);
    const client = await RpcClient.open(hub.wsUrl);
    await client.createSession();
    hub.child.kill('SIGTERM');
    const exit = await hub.exited();
    expect(exit).toEqual({ code: 0, signal: null });
    await expect(client.request('ping', {})).rejects.toThrow();
  });

  it('with --auth, refuses a WebSocket without a token and accepts one with it', async () => {
    const data = tempDir();
    dirs.push(data);
    const hub = await startHubProcess(['--data', data.dir, '--auth', writeAuthFile(data.dir)]);
    procs.push(hub);
    await expect(RpcClient.connect(hub.wsUrl)).rejects.toThrow('HTTP 401');
    const ok = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
    await ok.close();
  });

  it('refuses to listen beyond loopback without --auth, and rejects unknown flags', async () => {
    ensureBuilt();
    const open = await run(process.execPath, ['dist/server/main.js', '--host', '0.0.0.0', '--port', '0']).catch((e: { code: number; stderr: string }) => e);
    expect(open).toMatchObject({ code: 2 });
    expect((open as { stderr: string }).stderr).toContain('without --auth');
    const bad = await run(process.execPath, ['dist/server/main.js', '--bogus']).catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({ code: 2 });
    expect((bad as { stderr: string }).stderr).toMatch(/Unknown option '--bogus'/);
  });
});
