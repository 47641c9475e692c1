/**
 * Parked sessions (session-parking.ts, chat-table.ts): a session whose chats left memory must
 * look to every client exactly like one that never left — the same snapshots, the same echoes,
 * the same root catalogue — and a tenant snapshot written while sessions are parked must still
 * hold them whole. Two hubs get the same script; one parks between the steps, one never does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import { FakeConnection } from '../helpers/fake-connection.js';

const AGENTS = [{ provider: 'remote', displayName: 'R' }];
const SESSIONS = ['ahp-session:/one', 'ahp-session:/two', 'ahp-session:/three'];
const hubs: Hub[] = [];
afterEach(async () => {
  for (const hub of hubs.splice(0)) await hub.close();
});

async function openHub(log: MemoryActionLog, parkIdleMs: number): Promise<Hub> {
  let n = 0;
  let t = 1_000;
  // An idle period long enough never to elapse in a test: the test sweeps by hand.
  const hub = await Hub.open({ log, logger: silentLogger, now: () => (t += 7), newId: () => `id-${++n}`, agents: AGENTS, defaultProvider: 'remote', limits: { parkIdleMs } });
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

async function pair(): Promise<{ parking: Hub; plain: Hub; parkingLog: MemoryActionLog; plainLog: MemoryActionLog; chats: string[] }> {
  const parkingLog = new MemoryActionLog();
  const plainLog = new MemoryActionLog();
  const parking = await openHub(parkingLog, 3_600_000);
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
});
