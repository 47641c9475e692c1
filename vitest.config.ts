import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One real PostgreSQL server per run for the PostgreSQL log and cluster tests (PG_URL reuses one).
    globalSetup: ['test/helpers/postgres-global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores here: keep integration files from starving each other.
    maxWorkers: 2,
    // `npm test` measures coverage (v8; in-process code only, child processes are not counted):
    // a floor that only rises. autoUpdate writes the measured numbers (rounded down) back here
    // whenever a run beats them; a run below them fails. The starting floor is what test/shared,
    // test/unit and test/server alone reach (the whole suite covers at least that).
    coverage: {
      provider: 'v8',
      include: ['server/**/*.ts', 'shared/**/*.ts', 'cli/**/*.ts'],
      reporter: ['text-summary', 'html'],
      // The summary also when a test failed: a red run still says where coverage stands.
      reportOnFailure: true,
      thresholds: { lines: 64, functions: 62, branches: 52, statements: 60, autoUpdate: (n: number) => Math.floor(n) },
    },
  },
});
