/**
 * One action log per tenant. Each tenant's sessions, chats and `serverSeq` live in a partition of
 * their own, so ids are a per-tenant namespace (two tenants may both own `ahp-session:/notes`)
 * and nothing a client sees (an id that is taken, a sequence number) moves because of another
 * tenant's activity.
 *
 * Engines: memory (tests, demos), a SQLite file per tenant under the data directory, and
 * partitions of one PostgreSQL store (cluster). The store owns every log it opened and closes
 * them in `close`; callers never close a tenant's log themselves.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { ActionLog } from './action-log.js';
import { MemoryActionLog } from './memory-action-log.js';
import { SqliteActionLog } from './sqlite-action-log.js';

export interface TenantLogs {
  /** The tenant's log (the same object on every call). */
  open(tenant: string): Promise<ActionLog>;
  close(): Promise<void>;
}

/** Logs opened once per tenant and closed together; `openLog` does the engine's work. */
class OpenedOnce implements TenantLogs {
  readonly #logs = new Map<string, Promise<ActionLog>>();
  constructor(private readonly openLog: (tenant: string) => Promise<ActionLog>) {}

  open(tenant: string): Promise<ActionLog> {
    let log = this.#logs.get(tenant);
    if (!log) {
      const opening = this.openLog(tenant);
      log = opening;
      this.#logs.set(tenant, opening);
      // A log that could not be opened (full disk, read-only data dir) is tried again next time.
      opening.catch(() => {
        if (this.#logs.get(tenant) === opening) this.#logs.delete(tenant);
      });
    }
    return log;
  }

  async close(): Promise<void> {
    const logs = await Promise.allSettled(this.#logs.values());
    this.#logs.clear();
    for (const log of logs) if (log.status === 'fulfilled') await log.value.close();
  }
}

/** Tenant logs from an engine's open function: each opened once, all closed together. */
export function tenantLogsOf(openLog: (tenant: string) => Promise<ActionLog>): TenantLogs {
  return new OpenedOnce(openLog);
}

export function memoryTenantLogs(): TenantLogs {
  return new OpenedOnce(async () => new MemoryActionLog());
}

export function sqliteTenantLogs(dataDir: string, synchronous: 'normal' | 'full' = 'normal'): TenantLogs {
  return new OpenedOnce(async (tenant) => SqliteActionLog.open({ file: tenantLogFile(dataDir, tenant), synchronous }));
}

/**
 * Where a tenant's files live: `tenants/<name>/` for names that are safe and unambiguous as a
 * directory on every file system (lower-case letters, digits, `.`, `_`, `-`), else
 * `tenants/~<hash>/` (case-insensitive file systems would merge `Acme` and `acme`, and a tenant
 * name may hold `/` or `..`). A `~` never starts a readable name, so the two forms cannot meet.
 */
export function tenantDir(dataDir: string, tenant: string): string {
  const readable = /^[a-z0-9_-][a-z0-9._-]{0,63}$/.test(tenant);
  const name = readable ? tenant : `~${createHash('sha256').update(tenant, 'utf8').digest('hex').slice(0, 32)}`;
  return join(dataDir, 'tenants', name);
}

export function tenantLogFile(dataDir: string, tenant: string): string {
  return join(tenantDir(dataDir, tenant), 'hub.db');
}
