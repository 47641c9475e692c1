/**
 * Version 0.1.0 kept every tenant in one action log. This splits such a log into one partition
 * per tenant (see `server/storage/tenant-logs.ts`): each tenant's partition starts with a
 * snapshot at serverSeq 0 holding that tenant's sessions, chats and duplicate ledger, exactly as
 * the old hub would have recovered them. Old serverSeqs mean nothing in the new partitions, so a
 * client reconnecting with one gets snapshots (never a wrong replay), and clientSeqs the old hub
 * accepted stay decided (they become the ledger's floor) so a re-sent one is never applied again.
 */
import type { ActionLog } from '../storage/action-log.js';
import { recoverFromLog, type SnapshotImage } from './recovery.js';

/**
 * Writes each tenant's share of `legacy` into `partitionOf(tenant)`. Returns every session's
 * tenant (callers move per-session side files with it). A partition that already holds records
 * is refused: it was written by the new layout, and merging two histories is not this function's
 * call. A partition holding only the seq-0 snapshot was written by an earlier, interrupted run of
 * this split and is left as it is.
 */
export async function splitLegacyLog(legacy: ActionLog, partitionOf: (tenant: string) => Promise<ActionLog>): Promise<Map<string, string>> {
  // Exactly what the old hub recovered at its last start (no agents: every partition's hub puts
  // the configured ones in when it opens).
  const recovered = await recoverFromLog(legacy, []);
  const image = recovered.state.toImage();
  const ledger = recovered.ledger.toImage();
  const tenants = new Set<string>([...image.sessions.map((s) => s.tenant), ...ledger.clients.map((c) => c.tenant)]);
  const sessionTenant = new Map(image.sessions.map((s) => [s.uri, s.tenant] as const));
  for (const tenant of tenants) {
    const partition = await partitionOf(tenant);
    const head = await partition.head();
    if (head > 0) {
      throw new Error(`cannot split the single-log data directory: tenant ${JSON.stringify(tenant)} already has ${head} records in its own log`);
    }
    if ((await partition.latestSnapshot()) !== undefined) continue;
    const sessions = image.sessions.filter((s) => s.tenant === tenant);
    const chats = image.chats.filter((c) => sessionTenant.get(c.session) === tenant);
    const clients = ledger.clients.filter((c) => c.tenant === tenant).map((c) => ({ ...c, floor: Math.max(c.floor, ...c.accepted.map(([clientSeq]) => clientSeq)), accepted: [] }));
    const data: SnapshotImage = { catalog: { root: image.root, sessions, chats }, ledger: { clients } };
    await partition.saveSnapshot({ serverSeq: 0, data });
  }
  return sessionTenant;
}
