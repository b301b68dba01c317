import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { drainPending, Session } from 'chdb';
import { DEFAULT_INDEXER_OPTIONS } from '../../../src/app/indexer.js';

/**
 * The index floor: the embedded engine (chDB, the library the embedded index runs on) without
 * dris around it, in a scratch directory. Inserts: rows of about 1 KiB (a record's identity, hash
 * and payload) into a MergeTree keyed by tenant and record id, as many rows per insert as the
 * indexer writes at most (its maxWriteRecords), one insert at a time. Look-ups: one row by its key
 * per query, asked by 8 callers at once; the session runs them one at a time (a chDB session
 * takes its statements in turn, and statements with parameters run in turn process-wide).
 */

export interface ChdbFloor {
  readonly insertRowsPerSec: number;
  readonly rowBytes: number;
  /** Point look-ups per second (null when not measured). */
  readonly lookupsPerSec: number | null;
}

const TABLE = 'default.floor_records';
/**
 * Rows per insert: the most the indexer writes at once, which it does whenever the load keeps
 * it busy. A floor is the engine at its best for dris's writes: each insert has a fixed cost of
 * tens of milliseconds of CPU (a part per table, its files, the merges after it), so at 1000 rows
 * the floor charged the schema about twice the CPU per record that the indexer's writes cost.
 */
export const INSERT_ROWS = DEFAULT_INDEXER_OPTIONS.maxWriteRecords;
/** The floor table's columns and engine (also used through the ClickHouse HTTP interface). */
export const FLOOR_TABLE_DEFINITION = '(tenant String, id String, hash String, payload String) ENGINE = MergeTree ORDER BY (tenant, id)';

/** INSERT_ROWS JSONEachRow rows of about 1 KiB, ids from `from` on. */
export function floorRows(from: number, payload: string): Buffer {
  let body = '';
  for (let i = from; i < from + INSERT_ROWS; i++) {
    body += `${JSON.stringify({ tenant: 'bench', id: `r-${i}`, hash: 'ab'.repeat(32), payload })}\n`;
  }
  return Buffer.from(body, 'utf8');
}

async function timed(seconds: number, step: () => Promise<number>): Promise<number> {
  let done = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) done += await step();
  return (done / (performance.now() - start)) * 1000;
}

/** `work` on a chDB session in a scratch directory, closed and removed afterwards. */
export async function withScratchSession<T>(prefix: string, work: (session: Session) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  const session = new Session(dir);
  try {
    return await work(session);
  } finally {
    session.close();
    await drainPending();
    await rm(dir, { recursive: true, force: true });
  }
}

export function chdbFloor(seconds: number, options: { lookups: boolean; payload: string }): Promise<ChdbFloor> {
  return withScratchSession('dris-floor-chdb-', async (session) => {
    await session.queryAsync(`CREATE TABLE ${TABLE} ${FLOOR_TABLE_DEFINITION}`, { timeout: 60_000 });
    let next = 0;
    const sample = floorRows(0, options.payload);
    const insertRowsPerSec = await timed(options.lookups ? seconds / 2 : seconds, async () => {
      await session.insert({ table: TABLE, values: floorRows(next, options.payload), format: 'JSONEachRow' });
      next += INSERT_ROWS;
      return INSERT_ROWS;
    });
    let lookupsPerSec: number | null = null;
    if (options.lookups) {
      const inserted = next;
      const lane = async (): Promise<number> => {
        const id = `r-${Math.floor(Math.random() * inserted)}`;
        await session.queryBindAsync(`SELECT hash FROM ${TABLE} WHERE tenant = {t:String} AND id = {id:String}`, { t: 'bench', id }, { format: 'JSONEachRow', timeout: 60_000 });
        return 1;
      };
      lookupsPerSec = await timed(seconds / 2, async () => (await Promise.all(Array.from({ length: 8 }, lane))).length);
    }
    return { insertRowsPerSec: Math.round(insertRowsPerSec), rowBytes: Math.round(sample.length / INSERT_ROWS), lookupsPerSec: lookupsPerSec === null ? null : Math.round(lookupsPerSec) };
  });
}
