/**
 * The README's "Try it as a team" recipe (issue 20): the team token file starts a hub with two
 * users, a viewer and an admin; the hub warns at start that it still holds the example secrets
 * (and does not for real ones); a second hub on a data directory in use says to stop the first
 * or pass its own --data. The built hub as a child process, as `npm start` runs it.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { tempDir } from '../helpers/start-server.js';
import team from '../../tokens.team.example.json' with { type: 'json' };

function startExpectingRefusal(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/server/main.js', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => resolve({ code, stderr }));
  });
}

describe('try it as a team', () => {
  const dirs: Array<{ remove(): void }> = [];
  const procs: HubProcess[] = [];
  afterEach(() => {
    for (const p of procs.splice(0)) p.child.kill('SIGKILL');
    for (const d of dirs.splice(0)) d.remove();
  });

  it('the team token file holds two users, a viewer and an admin of one tenant, and each token is accepted', async () => {
    expect(team.tokens.map((t) => [t.user, t.role])).toEqual([
      ['alice', 'user'],
      ['bob', 'user'],
      ['victor', 'viewer'],
      ['ops', 'admin'],
    ]);
    expect(new Set(team.tokens.map((t) => t.tenant)).size).toBe(1);
    const data = tempDir();
    dirs.push(data);
    const hub = await startHubProcess(['--auth', 'tokens.team.example.json', '--data', data.dir]);
    procs.push(hub);
    for (const { token } of team.tokens) expect((await fetch(`${hub.url}/ahp?token=${token}`)).status).toBe(426);
    expect((await fetch(`${hub.url}/ahp?token=change-me-not-listed`)).status).toBe(401);
    // The example secrets are named at start, with what to do about them.
    expect(hub.stderr()).toContain('the token file still holds the example secrets (change-me-…) for alice, bob, victor, ops');
    expect(hub.stderr()).toContain('replace them with long random ones');

    // A second hub on the same directory says how to run both.
    const second = await startExpectingRefusal(['--auth', 'tokens.team.example.json', '--data', data.dir]);
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain('stop that hub (Ctrl+C where it runs), or give this one its own directory, e.g. --data ./data-team');
  });

  it('a token file with real secrets starts without that warning', async () => {
    const data = tempDir();
    dirs.push(data);
    const file = join(data.dir, 'tokens.json');
    writeFileSync(file, JSON.stringify({ tokens: [{ token: 'f3b9c0e1d2a4b5c6d7e8f9a0', user: 'alice', tenant: 'team', role: 'user' }] }));
    const hub = await startHubProcess(['--auth', file, '--data', join(data.dir, 'data')]);
    procs.push(hub);
    expect(hub.stderr()).not.toContain('example secrets');
  });
});
