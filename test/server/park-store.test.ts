/**
 * The parked-session cache is a file of the process's own; one left behind by a process that was
 * killed before it could close it must not stay in the temporary directory for ever.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ParkStore } from '../../server/storage/park-store.js';

const parents: string[] = [];
afterEach(() => {
  for (const p of parents.splice(0)) rmSync(p, { recursive: true, force: true });
});

describe('ParkStore', () => {
  it("removes the caches of dead processes, keeps a live process's, and removes its own on close", () => {
    const parent = mkdtempSync(join(tmpdir(), 'park-store-'));
    parents.push(parent);
    // A pid that existed and has exited: the child of a finished spawn.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const stale = join(parent, `ahp-hub-parked-${dead}-abc123`);
    mkdirSync(stale);
    writeFileSync(join(stale, 'parked.db'), 'left by a killed hub');
    const live = join(parent, `ahp-hub-parked-${process.ppid}-def456`);
    mkdirSync(live);
    const unrelated = join(parent, 'something-else');
    mkdirSync(unrelated);

    const store = new ParkStore(parent);
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(unrelated)).toBe(true);
    store.put('s1', [{ uri: 'c1', json: '{"x":1}' }]);
    expect(store.read('s1')).toEqual(['{"x":1}']);
    const own = readdirSync(parent).filter((n) => n.startsWith(`ahp-hub-parked-${process.pid}-`));
    expect(own).toHaveLength(1);
    store.close();
    expect(readdirSync(parent).filter((n) => n.startsWith(`ahp-hub-parked-${process.pid}-`))).toEqual([]);
  });
});
