/**
 * What a node holds for sessions nobody watches (docs/architecture.md, "Parked sessions"): a real
 * hub process — on SQLite, and as a cluster node on a real PostgreSQL — opens a tenant of 1,000 sessions with ~32 KB of chat content
 * each and no subscribers. Once its sweep has parked them, its heap (read from /metrics after a
 * full collection: the process runs with --expose-gc) stays under `HEAP_BOUND`; the same tenant
 * with parking off holds more than that, so the bound says something. Subscribing to one
 * session then loads it with its full content.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import type { ActionLog } from '../../server/storage/action-log.js';
import { PostgresStore } from '../../server/storage/postgres-store.js';
import { sqliteTenantLogs } from '../../server/storage/tenant-logs.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { startHubProcess, type HubProcess, metricOf } from '../helpers/hub-process.js';
import { freshDatabase } from '../helpers/postgres.js';
import { prng } from '../helpers/prng.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';

const SESSIONS = 1_000;
const DELTAS = 8;
const DELTA_CHARS = 4_000;
/** Heap a node may use with the 1,000 sessions parked (measured ~MB; see docs/architecture.md). */
const HEAP_BOUND = 32 * 1024 * 1024;

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** Where the tenant lives: the flags a hub process needs to open it, and how to write it in-process first. */
interface Backend {
  readonly name: string;
  /** Opens the tenant's log for the in-process writer; `done` closes it. */
  open(): Promise<{ log: ActionLog; done: () => Promise<void> }>;
  readonly args: string[];
}

async function sqliteBackend(): Promise<Backend & { cleanup(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ahp-parked-'));
  return {
    name: 'SQLite, single node',
    async open() {
      const logs = sqliteTenantLogs(dataDir);
      return { log: await logs.open(DEV_PRINCIPAL.tenant), done: () => logs.close() };
    },
    args: ['--data', dataDir],
    cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
  };
}

async function postgresBackend(): Promise<Backend & { cleanup(): Promise<void> }> {
  const db = await freshDatabase('parked');
  return {
    name: 'PostgreSQL, cluster node',
    async open() {
      const store = await PostgresStore.open({ url: db.url });
      return { log: await store.actionLog(DEV_PRINCIPAL.tenant), done: () => store.close() };
    },
    args: ['--store', db.url, '--log-level', 'warn'],
    cleanup: () => db.drop(),
  };
}

const sessionUri = (i: number): string => `ahp-session:/bulk-${i}`;

/** Writes the tenant with an in-process hub on the log the child opens; returns each session's answer text. */
async function writeTenant(backend: Backend): Promise<string[]> {
  const answers: string[] = [];
  const { log, done } = await backend.open();
  let n = 0;
  const hub = await Hub.open({ log, logger: silentLogger, now: () => 1_000 + n, newId: () => `id-${++n}`, agents: [{ provider: 'remote', displayName: 'R' }], defaultProvider: 'remote' });
  const random = prng(22);
  const text = (): string =>
    Array.from({ length: DELTA_CHARS / 10 }, () =>
      Math.floor(random() * 1e10)
        .toString(36)
        .padEnd(10, '_'),
    ).join('');
  for (let i = 0; i < SESSIONS; i++) {
    const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: sessionUri(i), title: `bulk ${i}` });
    const pending: Array<Promise<number>> = [];
    pending.push(hub.dispatchServer(chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: '1970-01-01T00:00:01.000Z', message: { text: `question ${i}`, origin: { kind: 'user' } } } as WireAction));
    pending.push(hub.dispatchServer(chat, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: '' } } as WireAction));
    let answer = '';
    for (let k = 0; k < DELTAS; k++) {
      const piece = text();
      answer += piece;
      pending.push(hub.dispatchServer(chat, { type: 'chat/delta', turnId: 't1', partId: 'p1', content: piece } as WireAction));
    }
    pending.push(hub.dispatchServer(chat, { type: 'chat/turnComplete', turnId: 't1', duration: 1 } as WireAction));
    await Promise.all(pending);
    answers.push(answer);
  }
  await hub.close();
  await done();
  return answers;
}

async function startOn(backend: Backend, parkIdleMs: number): Promise<HubProcess> {
  const hub = await startHubProcess(backend.args, { env: { HUB_PARK_IDLE_MS: String(parkIdleMs), NODE_OPTIONS: '--expose-gc' } });
  closers.push(async () => {
    hub.child.kill('SIGTERM');
    await hub.exited();
  });
  return hub;
}

/** The heap after a full collection, once three readings in a row agree within 1 MB. */
async function settledHeap(hub: HubProcess): Promise<number> {
  const readings: number[] = [];
  return waitFor(
    async () => {
      readings.push(await metricOf(hub, 'ahp_hub_heap_used_bytes'));
      const last = readings.slice(-3);
      return last.length === 3 && Math.max(...last) - Math.min(...last) < 1024 * 1024 ? last[2] : undefined;
    },
    { what: 'a settled heap reading', timeoutMs: 30_000 },
  );
}

const answerOf = (state: ChatState): string => (state.turns[0]?.responseParts[0] as { content?: string } | undefined)?.content ?? '';

describe.each([
  { kind: 'SQLite, single node', makeBackend: sqliteBackend },
  { kind: 'PostgreSQL, cluster node', makeBackend: postgresBackend },
])('a node holds only the sessions someone uses ($kind)', ({ makeBackend }) => {
  let backend: Backend & { cleanup(): Promise<void> };
  let answers: string[];
  beforeAll(async () => {
    backend = await makeBackend();
    answers = await writeTenant(backend);
    return () => backend.cleanup();
  }, 600_000);

  it('keeps the heap of 1,000 unwatched sessions under the bound once parked, and loads one whole on subscribe', async () => {
    const hub = await startOn(backend, 300);
    await waitFor(async () => ((await metricOf(hub, 'ahp_hub_parked_sessions')) === SESSIONS ? true : undefined), { what: 'every session parked', timeoutMs: 60_000 });
    expect(await metricOf(hub, 'ahp_hub_resident_sessions')).toBe(0);
    const heap = await settledHeap(hub);
    console.log(`${backend.name}, parked: heap ${(heap / 1024 / 1024).toFixed(1)} MB for ${SESSIONS} sessions`);
    expect(heap).toBeLessThan(HEAP_BOUND);

    const client = await RpcClient.open(hub.wsUrl);
    closers.push(() => client.close());
    const pick = 417;
    const { state: session } = await client.subscribe<{ defaultChat: string }>(sessionUri(pick));
    const { state: chat } = await client.subscribe<ChatState>(session.defaultChat);
    expect(answerOf(chat)).toBe(answers[pick]);
    expect(await metricOf(hub, 'ahp_hub_resident_sessions')).toBe(1);
    const listed = await client.request<{ items: unknown[] }>('listSessions', { channel: 'ahp-root://' });
    expect(listed.items).toHaveLength(SESSIONS);
  }, 180_000);

  it('holds more than the bound for the same tenant with parking off', async () => {
    const hub = await startOn(backend, 0);
    expect(await metricOf(hub, 'ahp_hub_resident_sessions')).toBe(SESSIONS);
    const heap = await settledHeap(hub);
    console.log(`${backend.name}, not parked: heap ${(heap / 1024 / 1024).toFixed(1)} MB for ${SESSIONS} sessions`);
    expect(heap).toBeGreaterThan(HEAP_BOUND);
  }, 180_000);
});
