/**
 * Issue 33.6: every request gets an answer while storage fails. Against real hub processes:
 * tenant acme's directory on a full 8 MiB tmpfs, the PostgreSQL server of a cluster node stopped,
 * and a tenant over its disk quota. In each, 100 requests of every kind — AHP `dispatchAction`
 * (60,000 characters each, the size that went unanswered before), `createSession`, an HTTP
 * write (`POST /session`, qwen) and an SSE subscription (`GET /v2/sessions/{id}/events`) — must
 * each be answered within 2 s with a named refusal (an SSE stream under a disk quota, a read, is
 * served). Before the fix the dispatch whose batch hit the full disk waited for space (no answer),
 * and so did the `createSession` behind it.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { tenantDir } from '../../server/storage/tenant-logs.js';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { freshDatabase, startPostgres } from '../helpers/postgres.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { TOKENS, tempDir, writeAuthFile } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

const ANSWER_WITHIN_MS = 2_000;
const PER_KIND = 100;
const queued = (id: string, text = id) => ({ type: 'chat/pendingMessageSet', kind: 'queued', id, message: { text, origin: { kind: 'user' } } });

/** What one request got: a named answer (its code / reason) and how long it took, or nothing. */
interface Answer {
  readonly kind: string;
  readonly named: string | undefined;
  readonly ms: number;
}

function fillUp(file: string): void {
  const fd = openSync(file, 'w');
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
}

/** Runs `request` with a deadline: the named answer it resolved to, or undefined when none came in time. */
async function timed(kind: string, request: () => Promise<string | undefined>): Promise<Answer> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ANSWER_WITHIN_MS * 3)));
  const named = await Promise.race([request().catch((err: unknown) => `threw ${String(err)}`), silent]);
  clearTimeout(timer);
  return { kind, named, ms: Date.now() - started };
}

/** 100 requests of every kind against `hub` as `token`; `chat`/`session` exist in its tenant. */
async function requestsOfEveryKind(hub: HubProcess, token: string, chat: string, session: string): Promise<Answer[]> {
  const answers: Answer[] = [];
  const client = await RpcClient.open(hub.wsUrl, { token });
  try {
    await client.subscribe(chat).catch(() => undefined); // refused while storage fails: dispatches still go out
    const big = 'x'.repeat(60_000);
    for (let i = 0; i < PER_KIND; i++) {
      answers.push(
        await timed('dispatch', async () => {
          const seq = client.dispatch(chat, queued(`d-${i}-${Date.now()}`, big));
          const echo = await client.waitForEnvelope((e) => e.origin?.clientSeq === seq, `the answer to clientSeq ${seq}`);
          return echo.rejectionReason === undefined ? 'accepted' : /^(the action log is unavailable|storage quota exceeded)/.exec(echo.rejectionReason)?.[0];
        }),
      );
    }
    for (let i = 0; i < PER_KIND; i++) {
      answers.push(
        await timed('createSession', () =>
          client.createSession(`s-${i}`).then(
            () => 'created',
            (err: unknown) => (err instanceof RpcError && (err.code === ErrorCode.StorageUnavailable || err.code === ErrorCode.StorageQuotaExceeded) ? `rpc ${err.code}` : `unnamed ${String(err)}`),
          ),
        ),
      );
    }
  } finally {
    await client.close();
  }
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const sessionId = session.replace(/^ahp-session:\/+/, '');
  for (let i = 0; i < PER_KIND; i++) {
    answers.push(
      await timed('http', async () => {
        const res = await fetch(`${hub.url}/session`, { method: 'POST', headers, body: JSON.stringify({ title: `h-${i}` }) });
        const body = (await res.json().catch(() => ({}))) as { code?: string; error?: { code?: string } };
        return `${res.status} ${body.code ?? body.error?.code ?? '?'}`;
      }),
    );
    answers.push(
      await timed('sse', async () => {
        const aborter = new AbortController();
        try {
          const res = await fetch(`${hub.url}/v2/sessions/${encodeURIComponent(sessionId)}/events`, { headers, signal: aborter.signal });
          if (res.status === 200) return `200 ${res.headers.get('content-type')}`;
          const body = (await res.json().catch(() => ({}))) as { code?: string };
          return `${res.status} ${body.code ?? '?'}`;
        } finally {
          aborter.abort();
        }
      }),
    );
  }
  return answers;
}

/** Counts per kind and named answer, with the requests answered late or not at all listed apart. */
function tally(answers: readonly Answer[]): { byKind: Record<string, Record<string, number>>; lateOrSilent: string[] } {
  const byKind: Record<string, Record<string, number>> = {};
  const lateOrSilent: string[] = [];
  for (const a of answers) {
    const row = (byKind[a.kind] ??= {});
    const key = a.named ?? 'silent';
    row[key] = (row[key] ?? 0) + 1;
    if (a.named === undefined || a.ms > ANSWER_WITHIN_MS) lateOrSilent.push(`${a.kind}: ${a.named ?? 'no answer'} after ${a.ms} ms`);
  }
  return { byKind, lateOrSilent };
}

describe('every request is answered while storage fails (issue 33.6)', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });
  const start = async (args: string[]): Promise<HubProcess> => {
    const hub = await startHubProcess(['--log-level', 'error', ...args]);
    cleanup.push(async () => {
      if (hub.child.exitCode === null && hub.child.signalCode === null) {
        hub.child.kill('SIGTERM');
        await hub.exited();
      }
    });
    return hub;
  };
  const sessionOf = async (hub: HubProcess, token: string): Promise<{ session: string; chat: string }> => {
    const client = await RpcClient.open(hub.wsUrl, { token });
    try {
      return await client.createSession('target');
    } finally {
      await client.close();
    }
  };

  it('disk full (SQLite on an 8 MiB tmpfs): 100 of each kind answered within 2 s, named; /healthz says degraded', async () => {
    const tmp = tempDir('hub-answers-');
    const acme = tenantDir(tmp.dir, 'acme');
    mkdirSync(acme, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', acme]);
    cleanup.push(() => {
      execFileSync('umount', ['-l', acme]);
      tmp.remove();
    });
    const hub = await start(['--data', tmp.dir, '--auth', writeAuthFile(tmp.dir)]);
    const { session, chat } = await sessionOf(hub, TOKENS.alice);
    fillUp(join(acme, 'filler'));

    const { byKind, lateOrSilent } = tally(await requestsOfEveryKind(hub, TOKENS.alice, chat, session));
    expect(lateOrSilent, JSON.stringify(byKind)).toEqual([]);
    expect(Object.keys(byKind.dispatch ?? {})).toEqual(['the action log is unavailable']);
    expect(Object.keys(byKind.createSession ?? {})).toEqual([`rpc ${ErrorCode.StorageUnavailable}`]);
    expect(Object.keys(byKind.http ?? {})).toEqual(['503 storage_unavailable']);
    expect(Object.keys(byKind.sse ?? {})).toEqual(['503 storage_unavailable']);
    // Up, with its storage failing: not the same answer as a node that is down or draining.
    const health = await fetch(`${hub.url}/healthz`);
    expect({ status: health.status, body: await health.json() }).toMatchObject({ status: 200, body: { status: 'degraded', storage: 'failing' } });
  }, 240_000);

  it('database down (PostgreSQL stopped under a cluster node): 100 of each kind answered within 2 s, named', async () => {
    const postgres = await startPostgres();
    cleanup.push(() => postgres.stop());
    const db = await freshDatabase('answers', postgres.url);
    const hub = await start(['--store', db.url]);
    const { session, chat } = await sessionOf(hub, 'dev');
    postgres.stopServer('fast');

    const { byKind, lateOrSilent } = tally(await requestsOfEveryKind(hub, 'dev', chat, session));
    expect(lateOrSilent, JSON.stringify(byKind)).toEqual([]);
    expect(Object.keys(byKind.dispatch ?? {})).toEqual(['the action log is unavailable']);
    expect(Object.keys(byKind.createSession ?? {})).toEqual([`rpc ${ErrorCode.StorageUnavailable}`]);
    expect(Object.keys(byKind.http ?? {})).toEqual(['503 storage_unavailable']);
    expect(Object.keys(byKind.sse ?? {})).toEqual(['503 storage_unavailable']);
    const health = await fetch(`${hub.url}/healthz`);
    expect({ status: health.status, body: await health.json() }).toMatchObject({ status: 200, body: { status: 'degraded', storage: 'failing' } });
  }, 240_000);

  it('a tenant over its disk quota: 100 of each kind answered within 2 s; writes refused by name, SSE (a read) served', async () => {
    const tmp = tempDir('hub-answers-quota-');
    cleanup.push(() => tmp.remove());
    const hub = await start(['--data', tmp.dir, '--auth', writeAuthFile(tmp.dir), '--tenant-disk-quota', '1m']);
    const { session, chat } = await sessionOf(hub, TOKENS.alice);
    const filler = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
    cleanup.push(() => filler.close());
    await filler.subscribe(chat);
    let n = 0;
    await waitFor(async () => (await filler.dispatchAndWait(chat, queued(`fill-${n++}`, 'y'.repeat(30_000)))).rejectionReason, { what: 'the quota to refuse a write', timeoutMs: 30_000 });
    // Fill a second chat's worth is not needed: the quota counts the tenant's whole log.

    const { byKind, lateOrSilent } = tally(await requestsOfEveryKind(hub, TOKENS.alice, chat, session));
    expect(lateOrSilent, JSON.stringify(byKind)).toEqual([]);
    expect(Object.keys(byKind.dispatch ?? {})).toEqual(['storage quota exceeded']);
    expect(Object.keys(byKind.createSession ?? {})).toEqual([`rpc ${ErrorCode.StorageQuotaExceeded}`]);
    expect(Object.keys(byKind.http ?? {})).toEqual(['507 storage_quota_exceeded']);
    expect(Object.keys(byKind.sse ?? {})).toEqual(['200 text/event-stream; charset=utf-8']);
    expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
  }, 240_000);
});
