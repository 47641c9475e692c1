/**
 * Runs cases against hosts and renders the table. With `url` every case that can run against a
 * hub it did not start runs there (the others are listed as not run); without it, one managed
 * hub serves the cases that share a hub and each `own-hub` case gets its own.
 */
import { AHP_WS_CASES } from './cases/ahp-ws.js';
import { HTTP_SSE_CASES } from './cases/http-sse.js';
import { ACP_BRIDGE_CASES } from './cases/acp-bridge.js';
import { FAULTS, type ConformanceCase, type Fault } from './case-format.js';
import { ClusterHost, ExternalHost, ManagedHost, type HubHost } from './hosts.js';
import { CLUSTER_CASES } from './cases/cluster.js';
import { CaseRun, type CaseResult } from './runner.js';

export const ALL_CASES: readonly ConformanceCase[] = [...AHP_WS_CASES, ...HTTP_SSE_CASES, ...ACP_BRIDGE_CASES, ...CLUSTER_CASES];

export interface SuiteOptions {
  /** An external AHP host (`ws://HOST/ahp`); absent: the runner starts hubs from `distDir`. */
  url?: string;
  token?: string;
  distDir?: string;
  /** A PostgreSQL server for the cluster cases (a database is created per case); absent: they are not run. */
  postgresUrl?: string;
  /** Give each case its planted bug (every case must then fail). */
  planted?: boolean;
  /** Only these surfaces / case ids. */
  surfaces?: readonly string[];
  ids?: readonly string[];
  /** Cases run at once (default 1). Planted runs mostly wait for what never comes, so they overlap well. */
  concurrency?: number;
}

export type SuiteRow = CaseResult | { id: string; surface: string; faults: readonly string[]; skipped: string };

export async function runSuite(options: SuiteOptions, cases: readonly ConformanceCase[] = ALL_CASES): Promise<SuiteRow[]> {
  const selected = cases.filter((c) => (!options.surfaces || options.surfaces.includes(c.surface)) && (!options.ids || options.ids.includes(c.id)));
  const rows: SuiteRow[] = new Array(selected.length);
  // One hub for every case that does not need its own (each case works in sessions of its own).
  let shared: Promise<HubHost> | undefined;
  const sharedHost = (): Promise<HubHost> => (shared ??= options.url ? Promise.resolve(new ExternalHost(options.url, options.token)) : ManagedHost.start({ distDir: options.distDir ?? 'dist' }));
  const runOne = async (spec: ConformanceCase): Promise<SuiteRow> => {
    const skip = (reason: string): SuiteRow => ({ id: spec.id, surface: spec.surface, faults: spec.faults, skipped: reason });
    const own = spec.needs?.includes('own-hub') ?? false;
    const cluster = spec.needs?.includes('cluster') ?? false;
    if (options.url && own) return skip('needs a hub the runner starts (restart, tokens or limits)');
    if (cluster && (options.url || !options.postgresUrl)) return skip('needs two hub nodes on PostgreSQL the runner starts (PG_URL)');
    let host: HubHost;
    if (cluster) host = await ClusterHost.start({ distDir: options.distDir ?? 'dist', postgresUrl: options.postgresUrl!, ...(spec.hubEnv ? { env: spec.hubEnv } : {}) });
    else if (own) host = await ManagedHost.start({ distDir: options.distDir ?? 'dist', ...(spec.hubEnv ? { env: spec.hubEnv } : {}), ...(spec.tokens ? { tokens: spec.tokens } : {}) });
    else host = await sharedHost();
    try {
      return await new CaseRun(spec, host, options.planted ?? false).run();
    } finally {
      if (own || cluster) await host.close();
    }
  };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < selected.length) {
      const i = next++;
      rows[i] = await runOne(selected[i]!);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 1) }, worker));
  } finally {
    if (shared) await (await shared).close();
  }
  return rows;
}

/** The table: one row per case × surface, its outcome, and the faults it covers. */
export function renderTable(rows: readonly SuiteRow[], options: { planted?: boolean } = {}): string {
  const lines = ['| case | surface | result | outcome | faults | s |', '| --- | --- | --- | --- | --- | --- |'];
  for (const r of rows) {
    if ('skipped' in r) {
      lines.push(`| ${r.id} | ${r.surface} | not run | ${r.skipped} | ${r.faults.join(', ')} | |`);
      continue;
    }
    const result = options.planted
      ? r.caught
        ? `caught: ${plantedBreaks(r.id)}`
        : `PLANT MISSED (${r.violations.map((v) => v.invariant).join(', ') || 'passed'})`
      : r.passed
        ? 'pass'
        : `FAIL (${r.violations.map((v) => v.invariant).join(', ')})`;
    lines.push(`| ${r.id} | ${r.surface} | ${result} | ${r.outcome} | ${r.faults.join(', ')} | ${(r.ms / 1000).toFixed(1)} |`);
  }
  const ran = rows.filter((r): r is CaseResult => !('skipped' in r));
  const covered = new Set(ran.flatMap((r) => r.faults as Fault[]));
  const verdict = options.planted ? `${ran.filter((r) => r.caught).length} of ${ran.length} planted bugs caught by the invariant they break` : `${ran.filter((r) => r.passed).length} of ${ran.length} cases passed`;
  lines.push('', `${verdict}; ${rows.length - ran.length} not run; faults covered: ${covered.size} of ${Object.keys(FAULTS).length} (${[...covered].join(', ')})`);
  return lines.join('\n');
}

/** Planted runs: each case's plant, the invariant it must break, and what that invariant reported. */
export function renderPlanted(rows: readonly SuiteRow[]): string {
  const lines = ['| case | planted bug | caught by | what it reported |', '| --- | --- | --- | --- |'];
  for (const r of rows) {
    if ('skipped' in r) continue;
    const spec = ALL_CASES.find((c) => c.id === r.id);
    const hit = r.violations.find((v) => v.invariant === spec?.planted.breaks);
    const said = (hit?.detail ?? `NOT CAUGHT; reported: ${r.violations.map((v) => `${v.invariant}: ${v.detail}`).join('; ') || 'nothing'}`).replace(/ahp-(chat|session):\/[0-9a-f-]{36}/g, '…').replace(/\|/g, '\\|');
    lines.push(`| ${r.id} | ${spec?.planted.how ?? ''} | ${r.caught ? spec?.planted.breaks : 'MISSED'} | ${said.slice(0, 220)} |`);
  }
  return lines.join('\n');
}

const plantedBreaks = (id: string): string => ALL_CASES.find((c) => c.id === id)?.planted.breaks ?? '?';

/** Each failed case's violations, for a readable report. */
export function renderViolations(rows: readonly SuiteRow[]): string {
  return rows
    .filter((r): r is CaseResult => !('skipped' in r) && !r.passed)
    .map((r) => `${r.id}:\n${r.violations.map((v) => `  - ${v.invariant}: ${v.detail}`).join('\n')}`)
    .join('\n');
}
