import { describe, expect, it } from 'vitest';
import type { Connection } from '../../server/hub/connection.js';
import { UnsentBudget } from '../../server/hub/unsent-budget.js';

/** A connection whose unsent bytes the test sets; records how it was closed. */
function fakeConnection(id: string): Connection & { unsent: number; closedWith?: number } {
  return {
    id,
    unsent: 0,
    send() {},
    close(code: number) {
      this.closedWith = code;
    },
    get bufferedAmount() {
      return this.unsent;
    },
  } as Connection & { unsent: number; closedWith?: number };
}

describe('unsent data across connections (issue 33.5a)', () => {
  const measure = (c: Connection): number => c.bufferedAmount;

  it('past the per-user bound the connections holding the most are closed (4008) until the rest fit', () => {
    const user = new UnsentBudget(1_000, measure);
    const conns = [100, 400, 300, 250].map((bytes, i) => Object.assign(fakeConnection(`c${i}`), { unsent: bytes }));
    for (const c of conns) user.note(c, c.unsent);
    expect(conns.map((c) => c.closedWith)).toEqual([undefined, 4008, undefined, undefined]);
    expect(user.total).toBe(650);
    expect(user.connections).toBe(3);
  });

  it('measures again before closing: a connection that drained since its last send is not counted high', () => {
    const user = new UnsentBudget(1_000, measure);
    const drained = Object.assign(fakeConnection('drained'), { unsent: 900 });
    user.note(drained, 900);
    drained.unsent = 0; // the socket wrote it out; nothing was sent to it since
    const other = Object.assign(fakeConnection('other'), { unsent: 500 });
    user.note(other, 500);
    expect([drained.closedWith, other.closedWith]).toEqual([undefined, undefined]);
    expect(user.total).toBe(500);
  });

  it("the tenant's bound spans its users: the slowest consumer of the tenant is closed, whoever it belongs to", () => {
    const tenant = new UnsentBudget(1_000, measure);
    const alice = new UnsentBudget(800, measure, tenant);
    const bob = new UnsentBudget(800, measure, tenant);
    const a = Object.assign(fakeConnection('a'), { unsent: 300 });
    const b = Object.assign(fakeConnection('b'), { unsent: 600 });
    alice.note(a, 300);
    bob.note(b, 600);
    const a2 = Object.assign(fakeConnection('a2'), { unsent: 200 });
    alice.note(a2, 200);
    expect([a.closedWith, b.closedWith, a2.closedWith]).toEqual([undefined, 4008, undefined]);
    expect(tenant.total).toBe(500);
    bob.forget(b);
    expect(tenant.connections).toBe(2);
  });
});
