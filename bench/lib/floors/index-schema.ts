import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { drainPending, Session } from 'chdb';
import { bootstrapSql, migrations } from '../../../src/adapters/clickhouse/migrations/index.js';
import { RECORD_LINES_SETTINGS, recordLines, toPendingRecord } from '../../../src/adapters/clickhouse/record-rows.js';
import { newIngestId } from '../../../src/domain/records/ids.js';
import { HASH_SCHEME, type AcceptedRecord } from '../../../src/domain/records/types.js';

/**
 * The index schema's floor: what the embedded engine costs to take the indexer's own rows into
 * dris's own tables, without the rest of dris. Unlike the raw chDB floor (a bare MergeTree), the
 * insert goes through everything the schema makes of a record (the records table with its skip
 * indexes and compression, and the evidence view writing record_evidence), so it bounds the
 * pipeline's rate and its CPU per record from below on this machine: the pipeline inserts each
 * record this way once, and at anchoring writes its leaf to two more tables, besides the rest.
 */

export interface IndexSchemaFloor {
  readonly insertRowsPerSec: number;
  /** CPU of this process (every engine thread) per 1000 rows inserted, milliseconds. */
  readonly cpuMsPer1000: number;
  readonly rowsInserted: number;
}

const DB = 'floor';
/** Rows per insert, as the indexer inserts at the pipeline's batch size. */
const INSERT_ROWS = 1000;

/** An accepted record as a consumer receives it: its payload as the queue's bytes. */
function accepted(i: number, atMs: number, payload: Buffer): AcceptedRecord {
  const r = {
    hashScheme: HASH_SCHEME,
    tenantId: 'bench',
    database: 'erp',
    collection: 'invoices',
    recordId: `r-${i}`,
    recordVersion: '1',
    operationType: 'insert' as const,
    sourceTimestamp: null,
    payloadHash: randomBytes(32).toString('hex'),
    salt: randomBytes(16).toString('hex'),
    ingestId: newIngestId(atMs),
    clientId: 'bench',
    keyId: 'bench-key',
    recordHash: randomBytes(32).toString('hex'),
    acceptedAt: new Date(atMs).toISOString(),
    payload: '',
    idempotencyKey: null,
    correlationId: randomBytes(8).toString('hex'),
  };
  Object.defineProperty(r, 'payloadBytes', { value: payload, enumerable: false });
  return r;
}

function lines(from: number, payload: Buffer): Buffer {
  const atMs = Date.now();
  return recordLines(Array.from({ length: INSERT_ROWS }, (_, k) => toPendingRecord(accepted(from + k, atMs, payload))));
}

export async function indexSchemaFloor(seconds: number, payload: string): Promise<IndexSchemaFloor> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-floor-schema-'));
  const session = new Session(dir);
  try {
    for (const sql of [...bootstrapSql(DB), ...migrations(DB).map((m) => m.sql)]) await session.queryAsync(sql, { timeout: 60_000 });
    const bytes = Buffer.from(payload, 'utf8');
    let inserted = 0;
    let busyMs = 0;
    let cpuMicros = 0;
    // Rows are made outside the measured time: the floor is the engine's share alone.
    while (busyMs < seconds * 1000) {
      const body = lines(inserted, bytes);
      const cpu = process.cpuUsage();
      const start = performance.now();
      await session.insert({ table: `${DB}.records`, values: body, format: 'JSONEachRow', settings: RECORD_LINES_SETTINGS });
      busyMs += performance.now() - start;
      const used = process.cpuUsage(cpu);
      cpuMicros += used.user + used.system;
      inserted += INSERT_ROWS;
    }
    // The schema's view must have written every row: a floor that skipped it would flatter the engine.
    const counted = (await session.queryAsync(`SELECT count() AS n FROM ${DB}.record_evidence`, { format: 'JSONEachRow', timeout: 60_000 })).text();
    const evidence = Number((JSON.parse(counted) as { n: string | number }).n);
    if (evidence !== inserted) throw new Error(`index schema floor: ${evidence} evidence rows for ${inserted} records`);
    return {
      insertRowsPerSec: Math.round((inserted / busyMs) * 1000),
      cpuMsPer1000: Math.round((cpuMicros / 1000 / inserted) * 1000 * 10) / 10,
      rowsInserted: inserted,
    };
  } finally {
    session.close();
    await drainPending();
    await rm(dir, { recursive: true, force: true });
  }
}
