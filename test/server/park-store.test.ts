/**
 * The parked-session cache is a file of the process's own; one left behind by a process that was
 * killed before it could close it must not stay in the temporary directory for ever. On a full
 * disk (a real 1 MiB tmpfs) a write stores nothing and leaves what was stored intact, and a store
 * that cannot even be created leaves no directory behind.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChatTable } from '../../server/hub/chat-table.js';
import { ParkStore } from '../../server/storage/park-store.js';
import { initialChatState } from '../../shared/protocol/state.js';
import { mountTmpfs, type SmallDisk } from '../helpers/tmpfs.js';

const parents: string[] = [];
const disks: SmallDisk[] = [];
const stores: ParkStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of disks.splice(0)) d.remove();
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

  it('on a full disk a put stores nothing and leaves what was stored intact; the next put after space returns works', () => {
    const disk = mountTmpfs('1m');
    disks.push(disk);
    const store = new ParkStore(disk.dir);
    stores.push(store);
    store.put('s1', [{ uri: 'c1', json: JSON.stringify({ text: 'a'.repeat(100_000) }) }]);
    store.put('s2', [{ uri: 'c2', json: '{"x":2}' }]);
    disk.fill();
    const big = [
      { uri: 'c1', json: JSON.stringify({ text: 'b'.repeat(300_000) }) },
      { uri: 'c3', json: JSON.stringify({ text: 'c'.repeat(300_000) }) },
    ];
    expect(() => store.put('s1', big)).toThrow(/full/);
    expect(store.read('s1')).toEqual([JSON.stringify({ text: 'a'.repeat(100_000) })]);
    expect(store.read('s2')).toEqual(['{"x":2}']);
    disk.free();
    store.put('s1', big);
    expect(store.read('s1')).toEqual(big.map((c) => c.json));
  });

  it('a store that cannot be created on a full disk throws and leaves no directory behind', () => {
    const disk = mountTmpfs('1m');
    disks.push(disk);
    disk.fill();
    for (let i = 0; i < 3; i++) expect(() => new ParkStore(disk.dir)).toThrow();
    expect(readdirSync(disk.dir).filter((n) => n.startsWith('ahp-hub-parked-'))).toEqual([]);
  });

  it('a chat table whose cache can no longer be written still forgets a parked chat and clears (removing images is tidying, never a failure of the disposal)', () => {
    const parent = mkdtempSync(join(tmpdir(), 'park-store-'));
    parents.push(parent);
    const store = new ParkStore(parent);
    const table = new ChatTable();
    table.attachStore(store);
    for (const uri of ['ahp-chat:/a', 'ahp-chat:/b', 'ahp-chat:/c']) table.set(uri, { uri, session: uri === 'ahp-chat:/c' ? 'ahp-session:/2' : 'ahp-session:/1', state: initialChatState(uri, 'chat', '1970-01-01T00:00:00.000Z') });
    table.park('ahp-session:/1', ['ahp-chat:/a', 'ahp-chat:/b']);
    table.park('ahp-session:/2', ['ahp-chat:/c']);
    // The store fails every statement from here on (as on a disk error).
    store.close();
    expect(() => store.dropChat('ahp-chat:/a')).toThrow();
    expect(table.delete('ahp-chat:/a')).toBe(true);
    expect(table.has('ahp-chat:/a')).toBe(false);
    expect([...table.keys()].sort()).toEqual(['ahp-chat:/b', 'ahp-chat:/c']);
    table.clear();
    expect(table.size).toBe(0);
  });
});
