/**
 * The hub's side of the seam (server/hub/hub-port.ts): hooks are called in HOOK_ORDER whatever
 * order they were registered in, "a turn ended" is derived once per turn with its reason, and
 * `submitAs` refusals carry stable codes from the error-code table.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { DEV_PRINCIPAL, Role } from '../../server/auth/auth.js';
import { Hub } from '../../server/hub/hub.js';
import type { TurnEndedEvent } from '../../server/hub/hub-port.js';
import { silentLogger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';

async function openHub(): Promise<{ hub: Hub; chat: string }> {
  let n = 0;
  const hub = await Hub.open({
    log: new MemoryActionLog(),
    logger: silentLogger,
    now: () => 1_000,
    newId: () => `id-${++n}`,
    agents: [{ provider: 'remote', displayName: 'Remote' }],
    defaultProvider: 'remote',
  });
  const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/hooks' });
  return { hub, chat };
}

const start = (turnId: string) => ({ type: 'chat/turnStarted', turnId, startedAt: '1970-01-01T00:00:00.000Z', message: { text: 'go', origin: { kind: 'user' } } });

describe('hub hooks and submit outcomes', () => {
  it('calls hooks in HOOK_ORDER (agents before steering before collab), not in registration order', async () => {
    const { hub, chat } = await openHub();
    const calls: string[] = [];
    hub.hook('collab', { afterCommit: () => void calls.push('collab') });
    hub.hook('extension', { afterCommit: () => void calls.push('extension') });
    hub.hook('steering', { afterCommit: () => void calls.push('steering') });
    hub.hook('agents', { afterCommit: () => void calls.push('agents') });
    await hub.submitAs(DEV_PRINCIPAL, chat, start('t1'));
    expect(calls).toEqual(['agents', 'steering', 'collab', 'extension']);
    await hub.close();
  });

  it('announces each turn end once, after every afterCommit hook, with the reason of the action that ended it', async () => {
    const { hub, chat } = await openHub();
    const seen: string[] = [];
    const ended: TurnEndedEvent[] = [];
    hub.hook('steering', { afterCommit: (e) => void seen.push(`commit ${e.action.type}`), turnEnded: (e) => void seen.push(`ended ${e.turnId}`) });
    hub.hook('collab', { afterCommit: (e) => void seen.push(`collab ${e.action.type}`), turnEnded: (e) => void ended.push(e) });
    await hub.submitAs(DEV_PRINCIPAL, chat, start('t1'));
    await hub.submitAs(DEV_PRINCIPAL, chat, { type: 'chat/turnCancelled', turnId: 't1', duration: 1 });
    await hub.submitAs(DEV_PRINCIPAL, chat, start('t2'));
    await hub.dispatchServer(chat, { type: 'chat/turnComplete', turnId: 't2', duration: 1 });
    expect(ended.map((e) => [e.turnId, e.reason, e.chat])).toEqual([
      ['t1', 'cancelled', chat],
      ['t2', 'completed', chat],
    ]);
    expect(seen.slice(2, 5)).toEqual(['commit chat/turnCancelled', 'collab chat/turnCancelled', 'ended t1']);
    await hub.close();
  });

  it('gives the committed action to hooks also as the typed union (known) for known action types', async () => {
    const { hub, chat } = await openHub();
    let turnId: string | undefined;
    hub.hook('extension', {
      afterCommit: (e) => {
        if (e.known?.type === 'chat/turnStarted') turnId = e.known.turnId;
      },
    });
    await hub.submitAs(DEV_PRINCIPAL, chat, start('typed'));
    expect(turnId).toBe('typed');
    await hub.close();
  });

  it('announces a commit a hook dispatches from its own hook after the current one: later hooks see serverSeq strictly increasing', async () => {
    const { hub, chat } = await openHub();
    const seen: number[] = [];
    let dispatched = false;
    // An early owner that reacts to a commit by dispatching another action (as steering does).
    hub.hook('steering', {
      afterCommit: (e) => {
        if (e.action.type !== 'chat/turnStarted' || dispatched) return;
        dispatched = true;
        void hub.dispatchServer(chat, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: 'from a hook' } });
      },
    });
    hub.hook('extension', { afterCommit: (e) => void seen.push(e.serverSeq) });
    await hub.submitAs(DEV_PRINCIPAL, chat, start('t1'));
    await hub.drain();
    expect(dispatched).toBe(true);
    expect(seen.length).toBe(2);
    expect(seen[1]!).toBeGreaterThan(seen[0]!);
    await hub.close();
  });

  it('runs the delivered phase only once the commit is in the log, in serverSeq order, also for dispatches made from it', async () => {
    const log = new MemoryActionLog();
    const appended: number[] = [];
    const append = log.append.bind(log);
    log.append = async (head, records) => {
      const result = await append(head, records);
      for (const r of records) appended.push(r.serverSeq);
      return result;
    };
    let n = 0;
    const hub = await Hub.open({ log, logger: silentLogger, now: () => 1_000, newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'Remote' }], defaultProvider: 'remote' });
    const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/delivered' });
    const delivered: Array<{ seq: number; durable: boolean }> = [];
    hub.hook('steering', {
      afterDurable: (e) => {
        if (e.action.type === 'chat/turnStarted') void hub.dispatchServer(chat, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: 'x' } });
      },
    });
    hub.hook('extension', { afterDurable: (e) => void delivered.push({ seq: e.serverSeq, durable: appended.includes(e.serverSeq) }) });
    await hub.submitAs(DEV_PRINCIPAL, chat, start('t1'));
    await hub.submitAs(DEV_PRINCIPAL, chat, { type: 'chat/turnCancelled', turnId: 't1', duration: 1 });
    await hub.drain();
    expect(delivered.length).toBe(3);
    expect(delivered.every((d) => d.durable)).toBe(true);
    expect(delivered.map((d) => d.seq)).toEqual([...delivered.map((d) => d.seq)].sort((a, b) => a - b));
    await hub.close();
  });

  it('runs the effects a commit phase registers on the commit after its append, before every afterDurable, and at once when registered late', async () => {
    const log = new MemoryActionLog();
    const appended: number[] = [];
    const append = log.append.bind(log);
    log.append = async (head, records) => {
      const result = await append(head, records);
      for (const r of records) appended.push(r.serverSeq);
      return result;
    };
    let n = 0;
    const hub = await Hub.open({ log, logger: silentLogger, now: () => 1_000, newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'Remote' }], defaultProvider: 'remote' });
    const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/effects' });
    const steps: string[] = [];
    hub.hook('leases', { afterDurable: (e) => e.channel === chat && steps.push(`leases afterDurable ${e.serverSeq}`) });
    hub.hook('collab', {
      afterCommit: (e) => {
        if (e.channel !== chat) return;
        steps.push(`commit ${e.serverSeq}`);
        e.afterAppend(() => steps.push(`effect ${e.serverSeq} appended=${appended.includes(e.serverSeq)}`));
      },
      afterDurable: (e) => {
        if (e.channel !== chat) return;
        e.afterAppend(() => steps.push(`late effect ${e.serverSeq}`));
        steps.push(`collab afterDurable ${e.serverSeq}`);
      },
    });
    const first = await hub.submitAs(DEV_PRINCIPAL, chat, start('t1'));
    const seq = first.ok ? first.serverSeq : -1;
    await hub.drain();
    expect(steps).toEqual([`commit ${seq}`, `effect ${seq} appended=true`, `leases afterDurable ${seq}`, `late effect ${seq}`, `collab afterDurable ${seq}`]);
    await hub.close();
  });

  it('never runs the effects registered on a commit whose append failed', async () => {
    const log = new MemoryActionLog();
    let n = 0;
    const hub = await Hub.open({ log, logger: silentLogger, now: () => 1_000, newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'Remote' }], defaultProvider: 'remote' });
    const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/effects-failed' });
    const ran: number[] = [];
    const registered: number[] = [];
    hub.hook('collab', {
      afterCommit: (e) => {
        if (e.channel !== chat) return;
        registered.push(e.serverSeq);
        e.afterAppend(() => ran.push(e.serverSeq));
      },
    });
    // The disk stays full: the batch goes into doubt and is abandoned (the log's head shows it lacks it).
    log.append = async () => {
      throw new Error('disk full');
    };
    await expect(hub.submitAs(DEV_PRINCIPAL, chat, start('t1'))).rejects.toThrow(/action log is unavailable/);
    expect(registered.length).toBe(1);
    expect(ran).toEqual([]);
    await hub.close();
  });

  it('refuses with stable codes: NotFound, PermissionDenied, TurnInProgress, InvalidParams', async () => {
    const { hub, chat } = await openHub();
    expect(await hub.submitAs(DEV_PRINCIPAL, 'ahp-chat:/nowhere', start('x'))).toMatchObject({ ok: false, code: ErrorCode.NotFound });
    const viewer = { ...DEV_PRINCIPAL, role: Role.Viewer };
    expect(await hub.submitAs(viewer, chat, start('x'))).toMatchObject({ ok: false, code: ErrorCode.PermissionDenied });
    expect(await hub.submitAs(DEV_PRINCIPAL, chat, start('t1'))).toMatchObject({ ok: true });
    const busy = await hub.submitAs(DEV_PRINCIPAL, chat, start('t2'));
    expect(busy).toMatchObject({ ok: false, code: ErrorCode.TurnInProgress });
    expect(busy.ok ? '' : busy.message).toMatch(/already in progress \(t1\)/);
    expect(await hub.submitAs(DEV_PRINCIPAL, chat, { type: 'chat/turnCancelled', turnId: 'not-running', duration: 1 })).toMatchObject({ ok: false, code: ErrorCode.InvalidParams });
    await hub.close();
  });
});
