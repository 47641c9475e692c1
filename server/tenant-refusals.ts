/**
 * Why a tenant the authenticator names has no stack, and what its callers are answered. Either
 * its log cannot be opened for a storage reason (full disk, read-only data dir: retried until it
 * opens), or the start refused it because its log holds more state than this hub may load
 * (load-guard.ts: not retried, since only more memory or moving its log aside changes that). In
 * both cases the hub starts without that tenant and every other tenant is served (issue 18).
 */
import { StateTooLargeToLoadError } from './hub/load-guard.js';
import { STORAGE_UNAVAILABLE_REASON } from './hub/commit-pipeline.js';
import { ProtocolError } from '../shared/protocol/errors.js';

/** 503 for a tenant whose log could not be opened (yet). */
export function tenantUnavailable(): ProtocolError {
  return new ProtocolError('storage_unavailable', `${STORAGE_UNAVAILABLE_REASON}: this tenant's log cannot be opened right now; try again later`);
}

/** The stable code of a tenant refused at start for holding more state than the hub may load. */
export const TENANT_TOO_LARGE_TO_LOAD = 'tenant_too_large_to_load';

/** 503 for a tenant the start refused (StateTooLargeToLoadError); the sizes stay in the process log. */
export function tenantTooLargeToLoad(tenant: string): ProtocolError {
  return new ProtocolError(
    TENANT_TOO_LARGE_TO_LOAD,
    `tenant ${JSON.stringify(tenant)} is not served: its log holds more session and chat state than this hub can load. ` + "The hub's operator must give it more memory or move the tenant's log aside, then restart it; the hub log says more",
  );
}

/** The load guard's refusal inside `err` (tenant-stack.ts names the tenant), if that is what it is. */
export function stateTooLargeToLoad(err: unknown): StateTooLargeToLoadError | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof StateTooLargeToLoadError) return e;
  }
  return undefined;
}

/**
 * A failure of the storage under a log (full disk, read-only or vanished data directory, I/O
 * error) rather than of its contents: worth retrying, and no reason to keep other tenants down.
 */
export function isStorageIoError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^(SQLITE_(FULL|CANTOPEN|READONLY|IOERR|BUSY|PERM)|ENOSPC|EROFS|EACCES|EPERM|EIO|EDQUOT)/.test(code)) return true;
  }
  return false;
}
