/**
 * Runs cases against hosts and renders the table. With `url` every case that can run against a
 * hub it did not start runs there (the others are listed as not run); without it, one managed
 * hub serves the cases that share a hub and each `own-hub` case gets its own.
 */
import { AHP_WS_CASES } from './cases/ahp-ws.js';
import { HTTP_SSE_CASES } from './cases/http-sse.js';
import { ACP_BRIDGE_CASES } from './cases/acp-bridge.js';
import { FAULTS, type ConformanceCase, type Fault } from './case-format.js';
import { ExternalHost, ManagedHost, type HubHost } from './hosts.js';
import { CaseRun, type CaseResult } from './runner.js';

export const ALL_CASES: readonly ConformanceCase[] = [...AHP_WS_CASES, ...HTTP_SSE_CASES, ...ACP_BRIDGE_CASES];

export interface SuiteOptions {
  /** An external AHP host (`ws://HOST/ahp`); absent: the runner starts hubs from `distDir`. */
  url?: string;
  token?: string;
  distDir?: string;
  /** Give each case its planted bug (every case must then fail). */
  planted?: boolean;
  /** Only these surfaces / case ids. */
  surfaces?: readonly string[];
  ids?: readonly string[];
}

export type SuiteRow = CaseResult | { id: string; surface: string; faults: readonly string[]; skipped: string };

export async function runSuite(options: SuiteOptions, cases: readonly ConformanceCase[] = ALL_CASES): Promise<SuiteRow[]> {
  const selected = cases.filter((c) => (!options.surfaces || options.surfaces.includes(c.surface)) && (!options.ids || options.ids.includes(c.id)));
  const rows: SuiteRow[] = [];
  let shared: HubHost | undefined;
  try {
    for (const spec of selected) {
      const own = spec.needs?.includes('own-hub') ?? false;
      if (options.url && own) {
        rows.push({ id: spec.id, surface: spec.surface, faults: spec.faults, skipped: 'needs a hub the runner starts (restart, tokens or limits)' });
        continue;
      }
      if (options.url && spec.surface === 'acp-bridge' && !options.distDir) {
        rows.push({ id: spec.id, surface: spec.surface, faults: spec.faults, skipped: 'needs the bridge from dist/' });
        continue;
      }
      let host: HubHost;
      if (options.url) host = shared ??= new ExternalHost(options.url, options.token);
      else if (own) host = await ManagedHost.start({ distDir: options.distDir ?? 'dist', ...(spec.hubEnv ? { env: spec.hubEnv } : {}), ...(spec.tokens ? { tokens: spec.tokens } : {}) });
      else host = shared ??= await ManagedHost.start({ distDir: options.distDir ?? 'dist' });
      try {
        rows.push(await new CaseRun(spec, host, options.planted ?? false).run());
      } finally {
        if (host !== shared) await host.close();
      }
    }
  } finally {
    await shared?.close();
  }
  return rows;
}

/** The table: one row per case × surface, its outcome, and the faults it covers. */
export function renderTable(rows: readonly SuiteRow[], options: { planted?: boolean } = {}): string {
  const lines = ['| case | surface | result | outcome | faults |', '| --- | --- | --- | --- | --- |'];
  for (const r of rows) {
    if ('skipped' in r) {
      lines.push(`| ${r.id} | ${r.surface} | not run | ${r.skipped} | ${r.faults.join(', ')} |`);
      continue;
    }
    const result = options.planted
      ? r.caught
        ? `caught: ${plantedBreaks(r.id)}`
        : `PLANT MISSED (${r.violations.map((v) => v.invariant).join(', ') || 'passed'})`
      : r.passed
        ? 'pass'
        : `FAIL (${r.violations.map((v) => v.invariant).join(', ')})`;
    lines.push(`| ${r.id} | ${r.surface} | ${result} | ${r.outcome} | ${r.faults.join(', ')} |`);
  }
  const ran = rows.filter((r): r is CaseResult => !('skipped' in r));
  const covered = new Set(ran.flatMap((r) => r.faults as Fault[]));
  const verdict = options.planted ? `${ran.filter((r) => r.caught).length} of ${ran.length} planted bugs caught by the invariant they break` : `${ran.filter((r) => r.passed).length} of ${ran.length} cases passed`;
  lines.push('', `${verdict}; ${rows.length - ran.length} not run; faults covered: ${covered.size} of ${Object.keys(FAULTS).length} (${[...covered].join(', ')})`);
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
