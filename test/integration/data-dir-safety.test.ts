/**
 * Issue 8, durability at the edge: one process per data directory, and a damaged log is refused
 * with a clear message instead of starting silently with `serverSeq` rolled back.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureBuilt, startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { tenantLogFile } from '../../server/storage/tenant-logs.js';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';

/** The dev tenant's log file in a data directory (dev mode has one tenant). */
const devLogFile = (dataDir: string): string => tenantLogFile(dataDir, DEV_PRINCIPAL.tenant);

/** Runs the hub expecting it to refuse to start; returns its exit code and stderr. */
function startExpectingRefusal(args: string[]): Promise<{ code: number | null; stderr: string; stdout: string }> {
  ensureBuilt();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/server/main.js', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      // It started after all: stop it so the test fails on the assertion, not on a timeout.
      if (stdout.includes('listening on')) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => resolve({ code, stderr, stdout }));
  });
}

describe('data directory safety', () => {
  const dirs: Array<{ remove(): void }> = [];
  const procs: HubProcess[] = [];
  afterEach(() => {
    for (const p of procs.splice(0)) p.child.kill('SIGKILL');
    for (const d of dirs.splice(0)) d.remove();
  });

  it('a second hub on the same --data refuses to start with a clear message; after a SIGKILL the lock is free again', async () => {
    const data = tempDir();
    dirs.push(data);
    const first = await startHubProcess(['--data', data.dir]);
    procs.push(first);
    const second = await startExpectingRefusal(['--data', data.dir]);
    expect(second.stdout).not.toContain('listening on');
    expect(second.code).not.toBe(0);
    expect(second.stderr).toMatch(/in use by another hub process/);

    first.child.kill('SIGKILL');
    await first.exited();
    const third = await startHubProcess(['--data', data.dir]);
    procs.push(third);
    expect((await fetch(`${third.url}/healthz`)).status).toBe(200);
  });

  it('refuses a truncated or bit-flipped WAL instead of starting with echoed actions gone', async () => {
    const data = tempDir();
    dirs.push(data);
    const hub = await startHubProcess(['--data', data.dir]);
    procs.push(hub);
    const client = await RpcClient.open(hub.wsUrl);
    const { chat } = await client.createSession('damage');
    await client.subscribe(chat);
    await startScriptTurn(client, chat, [{ ask: TWO_QUESTION_REQUEST }, { sleep: 600_000 }]);
    await client.waitForEnvelope((e) => e.action.type === 'chat/inputRequested');
    for (let i = 0; i < 100; i++) {
      client.dispatch(chat, {
        type: 'chat/inputAnswerChanged',
        requestId: 'req-1',
        questionId: 'notes',
        answer: { state: 'draft', value: { kind: 'text', value: `draft ${i}` } },
      });
    }
    await waitFor(() => (client.envelopes.filter((e) => e.action.type === 'chat/inputAnswerChanged' && !e.rejectionReason).length >= 100 ? true : undefined), { what: '100 echoes' });
    const lastEchoed = Math.max(...client.envelopes.map((e) => e.serverSeq));
    // Killed, so the WAL is not checkpointed into the database: the echoed actions live in it.
    hub.child.kill('SIGKILL');
    await hub.exited();
    await client.close();
    const wal = devLogFile(data.dir) + '-wal';
    expect(statSync(wal).size).toBeGreaterThan(0);

    const copy = (name: string): string => {
      const dir = tempDir(`hub-${name}-`);
      dirs.push(dir);
      cpSync(data.dir, dir.dir, { recursive: true });
      return dir.dir;
    };
    const truncated = copy('truncated');
    truncateSync(devLogFile(truncated) + '-wal', Math.floor(statSync(wal).size * 0.8));
    const flipped = copy('flipped');
    const bytes = readFileSync(devLogFile(flipped) + '-wal');
    const at = Math.floor(bytes.length * 0.6);
    for (let i = at; i < at + 16; i++) bytes[i] = bytes[i]! ^ 0xff;
    writeFileSync(devLogFile(flipped) + '-wal', bytes);

    for (const dir of [truncated, flipped]) {
      const refused = await startExpectingRefusal(['--data', dir]);
      expect(refused.stdout, dir).not.toContain('listening on');
      expect(refused.code).not.toBe(0);
      const m = /lost committed records: its head is (\d+) but \S+ shows (\d+) records were committed/.exec(refused.stderr);
      expect(m, refused.stderr).not.toBeNull();
      // The database alone would have opened at the older head; the marker knows every echoed seq.
      expect(Number(m![1])).toBeLessThan(lastEchoed);
      expect(Number(m![2])).toBeGreaterThanOrEqual(lastEchoed);
      expect(refused.stderr).toMatch(/Restore the data directory from a backup/);
    }

    // The undamaged directory starts and serves everything that was echoed.
    const intact = await startHubProcess(['--data', data.dir]);
    procs.push(intact);
    const reader = await RpcClient.connect(intact.wsUrl);
    const init = await reader.initialize();
    expect(init.serverSeq).toBeGreaterThanOrEqual(lastEchoed);
    await reader.close();
    expect(existsSync(devLogFile(data.dir) + '.head')).toBe(true);
  });
});
