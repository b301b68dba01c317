import { FLOOR_TABLE_DEFINITION, floorRows, INSERT_ROWS } from './chdb.js';

/**
 * The index floor of a fleet: raw inserts through the ClickHouse HTTP interface the indexers
 * use (in the local fleet, the test bridge over chDB), without dris: the rows of the chDB floor
 * (1000 JSONEachRow rows of about 1 KiB into a MergeTree) POSTed as `INSERT ... FORMAT
 * JSONEachRow`, one insert at a time, in a scratch database dropped after.
 */

export interface ClickHouseHttpFloor {
  readonly insertRowsPerSec: number;
  readonly rowBytes: number;
  readonly inserts: number;
}

export interface ClickHouseHttpFloorOptions {
  readonly url: string;
  readonly user: string;
  readonly password: string;
  readonly seconds: number;
  readonly payload: string;
}

const DATABASE = 'dris_bench_floor';

async function statement(o: ClickHouseHttpFloorOptions, query: string, body?: Buffer): Promise<void> {
  const url = new URL(o.url);
  if (body !== undefined) url.searchParams.set('query', query);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'X-ClickHouse-User': o.user, 'X-ClickHouse-Key': o.password },
    body: body ?? query,
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse answered ${res.status} to ${query.slice(0, 60)}: ${text.slice(0, 300)}`);
}

export async function clickHouseHttpFloor(o: ClickHouseHttpFloorOptions): Promise<ClickHouseHttpFloor> {
  await statement(o, `DROP DATABASE IF EXISTS ${DATABASE}`);
  await statement(o, `CREATE DATABASE ${DATABASE}`);
  try {
    await statement(o, `CREATE TABLE ${DATABASE}.floor_records ${FLOOR_TABLE_DEFINITION}`);
    const insert = `INSERT INTO ${DATABASE}.floor_records FORMAT JSONEachRow`;
    const sample = floorRows(0, o.payload);
    let next = 0;
    let inserts = 0;
    const start = performance.now();
    while (performance.now() - start < o.seconds * 1000) {
      await statement(o, insert, floorRows(next, o.payload));
      next += INSERT_ROWS;
      inserts++;
    }
    const perSec = (next / (performance.now() - start)) * 1000;
    return { insertRowsPerSec: Math.round(perSec), rowBytes: Math.round(sample.length / INSERT_ROWS), inserts };
  } finally {
    await statement(o, `DROP DATABASE IF EXISTS ${DATABASE}`).catch(() => undefined);
  }
}
