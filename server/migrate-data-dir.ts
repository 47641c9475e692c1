/**
 * Opening a data directory written by 0.1.0, which kept every tenant in `<data>/hub.db`: its
 * sessions move into one log per tenant (`tenants/<tenant>/hub.db`, see tenant-logs.ts), each
 * ACP session file follows its sessions, and the old files are renamed (never deleted) to
 * `*.split-0.1` so an operator can still inspect or restore them. Runs once, under the data-dir
 * lock, before any hub opens.
 */
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { splitLegacyLog } from './hub/legacy-tenant-split.js';
import type { Logger } from './log.js';
import { SqliteActionLog } from './storage/sqlite-action-log.js';
import { tenantDir, type TenantLogs } from './storage/tenant-logs.js';

const LEGACY_LOG = 'hub.db';
const SPLIT_SUFFIX = '.split-0.1';

export async function migrateSingleLogDataDir(dataDir: string, logs: TenantLogs, logger: Logger): Promise<void> {
  const legacyFile = join(dataDir, LEGACY_LOG);
  if (!existsSync(legacyFile)) return;
  const legacy = SqliteActionLog.open({ file: legacyFile });
  let sessionTenant: Map<string, string>;
  try {
    sessionTenant = await splitLegacyLog(legacy, (tenant) => logs.open(tenant));
  } finally {
    await legacy.close();
  }
  for (const name of readdirSync(dataDir)) {
    const acpState = /^acp-sessions\.(.+)\.json$/.exec(name);
    if (!acpState) continue;
    splitAcpSessionFile(join(dataDir, name), name, sessionTenant, dataDir);
    renameSync(join(dataDir, name), join(dataDir, name + SPLIT_SUFFIX));
  }
  // The log goes last: while it is still in place, a crash above means this runs again.
  for (const suffix of ['-wal', '-shm', '.head', '']) {
    const file = legacyFile + suffix;
    if (existsSync(file)) renameSync(file, file + SPLIT_SUFFIX);
  }
  const tenants = new Set(sessionTenant.values());
  logger.info('split the single action log of 0.1.0 into one log per tenant', { dataDir, tenants: tenants.size, sessions: sessionTenant.size });
}

/** `acp-sessions.<provider>.json` maps hub session → ACP session id; each tenant gets its own entries. */
function splitAcpSessionFile(file: string, name: string, sessionTenant: ReadonlyMap<string, string>, dataDir: string): void {
  let entries: Record<string, unknown>;
  try {
    entries = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return; // unreadable before too: the providers started those sessions fresh either way
  }
  const byTenant = new Map<string, Record<string, unknown>>();
  for (const [session, acpId] of Object.entries(entries)) {
    const tenant = sessionTenant.get(session);
    if (tenant === undefined) continue;
    let own = byTenant.get(tenant);
    if (!own) byTenant.set(tenant, (own = {}));
    own[session] = acpId;
  }
  for (const [tenant, own] of byTenant) writeFileSync(join(tenantDir(dataDir, tenant), name), JSON.stringify(own));
}
