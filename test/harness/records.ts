import type { AcceptedRecord, OutgoingRecord } from '../../src/domain/records/types.js';

/** A record as published and as consumed: `payloadBytes` for the queue, `payload` for comparisons. */
export type QueuedRecord = AcceptedRecord & OutgoingRecord;

export function queued(r: AcceptedRecord): QueuedRecord {
  return { ...r, payloadBytes: Buffer.from(r.payload, 'utf8') };
}

/** What a consumer receives for a published record. */
export function consumed(r: QueuedRecord): AcceptedRecord {
  const { payloadBytes: _bytes, ...rest } = r;
  return rest;
}

/** A minimal accepted record, distinct by `i` (record id and ingest id), for queue and indexer tests. */
export function sampleRecord(i: number): AcceptedRecord {
  return {
    hashScheme: 'dris-v1',
    tenantId: 't',
    database: 'd',
    collection: 'c',
    recordId: `r${i}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: 'p'.repeat(64),
    salt: 's'.repeat(32),
    ingestId: `id-${i}`,
    clientId: 'c',
    keyId: 'k',
    recordHash: 'h'.repeat(64),
    acceptedAt: new Date(0).toISOString(),
    payload: '{}',
    idempotencyKey: null,
    correlationId: 'x',
  };
}
