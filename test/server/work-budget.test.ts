/**
 * The per-connection inbound budget counts work (bytes, at least one unit a frame), not messages:
 * many small streamed deltas pass where a few large frames use the same budget up, and a
 * connection that stays over budget is refused with -32020 and then closed with 4029.
 */
import { describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { CloseCode } from '../../server/hub/connection.js';
import { DEFAULT_RATE_LIMIT, RpcRouter } from '../../server/ahp/rpc.js';
import { silentLogger } from '../../server/log.js';
import { FakeConnection } from '../helpers/fake-connection.js';

function routerWith(limit: ConstructorParameters<typeof RpcRouter>[2]) {
  const router = new RpcRouter(silentLogger, () => 0, limit);
  const conn = new FakeConnection('c');
  return { router, conn, ctx: { conn, principal: DEV_PRINCIPAL, state: router.newConnectionState() } };
}

describe('inbound work budget', () => {
  it('charges a frame by its bytes: ten 100-byte frames fit where one 1,000-byte frame uses the same budget', () => {
    const small = routerWith({ perSecond: 1, burst: 10, overdraft: 0, bytesPerUnit: 100 });
    const admitted = Array.from({ length: 10 }, () => small.router.admit(small.ctx, 100));
    expect(admitted.every((a) => a === 'admitted')).toBe(true);
    expect(small.router.admit(small.ctx, 100)).toBe('refused');

    const large = routerWith({ perSecond: 1, burst: 10, overdraft: 0, bytesPerUnit: 100 });
    expect(large.router.admit(large.ctx, 1_000)).toBe('admitted');
    expect(large.router.admit(large.ctx, 1)).toBe('refused');
  });

  it('charges at least one unit per frame, so a flood of empty frames runs out too', () => {
    const { router, ctx } = routerWith({ perSecond: 1, burst: 3, overdraft: 0 });
    expect([router.admit(ctx, 0), router.admit(ctx, 0), router.admit(ctx, 0), router.admit(ctx, 0)]).toEqual(['admitted', 'admitted', 'admitted', 'refused']);
  });

  it('closes with 4029 after another overdraft of refusals in a row', () => {
    const { router, conn, ctx } = routerWith({ perSecond: 1, burst: 2, overdraft: 2 });
    for (let i = 0; i < 4; i++) expect(router.admit(ctx, 10)).toBe('admitted'); // 2 in budget, 2 on credit
    expect(router.admit(ctx, 10)).toBe('refused');
    expect(router.admit(ctx, 10)).toBe('refused');
    expect(conn.closed).toBeUndefined();
    expect(router.admit(ctx, 10)).toBe('refused');
    expect(conn.closed?.code).toBe(CloseCode.RateLimited);
  });

  it("lets the default budget take a fast agent's small deltas: thousands of 200-byte frames in a burst", () => {
    const { router, ctx } = routerWith(DEFAULT_RATE_LIMIT);
    let admitted = 0;
    for (let i = 0; i < 20_000; i++) if (router.admit(ctx, 200) === 'admitted') admitted++;
    expect(admitted).toBe(20_000);
    expect(router.resumeDelayMs(ctx.state)).toBe(0);
  });
});
