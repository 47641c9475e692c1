/**
 * A real, throwaway PostgreSQL server for the tests (no mocks): started once per test run by
 * vitest's globalSetup (`test/helpers/postgres-global-setup.ts`), or reused when `PG_URL` names
 * one. Debian's `postgresql` package provides the binaries (`.ci/run` installs it); when they are
 * missing the tests that need PostgreSQL FAIL with a message saying so, they never skip.
 * The server itself comes from bench/throwaway-postgres.ts (shared with the cluster benchmark).
 */
import pg from 'pg';

export { startPostgres, type RunningPostgres } from '../../bench/throwaway-postgres.js';

/** The URL of the run's PostgreSQL (set by the globalSetup), or a clear failure. */
export function postgresUrl(): string {
  const url = process.env['PG_URL'];
  const setupError = process.env['PG_SETUP_ERROR'];
  if (setupError) throw new Error(`this test needs PostgreSQL, which could not be started: ${setupError}`);
  if (!url) {
    throw new Error('PG_URL is not set: test/helpers/postgres-global-setup.ts starts PostgreSQL for every run ' + '(vitest.config.ts globalSetup); run the tests through vitest with that config.');
  }
  return url;
}

let counter = 0;

/**
 * A fresh, empty database on the run's server (or on `server`, a URL), so tests never see each
 * other's rows. Returns its URL and a drop function.
 */
export async function freshDatabase(prefix = 'ahp', server?: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = server ?? postgresUrl();
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
