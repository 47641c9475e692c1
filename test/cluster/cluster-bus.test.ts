/**
 * The cluster bus (PostgreSQL LISTEN/NOTIFY on `ahp_bus`) that presence travels on: messages
 * reach the other processes but never their sender, and a message too large for one NOTIFY is
 * refused by `publish` (false) instead of failing in PostgreSQL or being cut. Each tenant's
 * features see the bus through `tenantBus`: two tenants may use the same chat id, so presence
 * published for one tenant must never reach another tenant's features on another process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { tenantBus, type BusMessage } from '../../server/cluster-bus/cluster-bus.js';
import { MAX_BUS_MESSAGE_BYTES, PostgresClusterBus } from '../../server/cluster-bus/postgres-bus.js';
import { freshDatabase } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait-for.js';

describe('cluster bus on PostgreSQL NOTIFY', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** Two buses on one fresh database: two hub processes' view of the bus. */
  async function twoProcesses(): Promise<[PostgresClusterBus, PostgresClusterBus]> {
    const db = await freshDatabase('bus');
    cleanups.push(db.drop);
    const one = new PostgresClusterBus({ url: db.url });
    const two = new PostgresClusterBus({ url: db.url });
    cleanups.push(
      () => one.close(),
      () => two.close(),
    );
    await Promise.all([one.ready, two.ready]);
    return [one, two];
  }

  it('delivers a message to the other processes, never back to its sender, and refuses one larger than a NOTIFY carries', async () => {
    const [one, two] = await twoProcesses();
    const heardByOne: BusMessage[] = [];
    const heardByTwo: BusMessage[] = [];
    one.onMessage((m) => heardByOne.push(m));
    two.onMessage((m) => heardByTwo.push(m));

    expect(one.publish({ kind: 'test', text: 'hello' })).toBe(true);
    await waitFor(() => (heardByTwo.length === 1 ? true : undefined), { what: 'the other bus to hear it' });
    expect(heardByTwo[0]).toEqual({ kind: 'test', text: 'hello', from: one.nodeId });

    // Just over the limit (JSON of the whole message) is refused and nothing is sent.
    const overhead = JSON.stringify({ kind: 'test', text: '', from: one.nodeId }).length;
    expect(one.publish({ kind: 'test', text: 'x'.repeat(MAX_BUS_MESSAGE_BYTES - overhead + 1) })).toBe(false);
    expect(one.publish({ kind: 'test', text: 'x'.repeat(MAX_BUS_MESSAGE_BYTES - overhead) })).toBe(true);
    expect(two.publish({ kind: 'test', text: 'back' })).toBe(true);
    await waitFor(() => (heardByOne.length === 1 && heardByTwo.length === 2 ? true : undefined), { what: 'the largest allowed message and the reply' });
    expect((heardByTwo[1]!['text'] as string).length).toBe(MAX_BUS_MESSAGE_BYTES - overhead);
    expect(heardByOne.map((m) => m['text'])).toEqual(['back']);
    // Nobody heard its own messages (the oversized one was never sent).
    expect(heardByTwo.every((m) => m.from === one.nodeId)).toBe(true);
    expect(heardByOne.every((m) => m.from === two.nodeId)).toBe(true);
  });

  it('a closed bus refuses to publish', async () => {
    const db = await freshDatabase('bus');
    cleanups.push(db.drop);
    const bus = new PostgresClusterBus({ url: db.url });
    await bus.ready;
    await bus.close();
    expect(bus.publish({ kind: 'test' })).toBe(false);
  });

  it("delivers a tenant's messages only to the same tenant on other processes, within the view's limit", async () => {
    const [one, two] = await twoProcesses();
    const acmeOnTwo: BusMessage[] = [];
    const evilOnTwo: BusMessage[] = [];
    tenantBus(two, 'acme').onMessage((m) => acmeOnTwo.push(m));
    tenantBus(two, 'evil').onMessage((m) => evilOnTwo.push(m));

    const acmeOnOne = tenantBus(one, 'acme');
    const evilOnOne = tenantBus(one, 'evil');
    expect(acmeOnOne.publish({ kind: 'presence', chat: 'ahp-chat:/same', who: 'alice' })).toBe(true);
    expect(evilOnOne.publish({ kind: 'presence', chat: 'ahp-chat:/same', who: 'mallory' })).toBe(true);
    await waitFor(() => (acmeOnTwo.length === 1 && evilOnTwo.length === 1 ? true : undefined), { what: 'each tenant to hear its own message' });
    expect(acmeOnTwo.map((m) => m['who'])).toEqual(['alice']);
    expect(evilOnTwo.map((m) => m['who'])).toEqual(['mallory']);

    // A message exactly at the view's limit still fits the bus once marked; one byte more is refused.
    const overhead = JSON.stringify({ kind: 'big', text: '', from: one.nodeId }).length;
    const room = acmeOnOne.maxMessageBytes - overhead;
    expect(acmeOnOne.publish({ kind: 'big', text: 'x'.repeat(room) })).toBe(true);
    expect(acmeOnOne.publish({ kind: 'big', text: 'x'.repeat(room + 1) })).toBe(false);
    await waitFor(() => (acmeOnTwo.length === 2 ? true : undefined), { what: 'the largest allowed message' });
    expect(evilOnTwo).toHaveLength(1);
  });
});
