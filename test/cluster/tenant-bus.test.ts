/**
 * Each tenant's features see the cluster bus through `tenantBus`: two tenants may use the same
 * chat id, so presence published for one tenant must never reach the other tenant's features on
 * another process, and the view's size limit leaves room for the tenant mark it adds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { tenantBus, type BusMessage } from '../../server/cluster-bus/cluster-bus.js';
import { PostgresClusterBus } from '../../server/cluster-bus/postgres-bus.js';
import { freshDatabase } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait-for.js';

describe('tenant views of the cluster bus', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("delivers a tenant's messages only to the same tenant on other processes, within the view's limit", async () => {
    const db = await freshDatabase('bus');
    cleanups.push(db.drop);
    const one = new PostgresClusterBus({ url: db.url });
    const two = new PostgresClusterBus({ url: db.url });
    cleanups.push(() => one.close(), () => two.close());
    await Promise.all([one.ready, two.ready]);
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
