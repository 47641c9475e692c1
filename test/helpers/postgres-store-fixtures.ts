/** Per-test fixtures of the PostgreSQL storage tests (kept apart from postgres.ts, which the globalSetup loads). */
import pg from 'pg';
import { afterEach } from 'vitest';
import { PostgresStore } from '../../server/storage/postgres-store.js';
import { freshDatabase } from './postgres.js';

/**
 * What the PostgreSQL storage tests set up for each test: fresh databases, stores on them, one-off
 * SQL, and `cleanups` run in reverse after each test (stores closed before their database drops).
 * Call inside a `describe`.
 */
export function postgresStoreFixtures(prefix: string): {
  readonly cleanups: Array<() => Promise<void>>;
  database(): Promise<string>;
  openStore(url: string): Promise<PostgresStore>;
  sql(url: string, text: string, values?: unknown[]): Promise<pg.QueryResult>;
} {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return {
    cleanups,
    async database() {
      const db = await freshDatabase(prefix);
      cleanups.push(db.drop);
      return db.url;
    },
    async openStore(url) {
      const store = await PostgresStore.open({ url });
      cleanups.push(() => store.close());
      return store;
    },
    async sql(url, text, values = []) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return await client.query(text, values);
      } finally {
        await client.end();
      }
    },
  };
}
