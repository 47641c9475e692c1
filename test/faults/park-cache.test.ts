/**
 * The parked-session cache (session-parking.ts) failing under a real hub process, on SQLite and
 * as a cluster node on a real PostgreSQL. It is only a cache: the log holds every session.
 *
 * - Its file overwritten with garbage while sessions are parked: the process stays up, a client
 *   touching a parked session gets `StorageUnavailable` (or its connection closed 4503, the tenant
 *   reload), never a stack trace, and once the tenant is rebuilt from its log every session reads
 *   whole; the warning (`park_cache_unreadable`) is logged once.
 * - Its directory on a full disk (TMPDIR a real 1 MiB tmpfs): the sessions that do not fit stay
 *   in memory, every session reads whole, one warning (`park_cache_write_failed`).
 *
 * Before the fix the damaged file's SQLite error was thrown out of the lookup (the subscribe
 * answered InternalError; the hub kept its broken memory) and a full disk was not reported.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import type { ActionLog } from '../../server/storage/action-log.js';
import { PostgresStore } from '../../server/storage/postgres-store.js';
import { sqliteTenantLogs } from '../../server/storage/tenant-logs.js';
import { ErrorCode } from '../../shared/protocol/errors.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { startHubProcess, type HubProcess, metricOf } from '../helpers/hub-process.js';
import { freshDatabase } from '../helpers/postgres.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { waitFor } from '../helpers/wait-for.js';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Backend {
  open(): Promise<{ log: ActionLog; done: () => Promise<void> }>;
  readonly args: string[];
}

async function sqliteBackend(): Promise<Backend> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ahp-park-cache-'));
  closers.push(() => rmSync(dataDir, { recursive: true, force: true }));
  return {
    async open() {
      const logs = sqliteTenantLogs(dataDir);
      return { log: await logs.open(DEV_PRINCIPAL.tenant), done: () => logs.close() };
    },
    args: ['--data', dataDir],
  };
}

async function postgresBackend(): Promise<Backend> {
  const db = await freshDatabase('park_cache');
  closers.push(() => db.drop());
  return {
    async open() {
      const store = await PostgresStore.open({ url: db.url });
      return { log: await store.actionLog(DEV_PRINCIPAL.tenant), done: () => store.close() };
    },
    args: ['--store', db.url, '--log-level', 'warn'],
  };
}

const sessionUri = (i: number): string => `ahp-session:/cached-${i}`;

/** Writes `count` sessions with one answer of `chars` characters each; returns the answers. */
async function writeTenant(backend: Backend, count: number, chars: number): Promise<string[]> {
  const { log, done } = await backend.open();
  let n = 0;
  const hub = await Hub.open({ log, logger: silentLogger, now: () => 1_000 + n, newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'R' }], defaultProvider: 'remote' });
  const answers: string[] = [];
  for (let i = 0; i < count; i++) {
    const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: sessionUri(i), title: `cached ${i}` });
    await hub.dispatchServer(chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: '1970-01-01T00:00:01.000Z', message: { text: `question ${i}`, origin: { kind: 'user' } } } as WireAction);
    await hub.dispatchServer(chat, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: '' } } as WireAction);
    let answer = '';
    for (let k = 0; answer.length < chars; k++) {
      const piece = `${i}:${k}:`.padEnd(20_000, String.fromCharCode(97 + ((i + k) % 26)));
      answer += piece;
      await hub.dispatchServer(chat, { type: 'chat/delta', turnId: 't1', partId: 'p1', content: piece } as WireAction);
    }
    await hub.dispatchServer(chat, { type: 'chat/turnComplete', turnId: 't1', duration: 1 } as WireAction);
    answers.push(answer);
  }
  await hub.close();
  await done();
  return answers;
}

async function start(backend: Backend, parkTmp: string): Promise<HubProcess> {
  const hub = await startHubProcess(backend.args, { env: { HUB_PARK_IDLE_MS: '100', TMPDIR: parkTmp } });
  closers.push(async () => {
    hub.child.kill('SIGTERM');
    await hub.exited();
  });
  return hub;
}

const answerOf = (state: ChatState): string => (state.turns[0]?.responseParts[0] as { content?: string } | undefined)?.content ?? '';
const alive = (hub: HubProcess): boolean => hub.child.exitCode === null && hub.child.signalCode === null;
const occurrences = (text: string, code: string): number => text.split('\n').filter((l) => l.includes(`"code":"${code}"`)).length;

/** Session i's answer as a fresh client reads it. */
async function readAnswer(hub: HubProcess, i: number): Promise<string> {
  const client = await RpcClient.open(hub.wsUrl);
  try {
    const { state: session } = await client.subscribe<{ defaultChat: string }>(sessionUri(i));
    return answerOf((await client.subscribe<ChatState>(session.defaultChat)).state);
  } finally {
    await client.close();
  }
}

describe.each([
  { kind: 'SQLite, single node', makeBackend: sqliteBackend },
  { kind: 'PostgreSQL, cluster node', makeBackend: postgresBackend },
])('the park cache failing under a live hub process ($kind)', ({ makeBackend }) => {
  it('a damaged cache file: StorageUnavailable or a reload close (never a stack trace), the process stays up, and the tenant rebuilt from its log reads whole', async () => {
    const backend = await makeBackend();
    const answers = await writeTenant(backend, 3, 40_000);
    const parkTmp = mkdtempSync(join(tmpdir(), 'park-tmp-'));
    closers.push(() => rmSync(parkTmp, { recursive: true, force: true }));
    const hub = await start(backend, parkTmp);
    await waitFor(async () => ((await metricOf(hub, 'ahp_hub_parked_sessions')) === 3 ? true : undefined), { what: 'every session parked', timeoutMs: 20_000 });
    const [dir] = readdirSync(parkTmp).filter((n) => n.startsWith(`ahp-hub-parked-${hub.child.pid}-`));
    writeFileSync(join(parkTmp, dir!, 'parked.db'), Buffer.alloc(256 * 1024, 0x5a));

    const client = await RpcClient.open(hub.wsUrl);
    closers.push(() => client.close());
    const { state: session } = await client.subscribe<{ defaultChat: string }>(sessionUri(1));
    const outcome = await client.subscribe<ChatState>(session.defaultChat).then(
      () => 'answered',
      (err: unknown) => err,
    );
    if (outcome instanceof RpcError) {
      expect(outcome.code).toBe(ErrorCode.StorageUnavailable);
      expect(outcome.message).toMatch(/parked-session cache could not be read back/);
      expect(outcome.message).not.toMatch(/\n\s+at /);
    } else {
      // The tenant reload closed the connection before the answer went out.
      expect(outcome).toBeInstanceOf(Error);
      await waitFor(() => (client.closed ? true : undefined), { what: 'the reload to close the connection' });
      expect(client.closeCode).toBe(4503);
    }

    // The rebuilt tenant (recovered from the log) has every session whole.
    for (let i = 0; i < answers.length; i++) {
      const answer = await waitFor(() => readAnswer(hub, i).catch(() => undefined), { what: `session ${i} after the reload`, timeoutMs: 20_000 });
      expect(answer).toBe(answers[i]);
    }
    expect(alive(hub)).toBe(true);
    expect(hub.stderr()).toContain('tenant reloaded from its log');
    expect(occurrences(hub.stderr(), 'park_cache_unreadable')).toBe(1);
  }, 120_000);

  it('a full disk under the cache (TMPDIR a 1 MiB tmpfs): what does not fit stays in memory, every session reads whole, one warning', async () => {
    const backend = await makeBackend();
    const answers = await writeTenant(backend, 5, 300_000);
    const disk = mountTmpfs('1m');
    closers.push(() => disk.remove());
    const hub = await start(backend, disk.dir);
    await waitFor(() => (occurrences(hub.stderr(), 'park_cache_write_failed') > 0 ? true : undefined), { what: 'a failed park write', timeoutMs: 20_000 });
    const parked = await metricOf(hub, 'ahp_hub_parked_sessions');
    expect(parked).toBeGreaterThan(0);
    expect(parked).toBeLessThan(5);
    expect(await metricOf(hub, 'ahp_hub_resident_sessions')).toBe(5 - parked);
    for (let i = 0; i < answers.length; i++) expect(await readAnswer(hub, i)).toBe(answers[i]);
    expect(alive(hub)).toBe(true);
    expect(occurrences(hub.stderr(), 'park_cache_write_failed')).toBe(1);
    expect(occurrences(hub.stderr(), 'park_cache_unreadable')).toBe(0);
  }, 120_000);
});
