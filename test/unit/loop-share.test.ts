/**
 * LoopShare (issue 18.7): a burst of work items passes at most `perTurn` per event-loop turn, in
 * arrival order, and other work scheduled meanwhile (here: immediates standing in for a
 * `/healthz` request) runs between the shares instead of after the whole burst.
 */
import { expect, it } from 'vitest';
import { LoopShare } from '../../server/loop-share.js';

it('lets a burst through a share per event-loop turn, in order, with other work in between', async () => {
  const share = new LoopShare(4);
  const order: string[] = [];
  const items = Array.from({ length: 10 }, async (_, i) => {
    const wait = share.turn();
    if (wait) await wait;
    order.push(`item ${i}`);
  });
  // Other work that arrives while the burst is being handled, once per turn.
  let ticks = 0;
  const other = (async () => {
    for (; ticks < 3; ticks++) {
      await new Promise((r) => setImmediate(r));
      order.push(`other ${ticks}`);
    }
  })();
  await Promise.all([...items, other]);
  const items0 = order.filter((o) => o.startsWith('item'));
  expect(items0).toEqual(Array.from({ length: 10 }, (_, i) => `item ${i}`));
  expect(share.deferred).toBe(6);
  // The first share ran at once; the other work got a turn before the last items.
  expect(order.slice(0, 4)).toEqual(['item 0', 'item 1', 'item 2', 'item 3']);
  expect(order.indexOf('other 0')).toBeLessThan(order.indexOf('item 9'));
});

it('lets every item through at once while a turn is not used up', () => {
  const share = new LoopShare(32);
  for (let i = 0; i < 32; i++) expect(share.turn()).toBeUndefined();
  expect(share.turn()).toBeInstanceOf(Promise);
});
