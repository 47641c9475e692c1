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
  },
});
