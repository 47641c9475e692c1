/**
 * The shared update log of collaborative documents on PostgreSQL (server/collab/collab-log.ts):
 * one row per Yjs update, keyed by partition (tenant), chat channel and document. Rows live only
 * as long as their input request is open; the collab feature removes them when it ends.
 */
import type pg from 'pg';
import type { CollabLog, CollabLogRow } from '../collab/collab-log.js';

/** Created with the schema, and on start in databases made before the table existed. */
export const COLLAB_TABLE_DDL = `
  CREATE TABLE IF NOT EXISTS ahp_collab_updates (
    partition text NOT NULL,
    channel text NOT NULL,
    doc text NOT NULL,
    id bigserial NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (partition, channel, doc, id)
  );`;

export class PostgresCollabLog implements CollabLog {
  constructor(
    private readonly pool: pg.Pool,
    private readonly partition: string,
    private readonly closed: () => boolean,
  ) {}

  async open(channel: string, doc: string, seed: Uint8Array): Promise<CollabLogRow[]> {
    this.#assertOpen();
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      // Two nodes opening the same new document take turns: the second finds the first's seed.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [JSON.stringify(['ahp_collab', this.partition, channel, doc])]);
      let rows = await this.#select(client, channel, doc, 0);
      if (rows.length === 0) {
        const id = await this.#insert(client, channel, doc, seed);
        rows = [{ id, update: seed }];
      }
      await client.query('COMMIT');
      return rows;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  append(channel: string, doc: string, update: Uint8Array): Promise<number> {
    this.#assertOpen();
    return this.#insert(this.pool, channel, doc, update);
  }

  readSince(channel: string, doc: string, afterId: number): Promise<CollabLogRow[]> {
    this.#assertOpen();
    return this.#select(this.pool, channel, doc, afterId);
  }

  async remove(channel: string, doc: string): Promise<void> {
    this.#assertOpen();
    await this.pool.query('DELETE FROM ahp_collab_updates WHERE partition = $1 AND channel = $2 AND doc = $3', [this.partition, channel, doc]);
  }

  async documentCount(): Promise<number> {
    this.#assertOpen();
    const r = await this.pool.query<{ n: string }>('SELECT COUNT(DISTINCT (channel, doc)) AS n FROM ahp_collab_updates WHERE partition = $1', [this.partition]);
    return Number(r.rows[0]?.n ?? 0);
  }

  async #insert(db: pg.Pool | pg.PoolClient, channel: string, doc: string, update: Uint8Array): Promise<number> {
    const r = await db.query<{ id: string }>('INSERT INTO ahp_collab_updates (partition, channel, doc, data) VALUES ($1, $2, $3, $4) RETURNING id', [
      this.partition,
      channel,
      doc,
      Buffer.from(update.buffer, update.byteOffset, update.byteLength),
    ]);
    return Number(r.rows[0]!.id);
  }

  async #select(db: pg.Pool | pg.PoolClient, channel: string, doc: string, afterId: number): Promise<CollabLogRow[]> {
    const r = await db.query<{ id: string; data: Buffer }>('SELECT id, data FROM ahp_collab_updates WHERE partition = $1 AND channel = $2 AND doc = $3 AND id > $4 ORDER BY id', [this.partition, channel, doc, afterId]);
    return r.rows.map((row) => ({ id: Number(row.id), update: new Uint8Array(row.data) }));
  }

  #assertOpen(): void {
    if (this.closed()) throw new Error('collab log: the PostgreSQL store is closed');
  }
}
