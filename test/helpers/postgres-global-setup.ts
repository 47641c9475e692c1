/**
 * vitest globalSetup: one real PostgreSQL server per test run, shared by every file through
 * PG_URL (workers inherit the environment). An existing server is reused when PG_URL is already
 * set. When it cannot start (binaries missing), the reason is handed to the workers so every
 * test that needs PostgreSQL FAILS with it (see `postgresUrl`); tests that do not need it run.
 */
import { startPostgres, type RunningPostgres } from './postgres.js';

let server: RunningPostgres | undefined;

export async function setup(): Promise<void> {
  if (process.env['PG_URL']) return;
  try {
    server = await startPostgres();
    process.env['PG_URL'] = server.url;
  } catch (error) {
    process.env['PG_SETUP_ERROR'] = error instanceof Error ? error.message : String(error);
  }
}

export async function teardown(): Promise<void> {
  server?.stop();
}
