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
    // `npm run coverage`: a floor that only rises. autoUpdate writes the measured numbers (rounded
    // down) back here whenever a run beats them, so the floor is today's coverage and a run below
    // it fails. The first run replaces the zeros.
    coverage: {
      provider: 'v8',
      include: ['server/**/*.ts', 'shared/**/*.ts', 'cli/**/*.ts'],
      reporter: ['text-summary', 'html'],
      thresholds: { lines: 0, functions: 0, branches: 0, statements: 0, autoUpdate: (n: number) => Math.floor(n) },
    },
  },
});
