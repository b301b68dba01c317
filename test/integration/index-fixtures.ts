import type { AcceptedRecord, RecordSummary } from '../../src/domain/records/types.js';

/** Records and their expected summaries, shared by the hot-index suites. */

export const BASE_MS = Date.parse('2025-03-01T10:00:00.000Z');

export function hex(seed: string, length: number): string {
  return Buffer.from(seed.repeat(Math.ceil(length / 2 / seed.length) + 1)).toString('hex').slice(0, length);
}

let seq = 0;
export function record(tenantId: string, over: Partial<AcceptedRecord> & { atMs?: number } = {}): AcceptedRecord {
  seq += 1;
  const { atMs, ...rest } = over;
  return {
    hashScheme: 'dris-v1',
    tenantId,
    database: 'crm',
    collection: 'customers',
    recordId: `rec-${seq}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: hex(`p${seq}`, 64),
    salt: hex(`s${seq}`, 32),
    ingestId: `ing-${String(seq).padStart(8, '0')}`,
    clientId: 'app-1',
    keyId: 'key-1',
    recordHash: hex(`r${seq}`, 64),
    acceptedAt: new Date(atMs ?? BASE_MS + seq).toISOString(),
    payload: JSON.stringify({ n: seq, text: 'x'.repeat(200) }),
    idempotencyKey: null,
    correlationId: `corr-${seq}`,
    ...rest,
  };
}

export function summaryOf(r: AcceptedRecord): RecordSummary {
  return {
    ingestId: r.ingestId,
    tenantId: r.tenantId,
    clientId: r.clientId,
    database: r.database,
    collection: r.collection,
    recordId: r.recordId,
    recordVersion: r.recordVersion,
    operationType: r.operationType,
    sourceTimestamp: r.sourceTimestamp,
    acceptedAt: r.acceptedAt,
    payloadHash: r.payloadHash,
    recordHash: r.recordHash,
    salt: r.salt,
    hashScheme: r.hashScheme,
    status: 'Ingested',
    snapshotId: null,
    batchId: null,
    chainTxHash: null,
  };
}
