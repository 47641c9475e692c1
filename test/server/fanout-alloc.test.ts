/**
 * The fan-out allocates nothing per receiver (issue 32): one envelope published to 100 immediate
 * subscribers costs the same heap whatever their number — the encoded text and its frame are
 * shared, and the per-receiver path (`sendOrCloseSlow` → `sendOrQueue` → the connection's send and
 * its unsent budgets) creates no object. Counted, not timed: the V8 heap's bytes between two full
 * GCs (`v8.GCProfiler`), so the figure does not depend on the machine's load.
 */
import { runInNewContext } from 'node:vm';
import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import type { Connection } from '../../server/hub/connection.js';
import { ChannelFanout } from '../../server/hub/fanout.js';
import { encodeEnvelope } from '../../server/hub/envelope-text.js';
import { UnsentBudget } from '../../server/hub/unsent-budget.js';

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap bytes `fn` allocates per call, over `calls` calls between two full GCs. */
function bytesPerCall(fn: () => void, calls: number): number {
  gc();
  const start = v8.getHeapStatistics().used_heap_size;
  const profiler = new v8.GCProfiler();
  profiler.start();
  for (let i = 0; i < calls; i++) fn();
  gc();
  let allocated = 0;
  let previous = start;
  for (const s of profiler.stop().statistics) {
    allocated += Math.max(0, s.beforeGC.heapStatistics.usedHeapSize - previous);
    previous = s.afterGC.heapStatistics.usedHeapSize;
  }
  return allocated / calls;
}

/** A receiver as cheap as can be: counts its frames, holds nothing unsent. */
class CountingConnection implements Connection {
  frames = 0;
  readonly bufferedAmount = 0;
  readonly isOpen = true;
  constructor(
    readonly id: string,
    readonly unsentBudget: UnsentBudget,
  ) {}
  send(): void {
    this.frames++;
  }
  close(): void {}
}

describe('fan-out allocations', () => {
  it('publishing one envelope to 100 subscribers allocates nothing per receiver', () => {
    const tenant = new UnsentBudget(1024 ** 3, (c) => c.bufferedAmount);
    const principal = new UnsentBudget(1024 ** 3, (c) => c.bufferedAmount, tenant);
    const fanout = new ChannelFanout();
    const receivers = Array.from({ length: 100 }, (_, i) => new CountingConnection(`c${i}`, principal));
    for (const r of receivers) fanout.add(r, 0, 0);
    const envelope: ActionEnvelope = { channel: 'ahp-chat:/c', serverSeq: 1, action: { type: 'chat/delta', turnId: 't1', partId: 'p1', content: 'hello' } };
    const text = encodeEnvelope(envelope);
    const publish = (): void => fanout.publish(envelope, text);
    bytesPerCall(publish, 20_000); // warm-up: optimised code, as in a running hub
    const perPublish = bytesPerCall(publish, 50_000);
    expect(receivers.every((r) => r.frames === 70_000)).toBe(true);
    // Before the fix: 4,000 bytes per publish (a 40-byte context per receiver).
    expect(perPublish).toBeLessThan(400);
  });
});
