/**
 * SQLite storage failures with a real hub process and a real small file system: tenant `acme`'s
 * directory is its own 8 MiB tmpfs (`mount -t tmpfs -o size=8m`), tenant `evil` stays on the
 * ordinary disk. A full disk, a restart on a full disk and a read-only mount each make acme's
 * writes fail clearly (`StorageUnavailable`) while the process and the other tenant keep
 * working, and acme recovers by itself when space returns; nothing acknowledged is lost. The
 * per-tenant disk quota refuses one tenant's writes with `StorageQuotaExceeded`.
 *
 * Before the fix a failed append ended the process ("fatal storage failure; exiting"), and a
 * tenant whose log could not be opened kept the whole hub from starting.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { tenantDir } from '../../server/storage/tenant-logs.js';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { TOKENS, tempDir, writeAuthFile } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

const alive = (n: HubProcess): boolean => n.child.exitCode === null && n.child.signalCode === null;
const queued = (id: string, text = id) => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: { text, origin: { kind: 'user' } } });
type Queued = { queuedMessages?: Array<{ id: string }> };

/** A data dir whose tenant `acme` lives on its own small tmpfs. */
function dataDirWithSmallAcmeDisk() {
  const tmp = tempDir('hub-disk-');
  const acme = tenantDir(tmp.dir, 'acme');
  mkdirSync(acme, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', acme]);
  const filler = join(acme, 'filler');
  return {
    dir: tmp.dir,
    auth: writeAuthFile(tmp.dir),
    /** Writes a file until the tmpfs has no byte left. */
    fill(): void {
      const fd = openSync(filler, 'w');
      const chunk = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        for (let size = 32 * 1024; size >= 1; size = Math.floor(size / 2)) {
          try {
            for (;;) writeSync(fd, chunk, 0, size);
          } catch {
            // this size no longer fits; try a smaller one
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free(): void {
      unlinkSync(filler);
    },
    remount(mode: 'ro' | 'rw'): void {
      execFileSync('mount', ['-o', `remount,${mode}`, acme]);
    },
    remove(): void {
      execFileSync('umount', [acme]);
      tmp.remove();
    },
  };
}

/** Every id in a chat's queued messages, read by a fresh client of `token`. */
async function queuedIds(hub: HubProcess, token: string, chat: string): Promise<Set<string>> {
  const client = await RpcClient.open(hub.wsUrl, { token });
  try {
    return new Set(((await client.subscribe<Queued>(chat)).state.queuedMessages ?? []).map((m) => m.id));
  } finally {
    await client.close();
  }
}

/** A session with a few acknowledged messages; returns its chat and the ids echoed. */
async function sessionWithMessages(hub: HubProcess, token: string, prefix: string, count: number): Promise<{ chat: string; ids: string[] }> {
  const client = await RpcClient.open(hub.wsUrl, { token });
  try {
    const { chat } = await client.createSession(prefix);
    await client.subscribe(chat);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const echo = await client.dispatchAndWait(chat, queued(`${prefix}-${i}`));
      expect(echo.rejectionReason).toBeUndefined();
      ids.push(`${prefix}-${i}`);
    }
    return { chat, ids };
  } finally {
    await client.close();
  }
}

/** True once a write by `token` on `hub` is accepted; a clear storage refusal (any surface) is retried. */
async function writeAccepted(hub: HubProcess, token: string, chat: string, id: string): Promise<boolean> {
  let client: RpcClient;
  try {
    client = await RpcClient.open(hub.wsUrl, { token });
  } catch (err) {
    // The tenant's log cannot be opened yet: the upgrade is refused with 503.
    expect(String(err)).toMatch(/HTTP 503/);
    return false;
  }
  try {
    await client.subscribe(chat);
    const echo = await client.dispatchAndWait(chat, queued(id));
    if (echo.rejectionReason === undefined) return true;
    expect(echo.rejectionReason).toMatch(/^the action log is unavailable/);
    return false;
  } catch (err) {
    expect(err instanceof RpcError ? err.code : String(err)).toBe(ErrorCode.StorageUnavailable);
    return false;
  } finally {
    await client.close();
  }
}

describe('SQLite storage failures', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });
  const start = async (dir: string, auth: string, extra: string[] = []): Promise<HubProcess> => {
    const hub = await startHubProcess(['--data', dir, '--auth', auth, '--log-level', 'warn', ...extra]);
    cleanup.push(async () => {
      if (alive(hub)) {
        hub.child.kill('SIGTERM');
        await hub.exited();
      }
    });
    return hub;
  };
  const stop = async (hub: HubProcess): Promise<void> => {
    hub.child.kill('SIGTERM');
    expect((await hub.exited()).code).toBe(0);
  };

  it("a full disk refuses that tenant's writes clearly while the hub and other tenants work, and nothing acknowledged is lost once space returns", async () => {
    const disk = dataDirWithSmallAcmeDisk();
    cleanup.push(() => disk.remove());
    let hub = await start(disk.dir, disk.auth);
    const { chat, ids } = await sessionWithMessages(hub, TOKENS.alice, 'before', 3);
    const echoed = new Set(ids);

    disk.fill();
    const alice = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
    cleanup.push(() => alice.close());
    await alice.subscribe(chat);
    // Big messages need new pages: the batch that hits the full disk is kept and retried, and
    // the writes after it are refused at once, with the reason.
    const sent = new Map<number, string>();
    const refusal = await waitFor(
      () => {
        const id = `full-${sent.size}`;
        sent.set(alice.dispatch(chat, queued(id, 'x'.repeat(20_000))), id);
        return alice.envelopes.find((e) => e.rejectionReason !== undefined);
      },
      { what: 'a write refused on the full disk', timeoutMs: 15_000 },
    );
    expect(refusal.rejectionReason).toMatch(/^the action log is unavailable: .*(full|SQLITE_FULL)/i);
    await expect(alice.createSession('refused')).rejects.toMatchObject({ code: ErrorCode.StorageUnavailable });
    // Up, storage failing: 200 `degraded` (issue 33.6), not the 503 of a node that is going away.
    const health = await fetch(`${hub.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'degraded', storage: 'failing' });

    // The other tenant is on another disk: it keeps working, and the process stays up.
    const other = await sessionWithMessages(hub, TOKENS.mallory, 'other', 2);
    expect(alive(hub)).toBe(true);

    // Every dispatch gets its answer while the disk is still full (issue 33.6): the batch in
    // doubt is abandoned after a second ("not applied … send it again"), the rest refused at once.
    await waitFor(() => ([...sent.keys()].every((seq) => alice.envelopes.some((e) => e.origin?.clientSeq === seq)) ? true : undefined), {
      what: 'an answer to every dispatch on the full disk',
      timeoutMs: 15_000,
    });
    expect(alice.envelopes.filter((e) => e.origin && sent.has(e.origin.clientSeq)).every((e) => /^the action log is unavailable/.test(e.rejectionReason ?? ''))).toBe(true);
    disk.free();
    // Answered before space returned: the echoes (none) and refusals stay what they were.
    await waitFor(() => ([...sent.keys()].every((seq) => alice.envelopes.some((e) => e.origin?.clientSeq === seq)) ? true : undefined), {
      what: 'an answer to every dispatch once space returned',
      timeoutMs: 15_000,
    });
    for (const e of alice.envelopes) if (e.rejectionReason === undefined && e.origin) echoed.add(sent.get(e.origin.clientSeq)!);
    await waitFor(() => writeAccepted(hub, TOKENS.alice, chat, 'after'), { what: 'acme writes again', timeoutMs: 15_000 });
    echoed.add('after');
    expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);

    // Nothing acknowledged is lost: a restart on the same data dir has every echoed message.
    await alice.close();
    await stop(hub);
    hub = await start(disk.dir, disk.auth);
    const stored = await queuedIds(hub, TOKENS.alice, chat);
    for (const id of echoed) expect(stored.has(id), id).toBe(true);
    expect(await queuedIds(hub, TOKENS.mallory, other.chat)).toEqual(new Set(other.ids));
  }, 90_000);

  it('starts on a full disk and on a read-only data dir: the other tenant works, the stricken one refuses clearly and recovers by itself', async () => {
    const disk = dataDirWithSmallAcmeDisk();
    cleanup.push(() => disk.remove());
    let hub = await start(disk.dir, disk.auth);
    const acme = await sessionWithMessages(hub, TOKENS.alice, 'acme', 2);
    const evil = await sessionWithMessages(hub, TOKENS.mallory, 'evil', 1);
    await stop(hub);

    for (const strike of ['full disk', 'read-only'] as const) {
      if (strike === 'full disk') disk.fill();
      else disk.remount('ro');
      hub = await start(disk.dir, disk.auth);
      // The other tenant reads and writes.
      expect(await writeAccepted(hub, TOKENS.mallory, evil.chat, `evil-${strike}`)).toBe(true);
      // The stricken tenant is refused clearly, whether its log opened (writes refused) or not (503).
      expect(await writeAccepted(hub, TOKENS.alice, acme.chat, `acme-${strike}-refused`)).toBe(false);
      expect(alive(hub)).toBe(true);

      if (strike === 'full disk') disk.free();
      else disk.remount('rw');
      await waitFor(() => writeAccepted(hub, TOKENS.alice, acme.chat, `acme-${strike}`), { what: `acme writes after the ${strike}`, timeoutMs: 20_000 });
      const stored = await queuedIds(hub, TOKENS.alice, acme.chat);
      for (const id of [...acme.ids, `acme-${strike}`]) expect(stored.has(id), id).toBe(true);
      await stop(hub);
    }
  }, 90_000);

  it('a tenant over its disk quota is refused with StorageQuotaExceeded; other tenants keep writing', async () => {
    const tmp = tempDir('hub-quota-');
    cleanup.push(() => tmp.remove());
    const hub = await start(tmp.dir, writeAuthFile(tmp.dir), ['--tenant-disk-quota', '1m']);
    const alice = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
    cleanup.push(() => alice.close());
    const { chat } = await alice.createSession('big');
    await alice.subscribe(chat);
    let n = 0;
    const refused = await waitFor(
      async () => {
        const echo = await alice.dispatchAndWait(chat, queued(`big-${n++}`, 'y'.repeat(30_000)));
        return echo.rejectionReason;
      },
      { what: 'the quota to refuse a write', timeoutMs: 20_000 },
    );
    expect(refused).toMatch(/^storage quota exceeded: this tenant's log and snapshots take [\d.]+ MiB of its 1\.0 MiB disk quota/);
    await expect(alice.createSession('more')).rejects.toMatchObject({ code: ErrorCode.StorageQuotaExceeded });
    // The other tenant's quota is its own.
    await sessionWithMessages(hub, TOKENS.mallory, 'small', 2);
    expect(alive(hub)).toBe(true);
  }, 60_000);
});
