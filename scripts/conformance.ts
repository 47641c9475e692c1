/**
 * `npm run conformance -- --url ws://HOST:PORT/ahp [--token T] [--planted] [--case ID]…`: runs the
 * fault-injection conformance cases against a running AHP host through loopback fault proxies
 * and prints the table (case × surface, outcome, faults). Without `--url` it starts its own hubs
 * from dist/ (as `npm test` does). Exit code 1 when a case failed (or, with `--planted`, when a
 * planted bug went unnoticed).
 */
import { renderPlanted, renderTable, renderViolations, runSuite, type SuiteRow } from './conformance/suite.js';

function parse(argv: string[]): { url?: string; token?: string; planted: boolean; ids: string[]; surfaces: string[] } {
  const out: { url?: string; token?: string; planted: boolean; ids: string[]; surfaces: string[] } = { planted: false, ids: [], surfaces: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === '--url') out.url = value();
    else if (arg === '--token') out.token = value();
    else if (arg === '--planted') out.planted = true;
    else if (arg === '--case') out.ids.push(value());
    else if (arg === '--surface') out.surfaces.push(value());
    else throw new Error(`unknown argument ${arg} (use --url ws://HOST:PORT/ahp [--token T] [--planted] [--case ID] [--surface S])`);
  }
  if (out.url !== undefined && !/^wss?:\/\//.test(out.url)) throw new Error(`--url must be a ws:// URL, not ${out.url}`);
  return out;
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  const started = Date.now();
  const rows: SuiteRow[] = await runSuite({
    ...(args.url ? { url: args.url } : {}),
    ...(args.token ? { token: args.token } : {}),
    distDir: new URL('..', import.meta.url).pathname,
    ...(process.env['PG_URL'] && !args.url ? { postgresUrl: process.env['PG_URL'] } : {}),
    planted: args.planted,
    ...(args.ids.length > 0 ? { ids: args.ids } : {}),
    ...(args.surfaces.length > 0 ? { surfaces: args.surfaces } : {}),
  });
  console.log(renderTable(rows, { planted: args.planted }));
  if (args.planted) console.log(`\n${renderPlanted(rows)}`);
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`);
  const failed = rows.filter((r) => !('skipped' in r) && (args.planted ? !r.caught : !r.passed));
  if (failed.length > 0 && !args.planted) console.log(`\n${renderViolations(rows)}`);
  process.exit(failed.length > 0 ? 1 : 0);
}

void main();
