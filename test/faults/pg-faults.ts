/**
 * Fault injection on a real PostgreSQL server for the fault tests: terminating every backend the
 * hub processes hold (`pg_terminate_backend`, the way an operator or a failover proxy cuts them),
 * preferably while one of them holds a write turn (a transaction left open between statements,
 * `idle in transaction` in `pg_stat_activity`).
 */
import pg from 'pg';

/** The database name of a connection URL. */
export function databaseOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/**
 * Terminates every backend connected to the cluster's database except this one. Polls
 * `pg_stat_activity` first (up to `tries` times) until some backend is inside a transaction, so
 * the cut lands while a write turn is held. Returns how many backends were terminated and whether
 * a transaction was open when they were.
 */
export async function terminateHubBackends(adminUrl: string, clusterUrl: string, tries = 400): Promise<{ terminated: number; duringTurn: boolean }> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const db = databaseOf(clusterUrl);
    let duringTurn = false;
    for (let i = 0; i < tries && !duringTurn; i++) {
      const open = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`, [db]);
      duringTurn = Number(open.rows[0]?.n ?? 0) > 0;
    }
    const killed = await admin.query<{ ok: boolean }>(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [db]);
    return { terminated: killed.rows.filter((r) => r.ok).length, duringTurn };
  } finally {
    await admin.end();
  }
}
