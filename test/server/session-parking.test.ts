/**
 * Parked sessions (session-parking.ts, chat-table.ts): a session whose chats left memory must
 * look to every client exactly like one that never left — the same snapshots, the same echoes,
 * the same root catalogue — and a tenant snapshot written while sessions are parked must still
 * hold them whole. Two hubs get the same script; one parks between the steps, one never does.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { Hub } from '../../server/hub/hub.js';
import { PARK_CACHE_UNREADABLE, PARK_CACHE_WRITE_FAILED } from '../../server/hub/session-parking.js';
import { silentLogger, type Logger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { ErrorCode, ProtocolError } from '../../shared/protocol/errors.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import { FakeConnection } from '../helpers/fake-connection.js';
import { mountTmpfs, type SmallDisk } from '../helpers/tmpfs.js';

const AGENTS = [{ provider: 'remote', displayName: 'R' }];
const SESSIONS = ['ahp-session:/one', 'ahp-session:/two', 'ahp-session:/three'];
const hubs: Hub[] = [];
const dirs: string[] = [];
const disks: SmallDisk[] = [];
afterEach(async () => {
  for (const hub of hubs.splice(0)) await hub.close();
  for (const disk of disks.splice(0)) disk.remove();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function openHub(log: MemoryActionLog, parkIdleMs: number, more: { parkDir?: string; logger?: Logger } = {}): Promise<Hub> {
  let n = 0;
  let t = 1_000;
  // An idle period long enough never to elapse in a test: the test sweeps by hand.
  const hub = await Hub.open({ log, logger: more.logger ?? silentLogger, parkDir: more.parkDir, now: () => (t += 7), newId: () => `id-${++n}`, agents: AGENTS, defaultProvider: 'remote', limits: { parkIdleMs } });
  hubs.push(hub);
  return hub;
}

/** Two finished turns with content, one stopped by a person (a `hub/stoppedBy` stamp beside the state). */
async function fill(hub: Hub, session: string, i: number): Promise<string> {
  const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: session, title: `session ${i}` });
  const start = (turnId: string): WireAction => ({ type: 'chat/turnStarted', turnId, startedAt: '1970-01-01T00:00:01.000Z', message: { text: `question ${i} ${turnId}`, origin: { kind: 'user' } } }) as WireAction;
  await hub.dispatchServer(chat, start('t1'));
  await hub.dispatchServer(chat, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: `answer ${i}: ` } } as WireAction);
  for (let k = 0; k < 5; k++) await hub.dispatchServer(chat, { type: 'chat/delta', turnId: 't1', partId: 'p1', content: `line ${k}\n` } as WireAction);
  await hub.dispatchServer(chat, { type: 'chat/turnComplete', turnId: 't1', duration: 3 } as WireAction);
  await hub.dispatchServer(chat, start('t2'));
  const stop = await hub.submitAs(DEV_PRINCIPAL, chat, { type: 'chat/turnCancelled', turnId: 't2', duration: 2 } as WireAction);
  if (!stop.ok) throw new Error(stop.message);
  return chat;
}

async function pair(more: { parkDir?: string; logger?: Logger } = {}): Promise<{ parking: Hub; plain: Hub; parkingLog: MemoryActionLog; plainLog: MemoryActionLog; chats: string[] }> {
  const parkingLog = new MemoryActionLog();
  const plainLog = new MemoryActionLog();
  const parking = await openHub(parkingLog, 3_600_000, more);
  const plain = await openHub(plainLog, 0);
  const chats: string[] = [];
  for (const [i, s] of SESSIONS.entries()) {
    chats.push(await fill(parking, s, i));
    await fill(plain, s, i);
  }
  return { parking, plain, parkingLog, plainLog, chats };
}

describe('parked sessions', () => {
  it('parks only idle, unwatched sessions without a running turn, and a lookup loads one back', async () => {
    const { parking, chats } = await pair();
    const watcher = new FakeConnection('watcher');
    parking.subscribe(watcher, DEV_PRINCIPAL, chats[0]!);
    await parking.dispatchServer(chats[1]!, { type: 'chat/turnStarted', turnId: 't3', startedAt: '1970-01-01T00:00:02.000Z', message: { text: 'running', origin: { kind: 'user' } } } as WireAction);
    // Everything was used during setup: the first sweep only starts the idle period.
    expect(parking.parking.sweep()).toBe(0);
    expect(parking.parking.sweep()).toBe(1);
    expect(parking.parking.residency).toEqual({ resident: 2, parked: 1 });
    expect(parking.chatEntry(chats[2]!)?.state.turns).toHaveLength(2);
    expect(parking.parking.residency).toEqual({ resident: 3, parked: 0 });
  });

  it('shows clients the same snapshots, echoes and root catalogue as a hub that never parked', async () => {
    const { parking, plain, chats } = await pair();
    parking.parking.sweep();
    expect(parking.parking.sweep()).toBe(SESSIONS.length);
    expect(parking.parking.residency).toEqual({ resident: 0, parked: SESSIONS.length });

    // The root catalogue comes from the briefs alone: nothing is loaded for it.
    expect(parking.listSessions(DEV_PRINCIPAL)).toEqual(plain.listSessions(DEV_PRINCIPAL));
    expect(parking.parking.residency.parked).toBe(SESSIONS.length);

    // A write to a parked chat from a client that does not subscribe it, watched by a root subscriber.
    const frames = async (hub: Hub): Promise<{ sender: unknown[]; root: unknown[] }> => {
      const sender = new FakeConnection('sender');
      const root = new FakeConnection('root');
      hub.subscribe(root, DEV_PRINCIPAL, 'ahp-root://');
      hub.dispatchFromClient({ conn: sender, principal: DEV_PRINCIPAL, clientId: 'sender' }, chats[2]!, 1, {
        type: 'chat/turnStarted',
        turnId: 't9',
        startedAt: '1970-01-01T00:00:09.000Z',
        message: { text: 'after parking', origin: { kind: 'user' } },
      } as WireAction);
      await hub.drain();
      return { sender: sender.messages(), root: root.messages() };
    };
    const parkedFrames = await frames(parking);
    expect(parkedFrames.sender.length).toBeGreaterThan(0);
    expect(parkedFrames).toEqual(await frames(plain));
    expect(parking.parking.residency).toEqual({ resident: 1, parked: SESSIONS.length - 1 });

    // Subscribing loads the session with its full content.
    for (const chat of chats) {
      for (const channel of [chat, parking.chatEntry(chat)!.session]) {
        expect(parking.snapshot(DEV_PRINCIPAL, channel)).toEqual(plain.snapshot(DEV_PRINCIPAL, channel));
      }
    }
  });

  it('writes tenant snapshots that hold parked sessions whole, and a restart reaches the same state', async () => {
    const { parking, plain, parkingLog, plainLog, chats } = await pair();
    parking.parking.sweep();
    expect(parking.parking.sweep()).toBe(SESSIONS.length);
    // Closing writes the final snapshot while every session is still parked.
    await parking.close();
    await plain.close();
    hubs.splice(0);
    const parkedSnapshot = (await parkingLog.latestSnapshot())?.data as { catalog: { chats: unknown[] } };
    const plainSnapshot = (await plainLog.latestSnapshot())?.data as { catalog: { chats: unknown[] } };
    expect(parkedSnapshot.catalog.chats).toHaveLength(chats.length);
    expect(parkedSnapshot.catalog).toEqual(plainSnapshot.catalog);

    const again = await openHub(parkingLog, 0);
    const reference = await openHub(plainLog, 0);
    for (const chat of chats) expect(again.snapshot(DEV_PRINCIPAL, chat)).toEqual(reference.snapshot(DEV_PRINCIPAL, chat));
    expect(again.listSessions(DEV_PRINCIPAL)).toEqual(reference.listSessions(DEV_PRINCIPAL));
  });

  it('a cache file damaged under a live hub: lookups refuse with StorageUnavailable (no throw of the SQLite error), parking stops, and a hub rebuilt from the log has every session whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'park-damaged-'));
    dirs.push(dir);
    const warnings: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
    const logger: Logger = { ...silentLogger, warn: (msg, fields) => void warnings.push({ msg, ...(fields ? { fields } : {}) }) };
    const { parking, plain, parkingLog, chats } = await pair({ parkDir: dir, logger });
    parking.parking.sweep();
    expect(parking.parking.sweep()).toBe(SESSIONS.length);
    const file = parking.parking.storeFile!;
    expect(dirname(dirname(file))).toBe(dir);
    // Another program (or a failing disk) overwrites the open file with garbage.
    writeFileSync(file, Buffer.alloc(64 * 1024, 0x5a));

    // The first lookup is a client's write (the decision loads the session): a storage_unavailable
    // rejection echoed to it, not silence (an unknown channel) and not a throw.
    const sender = new FakeConnection('sender');
    parking.dispatchFromClient({ conn: sender, principal: DEV_PRINCIPAL, clientId: 'sender' }, chats[0]!, 1, {
      type: 'chat/turnStarted',
      turnId: 't9',
      startedAt: '1970-01-01T00:00:09.000Z',
      message: { text: 'after the damage', origin: { kind: 'user' } },
    } as WireAction);
    await parking.drain().catch(() => undefined);
    expect(sender.messages()).toEqual([
      { jsonrpc: '2.0', method: 'action', params: expect.objectContaining({ rejectionKind: 'storage_unavailable', rejectionReason: expect.stringMatching(/^the action log is unavailable: .*parked-session cache could not be read back/) }) },
    ]);
    // A snapshot of another parked chat, and a subscription: a clear error with a stable code, never the storage error itself.
    expect(() => parking.snapshot(DEV_PRINCIPAL, chats[1]!)).toThrow(expect.objectContaining({ code: ErrorCode.StorageUnavailable }));
    const subscriber = new FakeConnection('subscriber');
    let refused: unknown;
    try {
      parking.subscribe(subscriber, DEV_PRINCIPAL, chats[1]!);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ProtocolError);
    expect((refused as ProtocolError).code).toBe(ErrorCode.StorageUnavailable);
    expect((refused as ProtocolError).message).toMatch(/^the action log is unavailable: .*parked-session cache could not be read back/);
    // A server write and a hub-side read of a parked chat refuse the same way.
    await expect(parking.dispatchServer(chats[2]!, { type: 'chat/titleChanged', title: 'x' } as WireAction)).rejects.toMatchObject({ code: ErrorCode.StorageUnavailable });
    expect(() => parking.visibleChat(DEV_PRINCIPAL, chats[2]!)).toThrow(expect.objectContaining({ code: ErrorCode.StorageUnavailable }));
    // Warned once, with a stable code, however many lookups failed.
    expect(warnings.filter((w) => w.fields?.['code'] === PARK_CACHE_UNREADABLE)).toHaveLength(1);

    // What the composition root does with a failed hub: a new one recovered from the log (server.ts, reload).
    await parking.close();
    hubs.splice(hubs.indexOf(parking), 1);
    const rebuilt = await openHub(parkingLog, 3_600_000, { parkDir: dir, logger });
    for (const chat of chats) {
      for (const channel of [chat, rebuilt.chatEntry(chat)!.session]) expect(rebuilt.snapshot(DEV_PRINCIPAL, channel)).toEqual(plain.snapshot(DEV_PRINCIPAL, channel));
    }
    expect(rebuilt.listSessions(DEV_PRINCIPAL)).toEqual(plain.listSessions(DEV_PRINCIPAL));
    // Nothing is parked in that directory again by this process.
    rebuilt.parking.sweep();
    expect(rebuilt.parking.sweep()).toBe(0);
    expect(rebuilt.parking.residency).toEqual({ resident: SESSIONS.length, parked: 0 });
  });

  it('an image changed in the cache file but still valid JSON for its chat is refused (its SHA-256), not loaded as the state', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'park-tampered-'));
    dirs.push(dir);
    const { parking, plain, parkingLog, chats } = await pair({ parkDir: dir });
    parking.parking.sweep();
    expect(parking.parking.sweep()).toBe(SESSIONS.length);
    // Another program edits one chat's image in place: the same chat, a different title.
    const other = new Database(parking.parking.storeFile!);
    const row = other.prepare('SELECT image FROM parked WHERE chat = ?').get(chats[0]!) as { image: string };
    const image = JSON.parse(row.image) as { state: { title: string } };
    image.state.title = 'not what the log says';
    other.prepare('UPDATE parked SET image = ? WHERE chat = ?').run(JSON.stringify(image), chats[0]!);
    other.close();

    expect(() => parking.snapshot(DEV_PRINCIPAL, chats[0]!)).toThrow(expect.objectContaining({ code: ErrorCode.StorageUnavailable }));
    await parking.close();
    hubs.splice(hubs.indexOf(parking), 1);
    const rebuilt = await openHub(parkingLog, 3_600_000, { parkDir: dir });
    expect(rebuilt.snapshot(DEV_PRINCIPAL, chats[0]!)).toEqual(plain.snapshot(DEV_PRINCIPAL, chats[0]!));
  });

  it('an image changed together with its stored digest (the SHA-256 recomputed) is still refused: the digest is keyed by the process (issue 33.5b)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'park-forged-'));
    dirs.push(dir);
    const { parking, chats } = await pair({ parkDir: dir });
    parking.parking.sweep();
    expect(parking.parking.sweep()).toBe(SESSIONS.length);
    const other = new Database(parking.parking.storeFile!);
    const row = other.prepare('SELECT image FROM parked WHERE chat = ?').get(chats[0]!) as { image: string };
    const image = JSON.parse(row.image) as { state: { title: string } };
    image.state.title = 'forged with a matching digest';
    const forged = JSON.stringify(image);
    other.prepare('UPDATE parked SET image = ?, digest = ? WHERE chat = ?').run(forged, createHash('sha256').update(forged).digest('base64'), chats[0]!);
    other.close();
    expect(() => parking.snapshot(DEV_PRINCIPAL, chats[0]!)).toThrow(expect.objectContaining({ code: ErrorCode.StorageUnavailable }));
  });

  it('a cache file deleted under a live hub changes nothing: the open file still serves every parked session', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'park-deleted-'));
    dirs.push(dir);
    const { parking, plain, chats } = await pair({ parkDir: dir });
    parking.parking.sweep();
    expect(parking.parking.sweep()).toBe(SESSIONS.length);
    rmSync(dirname(parking.parking.storeFile!), { recursive: true, force: true });
    for (const chat of chats) expect(parking.snapshot(DEV_PRINCIPAL, chat)).toEqual(plain.snapshot(DEV_PRINCIPAL, chat));
    expect(parking.parking.residency).toEqual({ resident: SESSIONS.length, parked: 0 });
  });

  it('a full disk (a real 1 MiB tmpfs) while parking: the session stays in memory, unparked and whole, one warning with a stable code, and parking resumes once space returns', async () => {
    const disk = mountTmpfs('1m');
    disks.push(disk);
    const warnings: Array<Record<string, unknown> | undefined> = [];
    const logger: Logger = { ...silentLogger, warn: (_msg, fields) => void warnings.push(fields) };
    const { parking, plain, chats } = await pair({ parkDir: disk.dir, logger });
    parking.parking.sweep();
    expect(parking.parking.sweep()).toBe(SESSIONS.length);
    // Session one is used again and grows by 400 KB, then the disk fills up.
    const grow = async (hub: Hub): Promise<void> => {
      await hub.dispatchServer(chats[0]!, { type: 'chat/turnStarted', turnId: 't5', startedAt: '1970-01-01T00:00:05.000Z', message: { text: 'grow', origin: { kind: 'user' } } } as WireAction);
      await hub.dispatchServer(chats[0]!, { type: 'chat/responsePart', turnId: 't5', part: { kind: 'markdown', id: 'p5', content: '' } } as WireAction);
      for (let k = 0; k < 5; k++) await hub.dispatchServer(chats[0]!, { type: 'chat/delta', turnId: 't5', partId: 'p5', content: `${k}`.repeat(80_000) } as WireAction);
      await hub.dispatchServer(chats[0]!, { type: 'chat/turnComplete', turnId: 't5', duration: 1 } as WireAction);
    };
    await grow(parking);
    await grow(plain);
    disk.fill();
    parking.parking.sweep();
    expect(parking.parking.sweep()).toBe(0);
    expect(parking.parking.sweep()).toBe(0);
    expect(parking.parking.residency).toEqual({ resident: 1, parked: SESSIONS.length - 1 });
    expect(parking.chatEntry(chats[0]!)?.state).toEqual(plain.chatEntry(chats[0]!)?.state);
    expect(warnings.filter((w) => w?.['code'] === PARK_CACHE_WRITE_FAILED)).toHaveLength(1);
    // The sessions parked before the disk filled still load whole.
    for (const chat of chats) expect(parking.snapshot(DEV_PRINCIPAL, chat)).toEqual(plain.snapshot(DEV_PRINCIPAL, chat));
    expect(warnings.filter((w) => w?.['code'] === PARK_CACHE_UNREADABLE)).toEqual([]);

    disk.free();
    parking.parking.sweep();
    expect(parking.parking.sweep()).toBe(SESSIONS.length);
    for (const chat of chats) expect(parking.snapshot(DEV_PRINCIPAL, chat)).toEqual(plain.snapshot(DEV_PRINCIPAL, chat));
  });
});
