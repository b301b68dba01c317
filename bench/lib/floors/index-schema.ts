import { randomBytes } from 'node:crypto';
import { bootstrapSql, migrations } from '../../../src/adapters/clickhouse/migrations/index.js';
import { RECORD_LINE_COLUMNS, RECORD_LINES_SETTINGS, recordLines, toPendingRecord } from '../../../src/adapters/clickhouse/record-rows.js';
import { newIngestId } from '../../../src/domain/records/ids.js';
import { HASH_SCHEME, type OutgoingRecord } from '../../../src/domain/records/types.js';
import { decodeMessage, encodeRecords } from '../../../src/adapters/queue/record-codec.js';
import { INSERT_ROWS, withScratchSession } from './chdb.js';

/**
 * The index schema's floor: what the embedded engine costs to take the indexer's own rows into
 * dris's own tables, without the rest of dris. Unlike the raw chDB floor (a bare MergeTree), the
 * insert goes through everything the schema makes of a record (the records table with its skip
 * indexes and compression, and the evidence view writing record_evidence_packed), so it bounds the
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

/** An outgoing record of ingestion, its payload as the bytes that were hashed. */
function outgoing(i: number, atMs: number, payload: Buffer): OutgoingRecord {
  return {
    hashScheme: HASH_SCHEME,
    tenantId: 'bench',
    database: 'erp',
    collection: 'invoices',
    recordId: `r-${i}`,
    recordVersion: '1',
    operationType: 'insert',
    sourceTimestamp: null,
    payloadHash: randomBytes(32).toString('hex'),
    salt: randomBytes(16).toString('hex'),
    ingestId: newIngestId(atMs),
    clientId: 'bench',
    keyId: 'bench-key',
    recordHash: randomBytes(32).toString('hex'),
    acceptedAt: new Date(atMs).toISOString(),
    idempotencyKey: null,
    correlationId: randomBytes(8).toString('hex'),
    payloadBytes: payload,
  };
}

/** The indexer's insert of one message of INSERT_ROWS records, read back through the queue's codec as a consumer reads it. */
function lines(from: number, payload: Buffer): Buffer {
  const atMs = Date.now();
  const message = encodeRecords(Array.from({ length: INSERT_ROWS }, (_, k) => outgoing(from + k, atMs, payload)));
  return recordLines(decodeMessage(message).map(toPendingRecord));
}

export function indexSchemaFloor(seconds: number, payload: string): Promise<IndexSchemaFloor> {
  return withScratchSession('dris-floor-schema-', async (session) => {
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
      await session.insert({ table: `${DB}.records`, columns: [...RECORD_LINE_COLUMNS], values: body, format: 'JSONCompactEachRow', settings: RECORD_LINES_SETTINGS });
      busyMs += performance.now() - start;
      const used = process.cpuUsage(cpu);
      cpuMicros += used.user + used.system;
      inserted += INSERT_ROWS;
    }
    // The schema's view must have written every row: a floor that skipped it would flatter the engine.
    const counted = (await session.queryAsync(`SELECT count() AS n FROM ${DB}.record_evidence_packed`, { format: 'JSONEachRow', timeout: 60_000 })).text();
    const evidence = Number((JSON.parse(counted) as { n: string | number }).n);
    if (evidence !== inserted) throw new Error(`index schema floor: ${evidence} evidence rows for ${inserted} records`);
    return {
      insertRowsPerSec: Math.round((inserted / busyMs) * 1000),
      cpuMsPer1000: Math.round((cpuMicros / 1000 / inserted) * 1000 * 10) / 10,
      rowsInserted: inserted,
    };
  });
}
