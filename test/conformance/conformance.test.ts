/**
 * The fault-injection conformance suite (scripts/conformance, docs/conformance.md): every case
 * runs against real hub processes through the fault proxy, and must hold every invariant it
 * names and end in one of its allowed outcomes. planted.test.ts runs the same cases with their
 * planted bugs and asserts each is caught.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ALL_CASES, renderTable, renderViolations, runSuite, type SuiteRow } from '../../scripts/conformance/suite.js';
import { ensureBuilt } from '../helpers/hub-process.js';
import { postgresUrl } from '../helpers/postgres.js';

describe('conformance cases, every invariant holding under its faults', () => {
  let rows: SuiteRow[] = [];
  beforeAll(async () => {
    ensureBuilt();
    rows = await runSuite({ distDir: 'dist', postgresUrl: postgresUrl() });
    console.log(renderTable(rows));
  }, 120_000);

  it.each(ALL_CASES.map((c) => [c.id, c] as const))('%s', (id, spec) => {
    const row = rows.find((r) => r.id === id);
    expect(row, 'the case ran').toBeDefined();
    if (!row || 'skipped' in row) throw new Error(`${id} was not run`);
    expect(renderViolations([row]), spec.title).toBe('');
    expect(row.passed).toBe(true);
  });
});
